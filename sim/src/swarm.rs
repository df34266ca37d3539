//! Random fault plans from a seed, with swarm testing's per-seed knobs.
//!
//! Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012; TigerBeetle's VOPR, FoundationDB's
//! simulation) draws, for each seed, *which* kinds of fault are on and how often they strike,
//! instead of mixing every kind into every run. A run with only coordinator moves and held
//! SyncGroup responses reaches interleavings that a run drowning in broker kills never does.
//!
//! Every disruptive fault is paired with its heal (restart after kill, resume after pause,
//! unclog after clog, rule cleared after a window), and the plan ends with a full heal, so a
//! liveness checker can demand progress after [`SwarmPlan::healed_at_ms`].
//!
//! Retention (`Fault::DeleteRecords`) is never drawn: it loses records legitimately, which only
//! a scenario that declares the gap to its checkers can allow.

use kafka_consumer::rt::SeededRng;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;

use crate::fault::{Direction, Fault, FaultPlan, ResponseAction, ResponseRule, Trigger};

/// What the plan may name: brokers, client nodes, topics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterShape {
    /// Broker node ids (madsim node names are `broker-<id>`).
    pub brokers: Vec<i32>,
    /// Client node names (consumers, producers).
    pub clients: Vec<String>,
    /// Topics and their partition counts.
    pub topics: Vec<(String, i32)>,
    /// `offsets.topic.num.partitions`.
    pub offsets_partitions: i32,
}

/// The fault kinds a seed turns on, and how hard they strike.
#[derive(Debug, Clone, PartialEq)]
pub struct SwarmKnobs {
    pub kill_restart: bool,
    pub pause: bool,
    pub clog_both_ways: bool,
    pub clog_one_way: bool,
    pub latency: bool,
    pub error_codes: bool,
    pub held_responses: bool,
    pub lost_responses: bool,
    pub malformed_responses: bool,
    pub connection_resets: bool,
    pub leader_moves: bool,
    pub coordinator_moves: bool,
    /// Mean faults per virtual second, over the enabled kinds.
    pub faults_per_s: f64,
    /// The longest a single outage (kill, pause, clog, error window) lasts.
    pub max_outage_ms: u64,
}

impl SwarmKnobs {
    /// Each kind on with probability 1/2 (at least one on); rate and outage length drawn too.
    pub fn draw(rng: &mut SeededRng) -> Self {
        let mut coin = || rng.below_inclusive(1) == 1;
        let mut knobs = Self {
            kill_restart: coin(),
            pause: coin(),
            clog_both_ways: coin(),
            clog_one_way: coin(),
            latency: coin(),
            error_codes: coin(),
            held_responses: coin(),
            lost_responses: coin(),
            malformed_responses: coin(),
            connection_resets: coin(),
            leader_moves: coin(),
            coordinator_moves: coin(),
            faults_per_s: 0.0,
            max_outage_ms: 0,
        };
        if knobs.kinds().is_empty() {
            knobs.error_codes = true;
        }
        knobs.faults_per_s = [0.05, 0.2, 0.5, 1.0][rng.below_inclusive(3) as usize];
        knobs.max_outage_ms = [500, 2_000, 10_000][rng.below_inclusive(2) as usize];
        knobs
    }

    fn kinds(&self) -> Vec<Kind> {
        [
            (self.kill_restart, Kind::KillRestart),
            (self.pause, Kind::Pause),
            (self.clog_both_ways, Kind::ClogBothWays),
            (self.clog_one_way, Kind::ClogOneWay),
            (self.latency, Kind::Latency),
            (self.error_codes, Kind::ErrorCodes),
            (self.held_responses, Kind::HeldResponses),
            (self.lost_responses, Kind::LostResponses),
            (self.malformed_responses, Kind::MalformedResponses),
            (self.connection_resets, Kind::ConnectionResets),
            (self.leader_moves, Kind::LeaderMoves),
            (self.coordinator_moves, Kind::CoordinatorMoves),
        ]
        .into_iter()
        .filter_map(|(on, kind)| on.then_some(kind))
        .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    KillRestart,
    Pause,
    ClogBothWays,
    ClogOneWay,
    Latency,
    ErrorCodes,
    HeldResponses,
    LostResponses,
    MalformedResponses,
    ConnectionResets,
    LeaderMoves,
    CoordinatorMoves,
}

/// A generated plan: the knobs it was drawn with, the faults, and when everything is healed.
#[derive(Debug, Clone, PartialEq)]
pub struct SwarmPlan {
    pub knobs: SwarmKnobs,
    pub plan: FaultPlan,
    /// From this virtual time on no fault is active.
    pub healed_at_ms: u64,
}

/// The errors a broker really returns for each API when a leader or coordinator moves or is
/// busy — the ones a client must survive.
const INJECTABLE_ERRORS: &[(ApiKey, &[ResponseError])] = &[
    (
        ApiKey::Fetch,
        &[
            ResponseError::NotLeaderOrFollower,
            ResponseError::FencedLeaderEpoch,
            ResponseError::UnknownTopicOrPartition,
        ],
    ),
    (ApiKey::ListOffsets, &[ResponseError::NotLeaderOrFollower]),
    (
        ApiKey::FindCoordinator,
        &[ResponseError::CoordinatorNotAvailable],
    ),
    (
        ApiKey::OffsetCommit,
        &[
            ResponseError::NotCoordinator,
            ResponseError::CoordinatorLoadInProgress,
            ResponseError::RebalanceInProgress,
            ResponseError::RequestTimedOut,
        ],
    ),
    (
        ApiKey::OffsetFetch,
        &[
            ResponseError::NotCoordinator,
            ResponseError::CoordinatorLoadInProgress,
        ],
    ),
    (
        ApiKey::JoinGroup,
        &[
            ResponseError::NotCoordinator,
            ResponseError::CoordinatorNotAvailable,
        ],
    ),
    (
        ApiKey::SyncGroup,
        &[
            ResponseError::NotCoordinator,
            ResponseError::RebalanceInProgress,
        ],
    ),
    (
        ApiKey::Heartbeat,
        &[
            ResponseError::NotCoordinator,
            ResponseError::RebalanceInProgress,
        ],
    ),
    (
        ApiKey::ConsumerGroupHeartbeat,
        &[
            ResponseError::NotCoordinator,
            ResponseError::CoordinatorLoadInProgress,
        ],
    ),
];

/// APIs whose responses may be held, lost or malformed.
const RESPONSE_FAULT_APIS: &[ApiKey] = &[
    ApiKey::Fetch,
    ApiKey::FindCoordinator,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
];

/// Draws a plan for `seed`: knobs first, then faults over `[0, fault_window_ms)` at the knobs'
/// rate, each with its heal, then a full heal at the end of the window.
pub fn generate(seed: u64, shape: &ClusterShape, fault_window_ms: u64) -> SwarmPlan {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0073_7761_726d);
    let knobs = SwarmKnobs::draw(&mut rng);
    let kinds = knobs.kinds();
    let mut plan = FaultPlan::new();
    let mean_gap_ms = (1_000.0 / knobs.faults_per_s) as u64;
    let mut at_ms = rng.below_inclusive(mean_gap_ms);
    while at_ms < fault_window_ms && !shape.brokers.is_empty() {
        let kind = kinds[rng.below_inclusive(kinds.len() as u64 - 1) as usize];
        let outage_ms = 1 + rng.below_inclusive(knobs.max_outage_ms);
        let heal_at_ms = (at_ms + outage_ms).min(fault_window_ms);
        for (time, fault) in draw_fault(kind, &mut rng, shape, outage_ms) {
            let time = if time == Heal { heal_at_ms } else { at_ms };
            plan.push((time, fault));
        }
        at_ms += 1 + rng.below_inclusive(2 * mean_gap_ms);
    }
    plan.extend(full_heal(shape).into_iter().map(|f| (fault_window_ms, f)));
    // Stable by time: a fault and its heal keep their relative order.
    plan.sort_by_key(|(time, _)| *time);
    SwarmPlan {
        knobs,
        plan,
        healed_at_ms: fault_window_ms,
    }
}

/// When a drawn fault happens: at the draw time, or when it heals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    Now,
    Heal,
}
use When::{Heal, Now};

fn pick<'a, T>(rng: &mut SeededRng, items: &'a [T]) -> &'a T {
    &items[rng.below_inclusive(items.len() as u64 - 1) as usize]
}

fn broker_node(id: i32) -> String {
    format!("broker-{id}")
}

fn draw_fault(
    kind: Kind,
    rng: &mut SeededRng,
    shape: &ClusterShape,
    outage_ms: u64,
) -> Vec<(When, Fault)> {
    let broker = *pick(rng, &shape.brokers);
    let rule = |api: ApiKey, trigger, action| ResponseRule {
        api_key: api as i16,
        broker: None,
        trigger,
        action,
    };
    match kind {
        Kind::KillRestart => vec![
            (Now, Fault::KillBroker { broker }),
            (Heal, Fault::RestartBroker { broker }),
        ],
        Kind::Pause => vec![
            (Now, Fault::PauseBroker { broker }),
            (Heal, Fault::ResumeBroker { broker }),
        ],
        Kind::ClogBothWays | Kind::ClogOneWay => {
            let client = if shape.clients.is_empty() {
                broker_node(*pick(rng, &shape.brokers))
            } else {
                pick(rng, &shape.clients).clone()
            };
            let (from, to) = if rng.below_inclusive(1) == 0 {
                (client, broker_node(broker))
            } else {
                (broker_node(broker), client)
            };
            let mut faults = vec![
                (
                    Now,
                    Fault::ClogLink {
                        from: from.clone(),
                        to: to.clone(),
                    },
                ),
                (
                    Heal,
                    Fault::UnclogLink {
                        from: from.clone(),
                        to: to.clone(),
                    },
                ),
            ];
            if kind == Kind::ClogBothWays {
                faults.push((
                    Now,
                    Fault::ClogLink {
                        from: to.clone(),
                        to: from.clone(),
                    },
                ));
                faults.push((Heal, Fault::UnclogLink { from: to, to: from }));
            }
            faults
        }
        Kind::Latency => {
            let max_ms = 1 + rng.below_inclusive(outage_ms.min(2_000));
            vec![
                (Now, Fault::Latency { min_ms: 1, max_ms }),
                (
                    Heal,
                    Fault::Latency {
                        min_ms: 1,
                        max_ms: 10,
                    },
                ),
            ]
        }
        Kind::ErrorCodes => {
            let (api, errors) = pick(rng, INJECTABLE_ERRORS);
            let error = pick(rng, errors).code();
            let trigger = if rng.below_inclusive(1) == 0 {
                Trigger::Next(1 + rng.below_inclusive(4) as u32)
            } else {
                Trigger::Probability(0.1 + 0.4 * rng.unit_f64())
            };
            vec![
                (
                    Now,
                    Fault::Response(rule(*api, trigger, ResponseAction::Error(error))),
                ),
                (
                    Heal,
                    Fault::ClearResponses {
                        api_key: Some(*api as i16),
                    },
                ),
            ]
        }
        Kind::HeldResponses | Kind::LostResponses | Kind::MalformedResponses => {
            let api = *pick(rng, RESPONSE_FAULT_APIS);
            let action = match kind {
                Kind::HeldResponses => ResponseAction::Hold {
                    delay_ms: 1 + rng.below_inclusive(outage_ms),
                },
                Kind::LostResponses => ResponseAction::Lose,
                _ => ResponseAction::Malform,
            };
            vec![
                (Now, Fault::Response(rule(api, Trigger::Next(1), action))),
                (
                    Heal,
                    Fault::ClearResponses {
                        api_key: Some(api as i16),
                    },
                ),
            ]
        }
        Kind::ConnectionResets => vec![(Now, Fault::ResetConnections { broker })],
        Kind::LeaderMoves => match shape.topics.as_slice() {
            [] => Vec::new(),
            topics => {
                let (topic, partitions) = pick(rng, topics);
                let partition =
                    rng.below_inclusive(u64::from(partitions.unsigned_abs().max(1)) - 1) as i32;
                vec![(
                    Now,
                    Fault::MoveLeader {
                        topic: topic.clone(),
                        partition,
                        to: None,
                    },
                )]
            }
        },
        Kind::CoordinatorMoves => {
            let offsets_partition = rng
                .below_inclusive(u64::from(shape.offsets_partitions.unsigned_abs().max(1)) - 1)
                as i32;
            vec![(
                Now,
                Fault::MoveCoordinator {
                    offsets_partition,
                    to: None,
                },
            )]
        }
    }
}

/// Faults that undo every possible leftover: rules cleared, latency back to madsim's default,
/// every link and node unclogged, every broker resumed and running.
fn full_heal(shape: &ClusterShape) -> Vec<Fault> {
    let mut faults = vec![
        Fault::ClearResponses { api_key: None },
        Fault::Latency {
            min_ms: 1,
            max_ms: 10,
        },
    ];
    let nodes: Vec<String> = shape
        .brokers
        .iter()
        .map(|b| broker_node(*b))
        .chain(shape.clients.iter().cloned())
        .collect();
    for node in &nodes {
        faults.push(Fault::UnclogNode {
            node: node.clone(),
            direction: Direction::Both,
        });
    }
    for from in &nodes {
        for to in &nodes {
            if from != to {
                faults.push(Fault::UnclogLink {
                    from: from.clone(),
                    to: to.clone(),
                });
            }
        }
    }
    faults.extend(
        shape
            .brokers
            .iter()
            .map(|&broker| Fault::ResumeBroker { broker }),
    );
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> ClusterShape {
        ClusterShape {
            brokers: vec![1, 2, 3],
            clients: vec!["consumer-0".into(), "consumer-1".into()],
            topics: vec![("orders".into(), 12)],
            offsets_partitions: 3,
        }
    }

    #[test]
    fn same_seed_same_plan_and_seeds_differ() {
        let a = generate(42, &shape(), 60_000);
        assert_eq!(a, generate(42, &shape(), 60_000));
        let differing = (0..20)
            .filter(|seed| generate(*seed, &shape(), 60_000) != a)
            .count();
        assert!(differing >= 19, "only {differing} of 20 seeds differ");
    }

    #[test]
    fn knobs_vary_across_seeds_and_only_enabled_kinds_appear() {
        let mut kill_on = 0;
        for seed in 0..200 {
            let swarm = generate(seed, &shape(), 30_000);
            if swarm.knobs.kill_restart {
                kill_on += 1;
            } else {
                assert!(
                    !swarm
                        .plan
                        .iter()
                        .any(|(_, f)| matches!(f, Fault::KillBroker { .. })),
                    "seed {seed}: a kill without the kill knob"
                );
            }
        }
        assert!(
            (60..140).contains(&kill_on),
            "kill knob on in {kill_on} of 200"
        );
    }

    #[test]
    fn every_fault_heals_within_the_window() {
        for seed in 0..200 {
            let swarm = generate(seed, &shape(), 20_000);
            assert!(
                swarm.plan.windows(2).all(|w| w[0].0 <= w[1].0),
                "seed {seed}: unsorted"
            );
            assert!(swarm.plan.iter().all(|(t, _)| *t <= swarm.healed_at_ms));
            let mut down = std::collections::BTreeSet::new();
            for (_, fault) in &swarm.plan {
                match fault {
                    Fault::KillBroker { broker } | Fault::PauseBroker { broker } => {
                        down.insert(*broker);
                    }
                    Fault::RestartBroker { broker } | Fault::ResumeBroker { broker } => {
                        down.remove(broker);
                    }
                    _ => {}
                }
            }
            let killed: Vec<_> = swarm
                .plan
                .iter()
                .filter_map(|(_, f)| match f {
                    Fault::KillBroker { broker } => Some(*broker),
                    _ => None,
                })
                .collect();
            for broker in killed {
                let last_kill = swarm.plan.iter().rposition(
                    |(_, f)| matches!(f, Fault::KillBroker { broker: b } if *b == broker),
                );
                let last_restart = swarm.plan.iter().rposition(
                    |(_, f)| matches!(f, Fault::RestartBroker { broker: b } if *b == broker),
                );
                assert!(
                    last_restart > last_kill,
                    "seed {seed}: broker {broker} stays dead"
                );
            }
            assert!(down.is_empty(), "seed {seed}: {down:?} left down");
            assert!(
                matches!(swarm.plan.iter().rev().find(|(_, f)| matches!(f, Fault::ClearResponses { .. })), Some((t, Fault::ClearResponses { api_key: None })) if *t == swarm.healed_at_ms),
                "seed {seed}: response rules are cleared at the heal"
            );
        }
    }
}
