//! **KAFKA-13840** — "KafkaConsumer is unable to recover connection to group coordinator after
//! commitOffsetsAsync exception", the field report of KAFKA-13563's root cause: Flink's Kafka
//! source (`assign()` + `commitAsync` on each checkpoint, kafka-clients 2.8.x) stopped
//! committing after a broker restart (FLINK-28060, "Kafka Commit on checkpointing fails
//! repeatedly after a broker restart"); Flink upgraded to 3.1.1 for KAFKA-13563's fix. The
//! model is 3.1.0, before that fix.
//!
//! **Interleaving.** The commit is driven by an external periodic trigger (the checkpoint), not
//! by the poll loop, and the brokers are restarted one after the other (a rolling restart).
//! (1) The first restart takes the coordinator: a checkpoint commit fails (disconnect or
//! `NOT_COORDINATOR`), the coordinator is marked unknown, and the next checkpoint's
//! `commitOffsetsAsync` calls `lookupCoordinator()`, which stores `findCoordinatorFuture`; it
//! completes and nothing on the manual-assignment path clears it. (2) A later restart takes the
//! coordinator again (it moved to a broker the roll has not reached yet): every later
//! checkpoint gets the stale completed future, its listener sends the commit to no coordinator,
//! and it fails with `COORDINATOR_NOT_AVAILABLE` without a FindCoordinator.
//!
//! **Symptom upstream.** "Kafka Commit on checkpointing fails repeatedly" until the job
//! restarts; consumer lag as seen by the group stops moving.
//!
//! **Invariants.** Coordinator rediscovery ([`CoordinatorRediscovery`]) and, after the roll
//! ends, every acked record committed within a bound ([`Liveness`] with `require_committed`).
//!
//! **Plan.** The coordinator is pinned to the first broker of a seeded restart order at 0 ms;
//! the three brokers restart 4–6 s apart from 3–5 s. The coordinator moves on each restart of
//! its broker, so the roll takes it at least twice.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::CoordinatorRediscovery;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-13840";

const BROKERS: i32 = 3;
const PRODUCE_UNTIL_MS: u64 = 25_000;
const RUN_MS: u64 = 45_000;
/// Flink's checkpoint interval in this scenario.
const CHECKPOINT_MS: u64 = 1_000;

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "assign()+commitAsync per checkpoint through a rolling broker restart: commits must resume",
    )
    .brokers(BROKERS as usize)
    .topic("t", 6)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[("group.id", "flink"), ("enable.auto.commit", "false")],
        "t",
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 1,
            commit: CommitPolicy::AsyncEvery {
                interval_ms: CHECKPOINT_MS,
            },
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// A seeded restart order, the coordinator pinned to its first broker.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_3840);
    let mut order: Vec<i32> = (1..=BROKERS).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below_inclusive(i as u64) as usize;
        order.swap(i, j);
    }
    let mut plan = vec![(
        0,
        Fault::MoveCoordinator {
            offsets_partition: 0,
            to: Some(order[0]),
        },
    )];
    let mut at_ms = 3_000 + rng.below_inclusive(2_000);
    for broker in &order {
        plan.push((at_ms, Fault::RestartBroker { broker: *broker }));
        at_ms += 4_000 + rng.below_inclusive(2_000);
    }
    let healed_at_ms = plan.last().map_or(0, |(t, _)| *t);
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(Liveness {
            within_ms: 10_000,
            require_committed: true,
            ..Liveness::default()
        })
        .with(CoordinatorRediscovery { bound_ms: 5_000 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_broker_restarts_once_and_the_coordinator_starts_on_the_first() {
        for seed in 0..50 {
            let planned = plan(seed);
            let Fault::MoveCoordinator {
                to: Some(first), ..
            } = planned.plan[0].1
            else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            let restarted: Vec<i32> = planned.plan[1..]
                .iter()
                .map(|(_, f)| match f {
                    Fault::RestartBroker { broker } => *broker,
                    other => panic!("seed {seed}: {other:?}"),
                })
                .collect();
            assert_eq!(restarted[0], first, "seed {seed}");
            let mut sorted = restarted.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![1, 2, 3], "seed {seed}");
            for pair in planned.plan[1..].windows(2) {
                assert!(pair[1].0 - pair[0].0 >= 4_000, "seed {seed}");
            }
            assert!(planned.healed_at_ms < PRODUCE_UNTIL_MS);
        }
        assert_ne!(plan(1), plan(2));
    }

    #[test]
    fn commits_come_from_the_checkpoint_not_the_poll_loop() {
        let s = scenario();
        assert_eq!(
            s.subjects[0].app.commit,
            CommitPolicy::AsyncEvery {
                interval_ms: CHECKPOINT_MS
            }
        );
        assert!(s.subjects[0].subscribe.is_empty());
        assert_eq!(s.subjects[0].assign.len(), 6);
    }
}
