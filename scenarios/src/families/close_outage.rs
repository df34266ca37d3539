//! **Family: `close()` during every kind of outage** — members close while their coordinator is
//! dead, unreachable, paused, answering with errors, or holding or losing its answers.
//!
//! **Interleavings aimed at.** Two members leave the group by `close(timeout)` at seeded times;
//! each close falls inside an outage that began 0–2 s before it and lasts past the close
//! timeout: the coordinator's broker killed (restarted later) or paused; the member cut from
//! every broker or from the coordinator only; every OffsetCommit answered
//! `COORDINATOR_NOT_AVAILABLE` or `NOT_COORDINATOR`; the answers of OffsetCommit, LeaveGroup
//! and the KIP-848 heartbeat held longer than the close timeout; or those answers lost half of
//! the time. `close` then has async commits pending (the application commits after every poll,
//! or auto-commits on close), a revocation to run (its listener commits nothing but takes
//! time) and a leave to send. Per seed: protocol, timeouts, commit policy, each leaver's close
//! timeout (0.5, 2 or 5 s), outage kind, lead and length.
//!
//! **Invariants.** `close(t)` returns within `t` plus the time its callbacks ran
//! (`blocking-bounds`, `CloseOvershoot`), every async commit's callback has run when it returns
//! (`async-commits-before-close`, KAFKA-16103/KAFKA-19357), and the full set
//! ([`super::full_checks`]): the remaining members take over the leavers' partitions — by the
//! leave if it got through, by the session timeout if not — and consume and commit everything.
//!
//! **Why our design should hold.** `close` is one application event with a deadline: the
//! background task runs the leave sequence (commit, revoke callback on the application side,
//! leave request) under that deadline and completes every pending commit's future with an
//! error when it cannot finish (`consumer.rs` close, `internals/commit_request_manager.rs`);
//! nothing in it waits on a network answer without the deadline. The members that stay are
//! unaffected apart from the coordinator outage itself.

use kafka_consumer::rt::SeededRng;
use sim::fault::{Direction, Fault, ResponseAction, ResponseRule, Trigger};

use super::{
    between, broker_node, family_scenario, full_checks, knob_rng, pick, Family, GroupKnobs,
    BROKERS, LEAVE_GRACE_MS,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};

pub const NAME: &str = "family-close-outage";

const SALT: u64 = 0x0063_6c6f_7365;
const OFFSET_COMMIT: i16 = 8;
const LEAVE_GROUP: i16 = 13;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const MEMBERS: usize = 4;
/// `c2` and `c3` leave.
const LEAVERS: [usize; 2] = [2, 3];
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 70_000;

/// What is down while a member closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    CoordinatorKilled,
    CoordinatorPaused,
    MemberIsolated,
    CoordinatorUnreachable,
    CommitErrors { code: i16 },
    AnswersHeld,
    AnswersLost,
}

/// One leaver's close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Close {
    pub member: usize,
    pub at_ms: u64,
    pub timeout_ms: u64,
    pub outage: Outage,
    /// The outage starts this long before the close…
    pub lead_ms: u64,
    /// …and ends this long after the close timeout.
    pub tail_ms: u64,
}

impl Close {
    pub fn outage_window(&self) -> (u64, u64) {
        (
            self.at_ms - self.lead_ms,
            self.at_ms + self.timeout_ms + self.tail_ms,
        )
    }
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseOutage {
    pub group: GroupKnobs,
    pub coordinator: i32,
    pub closes: Vec<Close>,
}

fn draw_outage(rng: &mut SeededRng) -> Outage {
    match rng.below_inclusive(6) {
        0 => Outage::CoordinatorKilled,
        1 => Outage::CoordinatorPaused,
        2 => Outage::MemberIsolated,
        3 => Outage::CoordinatorUnreachable,
        4 => Outage::CommitErrors {
            code: pick(rng, &[COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR]),
        },
        5 => Outage::AnswersHeld,
        _ => Outage::AnswersLost,
    }
}

pub fn draw(seed: u64) -> CloseOutage {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let coordinator = 1 + rng.below_inclusive(BROKERS as u64 - 1) as i32;
    let first = between(&mut rng, 6_000, 12_000);
    let second = first + between(&mut rng, 11_000, 13_000);
    let closes = LEAVERS
        .into_iter()
        .zip([first, second])
        .map(|(member, at_ms)| Close {
            member,
            at_ms,
            timeout_ms: pick(&mut rng, &[500, 2_000, 5_000]),
            outage: draw_outage(&mut rng),
            lead_ms: rng.below_inclusive(2_000),
            tail_ms: between(&mut rng, LEAVE_GRACE_MS, 3_500),
        })
        .collect();
    CloseOutage {
        group,
        coordinator,
        closes,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let c = draw(seed);
    for spec in &mut scenario.subjects {
        c.group.apply(spec);
    }
    for close in &c.closes {
        let spec = &mut scenario.subjects[close.member];
        spec.app.close_timeout_ms = close.timeout_ms;
        spec.member_faults = MemberFaults {
            leave_at_ms: Some(close.at_ms),
            ..MemberFaults::default()
        };
    }
}

fn rule(api_key: i16, trigger: Trigger, action: ResponseAction) -> Fault {
    Fault::Response(ResponseRule {
        api_key,
        broker: None,
        trigger,
        action,
    })
}

fn plan(seed: u64) -> PlannedFaults {
    let c = draw(seed);
    let broker = c.coordinator;
    let coordinator = broker_node(broker);
    let mut plan = vec![(
        0,
        Fault::MoveCoordinator {
            offsets_partition: 0,
            to: Some(broker),
        },
    )];
    let mut healed_at_ms = 0;
    for close in &c.closes {
        let (from, until) = close.outage_window();
        healed_at_ms = healed_at_ms.max(until + 1);
        let member = format!("c{}", close.member);
        let (on, off): (Vec<Fault>, Vec<Fault>) = match close.outage {
            Outage::CoordinatorKilled => (
                vec![Fault::KillBroker { broker }],
                vec![Fault::RestartBroker { broker }],
            ),
            Outage::CoordinatorPaused => (
                vec![Fault::PauseBroker { broker }],
                vec![Fault::ResumeBroker { broker }],
            ),
            Outage::MemberIsolated => (
                vec![Fault::ClogNode {
                    node: member.clone(),
                    direction: Direction::Both,
                }],
                vec![Fault::UnclogNode {
                    node: member,
                    direction: Direction::Both,
                }],
            ),
            Outage::CoordinatorUnreachable => {
                let links = [
                    (member.clone(), coordinator.clone()),
                    (coordinator.clone(), member),
                ];
                (
                    links
                        .iter()
                        .map(|(from, to)| Fault::ClogLink {
                            from: from.clone(),
                            to: to.clone(),
                        })
                        .collect(),
                    links
                        .iter()
                        .map(|(from, to)| Fault::UnclogLink {
                            from: from.clone(),
                            to: to.clone(),
                        })
                        .collect(),
                )
            }
            Outage::CommitErrors { code } => (
                vec![rule(
                    OFFSET_COMMIT,
                    Trigger::UntilCleared,
                    ResponseAction::Error(code),
                )],
                vec![Fault::ClearResponses { api_key: None }],
            ),
            Outage::AnswersHeld | Outage::AnswersLost => {
                let action = match close.outage {
                    Outage::AnswersHeld => ResponseAction::Hold {
                        delay_ms: close.timeout_ms + close.tail_ms,
                    },
                    _ => ResponseAction::Lose,
                };
                let trigger = match close.outage {
                    Outage::AnswersHeld => Trigger::UntilCleared,
                    _ => Trigger::Probability(0.5),
                };
                (
                    [OFFSET_COMMIT, LEAVE_GROUP, CONSUMER_GROUP_HEARTBEAT]
                        .into_iter()
                        .map(|api| rule(api, trigger, action))
                        .collect(),
                    vec![Fault::ClearResponses { api_key: None }],
                )
            }
        };
        plan.extend(on.into_iter().map(|f| (from, f)));
        plan.extend(off.into_iter().map(|f| (until, f)));
    }
    plan.sort_by_key(|(at, _)| *at);
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "two members close(0.5–5 s) inside a coordinator or network outage: close returns in time, callbacks run, full checker set",
        partitions: 6,
        members: MEMBERS,
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
    fn each_close_falls_inside_its_outage_and_outages_do_not_overlap() {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let c = draw(seed);
            for close in &c.closes {
                kinds.insert(
                    format!("{:?}", close.outage)
                        .split(' ')
                        .next()
                        .map(str::to_owned),
                );
                let (from, until) = close.outage_window();
                assert!(from <= close.at_ms && until > close.at_ms + close.timeout_ms);
            }
            assert!(c.closes[0].outage_window().1 < c.closes[1].outage_window().0);
            let planned = plan(seed);
            assert!(
                planned.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
            assert!(planned
                .plan
                .iter()
                .all(|(at, _)| *at < planned.healed_at_ms));
        }
        assert_eq!(kinds.len(), 7);
    }
}
