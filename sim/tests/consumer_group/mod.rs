//! Shared by `sim_consumer_group.rs`, `sim_consumer_group_kip848.rs` and
//! `sim_consumer_group_determinism.rs`: three of our consumers as a group (either protocol) on
//! their own simulated nodes against a 3-broker simulated cluster, cluster faults and
//! application misbehaviour drawn from the seed, a journal of what the members saw, and the
//! checks.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
use kafka_consumer::rt::Duration;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use madsim::runtime::Handle;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sim::cluster::Cluster;
use sim::coordinator::placement::offsets_partition_for;
use sim::fault::{Direction, Fault, FaultPlan};
use sim::group::shard::GroupCoordinatorFactory;

use super::support::batch;

pub const PARTITIONS: i32 = 12;
pub const RECORDS_PER_PARTITION: usize = 400;
pub const MEMBERS: usize = 3;
/// The group protocol the members speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// JoinGroup / SyncGroup / Heartbeat, eager `range`.
    Classic,
    /// KIP-848 ConsumerGroupHeartbeat with the `uniform` server assignor.
    Consumer,
}

impl Protocol {
    /// The group id of the run.
    pub fn group(self) -> &'static str {
        match self {
            Protocol::Classic => "sim-group",
            Protocol::Consumer => "sim-group-kip848",
        }
    }

    /// The test binary and the environment variables that rerun its seeds.
    fn rerun(self) -> (&'static str, &'static str) {
        match self {
            Protocol::Classic => ("sim_consumer_group", "SIM_GROUP"),
            Protocol::Consumer => ("sim_consumer_group_kip848", "SIM_KIP848"),
        }
    }
}
pub const OFFSETS_PARTITIONS: i32 = 3;

/// What the members saw, in virtual-time order.
#[derive(Default)]
pub struct Journal {
    pub deliveries: BTreeMap<(i32, i64), u32>,
    pub violations: Vec<String>,
    /// Errors `poll` returned, for the failure report (faults make some expected).
    pub errors: Vec<String>,
    /// Each member's latest view: assignment, generation, member id, rebalances completed.
    pub views: BTreeMap<usize, (BTreeSet<TopicPartition>, i32, String, u64)>,
    /// The longest a `poll` returned after its timeout, in virtual µs.
    pub max_poll_overshoot_us: u128,
    /// Per member: partitions owned (per the listener) and the last offset seen in each.
    pub owned: BTreeMap<usize, BTreeMap<TopicPartition, Option<i64>>>,
    pub callbacks: usize,
    /// Listener calls that panicked on purpose ([`AppFaults::panic_at`]).
    pub panics: usize,
    /// Poll loops stalled past `max.poll.interval.ms` on purpose ([`AppFaults::stall`]).
    pub stalls: usize,
    /// Members that stalled while owning partitions and have not been told they lost them
    /// since: the poll timer expired, so the group moved on without them.
    pub awaiting_lost: BTreeSet<usize>,
    /// Per partition: the highest position a member committed (`commit_sync` succeeded) in
    /// `on_partitions_revoked` while giving it up. The at-least-once bound: whoever owns the
    /// partition next starts at or after it, so nothing below it is delivered again.
    pub committed_on_revoke: BTreeMap<TopicPartition, (i64, usize)>,
}

pub type Shared = Arc<Mutex<Journal>>;

/// What the applications do wrong, drawn from the seed, each kind in about half the seeds
/// (swarm testing: a seed without slow callbacks explores timings a seed with them hides).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppFaults {
    /// Virtual time every listener call takes (blocking work such as flushing state).
    pub callback_ms: u64,
    /// (member, its nth listener call, 1-based) that panics after doing its bookkeeping.
    pub panic_at: Option<(usize, usize)>,
    /// (member, virtual ms after it started, ms): the member stops polling that long, past
    /// `max.poll.interval.ms`, so its poll timer expires (a stuck processing step).
    pub stall: Option<(usize, u64, u64)>,
}

/// The application misbehaviour of `seed` (its own random stream: the cluster fault plan of a
/// seed does not depend on it).
pub fn app_faults(seed: u64) -> AppFaults {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x00AB_FA17);
    let callback_ms = if rng.gen_bool(0.5) {
        rng.gen_range(100..4_000)
    } else {
        0
    };
    let panic_at = rng
        .gen_bool(0.5)
        .then(|| (rng.gen_range(0..MEMBERS), rng.gen_range(1..4)));
    let stall = rng.gen_bool(0.5).then(|| {
        (
            rng.gen_range(0..MEMBERS),
            rng.gen_range(3_000..40_000),
            MAX_POLL_INTERVAL_MS + rng.gen_range(1_000..6_000),
        )
    });
    AppFaults {
        callback_ms,
        panic_at,
        stall,
    }
}

pub struct Recorder {
    member: usize,
    journal: Shared,
    app: AppFaults,
    calls: usize,
    /// Set when the member stops polling to close: a panic then reaches no `poll`.
    stop: Arc<AtomicBool>,
}

impl Recorder {
    /// Books the call, takes the configured time, and panics if this is the planned call.
    async fn call(&mut self, what: &str, partitions: &BTreeSet<TopicPartition>) {
        self.apply(what, partitions);
        self.calls += 1;
        if self.app.callback_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.app.callback_ms)).await;
        }
        if self.app.panic_at == Some((self.member, self.calls)) {
            if !self.stop.load(Ordering::SeqCst) {
                self.journal.lock().unwrap().panics += 1;
            }
            panic!("m{} {PLANNED_PANIC} {} ({what})", self.member, self.calls);
        }
    }

    fn apply(&self, what: &str, partitions: &BTreeSet<TopicPartition>) {
        let mut journal = self.journal.lock().unwrap();
        journal.callbacks += 1;
        let member = self.member;
        let mut violations = Vec::new();
        let awaiting_lost = journal.awaiting_lost.contains(&member);
        let owned = journal.owned.entry(member).or_default();
        for tp in partitions {
            let had = owned.contains_key(tp);
            match what {
                "assigned" if had => violations.push(format!("m{member}: {tp} assigned twice")),
                "assigned" => {
                    owned.insert(tp.clone(), None);
                }
                "revoked" if awaiting_lost => violations.push(format!(
                    "m{member}: {tp} revoked after its poll timer expired (lost, not revoked)"
                )),
                _ if !had => violations.push(format!("m{member}: {tp} {what} but not owned")),
                _ => {
                    owned.remove(tp);
                }
            }
        }
        if what == "lost" {
            journal.awaiting_lost.remove(&member);
        }
        journal.violations.extend(violations);
    }
}

impl ConsumerRebalanceListener for Recorder {
    fn on_partitions_revoked<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            // What the application consumed of each partition it gives up: `commit_sync(None)`
            // commits the next offset after it.
            let consumed: Vec<(TopicPartition, i64)> = {
                let journal = self.journal.lock().unwrap();
                let owned = journal.owned.get(&self.member);
                partitions
                    .iter()
                    .filter_map(|tp| Some((tp.clone(), (*owned?.get(tp)?)? + 1)))
                    .collect()
            };
            self.call("revoked", partitions).await;
            if !partitions.is_empty() {
                // Best effort, as applications do: a failed commit only means redelivery. A
                // successful one bounds what the next owner may deliver again.
                let committed = consumer.commit_sync(None, Duration::from_secs(5)).await;
                if committed.is_ok() {
                    let mut journal = self.journal.lock().unwrap();
                    for (tp, position) in consumed {
                        let floor = journal
                            .committed_on_revoke
                            .entry(tp)
                            .or_insert((position, self.member));
                        if position > floor.0 {
                            *floor = (position, self.member);
                        }
                    }
                }
            }
            Ok(())
        })
    }

    fn on_partitions_assigned<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.call("assigned", partitions).await;
            Ok(())
        })
    }

    fn on_partitions_lost<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.call("lost", partitions).await;
            Ok(())
        })
    }
}

pub const MAX_POLL_INTERVAL_MS: u64 = 20_000;

pub fn config(bootstrap: &[String], member: usize, protocol: Protocol) -> ConsumerConfig {
    let builder = ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id(protocol.group())
        .client_id(format!("m{member}"))
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("max.poll.interval.ms", MAX_POLL_INTERVAL_MS.to_string())
        .set("auto.commit.interval.ms", "1000")
        .set("request.timeout.ms", "5000")
        .set("max.poll.records", "10");
    match protocol {
        Protocol::Classic => builder
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000"),
        Protocol::Consumer => builder
            .set("group.protocol", "consumer")
            .set("group.remote.assignor", "uniform"),
    }
    .build()
    .unwrap()
}

pub const POLL_TIMEOUT: Duration = Duration::from_millis(100);

/// Keeps the longest time a poll ran past its timeout.
pub fn note_overshoot(journal: &Shared, started: tokio::time::Instant) {
    let overshoot = tokio::time::Instant::now()
        .saturating_duration_since(started + POLL_TIMEOUT)
        .as_micros();
    let mut j = journal.lock().unwrap();
    j.max_poll_overshoot_us = j.max_poll_overshoot_us.max(overshoot);
}

/// Notes each record and checks it belongs to an ownership and moves forward.
pub fn record_deliveries(
    journal: &Shared,
    index: usize,
    records: &kafka_consumer::ConsumerRecords,
) {
    let mut j = journal.lock().unwrap();
    for r in records.iter() {
        *j.deliveries.entry((r.partition, r.offset)).or_default() += 1;
        let tp = r.topic_partition();
        let last = j.owned.entry(index).or_default().get(&tp).copied();
        match last {
            None => j
                .violations
                .push(format!("m{index}: record of {tp} it does not own")),
            Some(None)
                if j.committed_on_revoke
                    .get(&tp)
                    .is_some_and(|(c, _)| r.offset < *c) =>
            {
                let (committed, by) = j.committed_on_revoke[&tp];
                j.violations.push(format!(
                    "m{index}: its ownership of {tp} started at {} although m{by} had committed \
                     {committed} when revoking it: records below the committed offset were \
                     delivered again (beyond at-least-once)",
                    r.offset
                ));
                j.owned.entry(index).or_default().insert(tp, Some(r.offset));
            }
            Some(Some(prev)) if r.offset <= prev => j.violations.push(format!(
                "m{index}: {tp} went from {prev} back to {}",
                r.offset
            )),
            Some(_) => {
                j.owned.entry(index).or_default().insert(tp, Some(r.offset));
            }
        }
    }
}

/// A member: polls until `stop`, recording what it gets and its view of the group.
pub async fn member(
    index: usize,
    bootstrap: Vec<String>,
    journal: Shared,
    stop: Arc<AtomicBool>,
    protocol: Protocol,
    app: AppFaults,
) {
    let mut consumer = Consumer::new(config(&bootstrap, index, protocol)).unwrap();
    consumer
        .subscribe_with_listener(
            ["t"],
            Recorder {
                member: index,
                journal: Arc::clone(&journal),
                app,
                calls: 0,
                stop: Arc::clone(&stop),
            },
        )
        .await
        .unwrap();
    let subscribed_at = tokio::time::Instant::now();
    let mut stall = app.stall.filter(|(m, _, _)| *m == index);
    while !stop.load(Ordering::SeqCst) {
        let started = tokio::time::Instant::now();
        let polled = consumer.poll(POLL_TIMEOUT).await;
        note_overshoot(&journal, started);
        let records = match polled {
            Ok(records) => records,
            Err(error) => {
                let now = tokio::time::Instant::now();
                journal
                    .lock()
                    .unwrap()
                    .errors
                    .push(format!("m{index} at {now:?}: {error}"));
                continue;
            }
        };
        record_deliveries(&journal, index, &records);
        let view = (
            consumer.assignment().clone(),
            consumer.group_metadata().map_or(-1, |m| m.generation_id),
            consumer
                .group_metadata()
                .map(|m| m.member_id)
                .unwrap_or_default(),
            consumer.metrics().rebalances,
        );
        journal.lock().unwrap().views.insert(index, view);
        // Processing time: consumption spans the whole fault window (~30 virtual s).
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Some((_, at_ms, stall_ms)) = stall {
            if subscribed_at.elapsed() >= Duration::from_millis(at_ms) {
                {
                    let mut j = journal.lock().unwrap();
                    j.stalls += 1;
                    if j.owned.get(&index).is_some_and(|o| !o.is_empty()) {
                        j.awaiting_lost.insert(index);
                    }
                }
                tokio::time::sleep(Duration::from_millis(stall_ms)).await;
                stall = None;
            }
        }
    }
    let _ = consumer.close(Duration::from_secs(10)).await;
}

/// The fault plan for a seed: three faults within the first 40 virtual seconds, each healed
/// within 15 s.
pub fn plan(seed: u64, protocol: Protocol) -> FaultPlan {
    let mut rng = StdRng::seed_from_u64(seed);
    let coordinator_partition = offsets_partition_for(protocol.group(), OFFSETS_PARTITIONS);
    let mut plan = FaultPlan::new();
    for _ in 0..3 {
        let at = rng.gen_range(3_000..40_000);
        let heal = at + rng.gen_range(2_000..15_000);
        let broker = rng.gen_range(1..=3);
        let member = format!("member-{}", rng.gen_range(0..MEMBERS));
        match rng.gen_range(0..5) {
            0 => {
                plan.push((at, Fault::KillBroker { broker }));
                plan.push((heal, Fault::RestartBroker { broker }));
            }
            1 => plan.push((at, Fault::RestartBroker { broker })),
            2 => plan.push((
                at,
                Fault::MoveCoordinator {
                    offsets_partition: coordinator_partition,
                    to: None,
                },
            )),
            3 => {
                plan.push((
                    at,
                    Fault::ClogNode {
                        node: member.clone(),
                        direction: Direction::Both,
                    },
                ));
                plan.push((
                    heal,
                    Fault::UnclogNode {
                        node: member,
                        direction: Direction::Both,
                    },
                ));
            }
            _ => {
                plan.push((
                    at,
                    Fault::ClogNode {
                        node: member.clone(),
                        direction: Direction::Out,
                    },
                ));
                plan.push((
                    heal,
                    Fault::UnclogNode {
                        node: member,
                        direction: Direction::Out,
                    },
                ));
            }
        }
    }
    plan.sort_by_key(|(at, _)| *at);
    plan
}

/// A member that joins and leaves the group over and over (a rebalance every few seconds);
/// what it consumes counts as delivered.
pub async fn churner(bootstrap: Vec<String>, journal: Shared, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        let mut consumer = Consumer::new(config(&bootstrap, 9, Protocol::Classic)).unwrap();
        consumer.subscribe(["t"]).await.unwrap();
        let until = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < until && !stop.load(Ordering::SeqCst) {
            if let Ok(records) = consumer.poll(POLL_TIMEOUT).await {
                let mut j = journal.lock().unwrap();
                for r in records.iter() {
                    *j.deliveries.entry((r.partition, r.offset)).or_default() += 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let _ = consumer.close(Duration::from_secs(5)).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

pub struct Outcome {
    pub protocol: Protocol,
    pub journal: Journal,
    pub assignments: Vec<BTreeSet<TopicPartition>>,
    pub plan: FaultPlan,
    pub app: AppFaults,
}

/// The group coordinator: Kafka's defaults, but KIP-848 sessions of 10 s (Kafka's 45 s would
/// outlast every network cut of the plan, and no member would ever be fenced).
fn coordinator(protocol: Protocol) -> GroupCoordinatorFactory {
    let mut factory = GroupCoordinatorFactory::default();
    if protocol == Protocol::Consumer {
        factory.consumer.session_timeout_ms = 10_000;
        factory.consumer.heartbeat_interval_ms = 1_000;
    }
    factory
}

pub async fn run_group(seed: u64, protocol: Protocol) -> Outcome {
    run_group_with(protocol, plan(seed, protocol), app_faults(seed), false).await
}

pub async fn run_group_with(
    protocol: Protocol,
    plan: FaultPlan,
    app: AppFaults,
    churn: bool,
) -> Outcome {
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(3)
            .topic("t", PARTITIONS)
            .offsets_partitions(OFFSETS_PARTITIONS)
            .group_shards(Arc::new(coordinator(protocol)))
            .build()
            .await,
    );
    for p in 0..PARTITIONS {
        for chunk in 0..RECORDS_PER_PARTITION / 50 {
            let values: Vec<String> = (0..50).map(|i| format!("{p}-{chunk}-{i}")).collect();
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            cluster.controller().append("t", p, batch(&refs)).unwrap();
        }
    }
    let journal: Shared = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let bootstrap = cluster.bootstrap_servers();
    let handles: Vec<_> = (0..MEMBERS)
        .map(|i| {
            let node = Handle::current()
                .create_node()
                .name(format!("member-{i}"))
                .ip(format!("10.0.3.{}", i + 1).parse().unwrap())
                .build();
            node.spawn(member(
                i,
                bootstrap.clone(),
                Arc::clone(&journal),
                Arc::clone(&stop),
                protocol,
                app,
            ))
        })
        .collect();
    let churn_stop = Arc::new(AtomicBool::new(false));
    let churner = churn.then(|| {
        let node = Handle::current()
            .create_node()
            .name("churner")
            .ip("10.0.3.9".parse().unwrap())
            .build();
        node.spawn(churner(
            bootstrap.clone(),
            Arc::clone(&journal),
            Arc::clone(&churn_stop),
        ))
    });
    let faults = {
        let cluster = Arc::clone(&cluster);
        let plan = plan.clone();
        tokio::spawn(async move { cluster.run_plan(&plan).await })
    };
    let total = PARTITIONS as usize * RECORDS_PER_PARTITION;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let done = journal.lock().unwrap().deliveries.len() >= total;
        if done || tokio::time::Instant::now() >= deadline {
            break;
        }
    }
    faults.await.unwrap();
    churn_stop.store(true, Ordering::SeqCst);
    if let Some(churner) = churner {
        churner.await.unwrap();
    }
    // Let the group settle after the last fault: every member in the same generation (classic), every
    // partition owned exactly once, for 3 s in a row (a member coming back from a network cut
    // rejoins some seconds after the cut heals). Bounded: a group that never settles fails the
    // check below.
    let settle_deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let mut stable_for = 0;
    while stable_for < 3 && tokio::time::Instant::now() < settle_deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let j = journal.lock().unwrap();
        let generations: BTreeSet<i32> = j.views.values().map(|v| v.1).collect();
        let owned: usize = j.views.values().map(|v| v.0.len()).sum();
        let union: BTreeSet<&TopicPartition> = j.views.values().flat_map(|v| v.0.iter()).collect();
        let settled = j.views.len() == MEMBERS
            // KIP-848 member epochs are per member; classic generations are the group's.
            && (generations.len() == 1 || protocol == Protocol::Consumer)
            && owned == PARTITIONS as usize
            && union.len() == owned;
        stable_for = if settled { stable_for + 1 } else { 0 };
    }
    // The settled assignments, read together: members leave one after the other below, and
    // each leave rebalances the members still running.
    let settled: Vec<BTreeSet<TopicPartition>> = journal
        .lock()
        .unwrap()
        .views
        .values()
        .map(|v| v.0.clone())
        .collect();
    stop.store(true, Ordering::SeqCst);
    for handle in handles {
        handle.await.unwrap();
    }
    let journal = std::mem::take(&mut *journal.lock().unwrap());
    Outcome {
        protocol,
        journal,
        assignments: settled,
        plan,
        app,
    }
}

/// The listener panics [`AppFaults::panic_at`] plans are expected: one line each instead of
/// the default hook's report (and backtrace), which would bury real failures in the log.
fn quiet_planned_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or_default();
            if message.contains(PLANNED_PANIC) {
                eprintln!("(planned) {message}");
            } else {
                default(info);
            }
        }));
    });
}

/// Marks the panics the application faults plan.
const PLANNED_PANIC: &str = "panics in its listener call";

/// Runs `simulation` under `seed` in a fresh runtime on its own thread.
pub fn simulate<F: std::future::Future<Output = Outcome> + 'static>(
    seed: u64,
    simulation: impl FnOnce() -> F + Send + 'static,
) -> Outcome {
    quiet_planned_panics();
    #[allow(clippy::disallowed_methods)] // outside the simulation: one OS thread per runtime
    let thread = std::thread::spawn(move || {
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        // SIM_GROUP_TRACE=N writes seed N's consumer and broker logs (virtual time) to
        // target/sim-group-trace-N.log, for diagnosing a failure.
        let traced = std::env::var("SIM_GROUP_TRACE").ok() == Some(seed.to_string());
        if !traced {
            return runtime.block_on(simulation());
        }
        let path = format!("{}/sim-group-trace-{seed}.log", env!("CARGO_TARGET_TMPDIR"));
        let file = std::fs::File::create(&path).expect("trace file");
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("kafka_consumer=debug,sim=info")
            .with_writer(std::sync::Mutex::new(file))
            .with_ansi(false)
            .finish();
        eprintln!("tracing seed {seed} to {path}");
        tracing::subscriber::with_default(subscriber, || runtime.block_on(simulation()))
    });
    thread.join().unwrap()
}

pub fn run(seed: u64, protocol: Protocol) -> Outcome {
    simulate(seed, move || run_group(seed, protocol))
}

pub fn check(seed: u64, outcome: &Outcome) -> Result<(), String> {
    let j = &outcome.journal;
    let (binary, env) = outcome.protocol.rerun();
    let repro = format!(
        "{env}_SEED={seed} cargo stest -p sim --test {binary}; app faults {:?}",
        outcome.app
    );
    let surfaced = j
        .errors
        .iter()
        .filter(|e| e.contains("rebalance listener"))
        .count();
    if let Some(member) = j.awaiting_lost.first() {
        return Err(format!(
            "seed {seed}: m{member}'s poll timer expired while it owned partitions, and no \
             on_partitions_lost followed; repro: {repro}"
        ));
    }
    // The only errors `poll` may return here are the planned listener panics it reports: the
    // faults (broker kills, coordinator moves, cut members) are retried inside the consumer,
    // as Java's `poll` does, and never surface.
    if let Some(unexpected) = j.errors.iter().find(|e| !e.contains(PLANNED_PANIC)) {
        return Err(format!(
            "seed {seed}: poll returned an error no fault of the application planned: \
             {unexpected}; repro: {repro}"
        ));
    }
    if surfaced < j.panics {
        return Err(format!(
            "seed {seed}: {} listener panics, {surfaced} reported by poll; errors {:?}; repro: \
             {repro}",
            j.panics, j.errors
        ));
    }
    if let Some(v) = j.violations.first() {
        return Err(format!(
            "seed {seed}: {v} (plan {:?}); repro: {repro}",
            outcome.plan
        ));
    }
    let total = PARTITIONS as usize * RECORDS_PER_PARTITION;
    if j.deliveries.len() != total {
        return Err(format!(
            "seed {seed}: {} of {total} records delivered (plan {:?}); repro: {repro}",
            j.deliveries.len(),
            outcome.plan
        ));
    }
    let mut union = BTreeSet::new();
    for assignment in &outcome.assignments {
        for tp in assignment {
            if !union.insert(tp.clone()) {
                return Err(format!(
                    "seed {seed}: {tp} owned twice at the end; repro: {repro}"
                ));
            }
        }
    }
    if union.len() != PARTITIONS as usize {
        return Err(format!(
            "seed {seed}: {} of {PARTITIONS} partitions owned at the end: {:?}; views {:?}; \
             poll errors {:?}; plan {:?}; repro: {repro}",
            union.len(),
            outcome.assignments,
            j.views,
            j.errors,
            outcome.plan
        ));
    }
    Ok(())
}

/// Runs the seeds `{ENV}_SEED` (one) or `{ENV}_SEEDS` (1..=N, default 12) names for
/// `protocol` and fails with every failing seed's report and repro line.
pub fn run_seeds(protocol: Protocol) {
    let (_, env) = protocol.rerun();
    let seeds: Vec<u64> = match std::env::var(format!("{env}_SEED")) {
        Ok(seed) => vec![seed.parse().expect("the seed is a number")],
        Err(_) => {
            let count: u64 = std::env::var(format!("{env}_SEEDS"))
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(12);
            (1..=count).collect()
        }
    };
    let mut failures = Vec::new();
    let mut duplicates = 0usize;
    let mut callbacks = 0usize;
    let (mut panics, mut stalls) = (0usize, 0usize);
    for &seed in &seeds {
        let outcome = run(seed, protocol);
        duplicates += outcome
            .journal
            .deliveries
            .values()
            .map(|n| *n as usize - 1)
            .sum::<usize>();
        callbacks += outcome.journal.callbacks;
        panics += outcome.journal.panics;
        stalls += outcome.journal.stalls;
        if let Err(failure) = check(seed, &outcome) {
            failures.push(failure);
        }
    }
    eprintln!(
        "{protocol:?}: {} seeds: {} failed, {duplicates} duplicate deliveries, {callbacks} \
         listener calls, {panics} listener panics, {stalls} poll loops stalled past \
         max.poll.interval.ms",
        seeds.len(),
        failures.len()
    );
    assert!(
        callbacks >= seeds.len() * MEMBERS,
        "the members took part in rebalances"
    );
    if seeds.len() >= 12 {
        // Coverage: the batch reached the application faults it exists for.
        assert!(panics > 0 && stalls > 0, "{panics} panics, {stalls} stalls");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
