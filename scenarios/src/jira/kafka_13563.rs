//! **KAFKA-13563** — "FindCoordinatorFuture never cleared in non-group mode
//! (consumer#assign)". Introduced by KAFKA-10793's fix (2.6.2 / 2.7.1 / 2.8.0), fixed in
//! 3.1.1 / 3.2.0 (PR #11631), reworked by HOTFIX #12244 (3.2.1 / 3.3.0). Seen in the field as
//! KAFKA-13840 and FLINK-28060 ("Kafka Commit on checkpointing fails repeatedly after a broker
//! restart").
//!
//! **Interleaving.** `group.id` set, `assign()` of every partition, `commitAsync` after each
//! poll. The first poll fetches committed offsets through `ensureCoordinatorReady`, which
//! discovers the coordinator and clears `findCoordinatorFuture`; positions are then known, so
//! no later poll reaches `ensureCoordinatorReady` again. (1) The coordinator's broker restarts:
//! a commit fails with a disconnect or `NOT_COORDINATOR`, the coordinator is marked unknown,
//! and the next `commitOffsetsAsync` calls `lookupCoordinator()`, which sends FindCoordinator
//! and *stores* the future — nothing clears it afterwards. (2) The coordinator moves again:
//! the next `commitOffsetsAsync` gets the stale, completed future back from
//! `lookupCoordinator()`; its listener fires at once, `sendOffsetCommitRequest` finds no
//! coordinator and fails with `COORDINATOR_NOT_AVAILABLE`. No FindCoordinator is ever sent again.
//!
//! **Symptom upstream.** Every later `commitAsync` fails with `RetriableCommitFailedException`
//! until the consumer is restarted; committed offsets stop, lag grows, a restart re-consumes.
//!
//! **Invariants.** (a) coordinator unknown ∧ commits pending ⇒ a FindCoordinator is sent within
//! a bound after the fault heals ([`CoordinatorRediscovery`]); (b) commits succeed again after
//! the coordinator returns: every acked record is committed within a bound ([`Liveness`] with
//! `require_committed`); plus the standard Jepsen and group checkers.
//!
//! **Plan.** Fixed faults, seeded timing: pin the group's coordinator (offsets partition 0) to
//! a seed-chosen broker at 0 ms, restart that broker at 3–6 s, move the coordinator again 4–7 s
//! later. Every seed takes the two losses; the legacy model fails every seed.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::CoordinatorRediscovery;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-13563";

const BROKERS: usize = 3;
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 40_000;

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "assign()+group.id+commitAsync; coordinator restarts then moves: FindCoordinator must be resent, commits must resume",
    )
    .brokers(BROKERS)
    .topic("t", 6)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[("group.id", "g"), ("enable.auto.commit", "false")],
        "t",
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 2,
            commit: CommitPolicy::AsyncEachPoll,
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// The two coordinator losses at seeded times.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_3563);
    let coordinator = 1 + rng.below_inclusive(BROKERS as u64 - 1) as i32;
    let restart_ms = 3_000 + rng.below_inclusive(3_000);
    let move_ms = restart_ms + 4_000 + rng.below_inclusive(3_000);
    PlannedFaults {
        plan: vec![
            (
                0,
                Fault::MoveCoordinator {
                    offsets_partition: 0,
                    to: Some(coordinator),
                },
            ),
            (
                restart_ms,
                Fault::RestartBroker {
                    broker: coordinator,
                },
            ),
            (
                move_ms,
                Fault::MoveCoordinator {
                    offsets_partition: 0,
                    to: None,
                },
            ),
        ],
        healed_at_ms: move_ms,
    }
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
    fn every_seed_pins_restarts_then_moves_the_coordinator() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(0, Fault::MoveCoordinator { to: Some(b), .. }), (restart_ms, Fault::RestartBroker { broker }), (move_ms, Fault::MoveCoordinator { to: None, .. })] =
                planned.plan.as_slice()
            else {
                panic!("seed {seed}: unexpected plan {:?}", planned.plan);
            };
            assert_eq!(b, broker);
            assert!((1..=BROKERS as i32).contains(b));
            assert!((3_000..=6_000).contains(restart_ms));
            assert!(move_ms - restart_ms >= 4_000);
            assert_eq!(planned.healed_at_ms, *move_ms);
            assert!(*move_ms < PRODUCE_UNTIL_MS);
        }
        assert_ne!(plan(1), plan(2), "timing is drawn per seed");
    }

    #[test]
    fn the_scenario_assigns_every_partition_with_a_group() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 1);
        assert_eq!(s.subjects[0].assign.len(), 6);
        assert_eq!(s.subjects[0].group_id(), "g");
        assert!(
            s.run_ms > PRODUCE_UNTIL_MS + 10_000,
            "liveness can be judged"
        );
    }
}
