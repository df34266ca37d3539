//! `committed-after-move`: a consumer restarted right after its group's coordinator moved
//! starts from the committed offset, not from what the new coordinator's trailing high
//! watermark still shows. No upstream Jira: found by this project's real-cluster chaos test
//! (committed offsets seen moving back after a broker kill); Java's consumers cannot have it
//! since KIP-447 (Kafka 2.5), which made them send OffsetFetch with `requireStable`.
//!
//! **The race.** A consumer with a `group.id` and manually assigned partitions commits after
//! every poll (or auto-commits every 100–300 ms) while a producer writes. Its process is killed,
//! the group's coordinator moves to another broker a moment later, and a new process of the same
//! consumer starts shortly after the move and asks the new coordinator for its committed
//! offsets. A broker that has just become leader of the `__consumer_offsets` partition learns
//! the high watermark from its followers' next fetches, so it starts below its predecessor's;
//! Kafka's coordinator answers an OffsetFetch without `require_stable` with a read at that high
//! watermark (`GroupCoordinatorService.fetchOffsets`; `CoordinatorLoaderImpl` leaves what it
//! replayed above it uncommitted), in which the commits of the last moment before the move are
//! missing (the simulator's `coordinator_high_watermark_lag_ms`, 500 ms in every scenario). No
//! group write closes the window first: a manually assigned consumer never joins. The seed draws
//! the kill time, the gap before the move (0–300 ms), the restart (10–400 ms after the move),
//! the commit policy and which broker takes over.
//!
//! **The invariant.** The restarted consumer resumes at the last committed offset: no record
//! the group had committed past is delivered again (`duplicate-deliveries`) and no commit moves
//! the committed offset back (`committed-offsets-monotonic`); plus the standard set (nothing
//! acknowledged is lost, in-order delivery) and liveness. Our consumer fetches committed offsets
//! with `require_stable` (a write operation in Kafka's coordinator, which sees the whole log),
//! as Java's `CommitRequestManager` and `ConsumerCoordinator` do; without it (the
//! `offset-fetch-not-stable` sabotage) the restarted process resumes up to half a second of
//! commits behind.
//!
//! **Legacy.** The legacy model (Kafka 3.1's classic consumer) also asks with `require_stable`,
//! so it holds too; the bug is the project's, not the old design's.

use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::families::{between, knob_rng, liveness_after_heal, pick, set, GROUP};
use crate::scenario::{FaultSource, MemberFaults, PlannedFaults, Scenario};

pub const NAME: &str = "committed-after-move";

const SALT: u64 = 0x6d6f_7665;
const TOPIC: &str = "moves";
const PARTITIONS: i32 = 3;
const BROKERS: i32 = 3;
const PRODUCE_UNTIL_MS: u64 = 12_000;
const RUN_MS: u64 = 20_000;

/// How the consumer commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commits {
    /// `commitAsync` of what each poll returned.
    EachPoll,
    /// `enable.auto.commit=true` with this `auto.commit.interval.ms`.
    Auto { interval_ms: u64 },
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedAfterMove {
    pub commits: Commits,
    /// The first coordinator (a broker id).
    pub coordinator: i32,
    /// The one that takes over.
    pub successor: i32,
    /// When the consumer's process is killed.
    pub crash_ms: u64,
    /// How long after the kill the coordinator moves.
    pub move_after_ms: u64,
    /// How long after the move the new process starts.
    pub restart_after_move_ms: u64,
}

/// The seeds' knobs.
pub fn draw(seed: u64) -> CommittedAfterMove {
    let mut rng = knob_rng(seed, SALT);
    let commits = pick(
        &mut rng,
        &[
            Commits::EachPoll,
            Commits::EachPoll,
            Commits::Auto { interval_ms: 100 },
            Commits::Auto { interval_ms: 300 },
        ],
    );
    let coordinator = 1 + rng.below_inclusive(BROKERS as u64 - 1) as i32;
    let successor = 1 + (coordinator + rng.below_inclusive(1) as i32) % BROKERS;
    CommittedAfterMove {
        commits,
        coordinator,
        successor,
        crash_ms: between(&mut rng, 3_000, 8_000),
        move_after_ms: between(&mut rng, 0, 300),
        restart_after_move_ms: between(&mut rng, 10, 400),
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    let spec = &mut scenario.subjects[0];
    match d.commits {
        Commits::EachPoll => {
            set(spec, "enable.auto.commit", "false");
            spec.app.commit = CommitPolicy::AsyncEachPoll;
        }
        Commits::Auto { interval_ms } => {
            set(spec, "enable.auto.commit", "true");
            set(spec, "auto.commit.interval.ms", &interval_ms.to_string());
            spec.app.commit = CommitPolicy::Auto;
        }
    }
    spec.member_faults = MemberFaults {
        crash_at_ms: Some(d.crash_ms),
        restart_after_ms: Some(d.move_after_ms + d.restart_after_move_ms),
        ..MemberFaults::default()
    };
}

fn plan(seed: u64) -> PlannedFaults {
    let d = draw(seed);
    let moved_at_ms = d.crash_ms + d.move_after_ms;
    PlannedFaults {
        plan: vec![
            (
                0,
                Fault::MoveCoordinator {
                    offsets_partition: 0,
                    to: Some(d.coordinator),
                },
            ),
            (
                moved_at_ms,
                Fault::MoveCoordinator {
                    offsets_partition: 0,
                    to: Some(d.successor),
                },
            ),
        ],
        healed_at_ms: moved_at_ms,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows).with(liveness_after_heal(8_000))
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "a consumer restarted right after its coordinator moved resumes at the committed offset, not at the new coordinator's trailing high watermark (require_stable, KIP-447)",
    )
    .brokers(BROKERS as usize)
    .topic(TOPIC, PARTITIONS)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[
            ("group.id", GROUP),
            ("auto.offset.reset", "earliest"),
        ],
        TOPIC,
        AppBehaviour {
            commit: CommitPolicy::AsyncEachPoll,
            ..AppBehaviour::default()
        },
    )
    .producer("p0", TOPIC, 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .vary(vary)
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restart_always_lands_inside_the_new_coordinators_lag() {
        let draws: Vec<CommittedAfterMove> = (0..200).map(draw).collect();
        assert!(draws.iter().any(|d| d.commits == Commits::EachPoll));
        assert!(draws
            .iter()
            .any(|d| matches!(d.commits, Commits::Auto { .. })));
        for d in &draws {
            assert_ne!(d.coordinator, d.successor, "the coordinator moves");
            assert!((1..=BROKERS).contains(&d.successor));
            // The new process asks within the lag after the move; the commits it may miss are
            // those of the lag's first part, before the kill.
            assert!(
                d.restart_after_move_ms < crate::scenario::COORDINATOR_HIGH_WATERMARK_LAG_MS - 50
            );
            assert!(d.move_after_ms < crate::scenario::COORDINATOR_HIGH_WATERMARK_LAG_MS);
            assert!(d.crash_ms + d.move_after_ms < PRODUCE_UNTIL_MS);
        }
    }
}
