//! **KAFKA-6362** — "Async auto-commit should discover coordinator if it is unknown" (PR #4326,
//! commit ac267dc5cec, fixed in 1.1.0). Modelled as [`LegacyVersion::V1_0_0`]: 1.0.0's
//! `maybeAutoCommitOffsetsAsync`, the rest of the model being 3.1.0's.
//!
//! **Interleaving.** `group.id` set, `assign()` of every partition, `enable.auto.commit=true`,
//! the application never commits itself. (1) The group's coordinator moves to another broker:
//! the next auto-commit is answered `NOT_COORDINATOR` and the coordinator is marked unknown.
//! (2) In 1.0.0, `maybeAutoCommitOffsetsAsync` sees the coordinator unknown and only moves
//! `nextAutoCommitDeadline` by `retry.backoff.ms`; it never calls `commitOffsetsAsync`, the one
//! path that would call `lookupCoordinator()`. Manual assignment's `ConsumerCoordinator.poll`
//! does no coordinator work and `updateFetchPositions` no longer needs committed offsets, so
//! nothing sends a FindCoordinator again. 3.1.0 sends the commit through `commitOffsetsAsync`,
//! which looks the coordinator up and commits on the new one (one loss only: the second would
//! be KAFKA-13563).
//!
//! **Symptom upstream.** With manual assignment, auto-commits stop for good after a coordinator
//! failover, silently (the skipped commit logs nothing); a restart re-consumes everything since.
//!
//! **Invariant.** Commits resume once the coordinator is back: every acked record is committed
//! within a bound after the heal ([`Liveness`] with `require_committed`); the rediscovery bound
//! of [`CoordinatorRediscovery`] and the standard set.
//!
//! **Our design.** `internals/coordinator_request_manager.rs` is level-triggered: every loop of
//! the background task, a `group.id` with the coordinator unknown sends a FindCoordinator, in
//! assign mode too, whoever noticed the loss. The auto-commit (`internals/commit_request_manager.rs`)
//! waits for the coordinator instead of deciding whether to look for it.
//!
//! **Plan.** Fixed faults, seeded timing: pin the coordinator (offsets partition 0) to a
//! seed-chosen broker at 0 ms, move it to another broker at a seeded 3–6 s.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::CoordinatorRediscovery;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-6362";

const BROKERS: usize = 3;
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 35_000;

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "assign()+auto-commit (1.0.0); the coordinator moves: auto-commit must rediscover it and resume",
    )
    .brokers(BROKERS)
    .topic("t", 6)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[
            ("group.id", "g"),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "500"),
        ],
        "t",
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 2,
            commit: CommitPolicy::Auto,
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V1_0_0)
    .build()
}

/// The coordinator pinned, then moved once at a seeded time.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0000_6362);
    let coordinator = 1 + rng.below_inclusive(BROKERS as u64 - 1) as i32;
    let move_ms = 3_000 + rng.below_inclusive(3_000);
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
    fn every_seed_pins_then_moves_the_coordinator_once() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(0, Fault::MoveCoordinator { to: Some(b), .. }), (move_ms, Fault::MoveCoordinator { to: None, .. })] =
                planned.plan.as_slice()
            else {
                panic!("seed {seed}: unexpected plan {:?}", planned.plan);
            };
            assert!((1..=BROKERS as i32).contains(b));
            assert!((3_000..=6_000).contains(move_ms));
            assert!(*move_ms + 10_000 < PRODUCE_UNTIL_MS);
        }
        assert_ne!(plan(1), plan(2), "timing is drawn per seed");
    }

    #[test]
    fn the_scenario_auto_commits_in_assign_mode_on_1_0_0() {
        let s = scenario();
        assert_eq!(s.legacy_version, LegacyVersion::V1_0_0);
        assert_eq!(s.subjects[0].assign.len(), 6);
        assert_eq!(s.subjects[0].app.commit, CommitPolicy::Auto);
        assert!(
            s.run_ms > PRODUCE_UNTIL_MS + 10_000,
            "liveness can be judged"
        );
    }
}
