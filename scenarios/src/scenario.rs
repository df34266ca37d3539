//! A scenario as data: the cluster, the subjects and what their application does, the
//! producers, the fault plan and the checkers. Built with [`Scenario::builder`]; run by
//! `crate::runner` (simulation mode only).

use sim::check::CheckerSet;
use sim::fault::FaultPlan;
use sim::history::Tp;

use crate::app::AppBehaviour;
use crate::legacy::LegacyVersion;
use crate::subject::ListenerBehaviour;

/// The simulated cluster a scenario runs against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSpec {
    /// Number of brokers (`broker-1` … at 10.0.1.N).
    pub brokers: usize,
    /// Topics and their partition counts.
    pub topics: Vec<(String, i32)>,
    /// `offsets.topic.num.partitions`: how many group coordinator shards exist.
    pub offsets_partitions: i32,
}

/// One consumer under test: its configuration and its application's behaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectSpec {
    /// Its name in the history and its madsim node name (`c0`).
    pub name: String,
    /// Consumer properties with Kafka's keys; `bootstrap.servers` is filled in by the runner.
    pub properties: Vec<(String, String)>,
    /// Partitions handed to `assign()` (when `subscribe` is empty).
    pub assign: Vec<Tp>,
    /// Topics handed to `subscribe()`; empty for manual assignment.
    pub subscribe: Vec<String>,
    /// The rebalance listener, in subscribe mode.
    pub listener: ListenerBehaviour,
    /// Virtual time at which the application starts (a member joining later).
    pub start_ms: u64,
    /// What the application does with the consumer.
    pub app: AppBehaviour,
    /// `(after_ms, for_ms)`: the first time `poll` returns nothing after virtual `after_ms`,
    /// the application goes off to other work for `for_ms` without polling (housekeeping when
    /// idle, a long external call, a GC pause). Once per run.
    pub stall_when_idle: Option<(u64, u64)>,
}

impl SubjectSpec {
    /// The `group.id` property, or `""` without one (the history's "no group").
    pub fn group_id(&self) -> &str {
        self.properties
            .iter()
            .find(|(k, _)| k == "group.id")
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A producer appending one-record batches round-robin over a topic's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerSpec {
    /// Its name in the history.
    pub name: String,
    /// The topic it writes.
    pub topic: String,
    /// Virtual milliseconds between two records.
    pub interval_ms: u64,
    /// It stops producing at this virtual time, so liveness bounds can still be judged.
    pub until_ms: u64,
}

/// A fault plan and the virtual time from which every fault is healed.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedFaults {
    pub plan: FaultPlan,
    /// From here on no fault is active; liveness clocks start here.
    pub healed_at_ms: u64,
}

/// Where a run's faults come from.
#[derive(Debug, Clone, Copy)]
pub enum FaultSource {
    /// A scenario-specific plan, a pure function of the seed (fixed faults, seeded timing).
    Fixed(fn(u64) -> PlannedFaults),
    /// `sim::swarm::generate` over this fault window.
    Swarm {
        /// Faults are drawn over `[0, window_ms)`; everything is healed at its end.
        window_ms: u64,
    },
}

/// A complete scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// CLI name, e.g. `kafka-13563`.
    pub name: &'static str,
    /// One line: the race and the invariant.
    pub summary: &'static str,
    pub cluster: ClusterSpec,
    pub subjects: Vec<SubjectSpec>,
    pub producers: Vec<ProducerSpec>,
    pub faults: FaultSource,
    /// Virtual run length; subjects are closed at this time.
    pub run_ms: u64,
    /// The checkers the scenario asserts (standard set plus its own).
    pub checks: fn() -> CheckerSet,
    /// The Kafka release the legacy model follows (3.1.0 unless the bug lived elsewhere).
    pub legacy_version: LegacyVersion,
}

impl Scenario {
    /// A builder with one broker, no topics and no faults.
    pub fn builder(name: &'static str, summary: &'static str) -> ScenarioBuilder {
        ScenarioBuilder {
            scenario: Scenario {
                name,
                summary,
                cluster: ClusterSpec {
                    brokers: 1,
                    topics: Vec::new(),
                    offsets_partitions: 1,
                },
                subjects: Vec::new(),
                producers: Vec::new(),
                faults: FaultSource::Fixed(|_| PlannedFaults {
                    plan: Vec::new(),
                    healed_at_ms: 0,
                }),
                run_ms: 10_000,
                checks: CheckerSet::new,
                legacy_version: LegacyVersion::default(),
            },
        }
    }

    /// Every partition of `topic` as the cluster declares it.
    pub fn partitions(&self, topic: &str) -> Vec<Tp> {
        self.cluster
            .topics
            .iter()
            .filter(|(t, _)| t == topic)
            .flat_map(|(t, n)| (0..*n).map(move |p| Tp::new(t.clone(), p)))
            .collect()
    }

    /// The plan for `seed`, and when it is healed.
    pub fn plan(&self, seed: u64) -> PlannedFaults {
        match self.faults {
            FaultSource::Fixed(plan) => plan(seed),
            FaultSource::Swarm { window_ms } => {
                let shape = sim::swarm::ClusterShape {
                    brokers: (1..=self.cluster.brokers as i32).collect(),
                    clients: self.subjects.iter().map(|s| s.name.clone()).collect(),
                    topics: self.cluster.topics.clone(),
                    offsets_partitions: self.cluster.offsets_partitions,
                };
                let drawn = sim::swarm::generate(seed, &shape, window_ms);
                PlannedFaults {
                    plan: drawn.plan,
                    healed_at_ms: drawn.healed_at_ms,
                }
            }
        }
    }
}

/// Builds a [`Scenario`].
#[derive(Debug)]
pub struct ScenarioBuilder {
    scenario: Scenario,
}

impl ScenarioBuilder {
    pub fn brokers(mut self, n: usize) -> Self {
        self.scenario.cluster.brokers = n;
        self
    }

    pub fn topic(mut self, name: &str, partitions: i32) -> Self {
        self.scenario
            .cluster
            .topics
            .push((name.to_owned(), partitions));
        self
    }

    pub fn offsets_partitions(mut self, n: i32) -> Self {
        self.scenario.cluster.offsets_partitions = n;
        self
    }

    /// A consumer with these properties that `assign()`s every partition of `topic`.
    pub fn assigning_consumer(
        mut self,
        name: &str,
        properties: &[(&str, &str)],
        topic: &str,
        app: AppBehaviour,
    ) -> Self {
        let assign = self.scenario.partitions(topic);
        self.scenario.subjects.push(SubjectSpec {
            name: name.to_owned(),
            properties: properties
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            assign,
            subscribe: Vec::new(),
            listener: ListenerBehaviour::default(),
            start_ms: 0,
            app,
            stall_when_idle: None,
        });
        self
    }

    /// A consumer with these properties that `subscribe()`s to `topics`.
    pub fn subscribing_consumer(
        mut self,
        name: &str,
        properties: &[(&str, &str)],
        topics: &[&str],
        app: AppBehaviour,
    ) -> Self {
        self.scenario.subjects.push(SubjectSpec {
            name: name.to_owned(),
            properties: properties
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            assign: Vec::new(),
            subscribe: topics.iter().map(|t| (*t).to_owned()).collect(),
            listener: ListenerBehaviour::default(),
            start_ms: 0,
            app,
            stall_when_idle: None,
        });
        self
    }

    /// The last added consumer's rebalance listener.
    pub fn listener(mut self, listener: ListenerBehaviour) -> Self {
        if let Some(s) = self.scenario.subjects.last_mut() {
            s.listener = listener;
        }
        self
    }

    /// The last added consumer starts at `start_ms` instead of 0.
    pub fn start_at(mut self, start_ms: u64) -> Self {
        if let Some(s) = self.scenario.subjects.last_mut() {
            s.start_ms = start_ms;
        }
        self
    }

    /// The last added consumer's application stalls once when idle (see
    /// [`SubjectSpec::stall_when_idle`]).
    pub fn stall_when_idle(mut self, after_ms: u64, for_ms: u64) -> Self {
        if let Some(s) = self.scenario.subjects.last_mut() {
            s.stall_when_idle = Some((after_ms, for_ms));
        }
        self
    }

    /// A producer writing one record to `topic` every `interval_ms` until `until_ms`.
    pub fn producer(mut self, name: &str, topic: &str, interval_ms: u64, until_ms: u64) -> Self {
        self.scenario.producers.push(ProducerSpec {
            name: name.to_owned(),
            topic: topic.to_owned(),
            interval_ms,
            until_ms,
        });
        self
    }

    pub fn faults(mut self, faults: FaultSource) -> Self {
        self.scenario.faults = faults;
        self
    }

    pub fn run_ms(mut self, run_ms: u64) -> Self {
        self.scenario.run_ms = run_ms;
        self
    }

    pub fn checks(mut self, checks: fn() -> CheckerSet) -> Self {
        self.scenario.checks = checks;
        self
    }

    /// The Kafka release whose code path the legacy model follows.
    pub fn legacy_version(mut self, version: LegacyVersion) -> Self {
        self.scenario.legacy_version = version;
        self
    }

    pub fn build(self) -> Scenario {
        self.scenario
    }
}
