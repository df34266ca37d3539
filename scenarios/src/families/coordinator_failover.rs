//! **Family: coordinator failover mid-join, mid-sync, mid-commit** — the group's coordinator
//! moves or its broker dies right when group traffic is in flight.
//!
//! **Interleavings aimed at.** A member joins, another leaves, a third joins later: each
//! membership change starts a rebalance, and at a seeded offset after it (0–1 s, inside the
//! JoinGroup/SyncGroup round or the KIP-848 reconciliation heartbeats) the coordinator is
//! disrupted in one of five ways: moved to another broker; its broker killed and restarted
//! 0.5–3 s later; the next JoinGroup/SyncGroup/heartbeat/OffsetCommit response held 1–6 s and
//! the coordinator moved while it is held (the member gets its answer from a broker that no
//! longer coordinates, or a fresh coordinator that never saw the request); that response lost
//! (the request applied, the answer dropped with the connection) and then the move; or
//! `NOT_COORDINATOR` for the next requests. Independently, one OffsetCommit response at a
//! seeded time is held or lost (mid-commit). Per seed: protocol, timeouts, commit policy,
//! the event times, each disruption.
//!
//! **Invariants.** The full set ([`super::full_checks`]); in particular a commit whose answer
//! was lost or came from a stale coordinator never moves the committed offset back
//! (`committed-offsets-monotonic`), and after the last disruption the group settles and commits
//! everything within 30 s (`liveness`: the coordinator is rediscovered).
//!
//! **Why our design should hold.** The coordinator manager
//! (`internals/coordinator_request_manager.rs`) is level-triggered: any coordinator error,
//! disconnect or timeout of a group or commit request marks the coordinator unknown and the
//! next background loop sends FindCoordinator. Classic JoinGroup/SyncGroup are retried from the
//! state machine (`internals/membership/classic/`), not re-sent blindly; KIP-848 heartbeats are
//! single-flight with the member epoch the coordinator acknowledged, so a held answer cannot
//! resurrect an old epoch. Async commits are never retried (their callback sees the error);
//! only the commit before revocation and `commit_sync` retry, with the offsets read at retry
//! time.

use kafka_consumer::rt::SeededRng;
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use super::{
    between, family_scenario, full_checks, knob_rng, pick, Family, GroupKnobs, Protocol, BROKERS,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};

pub const NAME: &str = "family-coordinator-failover";

const SALT: u64 = 0x0063_6f6f_7264;
const OFFSET_COMMIT: i16 = 8;
const JOIN_GROUP: i16 = 11;
const HEARTBEAT: i16 = 12;
const SYNC_GROUP: i16 = 14;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
const NOT_COORDINATOR: i16 = 16;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 65_000;

/// One disruption around a group event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disruption {
    Move,
    KillRestart { down_ms: u64 },
    HoldThenMove { api: i16, hold_ms: u64 },
    LoseThenMove { api: i16 },
    NotCoordinator { api: i16, times: u32 },
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    pub group: GroupKnobs,
    /// `c2` joins, `c1` leaves, `c3` joins.
    pub join_ms: u64,
    pub leave_ms: u64,
    pub join_again_ms: u64,
    /// The first coordinator.
    pub coordinator: i32,
    /// Per event: offset after it and what happens.
    pub disruptions: Vec<(u64, Disruption)>,
    /// The mid-commit fault: when, and held (`Some(ms)`) or lost.
    pub commit_fault: (u64, Option<u64>),
}

fn group_apis(protocol: Protocol) -> &'static [i16] {
    match protocol {
        Protocol::Classic => &[JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT],
        Protocol::Consumer => &[CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT],
    }
}

fn draw_disruption(rng: &mut SeededRng, protocol: Protocol) -> Disruption {
    let api = pick(rng, group_apis(protocol));
    match rng.below_inclusive(4) {
        0 => Disruption::Move,
        1 => Disruption::KillRestart {
            down_ms: between(rng, 500, 3_000),
        },
        2 => Disruption::HoldThenMove {
            api,
            hold_ms: between(rng, 1_000, 6_000),
        },
        3 => Disruption::LoseThenMove { api },
        _ => Disruption::NotCoordinator {
            api,
            times: 1 + rng.below_inclusive(3) as u32,
        },
    }
}

pub fn draw(seed: u64) -> Failover {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let join_ms = between(&mut rng, 4_000, 8_000);
    let leave_ms = join_ms + between(&mut rng, 4_000, 7_000);
    let join_again_ms = leave_ms + between(&mut rng, 4_000, 7_000);
    let coordinator = 1 + rng.below_inclusive(BROKERS as u64 - 1) as i32;
    let disruptions = (0..3)
        .map(|_| {
            (
                rng.below_inclusive(1_000),
                draw_disruption(&mut rng, group.protocol),
            )
        })
        .collect();
    let commit_at = between(&mut rng, 3_000, 24_000);
    let commit_hold = (rng.below_inclusive(1) == 0).then(|| between(&mut rng, 1_000, 6_000));
    Failover {
        group,
        join_ms,
        leave_ms,
        join_again_ms,
        coordinator,
        disruptions,
        commit_fault: (commit_at, commit_hold),
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let f = draw(seed);
    for spec in &mut scenario.subjects {
        f.group.apply(spec);
    }
    scenario.subjects[1].member_faults = MemberFaults {
        leave_at_ms: Some(f.leave_ms),
        ..MemberFaults::default()
    };
    scenario.subjects[2].start_ms = f.join_ms;
    scenario.subjects[3].start_ms = f.join_again_ms;
}

fn rule(api: i16, trigger: Trigger, action: ResponseAction) -> Fault {
    Fault::Response(ResponseRule {
        api_key: api,
        broker: None,
        trigger,
        action,
    })
}

fn other_broker(rng: &mut SeededRng, than: i32) -> i32 {
    let step = 1 + rng.below_inclusive(BROKERS as u64 - 2) as i32;
    1 + (than - 1 + step) % BROKERS
}

fn plan(seed: u64) -> PlannedFaults {
    let f = draw(seed);
    // Targets of the moves are drawn from a stream of their own.
    let mut rng = knob_rng(seed, SALT ^ 0xff);
    let mut coordinator = f.coordinator;
    let move_to = |rng: &mut SeededRng, coordinator: &mut i32| {
        *coordinator = other_broker(rng, *coordinator);
        Fault::MoveCoordinator {
            offsets_partition: 0,
            to: Some(*coordinator),
        }
    };
    let mut plan = vec![(
        0,
        Fault::MoveCoordinator {
            offsets_partition: 0,
            to: Some(coordinator),
        },
    )];
    let mut last = 0;
    let events = [f.join_ms, f.leave_ms, f.join_again_ms];
    for (event, (offset, disruption)) in events.into_iter().zip(&f.disruptions) {
        let at = event + offset;
        match *disruption {
            Disruption::Move => plan.push((at, move_to(&mut rng, &mut coordinator))),
            Disruption::KillRestart { down_ms } => {
                plan.push((
                    at,
                    Fault::KillBroker {
                        broker: coordinator,
                    },
                ));
                plan.push((
                    at + down_ms,
                    Fault::RestartBroker {
                        broker: coordinator,
                    },
                ));
                last = last.max(at + down_ms);
            }
            Disruption::HoldThenMove { api, hold_ms } => {
                plan.push((
                    event,
                    rule(
                        api,
                        Trigger::Next(1),
                        ResponseAction::Hold { delay_ms: hold_ms },
                    ),
                ));
                plan.push((at, move_to(&mut rng, &mut coordinator)));
                last = last.max(event + hold_ms);
            }
            Disruption::LoseThenMove { api } => {
                plan.push((event, rule(api, Trigger::Next(1), ResponseAction::Lose)));
                plan.push((at, move_to(&mut rng, &mut coordinator)));
            }
            Disruption::NotCoordinator { api, times } => {
                plan.push((
                    at,
                    rule(
                        api,
                        Trigger::Next(times),
                        ResponseAction::Error(NOT_COORDINATOR),
                    ),
                ));
            }
        }
        last = last.max(at);
    }
    let (commit_at, hold) = f.commit_fault;
    let action = match hold {
        Some(delay_ms) => ResponseAction::Hold { delay_ms },
        None => ResponseAction::Lose,
    };
    plan.push((commit_at, rule(OFFSET_COMMIT, Trigger::Next(1), action)));
    last = last.max(commit_at + hold.unwrap_or(0));
    let healed_at_ms = last + 1;
    plan.push((healed_at_ms, Fault::ClearResponses { api_key: None }));
    plan.sort_by_key(|(at, _)| *at);
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "the coordinator moves, dies or answers late/never around joins, a leave and commits: full checker set",
        partitions: 6,
        members: 4,
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
    fn disruptions_follow_the_events_and_kills_restart_before_the_next() {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..100 {
            let f = draw(seed);
            let planned = plan(seed);
            assert!(
                planned.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
            assert!(planned.plan.windows(2).all(|w| w[0].0 <= w[1].0));
            for (_, d) in &f.disruptions {
                kinds.insert(format!("{d:?}").split([' ', '{']).next().map(str::to_owned));
            }
            let kills = planned
                .plan
                .iter()
                .filter(|(_, x)| matches!(x, Fault::KillBroker { .. }))
                .count();
            let restarts = planned
                .plan
                .iter()
                .filter(|(_, x)| matches!(x, Fault::RestartBroker { .. }))
                .count();
            assert_eq!(kills, restarts, "seed {seed}");
            // A kill is restarted before the next event's disruption (events ≥ 4 s apart).
            assert!(f.leave_ms - f.join_ms >= 4_000 && f.join_again_ms - f.leave_ms >= 4_000);
        }
        assert_eq!(kinds.len(), 5);
    }
}
