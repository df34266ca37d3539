//! `stall-regain`: a member whose application stalled past `max.poll.interval.ms` loses its
//! partitions, gets the same ones back and is positioned at the committed offset; no position
//! from before the loss is committed in the new ownership. No upstream Jira: found by this
//! project's exploration (family-zombie seed 114, fixed in the commit manager); this scenario
//! makes the race the rule rather than one seed's luck.
//!
//! **The race.** Member `c0` (classic protocol) is the only subscriber of its topic and
//! auto-commits every 50–200 ms; a bystander `c1` in the same group reads another topic and
//! heartbeats every 100 ms, so the group never goes empty and `c0`'s rejoin is an ordinary
//! rebalance, not a new group's (`group.initial.rebalance.delay.ms`). `c0`'s application
//! stalls with the records of one `poll` in hand for 1.2–2× `max.poll.interval.ms`; the poll
//! timer expires, the member leaves the group and its partitions are lost. The stall ends: the
//! next `poll` (2 s timeout) reports the positions after the records it processed (the previous
//! ownership's), runs `on_partitions_lost`, rejoins (a reset generation commits nothing first,
//! so no fresh poll is awaited) and gets the same partitions back, which start again at the
//! committed offset, from before the stall. Its `on_partitions_assigned` takes 300–800 ms,
//! longer than the auto-commit interval, so an auto-commit falls between the new assignment and
//! the application's next `poll`. Kept past the loss, the old position is what that
//! auto-commit sends: the records between the committed offset and it are then delivered again
//! below an offset the group already committed in this ownership.
//!
//! **The invariant.** A poll's positions belong to the ownership they were taken in: nothing
//! committed in the new ownership is past what it delivered (`duplicate-deliveries`, which
//! re-judges a re-delivery below a commit of the same ownership), the standard set, the stalled
//! member leaves when its poll timer expires (`poll-timeout-leaves`), and liveness. Our commit
//! manager forgets a poll snapshot's position and committed floor once the partition is no
//! longer assigned (`CommitRequestManager::forget_unassigned`); without it (the
//! `stale-position-survives-loss` sabotage) the stale position is committed.
//!
//! **Measured.** Seeds 0–99 pass on our consumer; under the sabotage seeds 0–29 all fail
//! (`duplicate-deliveries`, `committed-offsets-monotonic`). The legacy model fails `liveness`
//! on every seed of 0–19 (records of `regain` not consumed in time, not investigated): this
//! scenario judges our consumer.

use sim::check::{CheckerSet, KnownGaps, OwnershipMode};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::PollTimeoutLeaves;
use crate::families::{
    between, knob_rng, liveness_after_heal, pick, set, GroupKnobs, Protocol, GROUP,
};
use crate::scenario::{FaultSource, MemberFaults, PlannedFaults, Scenario, Stall};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "stall-regain";

const SALT: u64 = 0x7265_6761_696e;
const TOPIC: &str = "regain";
/// The bystander's topic: it keeps the group from going empty, so the stalled member's rejoin
/// is an ordinary rebalance rather than a new group's (`group.initial.rebalance.delay.ms`).
const OTHER_TOPIC: &str = "other";
const PARTITIONS: i32 = 3;
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 30_000;
/// Long enough that the `poll` after the stall is still waiting when the partitions come back.
const POLL_TIMEOUT_MS: u64 = 2_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallRegain {
    /// Timeouts and assignor; always the classic protocol and auto-commit.
    pub group: GroupKnobs,
    /// How long `on_partitions_assigned` takes: longer than the auto-commit interval.
    pub assigned_ms: u64,
    pub stall: Stall,
}

/// The seeds' knobs.
pub fn draw(seed: u64) -> StallRegain {
    let mut rng = knob_rng(seed, SALT);
    let mut group = GroupKnobs::draw(&mut rng, &[2_000, 3_000]);
    group.protocol = Protocol::Classic;
    group.auto_commit_ms = Some(pick(&mut rng, &[50, 100, 200]));
    let assigned_ms = between(&mut rng, 300, 800);
    let poll = group.max_poll_interval_ms;
    let stall = Stall {
        at_ms: between(&mut rng, 3_000, 8_000),
        for_ms: between(&mut rng, poll * 6 / 5, poll * 2),
    };
    StallRegain {
        group,
        assigned_ms,
        stall,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    let spec = &mut scenario.subjects[0];
    d.group.apply(spec);
    spec.listener = ListenerBehaviour {
        assigned_ms: d.assigned_ms,
        ..ListenerBehaviour::default()
    };
    spec.member_faults = MemberFaults {
        stall: Some(d.stall),
        ..MemberFaults::default()
    };
    // The bystander must speak the same assignor or its JoinGroup is refused
    // (INCONSISTENT_GROUP_PROTOCOL).
    set(
        &mut scenario.subjects[1],
        "partition.assignment.strategy",
        d.group.classic_assignor,
    );
}

/// No cluster faults; liveness is judged from the end of the stall (the stall starts at the
/// first poll with records at or after `at_ms`, so up to a second later).
fn plan(seed: u64) -> PlannedFaults {
    let stall = draw(seed).stall;
    PlannedFaults {
        plan: Vec::new(),
        healed_at_ms: stall.at_ms + stall.for_ms + 1_000,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(PollTimeoutLeaves::default())
        .with(liveness_after_heal(8_000))
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "the only member stalls past max.poll.interval.ms, loses its partitions and gets them back: no position of the old ownership is committed in the new one",
    )
    .topic(TOPIC, PARTITIONS)
    .subscribing_consumer(
        "c0",
        &[("auto.offset.reset", "earliest")],
        &[TOPIC],
        AppBehaviour {
            poll_timeout_ms: POLL_TIMEOUT_MS,
            commit: CommitPolicy::Auto,
            ..AppBehaviour::default()
        },
    )
    .topic(OTHER_TOPIC, 1)
    .subscribing_consumer(
        "c1",
        &[
            ("group.id", GROUP),
            ("group.protocol", "classic"),
            ("session.timeout.ms", "6000"),
            ("heartbeat.interval.ms", "100"),
            ("enable.auto.commit", "false"),
            ("auto.offset.reset", "earliest"),
        ],
        &[OTHER_TOPIC],
        AppBehaviour::default(),
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
    fn every_draw_auto_commits_inside_the_assignment_callback_after_a_poll_timeout() {
        let draws: Vec<StallRegain> = (0..200).map(draw).collect();
        for d in &draws {
            assert_eq!(d.group.protocol, Protocol::Classic);
            let auto_commit_ms = d.group.auto_commit_ms.expect("always auto-commits");
            assert!(
                d.assigned_ms > auto_commit_ms,
                "an auto-commit falls inside it"
            );
            assert!(
                d.stall.for_ms > d.group.max_poll_interval_ms,
                "the poll timer expires"
            );
            assert!(
                d.stall.at_ms + d.stall.for_ms + 1_000 + 8_000 < RUN_MS,
                "time to rejoin and settle"
            );
            assert!(d.stall.at_ms + d.stall.for_ms < PRODUCE_UNTIL_MS);
        }
    }
}
