//! Metadata recovery (KIP-899, KIP-1102): a client that has lost the cluster starts over from
//! `bootstrap.servers`.
//!
//! A long-running consumer learns its brokers from Metadata and then talks only to them. If
//! every one of them is replaced (a cluster rebuilt behind the same bootstrap DNS name or load
//! balancer, brokers moved to new addresses), it would try the old ones forever. With
//! `metadata.recovery.strategy=rebootstrap` (the default since Kafka 4.0) Java's
//! `NetworkClient.DefaultMetadataUpdater` forgets what Metadata told it and goes back to the
//! bootstrap servers in three cases:
//!
//! - it wants metadata and no broker it knows is connected, connecting, or allowed to connect
//!   (every one is backing off after failures) — KIP-899;
//! - it has wanted metadata for longer than `metadata.recovery.rebootstrap.trigger.ms` since
//!   the last successful Metadata response (brokers that answer, but not with metadata, or
//!   not at all) — KIP-1102;
//! - a Metadata response carries the top-level error `REBOOTSTRAP_REQUIRED` — KIP-1102.
//!
//! This module is the clock and the decision, sans-IO; [`super::NetworkClient`] does the
//! forgetting. With `metadata.recovery.strategy=none` nothing here ever fires.

use crate::config::MetadataRecoveryStrategy;
use crate::rt::{Duration, Instant};

/// When the client started wanting metadata, as Java's `metadataAttemptStartMs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// The last Metadata response was a success and nothing was wanted since.
    Idle,
    /// Metadata wanted since then, no successful response yet.
    Since(Instant),
    /// A broker answered `REBOOTSTRAP_REQUIRED`: due at once (Java sets the start to 0).
    Forced,
}

/// Whether and when to rebootstrap.
#[derive(Debug, Clone)]
pub(crate) struct MetadataRecovery {
    strategy: MetadataRecoveryStrategy,
    trigger: Duration,
    attempt: Attempt,
}

impl MetadataRecovery {
    pub(crate) fn new(strategy: MetadataRecoveryStrategy, trigger_ms: u64) -> Self {
        Self {
            strategy,
            trigger: Duration::from_millis(trigger_ms),
            attempt: Attempt::Idle,
        }
    }

    /// Whether the client may rebootstrap at all.
    pub(crate) fn enabled(&self) -> bool {
        self.strategy == MetadataRecoveryStrategy::Rebootstrap
    }

    /// The client wants metadata now (a Metadata request is about to be sent or tried):
    /// starts the trigger's clock unless it runs already.
    pub(crate) fn on_metadata_wanted(&mut self, now: Instant) {
        if self.attempt == Attempt::Idle {
            self.attempt = Attempt::Since(now);
        }
    }

    /// A Metadata response with brokers arrived: the cluster is known again.
    pub(crate) fn on_metadata_received(&mut self) {
        self.attempt = Attempt::Idle;
    }

    /// A broker answered `REBOOTSTRAP_REQUIRED`.
    pub(crate) fn on_rebootstrap_required(&mut self) {
        if self.enabled() {
            self.attempt = Attempt::Forced;
        }
    }

    /// Whether the trigger fired: forced, or metadata wanted for longer than the trigger.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.enabled()
            && match self.attempt {
                Attempt::Idle => false,
                Attempt::Forced => true,
                Attempt::Since(start) => now.saturating_duration_since(start) > self.trigger,
            }
    }

    /// The client rebootstrapped: the clock starts again from now, so a bootstrap server
    /// that cannot help either is given the whole trigger time before the next attempt.
    pub(crate) fn on_rebootstrapped(&mut self, now: Instant) {
        self.attempt = Attempt::Since(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recovery(strategy: MetadataRecoveryStrategy) -> (MetadataRecovery, Instant) {
        (MetadataRecovery::new(strategy, 300_000), Instant::now())
    }

    #[test]
    fn the_trigger_runs_from_the_first_wish_for_metadata_until_a_response() {
        let (mut r, t0) = recovery(MetadataRecoveryStrategy::Rebootstrap);
        assert!(!r.due(t0 + Duration::from_secs(3_600)), "nothing wanted");
        r.on_metadata_wanted(t0);
        r.on_metadata_wanted(t0 + Duration::from_secs(100));
        assert!(!r.due(t0 + Duration::from_millis(300_000)), "not before");
        assert!(
            r.due(t0 + Duration::from_millis(300_001)),
            "from the first wish"
        );
        r.on_metadata_received();
        assert!(!r.due(t0 + Duration::from_secs(3_600)));
    }

    #[test]
    fn rebootstrap_required_is_due_at_once_and_a_rebootstrap_restarts_the_clock() {
        let (mut r, t0) = recovery(MetadataRecoveryStrategy::Rebootstrap);
        r.on_rebootstrap_required();
        assert!(r.due(t0));
        r.on_rebootstrapped(t0);
        assert!(!r.due(t0 + Duration::from_millis(300_000)));
        assert!(r.due(t0 + Duration::from_millis(300_001)));
    }

    #[test]
    fn strategy_none_never_rebootstraps() {
        let (mut r, t0) = recovery(MetadataRecoveryStrategy::None);
        assert!(!r.enabled());
        r.on_metadata_wanted(t0);
        r.on_rebootstrap_required();
        assert!(!r.due(t0 + Duration::from_secs(3_600)));
    }
}
