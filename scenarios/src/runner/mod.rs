//! Runs a scenario inside madsim: cluster, client nodes, producers, subjects, the fault plan,
//! then the checkers. Same seed and same plan ⇒ the same history, byte for byte.

mod app;
mod data_facts;
mod observer;
mod producer;

pub use observer::AUTO_COMMIT_IDS;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use kafka_consumer::config::ConsumerConfig;
use kafka_consumer::rt::SeededRng;
use madsim::runtime::Handle;
use sim::check::Report;
use sim::cluster::Cluster;
use sim::fault::FaultPlan;
use sim::group::shard::GroupCoordinatorFactory;
use sim::history::{Event, History, Recorder};
use tokio::time::{Duration, Instant};

use crate::app::CommitPolicy;
use crate::consumer_subject::ConsumerSubject;
use crate::legacy::LegacyConsumer;
use crate::scenario::Scenario;
use crate::subject::{SubjectContext, SubjectKind};
use observer::{ObservedClient, ObservedShards};

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub scenario: &'static str,
    pub seed: u64,
    pub subject: SubjectKind,
    pub plan: FaultPlan,
    pub history: History,
    /// One verdict per checker.
    pub report: Report,
}

impl RunResult {
    /// The line that replays this run.
    pub fn repro(&self) -> String {
        repro_line(self.scenario, self.seed, self.subject)
    }
}

/// `cargo sim run <scenario> --seed <seed> --subject <subject>`.
pub fn repro_line(scenario: &str, seed: u64, subject: SubjectKind) -> String {
    format!("cargo sim run {scenario} --seed {seed} --subject {subject}")
}

/// Why a run could not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// A subject could not be built from its spec.
    Subject(String),
    /// The simulation thread panicked.
    Panicked(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Subject(e) => write!(f, "cannot build the subject: {e}"),
            RunError::Panicked(e) => write!(f, "the simulation panicked: {e}"),
        }
    }
}

/// Client node `i`'s address: 10.0.2.(i+1), apart from the brokers' 10.0.1.x.
fn client_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 2, (i + 1) as u8))
}

/// Runs `scenario` with `seed` inside the current madsim runtime, whose seed should be
/// `seed` too ([`run_in_runtime`] arranges that).
pub async fn run(
    scenario: &Scenario,
    seed: u64,
    subject: SubjectKind,
) -> Result<RunResult, RunError> {
    run_with_plan(scenario, seed, subject, None).await
}

/// Copies the brokers' SASL authentication events into the history, as notes of subject
/// [`AUTH_SUBJECT`](crate::checks::auth::AUTH_SUBJECT) (`sasl broker=N connection=C <what>`), for the authentication checkers.
fn record_auth_events(cluster: &Cluster, recorder: &Recorder, cluster_ms_at_start: u64) {
    let events = cluster.controller().auth_events();
    if events.is_empty() {
        return;
    }
    let sasl = recorder.subject(crate::checks::auth::AUTH_SUBJECT);
    for event in events {
        sasl.record(
            event.at_ms.saturating_sub(cluster_ms_at_start),
            Event::Note {
                text: crate::checks::auth::note(&event),
            },
        );
    }
}

/// [`run`] with `plan` instead of the one the scenario draws for `seed` (same heal time):
/// how `cargo sim shrink` replays a smaller plan.
pub async fn run_with_plan(
    scenario: &Scenario,
    seed: u64,
    subject: SubjectKind,
    plan: Option<FaultPlan>,
) -> Result<RunResult, RunError> {
    let scenario = &scenario.for_seed(seed);
    let mut planned = scenario.plan(seed);
    if let Some(plan) = plan {
        planned.plan = plan;
    }
    let recorder = Recorder::new();
    let mut builder = Cluster::builder()
        .brokers(scenario.cluster.brokers)
        .offsets_partitions(scenario.cluster.offsets_partitions);
    let kafka_version = scenario.cluster.kafka_version;
    builder = builder.config(|c| {
        c.kafka_version = kafka_version;
        c.coordinator_high_watermark_lag_ms = crate::scenario::COORDINATOR_HIGH_WATERMARK_LAG_MS;
    });
    let mut factory = GroupCoordinatorFactory::default();
    if let Some((heartbeat_ms, session_ms)) = scenario.cluster.kip848_timeouts_ms {
        factory.consumer.heartbeat_interval_ms = heartbeat_ms;
        factory.consumer.session_timeout_ms = session_ms;
    }
    // Our consumer records nothing of its protocol: the coordinator reports what it sees.
    let observed = (subject == SubjectKind::Consumer).then(|| {
        let clients: BTreeMap<String, ObservedClient> = scenario
            .subjects
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let client = ObservedClient {
                    recorder: recorder.subject(&spec.name),
                    auto_commits: spec.app.commit == CommitPolicy::Auto,
                };
                (format!("/{}", client_ip(i)), client)
            })
            .collect();
        ObservedShards::new(factory.clone(), clients)
    });
    builder = match &observed {
        Some(observed) => builder.group_shards(Arc::new(observed.clone())),
        None => builder.group_shards(Arc::new(factory.clone())),
    };
    for (topic, partitions) in &scenario.cluster.topics {
        builder = builder.topic(topic, *partitions);
    }
    if let Some(sasl) = &scenario.cluster.sasl {
        let sasl = sasl.clone();
        builder = builder.config(move |c| c.sasl = sasl);
    }
    let cluster = builder.build().await;
    let started = Instant::now();
    // The brokers' clock (ms since the cluster was built) at the run's start.
    let cluster_ms_at_start = cluster.controller().now_ms();
    if let Some(observed) = &observed {
        observed.start(started);
    }
    let end = started + Duration::from_millis(scenario.run_ms);
    let handle = Handle::current();
    // Wake-ups inside `poll` are recorded only where a scenario judges them.
    let legacy_version = scenario.legacy_version;
    let count_wakeups = (scenario.checks)()
        .names()
        .contains(&crate::checks::AppWakeups::NAME);
    // Data-path facts are recorded only where a scenario judges them.
    let data_facts = (scenario.checks)()
        .names()
        .contains(&crate::checks::DataPathAccounting::NAME);
    // So is the poll timer of each member.
    let poll_timer_facts = (scenario.checks)()
        .names()
        .contains(&crate::checks::PollTimeoutLeaves::NAME);

    let mut tasks = Vec::new();
    for spec in &scenario.producers {
        tasks.push(tokio::spawn(producer::produce(
            cluster.controller().clone(),
            spec.clone(),
            recorder.subject(&spec.name),
            started,
        )));
    }
    for (i, spec) in scenario.subjects.iter().enumerate() {
        let mut pairs = spec.properties.clone();
        pairs.push((
            "bootstrap.servers".to_owned(),
            cluster.bootstrap_servers().join(","),
        ));
        // The legacy model only implements `earliest`; both subjects start from the same
        // place unless the scenario says otherwise.
        if !pairs.iter().any(|(key, _)| key == "auto.offset.reset") {
            pairs.push(("auto.offset.reset".to_owned(), "earliest".to_owned()));
        }
        keep_recorded_network_timing(&mut pairs);
        let data_config = if data_facts {
            data_config(&pairs)
        } else {
            Vec::new()
        };
        let poll_timer = crate::checks::PollTimer::of(&pairs).filter(|_| poll_timer_facts);
        let config =
            ConsumerConfig::from_pairs(pairs).map_err(|e| RunError::Subject(e.to_string()))?;
        let ctx = SubjectContext {
            config,
            recorder: recorder.subject(&spec.name),
            started,
        };
        let mut rng = SeededRng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9));
        let jitter = rng.below_inclusive(spec.app.processing_ms_per_record);
        let spec = spec.clone();
        let start_at = started + Duration::from_millis(spec.start_ms);
        // An early leave ends this member's loop (and closes it) before the run's end.
        let end = spec
            .member_faults
            .leave_at_ms
            .map_or(end, |ms| end.min(started + Duration::from_millis(ms)));
        let node = handle
            .create_node()
            .name(spec.name.clone())
            .ip(client_ip(i))
            .build();
        let process = Process {
            subject,
            ctx,
            spec: spec.clone(),
            jitter,
            end,
            count_wakeups,
            legacy_version,
            data_config,
            poll_timer,
        };
        let task = node.spawn(process.clone().run(start_at));
        let member_faults = spec.member_faults.clone();
        if member_faults.crash_at_ms.is_none() && member_faults.pause.is_none() {
            tasks.push(tokio::spawn(async move {
                let _ = task.await;
            }));
            continue;
        }
        let node_id = node.id();
        let handle = handle.clone();
        tasks.push(tokio::spawn(async move {
            if let Some(pause) = member_faults.pause {
                // A process-wide stall (a GC pause): neither the application nor the
                // background task runs; timers and the network go on.
                tokio::time::sleep_until(started + Duration::from_millis(pause.at_ms)).await;
                process.ctx.record(Event::Note {
                    text: format!("process paused {}ms", pause.for_ms),
                });
                process.ctx.recorder.bump("process-pause");
                handle.pause(node_id);
                tokio::time::sleep(Duration::from_millis(pause.for_ms)).await;
                handle.resume(node_id);
            }
            let Some(crash_ms) = member_faults.crash_at_ms else {
                let _ = task.await;
                return;
            };
            // The killed process's task is dropped by madsim when next woken; nothing waits
            // for it. Its restart, if any, is a new process on the same node.
            drop(task);
            tokio::time::sleep_until(started + Duration::from_millis(crash_ms)).await;
            process.ctx.record(Event::MemberCrash);
            handle.kill(node_id);
            let Some(after_ms) = member_faults.restart_after_ms else {
                return;
            };
            let restart_at = started + Duration::from_millis(crash_ms + after_ms);
            if restart_at >= process.end {
                return;
            }
            tokio::time::sleep_until(restart_at).await;
            handle.restart(node_id);
            process.ctx.record(Event::MemberRestart);
            let Some(node) = handle.get_node(node_id) else {
                return;
            };
            let _ = node.spawn(process.run(restart_at)).await;
        }));
    }

    let faults = recorder.subject("faults");
    let mut plan = planned.plan.clone();
    plan.sort_by_key(|(at_ms, _)| *at_ms);
    let mut healed = false;
    for (at_ms, fault) in &plan {
        if !healed && *at_ms > planned.healed_at_ms {
            tokio::time::sleep_until(started + Duration::from_millis(planned.healed_at_ms)).await;
            faults.record(planned.healed_at_ms, Event::Healed);
            healed = true;
        }
        tokio::time::sleep_until(started + Duration::from_millis(*at_ms)).await;
        faults.record(
            *at_ms,
            Event::Fault {
                kind: format!("{fault:?}"),
            },
        );
        let existed = data_facts && data_facts::before(&cluster, fault);
        cluster.apply(fault);
        if data_facts {
            for fact in data_facts::after(&cluster, fault, existed) {
                faults.record(*at_ms, fact.note());
            }
        }
    }
    if !healed {
        tokio::time::sleep_until(started + Duration::from_millis(planned.healed_at_ms)).await;
        faults.record(planned.healed_at_ms, Event::Healed);
    }
    for task in tasks {
        let _ = task.await;
    }
    record_auth_events(&cluster, &recorder, cluster_ms_at_start);
    let history = recorder.snapshot();
    let report = (scenario.checks)().run(&history);
    Ok(RunResult {
        scenario: scenario.name,
        seed,
        subject,
        plan: planned.plan,
        history,
        report,
    })
}

/// One member process: what it takes to start a subject and drive its application (again,
/// after a crash and restart).
#[derive(Clone)]
struct Process {
    subject: SubjectKind,
    ctx: SubjectContext,
    spec: crate::scenario::SubjectSpec,
    jitter: u64,
    end: Instant,
    count_wakeups: bool,
    legacy_version: crate::legacy::LegacyVersion,
    /// The subject's `auto.offset.reset` and `isolation.level`, recorded at each start where
    /// the data path is judged.
    data_config: Vec<crate::checks::DataEvent>,
    /// The subject's poll timer, recorded at each start where `poll-timeout-leaves` judges it.
    poll_timer: Option<crate::checks::PollTimer>,
}

impl Process {
    /// Waits for `start_at`, builds the subject and drives it until the process's end.
    async fn run(self, start_at: Instant) {
        let Process {
            subject,
            ctx,
            spec,
            jitter,
            end,
            count_wakeups,
            legacy_version,
            data_config,
            poll_timer,
        } = self;
        if start_at > Instant::now() {
            tokio::time::sleep_until(start_at).await;
        }
        for fact in &data_config {
            ctx.record(fact.note());
        }
        if let Some(timer) = poll_timer {
            ctx.record(timer.note());
        }
        match subject {
            SubjectKind::Legacy => match LegacyConsumer::new(ctx.clone(), legacy_version) {
                Ok(legacy) => app::drive(legacy, ctx, spec, jitter, end, count_wakeups).await,
                Err(e) => ctx.record(Event::Note {
                    text: format!("cannot build the subject: {e}"),
                }),
            },
            SubjectKind::Consumer => match ConsumerSubject::new(ctx.clone()) {
                Ok(consumer) => app::drive(consumer, ctx, spec, jitter, end, count_wakeups).await,
                Err(e) => ctx.record(Event::Note {
                    text: format!("cannot build the subject: {e}"),
                }),
            },
        }
    }
}

/// The data-path facts of a subject's configuration `pairs`: its `auto.offset.reset` and its
/// `isolation.level` (Kafka's default `read_uncommitted` when unset).
fn data_config(pairs: &[(String, String)]) -> Vec<crate::checks::DataEvent> {
    let value = |name: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, v)| v.clone())
    };
    let mut facts = Vec::new();
    if let Some(policy) = value("auto.offset.reset") {
        facts.push(crate::checks::DataEvent::ResetPolicy { policy });
    }
    facts.push(crate::checks::DataEvent::Isolation {
        level: value("isolation.level").unwrap_or_else(|| "read_uncommitted".to_owned()),
    });
    facts
}

/// Runs `scenario` with `seed` in a fresh madsim runtime seeded with `seed`, on a thread of its
/// own (madsim keeps per-thread state). Exactly reproducible only as the first run of a process
/// until every `tokio::select!` the simulation runs is `biased` (see `cargo sim explore`).
pub fn run_in_runtime(
    scenario: fn() -> Scenario,
    seed: u64,
    subject: SubjectKind,
) -> Result<RunResult, RunError> {
    run_in_runtime_with_plan(scenario, seed, subject, None)
}

/// Runs `scenario` on the legacy model with `seed` and asserts `checker` reported `kind`: how
/// each Jira scenario's test shows the legacy model reproducing the upstream bug. Returns the
/// run, for the test to check the mechanism in its history.
pub fn assert_legacy_fails(
    scenario: fn() -> Scenario,
    seed: u64,
    checker: &str,
    kind: sim::check::ViolationKind,
) -> RunResult {
    let result = run_in_runtime(scenario, seed, SubjectKind::Legacy)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(
        result
            .report
            .verdicts
            .iter()
            .any(|v| v.checker == checker && v.has(kind)),
        "expected {checker} to report {kind:?}:\n{}",
        result.report
    );
    result
}

/// [`run_in_runtime`] with a plan override (see [`run_with_plan`]).
pub fn run_in_runtime_with_plan(
    scenario: fn() -> Scenario,
    seed: u64,
    subject: SubjectKind,
    plan: Option<FaultPlan>,
) -> Result<RunResult, RunError> {
    #[allow(clippy::disallowed_methods)] // the simulator itself runs on this thread
    let thread = std::thread::spawn(move || {
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        runtime.block_on(async move { run_with_plan(&scenario(), seed, subject, plan).await })
    });
    thread.join().unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(RunError::Panicked(message))
    })
}

/// The library's recorded seeds (golden traces, sabotage witnesses, saved regressions) were
/// recorded before the consumer honoured two network settings whose Java defaults would move
/// them: the connection setup timeout's growth after failed setups
/// (`socket.connection.setup.timeout.max.ms`, 30 s: every run where connects to a dead broker
/// time out would change) and idle expiry (`connections.max.idle.ms`, 9 minutes: never reached
/// in a scenario, but its timer alone reorders a simulated run). Unless a scenario sets them,
/// the maximum equals the setup timeout (no growth) and idle expiry is off.
/// `consumer/tests/connection_loopback.rs` tests both.
fn keep_recorded_network_timing(pairs: &mut Vec<(String, String)>) {
    let set = |pairs: &Vec<(String, String)>, key: &str| pairs.iter().any(|(k, _)| k == key);
    if !set(pairs, "socket.connection.setup.timeout.max.ms") {
        let setup_timeout_ms = pairs
            .iter()
            .find(|(key, _)| key == "socket.connection.setup.timeout.ms")
            .map_or_else(|| "10000".to_owned(), |(_, value)| value.clone());
        pairs.push((
            "socket.connection.setup.timeout.max.ms".to_owned(),
            setup_timeout_ms,
        ));
    }
    if !set(pairs, "connections.max.idle.ms") {
        pairs.push(("connections.max.idle.ms".to_owned(), "-1".to_owned()));
    }
}
