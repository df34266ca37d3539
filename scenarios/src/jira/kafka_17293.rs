//! **KAFKA-17293** — "New consumer HeartbeatRequestManager should rediscover disconnected
//! coordinator" (commit 6a2789cf706, 4.0.0).
//!
//! **Interleaving.** A heartbeat is in flight to the coordinator when the coordinator's
//! connection is reset — no error code, just a closed socket — and the coordinator's broker
//! stays unreachable while the group moves to another broker. The heartbeat fails with a
//! retriable `DisconnectException`; upstream the heartbeat manager only backed off and retried,
//! without `markCoordinatorUnknown`, so every retry went to the same dead node and no
//! FindCoordinator was ever sent (`NOT_COORDINATOR`, which *would* trigger rediscovery, needs a
//! broker that answers).
//!
//! **Symptom upstream.** The member silently stopped heartbeating to the real coordinator until
//! its session expired: fenced, partitions lost, a rebalance for the whole group.
//!
//! **Invariants.** The coordinator sees a heartbeat from every member within 8 s of the reset
//! ([`HeartbeatResumes`]); no member loses its partitions ([`NoPartitionsLost`]); plus the
//! standard set and liveness after the heal.
//!
//! **Our design.** A heartbeat that fails on the network marks the coordinator unknown
//! (`ConsumerMembershipManager::on_heartbeat_failure`, `internals/membership/consumer/mod.rs`;
//! the classic twin in `internals/membership/classic/liveness.rs`), and so does a failed commit
//! (`internals/commit_request_manager.rs`); the coordinator manager
//! (`internals/coordinator_request_manager.rs`) is level-triggered — coordinator unknown and
//! needed means a FindCoordinator every loop, after backoff — to the least-loaded *connected*
//! broker (`network/client.rs`), so the unreachable one is not asked.
//!
//! **Plan.** One KIP-848 member (group `g`) and one classic member (group `h`), both coordinated
//! by offsets partition 0, pinned to a seeded broker X. At 4–6 s the next heartbeat of each
//! protocol at X is held (8 s); 5.5 s later — both held heartbeats are in flight — X's
//! connections are reset, the coordinator moves to another broker, and both members' links to X
//! are clogged for 15 s (heal).

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{HeartbeatResumes, NoPartitionsLost, UntilClose};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-17293";

const BROKERS: i32 = 3;
const MEMBERS: [&str; 2] = ["c0", "c1"];
const HEARTBEAT: i16 = 12;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
/// Longer than either protocol's heartbeat interval (KIP-848: 5 s broker default; classic 3 s).
const HOLD_MS: u64 = 8_000;
const RESET_AFTER_HOLD_MS: u64 = 5_500;
const CLOGGED_MS: u64 = 15_000;
const RUN_MS: u64 = 40_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "coordinator connection reset (no error code) with a heartbeat in flight, old broker unreachable: heartbeats resume at the new coordinator",
    )
    .brokers(BROKERS as usize)
    .topic("t", 6)
    .offsets_partitions(1)
    .subscribing_consumer(
        MEMBERS[0],
        &[("group.id", "g"), ("group.protocol", "consumer")],
        &["t"],
        app(),
    )
    .subscribing_consumer(
        MEMBERS[1],
        &[
            ("group.id", "h"),
            ("group.protocol", "classic"),
            ("session.timeout.ms", "10000"),
            ("heartbeat.interval.ms", "3000"),
        ],
        &["t"],
        app(),
    )
    .producer("p0", "t", 20, RUN_MS - 10_000)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// Pin, hold a heartbeat of each protocol, reset with both in flight, move and cut off.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_7293);
    let coordinator = 1 + rng.below_inclusive(BROKERS as u64 - 1) as i32;
    let moved_to = 1 + (coordinator % BROKERS);
    let hold_ms = 4_000 + rng.below_inclusive(2_000);
    let reset_ms = hold_ms + RESET_AFTER_HOLD_MS;
    let healed_at_ms = reset_ms + CLOGGED_MS;
    let broker = format!("broker-{coordinator}");
    let hold = |api_key| {
        Fault::Response(ResponseRule {
            api_key,
            broker: Some(coordinator),
            trigger: Trigger::Next(1),
            action: ResponseAction::Hold { delay_ms: HOLD_MS },
        })
    };
    let mut plan = vec![
        (
            0,
            Fault::MoveCoordinator {
                offsets_partition: 0,
                to: Some(coordinator),
            },
        ),
        (hold_ms, hold(CONSUMER_GROUP_HEARTBEAT)),
        (hold_ms, hold(HEARTBEAT)),
        (
            reset_ms,
            Fault::MoveCoordinator {
                offsets_partition: 0,
                to: Some(moved_to),
            },
        ),
    ];
    for member in MEMBERS {
        for (from, to) in [(member, broker.as_str()), (broker.as_str(), member)] {
            plan.push((
                reset_ms,
                Fault::ClogLink {
                    from: from.to_owned(),
                    to: to.to_owned(),
                },
            ));
            plan.push((
                healed_at_ms,
                Fault::UnclogLink {
                    from: from.to_owned(),
                    to: to.to_owned(),
                },
            ));
        }
    }
    plan.push((
        reset_ms,
        Fault::ResetConnections {
            broker: coordinator,
        },
    ));
    plan.sort_by_key(|(at, _)| *at);
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(HeartbeatResumes { within_ms: 8_000 })
        .with(NoPartitionsLost::default())
        .with(UntilClose {
            inner: Liveness {
                within_ms: 10_000,
                stable_for_ms: 5_000,
                ..Liveness::default()
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reset_comes_while_the_held_heartbeats_are_in_flight() {
        for seed in 0..50 {
            let planned = plan(seed);
            let holds: Vec<u64> = planned
                .plan
                .iter()
                .filter(|(_, f)| {
                    matches!(
                        f,
                        Fault::Response(ResponseRule {
                            action: ResponseAction::Hold { .. },
                            ..
                        })
                    )
                })
                .map(|(at, _)| *at)
                .collect();
            let resets: Vec<u64> = planned
                .plan
                .iter()
                .filter(|(_, f)| matches!(f, Fault::ResetConnections { .. }))
                .map(|(at, _)| *at)
                .collect();
            assert_eq!(holds.len(), 2, "seed {seed}");
            assert_eq!(resets.len(), 1, "seed {seed}");
            // Both heartbeats (5 s and 3 s intervals) reached X after the hold began and are
            // still held at the reset.
            assert!(resets[0] - holds[0] > 5_000 && resets[0] - holds[0] < HOLD_MS);
            let clogs = planned
                .plan
                .iter()
                .filter(|(at, f)| *at == resets[0] && matches!(f, Fault::ClogLink { .. }))
                .count();
            assert_eq!(clogs, 4, "seed {seed}");
            assert_eq!(planned.healed_at_ms, resets[0] + CLOGGED_MS);
            assert!(planned.healed_at_ms + 10_000 < RUN_MS);
            let Fault::MoveCoordinator {
                to: Some(first), ..
            } = planned.plan[0].1
            else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            assert!(planned.plan.iter().any(|(_, f)| matches!(
                f,
                Fault::MoveCoordinator { to: Some(to), .. } if *to != first
            )));
        }
    }
}
