//! **KAFKA-13310** — "KafkaConsumer cannot jump out of the poll method, and the consumer is
//! blocked in the ConsumerCoordinator method maybeAutoCommitOffsetsSync(Timer timer). Cpu and
//! traffic of Broker's side increase sharply". Present in 3.1.0 (the model's version); fixed in
//! 3.2.0 by making the pre-rebalance commit asynchronous, which KAFKA-14024 then had to repair.
//!
//! **Interleaving.** Auto-commit on; a subscribed topic is deleted, so the coordinator answers
//! every OffsetCommit that still carries its partitions with `UNKNOWN_TOPIC_OR_PARTITION` — a
//! *retriable* error. (1) A rebalance starts (upstream: the deletion itself under a pattern
//! subscription; here: a second member joins). The heartbeat thread gets
//! `REBALANCE_IN_PROGRESS` and requests a rejoin. (2) The application's next `poll(100 ms)`
//! reaches `joinGroupIfNeeded` → `onJoinPrepare` → `maybeAutoCommitOffsetsSync(timer)` with a
//! timer of the *rebalance timeout* (`max.poll.interval.ms`), not the poll's: `commitOffsetsSync`
//! resends the commit after every retriable failure until that timer expires.
//!
//! **Symptom upstream.** `poll(Duration)` ignores its timeout and blocks for up to
//! `max.poll.interval.ms` inside the commit loop, hammering the broker with OffsetCommit; the
//! group's rebalance waits on the member meanwhile.
//!
//! **Invariant.** `poll(d)` returns within d + time spent in rebalance callbacks
//! ([`BlockingBounds`](sim::check::BlockingBounds), `PollOvershoot`), plus the standard set.
//!
//! **Plan.** The sim's coordinator keeps accepting offsets of deleted topics (a fidelity gap
//! not yet listed in `sim/FIDELITY.md`), and the legacy model has no pattern subscription, so
//! the broker's answer for the deleted topic is injected as a response rule: from 3–5 s every OffsetCommit is answered `UNKNOWN_TOPIC_OR_PARTITION` until the heal;
//! the second member joins 2–4 s later. The model's mechanism (the commit loop bounded by the
//! rebalance timeout inside `poll`) is 3.1.0's own.

use kafka_consumer::rt::SeededRng;
use sim::check::{
    BlockingBounds, CallbackHandshake, CheckerSet, ExclusiveOwnership, KnownGaps, NoLeaveInPoll,
    OwnershipMode, RevokeBeforeReassign,
};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-13310";

/// Kafka's API key of OffsetCommit.
const OFFSET_COMMIT: i16 = 8;
/// `UNKNOWN_TOPIC_OR_PARTITION`.
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
#[cfg(test)]
const MAX_POLL_INTERVAL_MS: u64 = 15_000;
const HEAL_MS: u64 = 30_000;
const RUN_MS: u64 = 45_000;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "true"),
    ("auto.commit.interval.ms", "1000"),
    ("max.poll.interval.ms", "15000"),
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
    ("partition.assignment.strategy", "range"),
];

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "auto-commit answered UNKNOWN_TOPIC_OR_PARTITION during a rebalance: poll(100ms) must not block in onJoinPrepare's commit loop",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(joiner_start_ms(1))
    .producer("p0", "t", 50, HEAL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// When the second member joins: fixed, so the scenario is one value; the fault's timing is
/// what the seed draws.
fn joiner_start_ms(_seed: u64) -> u64 {
    8_000
}

/// From 3–5 s, every OffsetCommit is answered `UNKNOWN_TOPIC_OR_PARTITION` until the heal.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_3310);
    let deleted_ms = 3_000 + rng.below_inclusive(2_000);
    PlannedFaults {
        plan: vec![
            (
                deleted_ms,
                Fault::Response(ResponseRule {
                    api_key: OFFSET_COMMIT,
                    broker: None,
                    trigger: Trigger::UntilCleared,
                    action: ResponseAction::Error(UNKNOWN_TOPIC_OR_PARTITION),
                }),
            ),
            (
                HEAL_MS,
                Fault::ClearResponses {
                    api_key: Some(OFFSET_COMMIT),
                },
            ),
        ],
        healed_at_ms: HEAL_MS,
    }
}

/// The standard set, with `poll`'s tolerance at one second: the pre-rebalance commit may
/// legitimately take a round trip past the poll's timeout; the bug is blocking for the whole
/// rebalance timeout.
fn checks() -> CheckerSet {
    CheckerSet::jepsen(KnownGaps::new())
        .with(ExclusiveOwnership {
            mode: OwnershipMode::Windows,
            ..ExclusiveOwnership::default()
        })
        .with(RevokeBeforeReassign::default())
        .with(CallbackHandshake::default())
        .with(BlockingBounds {
            tolerance_ms: 1_000,
            ..BlockingBounds::default()
        })
        .with(NoLeaveInPoll::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_error_starts_before_the_second_member_joins_and_heals_after() {
        for seed in 0..50 {
            let planned = plan(seed);
            let (start, fault) = &planned.plan[0];
            assert!((3_000..=5_000).contains(start), "seed {seed}");
            assert!(*start < joiner_start_ms(seed));
            assert!(matches!(
                fault,
                Fault::Response(ResponseRule {
                    action: ResponseAction::Error(UNKNOWN_TOPIC_OR_PARTITION),
                    trigger: Trigger::UntilCleared,
                    ..
                })
            ));
            assert_eq!(planned.healed_at_ms, HEAL_MS);
            assert!(
                joiner_start_ms(seed) + MAX_POLL_INTERVAL_MS < HEAL_MS,
                "the commit loop can run its full rebalance timeout before the heal"
            );
        }
    }

    #[test]
    fn two_auto_committing_subscribers() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 2);
        assert!(s.subjects.iter().all(|m| m.subscribe == vec!["t"]));
        assert_eq!(s.subjects[1].start_ms, joiner_start_ms(1));
        assert!(s
            .subjects
            .iter()
            .all(|m| m.app.commit == CommitPolicy::Auto));
    }
}
