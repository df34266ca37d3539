//! **KAFKA-14024** — "Consumer keeps Commit offset in onJoinPrepare in Cooperative rebalance"
//! (#12349). A regression of KAFKA-13310's fix, present in 3.2.0, fixed in 3.2.1 / 3.3.0.
//! Modelled as [`LegacyVersion::V3_2_0`]: 3.2.0's `onJoinPrepare`.
//!
//! **Interleaving.** Eager protocol, auto-commit on. (1) A second member joins; the first
//! learns of the rebalance from a heartbeat and its next `poll` reaches `onJoinPrepare`, which
//! sends an asynchronous auto-commit of `allConsumed()`, looks at its future once — still in
//! flight — and revokes every partition anyway. (2) The commit fails with a retriable error
//! (`COORDINATOR_LOAD_IN_PROGRESS`); its callback only schedules the next periodic
//! auto-commit, and the partitions are no longer this member's to commit. The next
//! `onJoinPrepare` commits an empty `allConsumed()` and the member rejoins. (3) The partitions'
//! new owners start from the last offsets that were committed — before everything the first
//! member consumed.
//!
//! **Symptom upstream.** The commit message: "even though the retried offset commit
//! successfully, it still causes some partitions offsets un-committed, and after rebalance,
//! other consumers will consume overlapping records" — duplicates. (Its other symptom, a
//! cooperative member sending a new commit on every `poll` and never rejoining, needs 3.2.0's
//! cooperative protocol, which the model does not run: it models cooperative rebalancing for
//! 3.4 only.)
//!
//! **Invariant.** After an orderly revocation, the next owner starts after the last record
//! the previous owner's application received ([`HandoverWithoutRedelivery`]), plus the
//! standard set. 3.1.0's synchronous commit retries until the rebalance timeout, so the
//! invariant holds there.
//!
//! **Plan.** At a seeded time 7.5–8 s, just before the second member joins at 8 s, the next
//! OffsetCommit is answered `COORDINATOR_LOAD_IN_PROGRESS`. Periodic auto-commits are 30 s
//! apart, so that commit is the one before revocation.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::HandoverWithoutRedelivery;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-14024";

/// Kafka's API key of OffsetCommit.
const OFFSET_COMMIT: i16 = 8;
/// `COORDINATOR_LOAD_IN_PROGRESS`: retriable, and does not mark the coordinator unknown.
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const JOINER_START_MS: u64 = 8_000;
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 30_000;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "true"),
    ("auto.commit.interval.ms", "30000"),
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
    ("max.poll.interval.ms", "15000"),
    ("partition.assignment.strategy", "range"),
];

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 2,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "the auto-commit before an eager revocation fails retriably (3.2.0): the next owner must not re-consume what the application already had",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(JOINER_START_MS)
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V3_2_0)
    .build()
}

/// The next OffsetCommit after a seeded 7.5–8 s fails retriably.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_4024);
    let at_ms = JOINER_START_MS - 500 + rng.below_inclusive(500);
    PlannedFaults {
        plan: vec![(
            at_ms,
            Fault::Response(ResponseRule {
                api_key: OFFSET_COMMIT,
                broker: None,
                trigger: Trigger::Next(1),
                action: ResponseAction::Error(COORDINATOR_LOAD_IN_PROGRESS),
            }),
        )],
        healed_at_ms: at_ms,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(HandoverWithoutRedelivery::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_commit_fails_retriably_just_before_the_join() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(at_ms, Fault::Response(rule))] = planned.plan.as_slice() else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            assert!((7_500..=JOINER_START_MS).contains(at_ms), "seed {seed}");
            assert_eq!(rule.trigger, Trigger::Next(1));
            assert_eq!(
                rule.action,
                ResponseAction::Error(COORDINATOR_LOAD_IN_PROGRESS)
            );
        }
        assert_ne!(plan(1), plan(2));
    }

    #[test]
    fn two_auto_committing_members_on_the_3_2_0_model() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 2);
        assert_eq!(s.legacy_version, LegacyVersion::V3_2_0);
    }
}
