//! Fault injection: the [`Fault`] data type and the per-cluster [`FaultControls`] the brokers
//! consult on every request.
//!
//! Faults are plain data so a plan (`Vec<(virtual ms, Fault)>`) can be generated from a seed,
//! saved with a failure and shrunk. Response-level faults (error codes, held, lost and malformed
//! responses, connection resets) are applied by the brokers through [`FaultControls`]; node- and
//! network-level ones (kill, restart, pause, clogs, latency) by the madsim `Cluster`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_consumer::rt::SeededRng;

use crate::buggify::Buggify;
use tokio::sync::watch;

/// When a response rule fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// The next `n` matching requests.
    Next(u32),
    /// Each matching request with this probability, drawn from the cluster's seeded rng.
    Probability(f64),
    /// Every matching request until cleared.
    UntilCleared,
}

/// What a response rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseAction {
    /// Answer with this error code instead of handling the request.
    Error(i16),
    /// Handle the request, then hold the response this long before sending it.
    Hold {
        /// Virtual delay.
        delay_ms: u64,
    },
    /// Handle (apply) the request, drop the response and close the connection.
    Lose,
    /// Handle the request, then send a corrupted response frame.
    Malform,
}

/// A rule on the responses of one API.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResponseRule {
    /// The API key it applies to.
    pub api_key: i16,
    /// Only on this broker; every broker when `None`.
    pub broker: Option<i32>,
    /// When it fires.
    pub trigger: Trigger,
    /// What it does.
    pub action: ResponseAction,
}

/// Which way a node clog blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Traffic into the node.
    In,
    /// Traffic out of the node.
    Out,
    /// Both.
    Both,
}

/// One fault. Node names are madsim node names (`broker-1`, or a client's name).
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Installs a response rule (error injection, held, lost or malformed responses).
    Response(ResponseRule),
    /// Removes the response rules of one API (`Some`) or all (`None`).
    ClearResponses {
        /// The API key, or every API.
        api_key: Option<i16>,
    },
    /// Closes every connection of a broker, without an error code.
    ResetConnections {
        /// The broker's node id.
        broker: i32,
    },
    /// Kills a broker (its peers see EOF); its durable log stays.
    KillBroker {
        /// The broker's node id.
        broker: i32,
    },
    /// Restarts a broker (killing it first if running); in-memory state is lost.
    RestartBroker {
        /// The broker's node id.
        broker: i32,
    },
    /// Stops scheduling a broker's tasks (a GC stall); timers and the network go on.
    PauseBroker {
        /// The broker's node id.
        broker: i32,
    },
    /// Resumes a paused broker.
    ResumeBroker {
        /// The broker's node id.
        broker: i32,
    },
    /// Clogs the link `from` → `to` (one way); add the reverse for both ways.
    ClogLink {
        /// Sending node name.
        from: String,
        /// Receiving node name.
        to: String,
    },
    /// Unclogs the link `from` → `to`.
    UnclogLink {
        /// Sending node name.
        from: String,
        /// Receiving node name.
        to: String,
    },
    /// Clogs all traffic into, out of, or both ways of a node.
    ClogNode {
        /// Node name.
        node: String,
        /// Which way.
        direction: Direction,
    },
    /// Unclogs a node.
    UnclogNode {
        /// Node name.
        node: String,
        /// Which way.
        direction: Direction,
    },
    /// Sets the network's per-message latency range.
    Latency {
        /// Least latency.
        min_ms: u64,
        /// Most latency.
        max_ms: u64,
    },
    /// Moves leadership of a partition (bumping its epoch); `to: None` picks the next live
    /// in-sync replica.
    MoveLeader {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// The new leader.
        to: Option<i32>,
    },
    /// Moves a `__consumer_offsets` partition, i.e. its groups' coordinator.
    MoveCoordinator {
        /// The offsets partition.
        offsets_partition: i32,
        /// The new coordinator.
        to: Option<i32>,
    },
    /// Retention: advances a partition's log start offset.
    DeleteRecords {
        /// Topic name.
        topic: String,
        /// Partition index.
        partition: i32,
        /// New log start offset (capped at the high watermark).
        before_offset: i64,
    },
}

/// A fault plan: faults at virtual times (milliseconds since the plan started).
pub type FaultPlan = Vec<(u64, Fault)>;

/// What the brokers must do with one request's response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Decision {
    pub error: Option<i16>,
    pub hold_ms: u64,
    pub lose: bool,
    pub malform: bool,
}

/// The response-level fault state of a cluster, shared by its brokers and whoever injects.
#[derive(Debug, Clone)]
pub struct FaultControls {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    rules: Vec<ResponseRule>,
    rng: SeededRng,
    resets: BTreeMap<i32, watch::Sender<u64>>,
    buggify: Buggify,
}

impl FaultControls {
    /// Controls drawing probabilities from a generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State {
                rules: Vec::new(),
                rng: SeededRng::seed_from_u64(seed ^ 0x6661_756c_7473),
                resets: BTreeMap::new(),
                buggify: Buggify::disabled(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Turns on the brokers' two-phase buggify sites for this run ([`Buggify`]).
    pub fn enable_buggify(&self, seed: u64) {
        self.lock().buggify = Buggify::enabled(seed);
    }

    /// The brokers' buggify sites: disabled unless [`Self::enable_buggify`] was called.
    pub fn buggify(&self) -> Buggify {
        self.lock().buggify.clone()
    }

    /// Installs a response rule.
    pub fn add(&self, rule: ResponseRule) {
        self.lock().rules.push(rule);
    }

    /// Removes the rules of `api_key`, or all rules.
    pub fn clear(&self, api_key: Option<i16>) {
        self.lock()
            .rules
            .retain(|r| api_key.is_some_and(|key| key != r.api_key));
    }

    /// Closes every open connection of `broker`.
    pub fn reset_connections(&self, broker: i32) {
        let mut state = self.lock();
        state
            .resets
            .entry(broker)
            .or_insert_with(|| watch::channel(0).0)
            .send_modify(|n| *n += 1);
    }

    /// A receiver that changes whenever `broker`'s connections are reset.
    pub(crate) fn resets(&self, broker: i32) -> watch::Receiver<u64> {
        let mut state = self.lock();
        state
            .resets
            .entry(broker)
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Applies the matching rules to one request of `api_key` on `broker`, consuming counts.
    pub(crate) fn decide(&self, broker: i32, api_key: i16) -> Decision {
        let mut state = self.lock();
        let State { rules, rng, .. } = &mut *state;
        let mut decision = Decision::default();
        for rule in rules.iter_mut() {
            if rule.api_key != api_key || rule.broker.is_some_and(|b| b != broker) {
                continue;
            }
            let fires = match &mut rule.trigger {
                Trigger::Next(0) => false,
                Trigger::Next(n) => {
                    *n -= 1;
                    true
                }
                Trigger::Probability(p) => rng.unit_f64() < *p,
                Trigger::UntilCleared => true,
            };
            if !fires {
                continue;
            }
            match rule.action {
                ResponseAction::Error(code) => decision.error = decision.error.or(Some(code)),
                ResponseAction::Hold { delay_ms } => decision.hold_ms += delay_ms,
                ResponseAction::Lose => decision.lose = true,
                ResponseAction::Malform => decision.malform = true,
            }
        }
        rules.retain(|r| r.trigger != Trigger::Next(0));
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_n_fires_n_times_then_disappears() {
        let faults = FaultControls::new(1);
        faults.add(ResponseRule {
            api_key: 1,
            broker: Some(2),
            trigger: Trigger::Next(2),
            action: ResponseAction::Error(6),
        });
        assert_eq!(faults.decide(1, 1), Decision::default(), "other broker");
        assert_eq!(faults.decide(2, 3), Decision::default(), "other api");
        assert_eq!(faults.decide(2, 1).error, Some(6));
        assert_eq!(faults.decide(2, 1).error, Some(6));
        assert_eq!(faults.decide(2, 1).error, None);
    }

    #[test]
    fn probability_is_seeded_and_clear_removes() {
        let draw = |seed| {
            let faults = FaultControls::new(seed);
            faults.add(ResponseRule {
                api_key: 1,
                broker: None,
                trigger: Trigger::Probability(0.5),
                action: ResponseAction::Lose,
            });
            (0..32)
                .map(|_| faults.decide(1, 1).lose)
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert!(draw(7).contains(&true) && draw(7).contains(&false));
        let faults = FaultControls::new(1);
        faults.add(ResponseRule {
            api_key: 1,
            broker: None,
            trigger: Trigger::UntilCleared,
            action: ResponseAction::Malform,
        });
        assert!(faults.decide(1, 1).malform);
        faults.clear(Some(1));
        assert!(!faults.decide(1, 1).malform);
    }
}
