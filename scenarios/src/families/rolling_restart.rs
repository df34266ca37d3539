//! **Family: rolling broker restarts** — every broker restarted in turn, as an upgrade does,
//! while the group consumes, commits and takes in a new member.
//!
//! **Interleavings aimed at.** Each broker in a seeded order goes down in one of three ways —
//! restarted at once (in-memory state lost, connections reset), killed and restarted after
//! 0.5–4 s (partition leadership and the coordinator fail over while it is down), or paused
//! 0.5–4 s (a GC stall: connections stay open, requests hang) — with 1–4 s between one
//! broker's return and the next one's turn. Every broker coordinates or leads something at some
//! point, so the members see fetch sessions dropped, `NOT_LEADER_OR_FOLLOWER`, coordinator
//! moves and requests that time out instead of failing. A third member joins at a seeded time
//! during the roll, so a rebalance runs across a restart. Per seed: protocol, timeouts, commit
//! policy, order, modes, gaps, the join.
//!
//! **Invariants.** The full set ([`super::full_checks`]): no record lost or delivered twice
//! beyond the at-least-once bound across the leader changes (fetch positions survive a
//! leadership change; a reset happens only with `auto.offset.reset` and is recorded), committed
//! offsets never regress, and once the last broker is back the group settles and commits
//! everything within 30 s.
//!
//! **Why our design should hold.** Metadata is refreshed on every leader error and the fetcher
//! re-validates its position against the new leader; fetch sessions are re-established from
//! scratch after a disconnect (`network/`, `internals/fetch*`). Requests carry timeouts, so a
//! paused broker delays but cannot wedge the background loop, and every group request's
//! failure feeds the level-triggered coordinator rediscovery. The membership state machine does
//! not depend on which broker answers.

use sim::fault::Fault;

use super::{between, family_scenario, full_checks, knob_rng, pick, Family, GroupKnobs, BROKERS};
use crate::scenario::{PlannedFaults, Scenario};

pub const NAME: &str = "family-rolling-restart";

const SALT: u64 = 0x726f_6c6c;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 70_000;

/// How one broker goes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Restart,
    KillThenRestart { down_ms: u64 },
    Pause { for_ms: u64 },
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roll {
    pub group: GroupKnobs,
    pub start_ms: u64,
    /// In order: broker, mode, gap after it is back.
    pub steps: Vec<(i32, Mode, u64)>,
    pub join_ms: u64,
}

pub fn draw(seed: u64) -> Roll {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let start_ms = between(&mut rng, 3_000, 8_000);
    let mut order: Vec<i32> = (1..=BROKERS).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below_inclusive(i as u64) as usize;
        order.swap(i, j);
    }
    let steps = order
        .into_iter()
        .map(|broker| {
            let mode = match rng.below_inclusive(2) {
                0 => Mode::Restart,
                1 => Mode::KillThenRestart {
                    down_ms: between(&mut rng, 500, 4_000),
                },
                _ => Mode::Pause {
                    for_ms: between(&mut rng, 500, 4_000),
                },
            };
            (broker, mode, between(&mut rng, 1_000, 4_000))
        })
        .collect();
    let join_ms = start_ms + pick(&mut rng, &[0, 2_000, 5_000, 9_000]);
    Roll {
        group,
        start_ms,
        steps,
        join_ms,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let roll = draw(seed);
    for spec in &mut scenario.subjects {
        roll.group.apply(spec);
    }
    scenario.subjects[2].start_ms = roll.join_ms;
}

fn plan(seed: u64) -> PlannedFaults {
    let roll = draw(seed);
    let mut plan = Vec::new();
    let mut at = roll.start_ms;
    for (broker, mode, gap) in roll.steps {
        match mode {
            Mode::Restart => plan.push((at, Fault::RestartBroker { broker })),
            Mode::KillThenRestart { down_ms } => {
                plan.push((at, Fault::KillBroker { broker }));
                at += down_ms;
                plan.push((at, Fault::RestartBroker { broker }));
            }
            Mode::Pause { for_ms } => {
                plan.push((at, Fault::PauseBroker { broker }));
                at += for_ms;
                plan.push((at, Fault::ResumeBroker { broker }));
            }
        }
        at += gap;
    }
    PlannedFaults {
        plan,
        healed_at_ms: at,
    }
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description:
            "each broker restarted, killed or paused in turn while a member joins: full checker set",
        partitions: 6,
        members: 3,
        produce_until_ms: PRODUCE_UNTIL_MS,
        run_ms: RUN_MS,
        plan,
        checks,
        vary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_broker_goes_down_once_and_comes_back() {
        for seed in 0..100 {
            let planned = plan(seed);
            let mut brokers: Vec<i32> = planned
                .plan
                .iter()
                .filter_map(|(_, f)| match f {
                    Fault::RestartBroker { broker } | Fault::ResumeBroker { broker } => {
                        Some(*broker)
                    }
                    _ => None,
                })
                .collect();
            brokers.sort_unstable();
            assert_eq!(brokers, vec![1, 2, 3], "seed {seed}");
            assert!(planned.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS);
            assert!(planned
                .plan
                .iter()
                .all(|(at, _)| *at < planned.healed_at_ms));
        }
    }
}
