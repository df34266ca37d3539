//! **Family: request storm** — the cluster keeps refusing a group's requests for seconds on
//! end (the project's own family, issue #18).
//!
//! **Interleavings aimed at.** One or two windows of 4–10 s in which every broker answers one
//! kind of request with the same error, every time, while a group of three consumes:
//!
//! - *fenced*: KIP-848 ConsumerGroupHeartbeat answered FENCED_MEMBER_EPOCH or
//!   UNKNOWN_MEMBER_ID, so every rejoin with epoch 0 is fenced again (a coordinator that still
//!   holds the member's old epoch); classic SyncGroup answered UNKNOWN_MEMBER_ID or
//!   ILLEGAL_GENERATION, so every join the coordinator completes is refused at the sync and
//!   the member rejoins at once;
//! - *no coordinator*: FindCoordinator answered COORDINATOR_NOT_AVAILABLE and the group
//!   requests NOT_COORDINATOR;
//! - *no leader*: every Fetch partition answered NOT_LEADER_OR_FOLLOWER (metadata, which says
//!   the leader did not move, is asked for again and again).
//!
//! Per seed: the protocol, the commit policy, the kinds, the errors and the windows.
//!
//! **Invariants.** `request-rate` ([`RequestRate`]): no member sends more than 20 group
//! (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat) or 20
//! lookup (Metadata, ListOffsets, OffsetForLeaderEpoch, OffsetFetch) requests a virtual second
//! over any three seconds — before the backoffs of issue #18 a fenced KIP-848 member rejoined
//! once per round trip (~70 heartbeats a second); and the full set ([`super::full_checks`]):
//! after the last window the group settles and consumes and commits everything within 25 s.
//!
//! **Why our design should hold.** Every retry path backs off from `retry.backoff.ms` to
//! `retry.backoff.max.ms`: a fence or refusal repeated with no success since waits
//! (`internals/membership/repeated_failures.rs`), FindCoordinator and OffsetFetch use a
//! `RequestState`, metadata refreshes are at least `retry.backoff.ms` apart, lookups of
//! offsets back off per partition, and a partition whose fetch failed is held
//! (`internals/fetch_request_manager/partition_holds.rs`).

use kafka_consumer::rt::SeededRng;
use sim::check::CheckerSet;
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use super::{between, family_scenario, full_checks, knob_rng, pick, Family, GroupKnobs, Protocol};
use crate::checks::RequestRate;
use crate::scenario::{PlannedFaults, Scenario};

pub const NAME: &str = "family-request-storm";

const SALT: u64 = 0x0073_7472_6d73;
const FETCH: i16 = 1;
const FIND_COORDINATOR: i16 = 10;
const JOIN_GROUP: i16 = 11;
const HEARTBEAT: i16 = 12;
const SYNC_GROUP: i16 = 14;
const OFFSET_FETCH: i16 = 9;
const OFFSET_COMMIT: i16 = 8;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
const ILLEGAL_GENERATION: i16 = 22;
const UNKNOWN_MEMBER_ID: i16 = 25;
const FENCED_MEMBER_EPOCH: i16 = 110;
const MEMBERS: usize = 3;
/// Every window ends before this.
const ERRORS_UNTIL_MS: u64 = 24_000;
const WITHIN_MS: u64 = 25_000;
const PRODUCE_UNTIL_MS: u64 = 30_000;
const RUN_MS: u64 = 55_000;

/// What the cluster keeps refusing during one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The member's group heartbeats (KIP-848) or syncs (classic), with this error.
    Fenced { code: i16 },
    /// The coordinator: FindCoordinator and every group request.
    NoCoordinator,
    /// Every Fetch partition: NOT_LEADER_OR_FOLLOWER.
    NoLeader,
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestStorm {
    pub group: GroupKnobs,
    /// Per window: from, until (ms) and what is refused.
    pub windows: Vec<(u64, u64, Refusal)>,
}

fn draw_refusal(rng: &mut SeededRng, protocol: Protocol) -> Refusal {
    match rng.below_inclusive(3) {
        0 | 1 => Refusal::Fenced {
            code: match protocol {
                Protocol::Consumer => pick(rng, &[FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID]),
                Protocol::Classic => pick(rng, &[UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION]),
            },
        },
        2 => Refusal::NoCoordinator,
        _ => Refusal::NoLeader,
    }
}

pub fn draw(seed: u64) -> RequestStorm {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let mut windows = Vec::new();
    let mut from = between(&mut rng, 4_000, 8_000);
    for _ in 0..1 + rng.below_inclusive(1) {
        let until = (from + between(&mut rng, 4_000, 10_000)).min(ERRORS_UNTIL_MS);
        if until <= from {
            break;
        }
        windows.push((from, until, draw_refusal(&mut rng, group.protocol)));
        from = until + between(&mut rng, 1_000, 3_000);
    }
    RequestStorm { group, windows }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let storm = draw(seed);
    for spec in &mut scenario.subjects {
        storm.group.apply(spec);
    }
}

fn rule(api_key: i16, code: i16) -> Fault {
    Fault::Response(ResponseRule {
        api_key,
        broker: None,
        trigger: Trigger::UntilCleared,
        action: ResponseAction::Error(code),
    })
}

/// The rules of one window.
fn rules(refusal: Refusal, protocol: Protocol) -> Vec<Fault> {
    match refusal {
        Refusal::Fenced { code } => match protocol {
            Protocol::Consumer => vec![rule(CONSUMER_GROUP_HEARTBEAT, code)],
            Protocol::Classic => vec![rule(SYNC_GROUP, code)],
        },
        Refusal::NoCoordinator => {
            let mut faults = vec![rule(FIND_COORDINATOR, COORDINATOR_NOT_AVAILABLE)];
            let group_apis: &[i16] = match protocol {
                Protocol::Consumer => &[CONSUMER_GROUP_HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH],
                Protocol::Classic => &[
                    JOIN_GROUP,
                    SYNC_GROUP,
                    HEARTBEAT,
                    OFFSET_COMMIT,
                    OFFSET_FETCH,
                ],
            };
            faults.extend(group_apis.iter().map(|&api| rule(api, NOT_COORDINATOR)));
            faults
        }
        Refusal::NoLeader => vec![rule(FETCH, NOT_LEADER_OR_FOLLOWER)],
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let storm = draw(seed);
    let mut plan = Vec::new();
    let mut healed_at_ms = 0;
    for &(from, until, refusal) in &storm.windows {
        plan.extend(
            rules(refusal, storm.group.protocol)
                .into_iter()
                .map(|f| (from, f)),
        );
        plan.push((until, Fault::ClearResponses { api_key: None }));
        healed_at_ms = until + 1;
    }
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> CheckerSet {
    full_checks(WITHIN_MS).with(RequestRate::default())
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "every broker keeps refusing heartbeats/syncs (fenced), the coordinator or fetches for 4–10 s: group and lookup requests stay under 20/s per member, full checker set",
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
    fn windows_are_ordered_healed_in_time_and_every_refusal_is_drawn() {
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let storm = draw(seed);
            assert!(!storm.windows.is_empty(), "seed {seed}");
            for pair in storm.windows.windows(2) {
                assert!(pair[0].1 < pair[1].0, "seed {seed}: {storm:?}");
            }
            for &(from, until, refusal) in &storm.windows {
                assert!(from < until && until <= ERRORS_UNTIL_MS, "seed {seed}");
                kinds.insert((storm.group.protocol.name(), format!("{refusal:?}")));
            }
            let planned = plan(seed);
            assert!(
                planned.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
        }
        // Two protocols × (two fencing codes, no coordinator, no leader).
        assert_eq!(kinds.len(), 8, "{kinds:?}");
    }
}
