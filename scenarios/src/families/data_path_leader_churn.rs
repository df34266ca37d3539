//! **Family: data path — leader churn with broker restarts** (the project's own, issue #27; no
//! Jira). Partition leadership moves again and again while the group consumes: leaders are
//! moved (a preferred-leader election, a reassignment) and brokers restart (their partitions
//! elect the next in-sync replica, a bumped epoch; the restarted broker catches up and may
//! lead again; the group coordinator may be among them).
//!
//! **Interleavings aimed at.** A fetch in flight to a broker that stops leading
//! (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, a closed connection); a fetch sent with a
//! stale epoch after metadata changed; the position validated against the new leader
//! (OffsetForLeaderEpoch, KIP-320) while records keep coming; fetch sessions lost with the
//! broker that held them; the coordinator restarting under the group. Per seed: the protocol
//! and commit policy, how the application takes records, one or two members, how often
//! leaders move, which brokers restart and when.
//!
//! **Invariants** ([`super::full_checks`] and [`DataPathAccounting`]): clean elections lose
//! nothing (every replica holds the log up to the high watermark), so every acked record is
//! delivered once and in order per partition (re-deliveries only from the committed offset
//! after a rebalance); the group settles and commits everything after the heal.
//!
//! **Why our design should hold.** The fetch manager sends each partition to the leader its
//! metadata names with the leader epoch it knows; an error that says leadership moved
//! refreshes metadata and validates the position against the new leader before fetching
//! again, and a stale answer is dropped.

use sim::fault::Fault;

use super::data_path::{apply_members, draw_churn, draw_drive};
use super::{
    between, coin, draw_listener, full_checks, group_builder, knob_rng, GroupKnobs, TOPIC,
};
use crate::app::DriveMode;
use crate::checks::DataPathAccounting;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-leader-churn";

const SALT: u64 = 0x6368_7572_6e21;
const PARTITIONS: i32 = 3;
const MEMBERS: usize = 2;
const CHURN_FROM_MS: u64 = 3_000;
const CHURN_UNTIL_MS: u64 = 14_000;
const PRODUCE_UNTIL_MS: u64 = 18_000;
const RUN_MS: u64 = 40_000;
const WITHIN_MS: u64 = 15_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderChurn {
    pub group: GroupKnobs,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    /// The churn, in time order.
    pub plan: Vec<(u64, Fault)>,
}

pub fn draw(seed: u64) -> LeaderChurn {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let drive = draw_drive(&mut rng);
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    let step_max_ms = between(&mut rng, 800, 3_000);
    let plan = draw_churn(
        &mut rng,
        CHURN_FROM_MS,
        CHURN_UNTIL_MS,
        4,
        (300, step_max_ms),
        PARTITIONS,
    );
    LeaderChurn {
        group,
        drive,
        members,
        listeners,
        plan,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    let members = apply_members(
        scenario,
        d.members,
        &d.group,
        &d.listeners,
        d.drive,
        "earliest",
    );
    for spec in members {
        super::set(spec, "metadata.max.age.ms", "3000");
    }
}

fn plan(seed: u64) -> PlannedFaults {
    PlannedFaults {
        plan: draw(seed).plan,
        healed_at_ms: CHURN_UNTIL_MS,
    }
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS).with(DataPathAccounting::default())
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "partition leaders move and brokers restart while the group consumes, poll/recv/stream: clean elections lose nothing, every acked record delivered once in order", PARTITIONS, MEMBERS, &[TOPIC])
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
    fn the_churn_restarts_brokers_and_moves_leaders() {
        let draws: Vec<LeaderChurn> = (0..50).map(draw).collect();
        let restarts = |d: &LeaderChurn| {
            d.plan
                .iter()
                .filter(|(_, f)| matches!(f, Fault::RestartBroker { .. }))
                .count()
        };
        assert!(draws.iter().all(|d| d.plan.len() >= 3));
        assert!(draws.iter().any(|d| restarts(d) >= 2));
        assert!(draws
            .iter()
            .all(|d| d.plan.iter().all(|(at, _)| *at < CHURN_UNTIL_MS)));
    }
}
