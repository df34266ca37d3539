//! Partitions whose last fetch failed, held back from fetching until it makes sense to try
//! again: no partition is refetched in a loop as fast as the broker answers.
//!
//! Java gets this from where it handles per-partition fetch errors: a failed fetch becomes a
//! `CompletedFetch` that sits in the fetch buffer (so its partition is not fetchable) until the
//! application thread collects it in `FetchCollector.handleInitializeErrors`, which throws the
//! error or asks for metadata. Here the background task handles errors when the response
//! arrives, so it must hold the partition itself:
//!
//! - an error **reported to the application** (non-retriable error, out of range or log
//!   truncation without a reset policy) holds the partition until the application has polled
//!   past it, and then for a backoff from `retry.backoff.ms` doubling per consecutive failure up
//!   to `retry.backoff.max.ms` (none for out of range and truncation, which Java refetches on
//!   the next poll and which only a seek can cure);
//! - a **retriable** error (the leader moved, a replica is unavailable, the topic is unknown)
//!   holds it for that backoff or until its leader or leader epoch changes (new metadata, or a
//!   KIP-951 leader hint), whichever comes first.
//!
//! Every hold ends when the position moves (a seek, a reset, a new assignment): the failure
//! was for the old position. A successful fetch of the partition ends its run of failures.

use std::collections::BTreeMap;

use crate::internals::request_state::{RETRY_BACKOFF_JITTER, RETRY_BACKOFF_MULTIPLIER};
use crate::network::backoff::ExponentialBackoff;
use crate::rt::{Duration, Instant, SeededRng};
use crate::types::TopicPartition;

/// Where a partition was fetched from when it failed: position (offset, generation) and
/// leader (node, epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FailedAt {
    /// The fetch offset and the position's generation.
    pub position: (i64, u64),
    /// The leader fetched from and its epoch.
    pub leader: (i32, i32),
}

/// How a failure was handled, which decides what lifts its hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FailureKind {
    /// Reported to the application, which may retry after seeing it (after the backoff).
    Reported,
    /// Reported to the application, which only a seek can help: refetched (to report it
    /// again) as soon as the application has polled, with no backoff, as in Java.
    ReportedUntilSeek,
    /// Handled inside the consumer (metadata refresh): retried after the backoff or at once
    /// when the leader changes.
    Retriable,
}

#[derive(Debug, Clone, Copy)]
struct Hold {
    at: FailedAt,
    kind: FailureKind,
    /// Reported errors: the application has not polled since.
    awaiting_poll: bool,
    retry_at: Instant,
}

/// What the fetch manager should do with a partition now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HoldDecision {
    /// Fetch it.
    Fetch,
    /// Not now; nothing but an event (a poll, a seek, new metadata) changes that.
    Wait,
    /// Not before this instant.
    WaitUntil(Instant),
}

/// The holds and the per-partition runs of consecutive failures.
#[derive(Debug)]
pub(super) struct PartitionHolds {
    backoff: ExponentialBackoff,
    holds: BTreeMap<TopicPartition, Hold>,
    /// Consecutive failures at the partition's current position.
    failures: BTreeMap<TopicPartition, (u64, u32)>,
}

impl PartitionHolds {
    /// Holds backing off from `retry_backoff_ms` up to `retry_backoff_max_ms`.
    pub fn new(retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            backoff: ExponentialBackoff::new(
                retry_backoff_ms,
                RETRY_BACKOFF_MULTIPLIER,
                retry_backoff_max_ms.max(retry_backoff_ms),
                RETRY_BACKOFF_JITTER,
            ),
            holds: BTreeMap::new(),
            failures: BTreeMap::new(),
        }
    }

    /// A fetch of `tp` failed at `at`: hold it.
    pub fn on_failure(
        &mut self,
        tp: &TopicPartition,
        at: FailedAt,
        kind: FailureKind,
        now: Instant,
        rng: &mut SeededRng,
    ) {
        let generation = at.position.1;
        let run = self.failures.entry(tp.clone()).or_insert((generation, 0));
        if run.0 != generation {
            *run = (generation, 0);
        }
        let delay_ms = match kind {
            FailureKind::ReportedUntilSeek => 0,
            FailureKind::Reported | FailureKind::Retriable => self.backoff.backoff_ms(run.1, rng),
        };
        run.1 = run.1.saturating_add(1);
        tracing::debug!(partition = %tp, ?kind, failures = run.1, delay_ms, "holding partition");
        self.holds.insert(
            tp.clone(),
            Hold {
                at,
                kind,
                awaiting_poll: kind != FailureKind::Retriable,
                retry_at: now + Duration::from_millis(delay_ms),
            },
        );
    }

    /// A fetch of `tp` succeeded: its run of failures is over.
    pub fn on_success(&mut self, tp: &TopicPartition) {
        self.failures.remove(tp);
    }

    /// The application polled: it has seen every error reported so far.
    pub fn on_poll(&mut self) {
        for hold in self.holds.values_mut() {
            hold.awaiting_poll = false;
        }
    }

    /// Whether `tp`, now at `position` with `leader`, may be fetched; lifts holds that ended.
    pub fn decide(
        &mut self,
        tp: &TopicPartition,
        position: (i64, u64),
        leader: (i32, i32),
        now: Instant,
    ) -> HoldDecision {
        let Some(hold) = self.holds.get(tp) else {
            return HoldDecision::Fetch;
        };
        let moved = hold.at.position != position;
        let leader_changed = hold.kind == FailureKind::Retriable && hold.at.leader != leader;
        if moved || leader_changed {
            if moved {
                self.failures.remove(tp);
            }
            self.holds.remove(tp);
            return HoldDecision::Fetch;
        }
        if hold.awaiting_poll {
            return HoldDecision::Wait;
        }
        if now < hold.retry_at {
            return HoldDecision::WaitUntil(hold.retry_at);
        }
        self.holds.remove(tp);
        HoldDecision::Fetch
    }

    /// Forgets partitions no longer assigned.
    pub fn retain(&mut self, assigned: impl Fn(&TopicPartition) -> bool) {
        self.holds.retain(|tp, _| assigned(tp));
        self.failures.retain(|tp, _| assigned(tp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    const AT: FailedAt = FailedAt {
        position: (5, 1),
        leader: (1, 3),
    };

    #[test]
    fn reported_failures_wait_for_a_poll_then_back_off_exponentially() {
        let mut rng = SeededRng::seed_from_u64(3);
        let now = Instant::now();
        let mut h = PartitionHolds::new(100, 1_000);
        h.on_failure(&tp(), AT, FailureKind::Reported, now, &mut rng);
        let later = now + Duration::from_secs(10);
        assert_eq!(h.decide(&tp(), (5, 1), (1, 3), later), HoldDecision::Wait);
        h.on_poll();
        assert_eq!(h.decide(&tp(), (5, 1), (1, 3), later), HoldDecision::Fetch);
        let mut delays = Vec::new();
        for _ in 0..6 {
            h.on_failure(&tp(), AT, FailureKind::Reported, now, &mut rng);
            h.on_poll();
            let HoldDecision::WaitUntil(at) = h.decide(&tp(), (5, 1), (1, 3), now) else {
                panic!("backing off")
            };
            delays.push((at - now).as_millis());
        }
        assert!((160..240).contains(&delays[0]), "{delays:?}");
        assert!((320..480).contains(&delays[1]), "{delays:?}");
        assert!(delays[5] <= 1_000 && delays[5] >= 800, "{delays:?}");
        h.on_success(&tp());
        h.on_failure(&tp(), AT, FailureKind::Reported, now, &mut rng);
        h.on_poll();
        let HoldDecision::WaitUntil(at) = h.decide(&tp(), (5, 1), (1, 3), now) else {
            panic!("backing off")
        };
        assert!(
            (at - now).as_millis() < 120,
            "a success restarts the backoff"
        );
    }

    #[test]
    fn a_seek_lifts_any_hold_and_a_new_leader_lifts_a_retriable_one() {
        let mut rng = SeededRng::seed_from_u64(3);
        let now = Instant::now();
        let mut h = PartitionHolds::new(100, 1_000);
        h.on_failure(&tp(), AT, FailureKind::ReportedUntilSeek, now, &mut rng);
        assert_eq!(h.decide(&tp(), (5, 1), (2, 4), now), HoldDecision::Wait);
        assert_eq!(h.decide(&tp(), (5, 2), (1, 3), now), HoldDecision::Fetch);
        assert_eq!(h.decide(&tp(), (5, 1), (1, 3), now), HoldDecision::Fetch);

        h.on_failure(&tp(), AT, FailureKind::Retriable, now, &mut rng);
        assert!(matches!(
            h.decide(&tp(), (5, 1), (1, 3), now),
            HoldDecision::WaitUntil(_)
        ));
        assert_eq!(h.decide(&tp(), (5, 1), (1, 4), now), HoldDecision::Fetch);

        h.on_failure(&tp(), AT, FailureKind::ReportedUntilSeek, now, &mut rng);
        h.on_poll();
        assert_eq!(h.decide(&tp(), (5, 1), (1, 3), now), HoldDecision::Fetch);
        h.on_failure(&tp(), AT, FailureKind::Retriable, now, &mut rng);
        h.retain(|_| false);
        assert_eq!(h.decide(&tp(), (5, 1), (1, 3), now), HoldDecision::Fetch);
    }
}
