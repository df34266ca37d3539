//! **KAFKA-14196** — "Do not continue fetching partitions awaiting auto-commit prior to
//! revocation" (#12603). A regression of KAFKA-14024's fix, present in 3.2.1 and 3.2.2, fixed
//! in 3.2.3 / 3.3.0. Modelled as [`LegacyVersion::V3_2_1`]: 3.2.1's `onJoinPrepare`.
//!
//! **Interleaving.** Eager protocol, auto-commit on; OffsetCommit responses are slow (the
//! coordinator applies a commit at once but answers late). (1) A second member joins; the
//! first learns of the rebalance from a heartbeat and its next `poll` reaches `onJoinPrepare`,
//! which sends the pre-revocation auto-commit of `allConsumed()` and waits for it — with the
//! poll's timer, which `ConsumerCoordinator.poll` passes as zero — then returns `false`
//! without revoking. (2) `poll` goes on to `pollForFetches`: nothing marks the partitions as
//! awaiting revocation, so their records keep coming and the application's position moves past
//! the offsets being committed. (3) The commit's response arrives; the next `poll` revokes and
//! rejoins. The partitions' new owners — including this member for those it keeps — start from
//! the committed offsets, before records the application already had.
//!
//! **Symptom upstream.** Duplicate consumption after every rebalance with auto-commit and
//! eager assignors, the more the slower the commit.
//!
//! **Invariant.** After an orderly revocation, the next owner starts after the last record
//! the previous owner's application received ([`HandoverWithoutRedelivery`]), plus the
//! standard set.
//!
//! **Plan.** From 7 s to 12 s every OffsetCommit response is held for a seeded 0.5–2 s; the
//! second member joins at 8 s. Periodic auto-commits are 30 s apart, so the commits in the
//! window are the ones before revocation.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::HandoverWithoutRedelivery;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-14196";

/// Kafka's API key of OffsetCommit.
const OFFSET_COMMIT: i16 = 8;
const SLOW_FROM_MS: u64 = 7_000;
const JOINER_START_MS: u64 = 8_000;
const HEAL_MS: u64 = 12_000;
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
        "slow auto-commit before an eager revocation (3.2.1): the next owner must not re-consume what the application already had",
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
    .legacy_version(LegacyVersion::V3_2_1)
    .build()
}

/// OffsetCommit responses held for a seeded 0.5–2 s around the second member's join.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_4196);
    let delay_ms = 500 + rng.below_inclusive(1_500);
    PlannedFaults {
        plan: vec![
            (
                SLOW_FROM_MS,
                Fault::Response(ResponseRule {
                    api_key: OFFSET_COMMIT,
                    broker: None,
                    trigger: Trigger::UntilCleared,
                    action: ResponseAction::Hold { delay_ms },
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

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(HandoverWithoutRedelivery::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_are_slow_around_the_join() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(SLOW_FROM_MS, Fault::Response(rule)), (HEAL_MS, Fault::ClearResponses { .. })] =
                planned.plan.as_slice()
            else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            let ResponseAction::Hold { delay_ms } = rule.action else {
                panic!("seed {seed}: {rule:?}");
            };
            assert!((500..=2_000).contains(&delay_ms), "seed {seed}");
            assert_eq!(rule.api_key, OFFSET_COMMIT);
        }
        const { assert!(SLOW_FROM_MS < JOINER_START_MS && JOINER_START_MS < HEAL_MS) };
        assert_ne!(plan(1), plan(2));
    }

    #[test]
    fn two_auto_committing_members_on_the_3_2_1_model() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 2);
        assert_eq!(s.legacy_version, LegacyVersion::V3_2_1);
        assert!(s.subjects.iter().all(|m| m
            .properties
            .contains(&("enable.auto.commit".into(), "true".into()))));
    }
}
