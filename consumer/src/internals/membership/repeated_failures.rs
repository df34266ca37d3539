//! The backoff between rejoins while the coordinator keeps refusing the member (the project's
//! own rule; Java rejoins at once after these errors every time).
//!
//! After FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID a KIP-848 member rejoins with epoch 0 at
//! once; after UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS or
//! MEMBER_ID_REQUIRED a classic member sends JoinGroup again at once. A coordinator that keeps
//! refusing (it still holds the member's old epoch, or keeps losing the member) refuses the
//! rejoin too, and the member used to rejoin again at once: a request per round trip until
//! its session expired (~70 heartbeats a second in the simulator). So only the first
//! `free_retries` failures of a run rejoin at once (the protocol's normal steps: a classic
//! join is one MEMBER_ID_REQUIRED and maybe a REBALANCE_IN_PROGRESS before it completes);
//! each further one, with no success since, waits `retry.backoff.ms`, doubling (with Kafka's
//! 20 % jitter) up to `retry.backoff.max.ms`, as Java backs off after other errors.
//!
//! A run is one coordinator's: refusals by a coordinator the member has just found (the last
//! one died or moved) start a new run. A member that carries the refusals of coordinators
//! before it would back off from one that merely does not know it yet, and miss that
//! coordinator's join phase: a classic member whose parked JoinGroup is answered
//! REBALANCE_IN_PROGRESS must rejoin before the phase ends, or it is removed from the group.

use crate::internals::request_state::{RETRY_BACKOFF_JITTER, RETRY_BACKOFF_MULTIPLIER};
use crate::network::backoff::ExponentialBackoff;
use crate::rt::{Duration, Instant, SeededRng};

/// A run of refusals and the earliest rejoin.
#[derive(Debug, Clone)]
pub(crate) struct RepeatedFailures {
    backoff: ExponentialBackoff,
    free_retries: u32,
    /// Failures since the last success, all from `coordinator`.
    in_a_row: u32,
    /// The coordinator that refused the member last.
    coordinator: Option<i32>,
    retry_at: Option<Instant>,
}

impl RepeatedFailures {
    /// The first `free_retries` failures of a run retry at once, later ones back off from
    /// `retry_backoff_ms` to `retry_backoff_max_ms`.
    pub fn new(free_retries: u32, retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            backoff: ExponentialBackoff::new(
                retry_backoff_ms,
                RETRY_BACKOFF_MULTIPLIER,
                retry_backoff_max_ms.max(retry_backoff_ms),
                RETRY_BACKOFF_JITTER,
            ),
            free_retries,
            in_a_row: 0,
            coordinator: None,
            retry_at: None,
        }
    }

    /// The coordinator `coordinator` refused the member at `now` (`what` names it for the
    /// log).
    pub fn on_failure(
        &mut self,
        coordinator: Option<i32>,
        now: Instant,
        rng: &mut SeededRng,
        what: &str,
    ) {
        if coordinator != self.coordinator {
            self.coordinator = coordinator;
            self.in_a_row = 0;
        }
        self.in_a_row = self.in_a_row.saturating_add(1);
        self.retry_at = if self.in_a_row <= self.free_retries {
            None
        } else {
            let delay_ms = self
                .backoff
                .backoff_ms(self.in_a_row - self.free_retries - 1, rng);
            tracing::info!(
                failures_in_a_row = self.in_a_row,
                delay_ms,
                what,
                "refused again before any success: rejoining after a backoff"
            );
            Some(now + Duration::from_millis(delay_ms))
        };
    }

    /// The member got in (a successful heartbeat, a completed join): the run is over.
    pub fn on_success(&mut self) {
        self.in_a_row = 0;
        self.retry_at = None;
    }

    /// When the rejoin may go out, while that is after `now`.
    pub fn not_before(&self, now: Instant) -> Option<Instant> {
        self.retry_at.filter(|&at| at > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_past_the_free_ones_wait_and_a_success_ends_the_run() {
        let mut rng = SeededRng::seed_from_u64(9);
        let now = Instant::now();
        let mut f = RepeatedFailures::new(1, 100, 1_000);
        f.on_failure(Some(1), now, &mut rng, "fenced");
        assert_eq!(f.not_before(now), None, "first failure: at once");
        f.on_failure(Some(1), now, &mut rng, "fenced");
        let at = f.not_before(now).expect("the second waits");
        assert!((80..120).contains(&(at - now).as_millis()));
        assert_eq!(f.not_before(at), None, "the wait ends");
        for _ in 0..10 {
            f.on_failure(Some(1), now, &mut rng, "fenced");
        }
        let at = f.not_before(now).expect("waits");
        assert!((800..=1_000).contains(&(at - now).as_millis()), "capped");
        f.on_success();
        f.on_failure(Some(1), now, &mut rng, "fenced");
        assert_eq!(f.not_before(now), None, "a new run");

        let mut f = RepeatedFailures::new(3, 100, 1_000);
        for _ in 0..3 {
            f.on_failure(Some(1), now, &mut rng, "JoinGroup");
            assert_eq!(f.not_before(now), None);
        }
        f.on_failure(Some(1), now, &mut rng, "JoinGroup");
        assert!(f.not_before(now).is_some());

        // Another coordinator's refusals start a run of their own.
        f.on_failure(Some(2), now, &mut rng, "JoinGroup");
        assert_eq!(f.not_before(now), None, "a new coordinator: at once");
        for _ in 0..2 {
            f.on_failure(Some(2), now, &mut rng, "JoinGroup");
            assert_eq!(f.not_before(now), None);
        }
        f.on_failure(Some(2), now, &mut rng, "JoinGroup");
        assert!(
            f.not_before(now).is_some(),
            "its own run past the free ones"
        );
    }
}
