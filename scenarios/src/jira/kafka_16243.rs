//! **KAFKA-16243** — "Make sure that we do not exceed max poll interval inside poll" (3.8.0),
//! after KAFKA-16026 "Send Poll event to the background thread" (3.7.0).
//!
//! **Interleaving.** The application calls `poll` with a timeout far above
//! `max.poll.interval.ms` (`kafka-console-consumer` polls with a very long timeout) on a topic
//! with no new data. The classic consumer resets its poll timer while blocked inside `poll`;
//! the AsyncKafkaConsumer sent its `PollEvent` (which resets the timer on the network thread)
//! only when `poll` was *called*, and then blocked in `pollForFetches` for the whole timeout. Once
//! `max.poll.interval.ms` passed, the heartbeat manager decided the application had stopped
//! polling, sent a leave heartbeat and went STALE; the next records made `poll` return, the next
//! `poll` rejoined — a leave/rejoin cycle per idle stretch.
//!
//! **Symptom upstream.** Console consumers (and any long-`poll` application) with a small
//! `max.poll.interval.ms` left and rejoined the group over and over, each time revoking and
//! reassigning every partition of the group.
//!
//! **Invariants.** No member leaves while its application is inside `poll`
//! ([`NoLeaveInPoll`](sim::check::NoLeaveInPoll), with leaves observed at the coordinator) and
//! none loses its partitions ([`NoPartitionsLost`]); plus the standard set and liveness.
//!
//! **Our design.** `Consumer::poll` (consumer/src/consumer.rs) re-sends the `Poll` application
//! event every `max.poll.interval.ms / 2` while it waits, so the background side's poll timer
//! (membership, `internals/membership/`) is refreshed as long as the application is inside
//! `poll`, for both protocols; rebalance callbacks needed meanwhile run inside the same wait.
//!
//! **Plan.** Per protocol, a group of two members (KIP-848 `g`, classic `h`) with
//! `max.poll.interval.ms=5000` and `poll(30 s)`. Records arrive only in the first 2 s, so each
//! member then sits in one 30 s `poll`; the second member of each group joins at 10 s (the seed
//! draws the latency), so the first must also reconcile from inside its long poll. Liveness
//! allows 25 s: a KIP-848 hand-over takes up to two heartbeat intervals (5 s each) after the
//! join, the revoking member's and then the new owner's.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{NoPartitionsLost, UntilClose};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-16243";

#[cfg(test)]
const MAX_POLL_INTERVAL_MS: u64 = 5_000;
const POLL_TIMEOUT_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 2_000;
/// The loop ends after the first long poll returns.
const RUN_MS: u64 = 25_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: POLL_TIMEOUT_MS,
        processing_ms_per_record: 1,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

fn properties(group: &'static str, protocol: &'static str) -> [(&'static str, &'static str); 4] {
    [
        ("group.id", group),
        ("group.protocol", protocol),
        ("max.poll.interval.ms", "5000"),
        ("enable.auto.commit", "true"),
    ]
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "poll(30s) on an idle topic with max.poll.interval.ms=5s, a member joining meanwhile: no leave while inside poll",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", &properties("g", "consumer"), &["t"], app())
    .subscribing_consumer("c1", &properties("g", "consumer"), &["t"], app())
    .start_at(10_000)
    .subscribing_consumer("c2", &properties("h", "classic"), &["t"], app())
    .subscribing_consumer("c3", &properties("h", "classic"), &["t"], app())
    .start_at(10_000)
    .producer("p0", "t", 50, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// A seeded network latency; the joiners' start is fixed (the scenario is one value), the
/// latency moves every poll and heartbeat relative to it.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_6243);
    let max_ms = 2 + rng.below_inclusive(40);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(NoPartitionsLost::default())
        .with(UntilClose {
            inner: Liveness {
                within_ms: 25_000,
                stable_for_ms: 5_000,
                ..Liveness::default()
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_outlasts_the_poll_interval_several_times() {
        let s = scenario();
        const { assert!(POLL_TIMEOUT_MS >= 5 * MAX_POLL_INTERVAL_MS) };
        for m in &s.subjects {
            assert_eq!(m.app.poll_timeout_ms, POLL_TIMEOUT_MS);
            assert!(m
                .properties
                .contains(&("max.poll.interval.ms".to_owned(), "5000".to_owned())));
        }
        assert!(s.subjects[1].start_ms > PRODUCE_UNTIL_MS + MAX_POLL_INTERVAL_MS);
        assert!((s.checks)().names().contains(&"no-leave-in-poll"));
    }

    #[test]
    fn latency_is_drawn_per_seed() {
        assert!((0..10)
            .map(plan)
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0] != w[1]));
    }
}
