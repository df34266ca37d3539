//! **KAFKA-14639** — "Kafka CooperativeStickyAssignor revokes/assigns partition in one
//! rebalance cycle" (PR #13550, commit ae722570288, fixed in 3.4.1 / 3.5.0), the last chapter
//! of the ownedPartitions/generation saga that began with **KAFKA-13419** ("Only reset
//! generation ID when ILLEGAL_GENERATION", 3.2.0; KAFKA-13891's reset on a SyncGroup
//! `REBALANCE_IN_PROGRESS` shipped in 3.3.0 and was reverted by 3.4.0 because it revoked too
//! much, KAFKA-14016). Modelled as [`LegacyVersion::V3_4_0`]: 3.4.0's cooperative protocol and
//! its `AbstractStickyAssignor`, which honours only the owned partitions of members of the
//! highest generation in the group.
//!
//! **Interleaving.** Classic protocol, `cooperative-sticky`, three members. c0 (the leader)
//! and c1 own three partitions each in generation N. (1) c2 joins; c1 hears of the rebalance
//! and sends its JoinGroup, while c0's requests are held in its link for 2.4–2.8 s, so c0
//! rejoins last. (2) From just before c0's JoinGroup completes the join, everything the
//! coordinator sends c1 is held: generation N+1 forms with c1 in it, but c1 never hears its
//! JoinGroup answer — its `generation` stays N while it goes on owning its three partitions.
//! (3) c0 assigns N+1 (c1 keeps two, one partition each of c0 and c1 is to move to c2), syncs
//! and revokes its one (5.5 s in `onPartitionsRevoked`), then rejoins: generation N+2 starts,
//! in time to spare c1 from the pending-sync expiry. (4) c1's requests time out, the
//! connection closes, the late answer is never read (the model's fetches share the
//! connection and time out first; Java's JoinGroup, alone on its coordinator connection,
//! times out after the rebalance timeout + 5 s — before the heal either way); the link heals
//! and c1 joins N+2 claiming its three partitions with generation N, while c0 and c2 say N+1.
//! (5) 3.4.0's leader drops c1's claims — nobody else claims those partitions, but c1 is below
//! the highest generation — and hands them out as unowned: c2 gets one or two of them *now*,
//! not in a follow-up rebalance, while c1's assignment lacks them and it revokes them after
//! its SyncGroup. Until c1's `onPartitionsRevoked` returns, c1 and c2 both own them (and both
//! fetch them).
//!
//! **Symptom upstream.** "A single partition may be revoked and assigned during a single round
//! of rebalance" (the PR): a member that missed a rebalance cycle loses partitions that go
//! straight to another member, so two consumers process them at once — what the cooperative
//! protocol exists to prevent. 3.4.1 / 3.5.0 honour every claim and let the highest generation
//! among the *claimants* win.
//!
//! **Invariants.** No partition owned by two members at once (`exclusive-ownership`,
//! windows); a member revokes only partitions it owned; the rebalance callbacks in order;
//! plus the standard set.
//!
//! **Our design.** Our sticky assignors resolve each claim by the highest generation among its
//! claimants (`consumer/src/assignor/abstract_sticky.rs`): c1's uncontested claims stand, its
//! partitions stay with it or move through a revocation first.
//!
//! **Plan.** Fixed faults, seeded timing: c2 joins at 12 s; c0's link to the coordinator is
//! clogged from 12 s for 2.4–2.8 s; the coordinator's link to c1 from 1.7–1.9 s after 12 s
//! until 14.4–14.8 s after it (past c1's JoinGroup timeout, before N+2's join deadline).

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::Fault;

use crate::app::AppBehaviour;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "kafka-14639";

const COORDINATOR: &str = "broker-1";
/// When c2 joins and c0's link is clogged.
const JOINER_START_MS: u64 = 12_000;
const PRODUCE_UNTIL_MS: u64 = 40_000;
const RUN_MS: u64 = 50_000;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "false"),
    ("session.timeout.ms", "20000"),
    ("heartbeat.interval.ms", "1000"),
    ("max.poll.interval.ms", "8000"),
    ("request.timeout.ms", "5000"),
    ("partition.assignment.strategy", "cooperative-sticky"),
];

fn listener(revoked_ms: u64) -> ListenerBehaviour {
    ListenerBehaviour {
        revoked_ms,
        ..ListenerBehaviour::default()
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "cooperative-sticky; a member misses its JoinGroup answer and rejoins a generation behind: its partitions must not go to another member before it revokes them (3.4.0)",
    )
    .topic("t", 6)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], AppBehaviour::default())
    .listener(listener(5_500))
    .subscribing_consumer("c1", PROPERTIES, &["t"], AppBehaviour::default())
    .listener(listener(300))
    .start_at(500)
    .subscribing_consumer("c2", PROPERTIES, &["t"], AppBehaviour::default())
    .listener(listener(300))
    .start_at(JOINER_START_MS)
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V3_4_0)
    .build()
}

fn clog(from: &str, to: &str) -> Fault {
    Fault::ClogLink {
        from: from.to_owned(),
        to: to.to_owned(),
    }
}

fn unclog(from: &str, to: &str) -> Fault {
    Fault::UnclogLink {
        from: from.to_owned(),
        to: to.to_owned(),
    }
}

/// c0 → coordinator held while c2 joins (c0 rejoins last); coordinator → c1 held from before
/// the join completes until past c1's JoinGroup timeout.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_4639);
    let c0_healed_ms = JOINER_START_MS + 2_400 + rng.below_inclusive(400);
    let c1_cut_ms = JOINER_START_MS + 1_700 + rng.below_inclusive(200);
    let c1_healed_ms = JOINER_START_MS + 14_400 + rng.below_inclusive(400);
    let mut plan = vec![
        (JOINER_START_MS, clog("c0", COORDINATOR)),
        (c1_cut_ms, clog(COORDINATOR, "c1")),
        (c0_healed_ms, unclog("c0", COORDINATOR)),
        (c1_healed_ms, unclog(COORDINATOR, "c1")),
    ];
    plan.sort_by_key(|(at_ms, _)| *at_ms);
    PlannedFaults {
        plan,
        healed_at_ms: c1_healed_ms,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_holds_c0_then_cuts_c1_past_its_join_timeout() {
        for seed in 0..50 {
            let planned = plan(seed);
            let at = |fault: &Fault| {
                planned
                    .plan
                    .iter()
                    .find(|(_, f)| f == fault)
                    .map(|(at_ms, _)| *at_ms)
                    .unwrap_or_else(|| panic!("seed {seed}: no {fault:?}"))
            };
            let c0_held = at(&clog("c0", COORDINATOR));
            let c0_healed = at(&unclog("c0", COORDINATOR));
            let c1_cut = at(&clog(COORDINATOR, "c1"));
            let c1_healed = at(&unclog(COORDINATOR, "c1"));
            assert_eq!(c0_held, JOINER_START_MS);
            assert!(
                c1_cut < c0_healed,
                "seed {seed}: c1 is cut before c0 rejoins"
            );
            // c1 sends its JoinGroup within a heartbeat interval (1 s) and a poll (0.1 s) of
            // c2's join; its timeout is max.poll.interval.ms + 5 s later. The cut outlasts it.
            assert!(
                c1_healed > JOINER_START_MS + 1_100 + 8_000 + 5_000,
                "seed {seed}"
            );
            assert_eq!(planned.healed_at_ms, c1_healed);
        }
        assert_ne!(plan(1), plan(2), "timing is drawn per seed");
    }

    #[test]
    fn the_scenario_runs_three_cooperative_members_on_3_4_0() {
        let s = scenario();
        assert_eq!(s.legacy_version, LegacyVersion::V3_4_0);
        assert_eq!(s.subjects.len(), 3);
        for subject in &s.subjects {
            assert!(subject
                .properties
                .iter()
                .any(|(k, v)| k == "partition.assignment.strategy" && v == "cooperative-sticky"));
        }
        assert!((s.checks)().names().contains(&"exclusive-ownership"));
    }
}
