//! **Family: network partitions, symmetric and one-way** — a member cut off from its
//! coordinator while its fetches still pass, or from everything, one way or both.
//!
//! **Interleavings aimed at.** The coordinator is pinned to broker 3 and every partition's
//! leader moved to brokers 1 and 2, so a cut between a member and broker 3 loses its group
//! traffic only: heartbeats (and commits) lost while fetches go on — the member keeps
//! consuming records of partitions the coordinator is about to give away. Per episode the seed
//! draws the member, the kind — requests to the coordinator lost (one-way out), its answers
//! lost (one-way in: the coordinator sees the heartbeats, the member never hears back), both,
//! or the member isolated from every broker —, the start and the length (0.5 s up to twice the
//! session timeout, so some episodes end before the session expires and some after); one to
//! three episodes per seed, possibly overlapping on different members.
//!
//! **Invariants.** The full set ([`super::full_checks`]; a timed-out commit landing late after
//! the heal is reported as `LateCommitRegressed` and declared expected,
//! [`super::LATE_COMMIT_REASON`]). The sharp ones: a member fenced while cut off must not keep
//! its partitions in the group's view — its window may overlap the new owner's only from its
//! observed expulsion (or fencing answer) on (`exclusive-ownership` with fenced tolerance),
//! and none of its commits after the hand-over may succeed
//! (`zombie-commits-refused`); records it consumed meanwhile are at most re-delivered, never
//! lost; after the heal the group settles and commits everything (`liveness`).
//!
//! **Why our design should hold.** Heartbeats and fetches are separate request managers on one
//! background task; a heartbeat that times out or whose connection fails marks the coordinator
//! unknown and is retried after rediscovery. Classic: a member that has not heard a successful
//! heartbeat response for the session timeout treats its session as expired
//! (`membership/classic/liveness.rs`) and gives its partitions up as *lost* before rejoining.
//! KIP-848: a heartbeat answered `UNKNOWN_MEMBER_ID`/`FENCED_MEMBER_EPOCH` fences the member,
//! which runs `onPartitionsLost` and rejoins with epoch 0; its commits carry the stale epoch and
//! are refused.

use sim::fault::{Direction, Fault};

use super::{
    between, broker_node, family_scenario, full_checks_with_cut_links, knob_rng, Family,
    GroupKnobs, TOPIC,
};
use crate::scenario::{PlannedFaults, Scenario};

pub const NAME: &str = "family-network-partition";

const SALT: u64 = 0x6e65_7470_6172;
const MEMBERS: usize = 3;
const PARTITIONS: i32 = 6;
/// Broker 3 coordinates and leads nothing.
const COORDINATOR: i32 = 3;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 55_000;
const RUN_MS: u64 = 75_000;

/// Which traffic an episode cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Member → coordinator lost: heartbeats and commits never arrive; fetches pass.
    ToCoordinator,
    /// Coordinator → member lost: requests applied, answers never arrive; fetches pass.
    FromCoordinator,
    /// Both ways between the member and the coordinator; fetches pass.
    Coordinator,
    /// The member cut from every node, both ways.
    Isolated,
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitions {
    pub group: GroupKnobs,
    /// Per episode: member index, cut, start, length.
    pub episodes: Vec<(usize, Cut, u64, u64)>,
}

pub fn draw(seed: u64) -> Partitions {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let longest = group.session_ms() * 2;
    let episodes = (0..1 + rng.below_inclusive(2))
        .map(|_| {
            let member = rng.below_inclusive(MEMBERS as u64 - 1) as usize;
            let cut = match rng.below_inclusive(3) {
                0 => Cut::ToCoordinator,
                1 => Cut::FromCoordinator,
                2 => Cut::Coordinator,
                _ => Cut::Isolated,
            };
            let start = between(&mut rng, 3_000, 15_000);
            let length = between(&mut rng, 500, longest);
            (member, cut, start, length)
        })
        .collect();
    Partitions { group, episodes }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let p = draw(seed);
    for spec in &mut scenario.subjects {
        p.group.apply(spec);
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let p = draw(seed);
    let mut plan = vec![(
        0,
        Fault::MoveCoordinator {
            offsets_partition: 0,
            to: Some(COORDINATOR),
        },
    )];
    for partition in 0..PARTITIONS {
        plan.push((
            0,
            Fault::MoveLeader {
                topic: TOPIC.to_owned(),
                partition,
                to: Some(1 + partition % 2),
            },
        ));
    }
    let coordinator = broker_node(COORDINATOR);
    let mut healed_at_ms = 0;
    for (member, cut, start, length) in p.episodes {
        let member = format!("c{member}");
        let end = start + length;
        healed_at_ms = healed_at_ms.max(end + 1);
        let links: Vec<(String, String)> = match cut {
            Cut::ToCoordinator => vec![(member.clone(), coordinator.clone())],
            Cut::FromCoordinator => vec![(coordinator.clone(), member.clone())],
            Cut::Coordinator => vec![
                (member.clone(), coordinator.clone()),
                (coordinator.clone(), member.clone()),
            ],
            Cut::Isolated => {
                plan.push((
                    start,
                    Fault::ClogNode {
                        node: member.clone(),
                        direction: Direction::Both,
                    },
                ));
                plan.push((
                    end,
                    Fault::UnclogNode {
                        node: member,
                        direction: Direction::Both,
                    },
                ));
                continue;
            }
        };
        for (from, to) in links {
            plan.push((
                start,
                Fault::ClogLink {
                    from: from.clone(),
                    to: to.clone(),
                },
            ));
            plan.push((end, Fault::UnclogLink { from, to }));
        }
    }
    // Overlapping episodes on one member: whatever is left is undone at the heal.
    for i in 0..MEMBERS {
        let member = format!("c{i}");
        plan.push((
            healed_at_ms,
            Fault::UnclogNode {
                node: member.clone(),
                direction: Direction::Both,
            },
        ));
        for (from, to) in [
            (member.clone(), coordinator.clone()),
            (coordinator.clone(), member),
        ] {
            plan.push((healed_at_ms, Fault::UnclogLink { from, to }));
        }
    }
    plan.sort_by_key(|(at, _)| *at);
    PlannedFaults { plan, healed_at_ms }
}

/// The full set; a member cut from the coordinator can have a timed-out commit land late
/// ([`super::LATE_COMMIT_REASON`]: seeds 27 and 50).
fn checks() -> sim::check::CheckerSet {
    full_checks_with_cut_links(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "members cut from the coordinator (one way or both, fetches passing) or isolated, for seeded lengths around the session timeout: full checker set",
        partitions: PARTITIONS,
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
    fn episodes_straddle_the_session_timeout_and_heal_in_time() {
        let (mut short, mut long) = (0, 0);
        let mut cuts = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let p = draw(seed);
            for (_, cut, _, length) in &p.episodes {
                cuts.insert(format!("{cut:?}"));
                if *length < p.group.session_ms() {
                    short += 1;
                } else {
                    long += 1;
                }
            }
            let planned = plan(seed);
            assert!(
                planned.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
            assert!(planned
                .plan
                .iter()
                .all(|(at, _)| *at <= planned.healed_at_ms));
        }
        assert_eq!(cuts.len(), 4);
        assert!(short > 50 && long > 50, "{short} short, {long} long");
    }
}
