//! A scenario as data: the cluster, the subjects and what their application does, the
//! producers, the fault plan and the checkers. Built with [`Scenario::builder`]; run by
//! `crate::runner` (simulation mode only).

use sim::check::CheckerSet;
use sim::fault::FaultPlan;
use sim::history::Tp;
use sim::kafka_version::KafkaVersion;
use sim::sasl::SaslServerConfig;

use crate::app::{AppBehaviour, DriveMode, SeekTo, UserPause, UserSeek};
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
    /// KIP-848 broker settings `group.consumer.heartbeat.interval.ms` and
    /// `group.consumer.session.timeout.ms`; `None` keeps Kafka's defaults (5 s, 45 s).
    pub kip848_timeouts_ms: Option<(i32, i32)>,
    /// The Kafka release every broker starts on (its ApiVersions table); a plan may upgrade
    /// brokers one by one (`Fault::UpgradeBroker`).
    pub kafka_version: KafkaVersion,
    /// The brokers' SASL listener (mechanisms, users, `connections.max.reauth.ms`); `None`
    /// keeps PLAINTEXT. Subjects then need the matching `security.protocol`/`sasl.*`.
    pub sasl: Option<SaslServerConfig>,
}

/// How far a new leader of an `__consumer_offsets` partition trails its predecessor's high
/// watermark in every scenario ([`sim::config::ClusterConfig::coordinator_high_watermark_lag_ms`]):
/// Kafka's `replica.fetch.wait.max.ms` default, the longest a follower waits for the fetch
/// response that tells it the leader's high watermark.
pub const COORDINATOR_HIGH_WATERMARK_LAG_MS: u64 = 500;

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
    /// A pattern handed to `subscribe(Pattern)` instead (Java's regex semantics, matched
    /// against every topic's whole name as metadata comes in).
    pub subscribe_pattern: Option<String>,
    /// Topics handed to `subscribe()` first, before `subscribe`/`subscribe_pattern`: the
    /// application then calls `unsubscribe()` and goes on with its real subscription (a
    /// subscription that failed, e.g. to an illegal topic name, and the recovery from it).
    pub subscribe_before: Option<Vec<String>>,
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
    /// Faults of the member itself (leave early, crash, stall), applied by the runner.
    pub member_faults: MemberFaults,
    /// Seeks the application makes, in time order.
    pub seeks: Vec<UserSeek>,
    /// How the application takes records: `poll`, `recv` or `stream`.
    pub drive: DriveMode,
    /// Pauses the application makes, in time order (each resumed after its `for_ms`).
    pub pauses: Vec<UserPause>,
    /// What the application does when `poll` fails with a reset error (out of range, log
    /// truncation: `auto.offset.reset=none`): reads `position` of each partition the error
    /// names, then seeks it here. `None`: it polls on.
    pub on_reset_error: Option<SeekTo>,
}

/// Faults of one member's own process or application, as opposed to the cluster's: the
/// runner applies them to the subject (the families of `crate::families` draw them per seed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberFaults {
    /// The application closes the consumer at this virtual time (an orderly leave) instead of
    /// at the end of the run.
    pub leave_at_ms: Option<u64>,
    /// The member's node is killed at this time: no leave, no close, connections reset (a
    /// `kill -9`); its coordinator finds out by the session timeout.
    pub crash_at_ms: Option<u64>,
    /// After a crash, a new process with the same configuration starts this long after it
    /// (`None`: it stays down). With `group.instance.id` it rejoins as the same static member.
    pub restart_after_ms: Option<u64>,
    /// The application stalls once: after the first poll at or after `at_ms` that returned
    /// records, it spends `for_ms` on them before committing them (a zombie when `for_ms`
    /// exceeds the session timeout or `max.poll.interval.ms`).
    pub stall: Option<Stall>,
    /// The whole process stops being scheduled for a while (a GC pause): application and
    /// background task alike; timers and the network go on. Before any crash.
    pub pause: Option<Stall>,
}

/// A stall of the application's poll loop ([`MemberFaults::stall`]) or of the whole process
/// ([`MemberFaults::pause`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub at_ms: u64,
    pub for_ms: u64,
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

/// A producer writing a topic's partitions (one-record batches round-robin, unless its
/// [`ProducerShape`] says otherwise).
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
    /// Values are padded to sizes spread over `0..value_bytes` (0: no padding): records
    /// larger than the consumer's fetch limits.
    pub value_bytes: usize,
    /// What it writes: plain records, transactions, or batches as the log cleaner leaves them.
    pub shape: ProducerShape,
}

/// How a producer writes its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerShape {
    /// One-record batches, each acknowledged as it is appended.
    Plain,
    /// Kafka's transactional producer: records in transactions, then the COMMIT or ABORT
    /// marker the transaction coordinator has each partition's leader write.
    Transactional(TxnShape),
    /// Batches as Kafka's log cleaner leaves them: records missing between and after the
    /// ones kept (offset gaps), and empty batches kept only for their offsets.
    Compacted {
        /// Draws the batch shapes.
        seed: u64,
    },
}

/// A transactional producer's draws: its producer id and how its transactions end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnShape {
    /// The producer id its batches and markers carry (unique per producer).
    pub producer_id: i64,
    /// Draws each transaction's size, partitions, end and length.
    pub seed: u64,
    /// Records per transaction: 1 to this.
    pub max_records: u64,
    /// One transaction in this many aborts (0: none does).
    pub abort_one_in: u64,
    /// One transaction in this many stays open `long_open_ms` before it ends (0: none does):
    /// the last stable offset stays behind for that long.
    pub long_open_one_in: u64,
    pub long_open_ms: u64,
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
    /// Per-seed knobs: rewrites the scenario for a seed before it runs (subjects' start times,
    /// member faults, properties); `None` for a scenario that is one value.
    pub vary: Option<fn(&mut Scenario, u64)>,
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
                    kip848_timeouts_ms: None,
                    kafka_version: KafkaVersion::default(),
                    sasl: None,
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
                vary: None,
            },
        }
    }

    /// The scenario as it runs with `seed`: [`Scenario::vary`] applied.
    pub fn for_seed(&self, seed: u64) -> Scenario {
        let mut scenario = self.clone();
        if let Some(vary) = self.vary {
            vary(&mut scenario, seed);
        }
        scenario
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

    /// The brokers' KIP-848 heartbeat interval and session timeout (a crashed member of a
    /// consumer-protocol group is fenced after the latter).
    pub fn kip848_timeouts_ms(
        mut self,
        heartbeat_interval_ms: i32,
        session_timeout_ms: i32,
    ) -> Self {
        self.scenario.cluster.kip848_timeouts_ms =
            Some((heartbeat_interval_ms, session_timeout_ms));
        self
    }

    /// The Kafka release every broker starts on.
    pub fn kafka_version(mut self, version: KafkaVersion) -> Self {
        self.scenario.cluster.kafka_version = version;
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
            subscribe_pattern: None,
            drive: DriveMode::Poll,
            pauses: Vec::new(),
            on_reset_error: None,
            subscribe_before: None,
            listener: ListenerBehaviour::default(),
            start_ms: 0,
            app,
            stall_when_idle: None,
            member_faults: MemberFaults::default(),
            seeks: Vec::new(),
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
            subscribe_pattern: None,
            drive: DriveMode::Poll,
            pauses: Vec::new(),
            on_reset_error: None,
            subscribe_before: None,
            listener: ListenerBehaviour::default(),
            start_ms: 0,
            app,
            stall_when_idle: None,
            member_faults: MemberFaults::default(),
            seeks: Vec::new(),
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

    /// The last added consumer's own faults (leave early, crash, stall).
    pub fn member_faults(mut self, faults: MemberFaults) -> Self {
        if let Some(s) = self.scenario.subjects.last_mut() {
            s.member_faults = faults;
        }
        self
    }

    /// Per-seed knobs ([`Scenario::vary`]).
    pub fn vary(mut self, vary: fn(&mut Scenario, u64)) -> Self {
        self.scenario.vary = Some(vary);
        self
    }

    /// A producer writing one record to `topic` every `interval_ms` until `until_ms`.
    pub fn producer(mut self, name: &str, topic: &str, interval_ms: u64, until_ms: u64) -> Self {
        self.scenario.producers.push(ProducerSpec {
            name: name.to_owned(),
            topic: topic.to_owned(),
            interval_ms,
            until_ms,
            value_bytes: 0,
            shape: ProducerShape::Plain,
        });
        self
    }

    /// [`Self::producer`] that writes in `shape`.
    pub fn shaped_producer(
        mut self,
        name: &str,
        topic: &str,
        interval_ms: u64,
        until_ms: u64,
        shape: ProducerShape,
    ) -> Self {
        self = self.producer(name, topic, interval_ms, until_ms);
        if let Some(spec) = self.scenario.producers.last_mut() {
            spec.shape = shape;
        }
        self
    }

    /// [`Self::producer`] whose values are padded up to `value_bytes` (sizes spread per record).
    pub fn large_producer(
        mut self,
        name: &str,
        topic: &str,
        interval_ms: u64,
        until_ms: u64,
        value_bytes: usize,
    ) -> Self {
        self = self.producer(name, topic, interval_ms, until_ms);
        if let Some(spec) = self.scenario.producers.last_mut() {
            spec.value_bytes = value_bytes;
        }
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
