//! Simulation mode: a rolling switch of a group of our consumers between the group protocols,
//! against a 3-broker simulated cluster whose coordinator migrates groups online as Kafka 4.1
//! does (`group.consumer.migration.policy=bidirectional`, the default).
//!
//! Three members start with `group.protocol=classic`. One at a time (order and pauses drawn from
//! the seed) each is closed and replaced by a member with `group.protocol=consumer`: the first
//! ConsumerGroupHeartbeat upgrades the classic group, the remaining classic members are served
//! inside the consumer group through JoinGroup/SyncGroup/Heartbeat, and the group ends as a
//! consumer group. The second half switches back the same way: when the last consumer-protocol
//! member leaves, the group is downgraded and the classic members rebalance among themselves.
//! A producer task appends records to every partition throughout (through the cluster's
//! controller, the simulated partition leaders' log).
//!
//! Invariants, checked for every seed (`SIM_MIGRATION_SEEDS`, default 4; `SIM_MIGRATION_SEED=N`
//! runs one):
//! - after every replacement the live members own every partition exactly once (the group
//!   settles), and the group has the expected type (consumer after the upgrade, classic after
//!   the downgrade, as ListGroups reports it);
//! - no partition is owned by two members at once as the listeners see it (a member is told a
//!   partition is assigned only after its previous owner was told it is revoked or lost);
//! - every produced record is delivered at least once;
//! - a member resumes a partition exactly at the offset its previous owner committed when the
//!   partition was revoked, and never beyond the last delivered offset + 1 (no gap, no loss);
//! - within one ownership a member's offsets of a partition only go up.
#![cfg(madsim)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
use kafka_consumer::rt::Duration;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use kafka_protocol::messages::ListGroupsRequest;
use madsim::runtime::Handle;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sim::cluster::Cluster;
use sim::group::shard::GroupCoordinatorFactory;

const GROUP: &str = "sim-migration";
const TOPIC: &str = "t";
const PARTITIONS: i32 = 12;
const MEMBERS: usize = 3;
/// Records appended to each partition per producer round.
const RECORDS_PER_ROUND: usize = 5;
const POLL_TIMEOUT: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Classic,
    Consumer,
}

/// What the members and the producer saw.
#[derive(Default)]
struct Journal {
    /// Deliveries per (partition, offset).
    deliveries: BTreeMap<(i32, i64), u32>,
    /// Records appended per partition (offsets 0..n).
    produced: BTreeMap<i32, i64>,
    violations: Vec<String>,
    /// Each partition's owner as the listeners tell it.
    owner: BTreeMap<i32, usize>,
    /// Per member: partitions it owns and the last offset it got in each since assignment.
    owned: BTreeMap<usize, BTreeMap<i32, Option<i64>>>,
    /// Per partition: the offset committed when its last owner had it revoked, if the commit
    /// succeeded; where the next owner must resume.
    handover: BTreeMap<i32, (i64, usize)>,
    /// Per (member, partition): the offset after the last record the member got before it
    /// released the partition, for the report of a resumption before the handover.
    stopped_at: BTreeMap<(usize, i32), i64>,
    /// Resumptions checked against a handover.
    resumed_at_handover: usize,
    /// Resumptions before the handover offset (redelivery: the commit made on revocation did
    /// not reach the next owner), for the report.
    resumed_before_handover: Vec<String>,
    /// Live members' own view of their assignment, after each poll.
    views: BTreeMap<usize, BTreeSet<i32>>,
    /// Errors `poll` returned.
    errors: Vec<String>,
    listener_calls: usize,
}

type Shared = Arc<Mutex<Journal>>;

/// The listener: commits on revocation (as applications do) and keeps the journal's ownership.
struct Watcher {
    member: usize,
    journal: Shared,
}

impl Watcher {
    fn release(&self, partitions: &BTreeSet<TopicPartition>, committed: Option<bool>) {
        let mut j = self.journal.lock().unwrap();
        j.listener_calls += 1;
        for tp in partitions {
            let last = j
                .owned
                .get_mut(&self.member)
                .and_then(|owned| owned.remove(&tp.partition));
            let Some(last) = last else {
                let v = format!("m{}: {tp} released but not owned", self.member);
                j.violations.push(v);
                continue;
            };
            if j.owner.get(&tp.partition) == Some(&self.member) {
                j.owner.remove(&tp.partition);
            }
            if let Some(offset) = last {
                j.stopped_at.insert((self.member, tp.partition), offset + 1);
            }
            match (committed, last) {
                (Some(true), Some(offset)) => {
                    j.handover.insert(tp.partition, (offset + 1, self.member));
                }
                // Nothing consumed: the committed offset did not move.
                (Some(true), None) => {}
                _ => {
                    j.handover.remove(&tp.partition);
                }
            }
        }
    }
}

impl ConsumerRebalanceListener for Watcher {
    fn on_partitions_revoked<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let committed = partitions.is_empty()
                || consumer
                    .commit_sync(None, Duration::from_secs(5))
                    .await
                    .is_ok();
            self.release(partitions, Some(committed));
            Ok(())
        })
    }

    fn on_partitions_assigned<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let mut j = self.journal.lock().unwrap();
            j.listener_calls += 1;
            for tp in partitions {
                let member = self.member;
                match j.owner.get(&tp.partition).copied() {
                    Some(other) if other != member => j.violations.push(format!(
                        "m{member}: {tp} assigned while m{other} still owns it"
                    )),
                    Some(_) => j.violations.push(format!("m{member}: {tp} assigned twice")),
                    None => {}
                }
                j.owner.insert(tp.partition, member);
                j.owned
                    .entry(member)
                    .or_default()
                    .insert(tp.partition, None);
            }
            Ok(())
        })
    }

    fn on_partitions_lost<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.release(partitions, None);
            Ok(())
        })
    }
}

fn config(bootstrap: &[String], member: usize, protocol: Protocol) -> ConsumerConfig {
    let builder = ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id(GROUP)
        .client_id(format!("m{member}"))
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("max.poll.interval.ms", "20000")
        .set("auto.commit.interval.ms", "1000")
        .set("request.timeout.ms", "5000")
        .set("max.poll.records", "10");
    match protocol {
        Protocol::Classic => builder
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000"),
        Protocol::Consumer => builder.set("group.protocol", "consumer"),
    }
    .build()
    .unwrap()
}

/// Notes each record: it must belong to a partition the member owns, move forward within the
/// ownership, and the first one after an assignment must resume at the handover offset (and
/// never past what was delivered so far).
fn record_deliveries(journal: &Shared, member: usize, records: &kafka_consumer::ConsumerRecords) {
    let mut j = journal.lock().unwrap();
    for r in records.iter() {
        let p = r.partition;
        let delivered_up_to = j
            .deliveries
            .range((p, i64::MIN)..=(p, i64::MAX))
            .next_back()
            .map_or(-1, |((_, o), _)| *o);
        *j.deliveries.entry((p, r.offset)).or_default() += 1;
        let last = j.owned.get(&member).and_then(|o| o.get(&p)).copied();
        match last {
            None => j.violations.push(format!(
                "m{member}: record of partition {p} it does not own"
            )),
            Some(None) => {
                if r.offset > delivered_up_to + 1 {
                    j.violations.push(format!(
                        "m{member}: partition {p} resumed at {} past the last delivered {delivered_up_to}",
                        r.offset
                    ));
                }
                if let Some(&(handover, from)) = j.handover.get(&p) {
                    j.resumed_at_handover += 1;
                    let now = tokio::time::Instant::now();
                    let earlier = j.stopped_at.get(&(member, p)).map_or(String::new(), |o| {
                        format!(" (m{member} itself had stopped at {o} when it owned it before)")
                    });
                    let what = format!(
                        "m{member} at {now:?}: partition {p} resumed at {} but m{from} committed {handover} when it was revoked{earlier}",
                        r.offset
                    );
                    // Past the committed offset would skip records; before it only redelivers.
                    if r.offset > handover {
                        j.violations.push(what);
                    } else if r.offset < handover {
                        j.resumed_before_handover.push(what);
                    }
                }
            }
            Some(Some(prev)) if r.offset <= prev => j.violations.push(format!(
                "m{member}: partition {p} went from {prev} back to {}",
                r.offset
            )),
            Some(Some(_)) => {}
        }
        if last.is_some() {
            j.owned.entry(member).or_default().insert(p, Some(r.offset));
        }
    }
}

/// One member: polls until `stop`, then closes (revoking through the listener and leaving).
async fn member(
    index: usize,
    protocol: Protocol,
    bootstrap: Vec<String>,
    journal: Shared,
    stop: Arc<AtomicBool>,
) {
    let mut consumer = Consumer::new(config(&bootstrap, index, protocol)).unwrap();
    let watcher = Watcher {
        member: index,
        journal: Arc::clone(&journal),
    };
    consumer
        .subscribe_with_listener([TOPIC], watcher)
        .await
        .unwrap();
    while !stop.load(Ordering::SeqCst) {
        match consumer.poll(POLL_TIMEOUT).await {
            Ok(records) => record_deliveries(&journal, index, &records),
            Err(error) => {
                let now = tokio::time::Instant::now();
                let line = format!("m{index} ({protocol:?}) at {now:?}: {error}");
                journal.lock().unwrap().errors.push(line);
            }
        }
        let view = consumer
            .assignment()
            .iter()
            .map(|tp| tp.partition)
            .collect();
        journal.lock().unwrap().views.insert(index, view);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = consumer.close(Duration::from_secs(10)).await;
    journal.lock().unwrap().views.remove(&index);
}

/// The producer: a round of records to every partition every 250 virtual ms until `stop`.
async fn producer(cluster: Arc<Cluster>, journal: Shared, stop: Arc<AtomicBool>) {
    let mut round = 0usize;
    while !stop.load(Ordering::SeqCst) {
        for p in 0..PARTITIONS {
            let values: Vec<String> = (0..RECORDS_PER_ROUND)
                .map(|i| format!("{p}-{round}-{i}"))
                .collect();
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            cluster
                .controller()
                .append(TOPIC, p, support::batch(&refs))
                .unwrap();
            *journal.lock().unwrap().produced.entry(p).or_default() += RECORDS_PER_ROUND as i64;
        }
        round += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A started member: its stop flag and its task.
struct Running {
    index: usize,
    stop: Arc<AtomicBool>,
    task: madsim::task::JoinHandle<()>,
}

fn start(index: usize, protocol: Protocol, bootstrap: &[String], journal: &Shared) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let node = Handle::current()
        .create_node()
        .name(format!("member-{index}"))
        .ip(format!("10.0.4.{}", index + 1).parse().unwrap())
        .build();
    let task = node.spawn(member(
        index,
        protocol,
        bootstrap.to_vec(),
        Arc::clone(journal),
        Arc::clone(&stop),
    ));
    Running { index, stop, task }
}

async fn stop(running: Running) {
    running.stop.store(true, Ordering::SeqCst);
    running.task.await.unwrap();
}

/// Waits until the live members' views are disjoint, cover every partition and stay so for 3
/// virtual seconds; false after 90 s.
async fn settled(journal: &Shared, live: &BTreeSet<usize>) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let mut stable_for = 0;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let j = journal.lock().unwrap();
        let views: Vec<&BTreeSet<i32>> = live.iter().filter_map(|m| j.views.get(m)).collect();
        let owned: usize = views.iter().map(|v| v.len()).sum();
        let union: BTreeSet<i32> = views.iter().flat_map(|v| v.iter().copied()).collect();
        let ok = views.len() == live.len() && owned == PARTITIONS as usize && union.len() == owned;
        stable_for = if ok { stable_for + 1 } else { 0 };
        if stable_for >= 3 {
            return true;
        }
    }
    false
}

/// The type ListGroups reports for the group (asking every broker from an admin node), if the
/// group exists.
async fn group_type(cluster: &Cluster, probe: usize) -> Option<String> {
    let bootstrap = cluster.bootstrap_servers();
    let node = Handle::current()
        .create_node()
        .name(format!("admin-{probe}"))
        .ip(format!("10.0.5.{}", probe + 1).parse().unwrap())
        .build();
    node.spawn(async move {
        let brokers = bootstrap.len() as i32;
        let mut client = support::client(bootstrap);
        // Negative node ids name the bootstrap servers: no Metadata round needed.
        for node in (1..=brokers).map(|i| -i) {
            let listed = support::send(&mut client, node, ListGroupsRequest::default()).await;
            if let Some(group) = listed
                .groups
                .iter()
                .find(|g| g.group_id.0.as_str() == GROUP)
            {
                return Some(group.group_type.to_string());
            }
        }
        None
    })
    .await
    .unwrap()
}

struct Outcome {
    journal: Journal,
    /// Phase failures (a group that did not settle, or had the wrong type).
    phases: Vec<String>,
    /// The live members' assignments at the end.
    final_views: Vec<BTreeSet<i32>>,
}

async fn run(seed: u64) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut factory = GroupCoordinatorFactory::default();
    factory.classic.group_initial_rebalance_delay_ms = 0;
    factory.consumer.session_timeout_ms = 10_000;
    factory.consumer.heartbeat_interval_ms = 1_000;
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(3)
            .topic(TOPIC, PARTITIONS)
            .offsets_partitions(3)
            .group_shards(Arc::new(factory))
            .build()
            .await,
    );
    let bootstrap = cluster.bootstrap_servers();
    let journal: Shared = Arc::default();
    let producing = Arc::new(AtomicBool::new(false));
    let producer_task = {
        let node = Handle::current()
            .create_node()
            .name("producer")
            .ip("10.0.4.100".parse().unwrap())
            .build();
        node.spawn(producer(
            Arc::clone(&cluster),
            Arc::clone(&journal),
            Arc::clone(&producing),
        ))
    };
    let mut phases = Vec::new();
    let mut running: Vec<Running> = (0..MEMBERS)
        .map(|i| start(i, Protocol::Classic, &bootstrap, &journal))
        .collect();
    let mut next_index = MEMBERS;
    let live: BTreeSet<usize> = (0..MEMBERS).collect();
    if !settled(&journal, &live).await {
        phases.push("the classic group never settled".to_owned());
    }
    for (probe, (to, expected_type)) in [
        (Protocol::Consumer, "consumer"),
        (Protocol::Classic, "classic"),
    ]
    .into_iter()
    .enumerate()
    {
        if !phases.is_empty() {
            break;
        }
        switch_all(
            &mut rng,
            &mut running,
            &mut next_index,
            to,
            &bootstrap,
            &journal,
            &mut phases,
        )
        .await;
        let listed = group_type(&cluster, probe).await;
        if phases.is_empty() && listed.as_deref() != Some(expected_type) {
            phases.push(format!(
                "after switching to {to:?} the group is listed as {listed:?}"
            ));
        }
    }
    producing.store(true, Ordering::SeqCst);
    producer_task.await.unwrap();
    // Everything produced is consumed by the final group.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let done = {
            let j = journal.lock().unwrap();
            let total: i64 = j.produced.values().sum();
            j.deliveries.len() as i64 >= total
        };
        if done || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let final_views: Vec<BTreeSet<i32>> = {
        let j = journal.lock().unwrap();
        running
            .iter()
            .filter_map(|r| j.views.get(&r.index).cloned())
            .collect()
    };
    for r in running {
        stop(r).await;
    }
    let journal = std::mem::take(&mut *journal.lock().unwrap());
    Outcome {
        journal,
        phases,
        final_views,
    }
}

/// Replaces the members one at a time, each by a member speaking `to`, in a seeded order with a
/// seeded pause before each new member starts; stops at the first phase that does not settle.
async fn switch_all(
    rng: &mut StdRng,
    running: &mut Vec<Running>,
    next_index: &mut usize,
    to: Protocol,
    bootstrap: &[String],
    journal: &Shared,
    phases: &mut Vec<String>,
) {
    // The members to replace: every one running now, in a seeded order.
    let mut to_replace: Vec<usize> = running.iter().map(|r| r.index).collect();
    for i in (1..to_replace.len()).rev() {
        to_replace.swap(i, rng.gen_range(0..=i));
    }
    for replaced in to_replace {
        let Some(position) = running.iter().position(|r| r.index == replaced) else {
            continue;
        };
        stop(running.remove(position)).await;
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..3_000))).await;
        running.push(start(*next_index, to, bootstrap, journal));
        *next_index += 1;
        let live: BTreeSet<usize> = running.iter().map(|r| r.index).collect();
        if !settled(journal, &live).await {
            let views = journal.lock().unwrap().views.clone();
            phases.push(format!(
                "after replacing m{replaced} by m{} ({to:?}) the group did not settle: views {views:?}",
                *next_index - 1
            ));
            return;
        }
    }
}

fn check(seed: u64, outcome: &Outcome) -> Result<(), String> {
    let repro = format!("SIM_MIGRATION_SEED={seed} cargo stest -p sim --test sim_group_migration");
    let j = &outcome.journal;
    if let Some(phase) = outcome.phases.first() {
        return Err(format!(
            "seed {seed}: {phase}; poll errors {:?}; repro: {repro}",
            j.errors
        ));
    }
    if let Some(v) = j.violations.first() {
        return Err(format!(
            "seed {seed}: {v} (all {} violations: {:?}); repro: {repro}",
            j.violations.len(),
            j.violations
        ));
    }
    for (&p, &count) in &j.produced {
        let missing: Vec<i64> = (0..count)
            .filter(|o| !j.deliveries.contains_key(&(p, *o)))
            .take(5)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "seed {seed}: partition {p}: offsets {missing:?}… of {count} never delivered; repro: {repro}"
            ));
        }
    }
    let mut union = BTreeSet::new();
    for view in &outcome.final_views {
        for &p in view {
            if !union.insert(p) {
                return Err(format!(
                    "seed {seed}: partition {p} owned twice at the end; repro: {repro}"
                ));
            }
        }
    }
    if union.len() != PARTITIONS as usize || outcome.final_views.len() != MEMBERS {
        return Err(format!(
            "seed {seed}: final assignment {:?} does not cover the {PARTITIONS} partitions; repro: {repro}",
            outcome.final_views
        ));
    }
    Ok(())
}

/// Runs `seed` in a fresh runtime on its own thread (a seed reproduces only as the first
/// simulation of its runtime).
fn simulate(seed: u64) -> Outcome {
    #[allow(clippy::disallowed_methods)] // outside the simulation: one OS thread per runtime
    let thread = std::thread::spawn(move || {
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        // SIM_MIGRATION_TRACE=N writes seed N's consumer and broker logs (virtual time) to
        // target/sim-migration-trace-N.log.
        if std::env::var("SIM_MIGRATION_TRACE").ok() != Some(seed.to_string()) {
            return runtime.block_on(run(seed));
        }
        let path = format!(
            "{}/sim-migration-trace-{seed}.log",
            env!("CARGO_TARGET_TMPDIR")
        );
        let file = std::fs::File::create(&path).expect("trace file");
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(
                std::env::var("SIM_MIGRATION_TRACE_FILTER")
                    .unwrap_or_else(|_| "kafka_consumer=debug,sim=debug".to_owned()),
            )
            .with_writer(std::sync::Mutex::new(file))
            .with_ansi(false)
            .finish();
        eprintln!("tracing seed {seed} to {path}");
        tracing::subscriber::with_default(subscriber, || runtime.block_on(run(seed)))
    });
    thread.join().unwrap()
}

#[test]
fn a_rolling_switch_to_the_consumer_protocol_and_back_loses_nothing() {
    let seeds: Vec<u64> = match std::env::var("SIM_MIGRATION_SEED") {
        Ok(seed) => vec![seed.parse().expect("the seed is a number")],
        Err(_) => {
            let count: u64 = std::env::var("SIM_MIGRATION_SEEDS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(4);
            (1..=count).collect()
        }
    };
    let mut failures = Vec::new();
    let (mut duplicates, mut handovers, mut listener_calls) = (0usize, 0usize, 0usize);
    let mut redelivered = Vec::new();
    for &seed in &seeds {
        let outcome = simulate(seed);
        let j = &outcome.journal;
        duplicates += j
            .deliveries
            .values()
            .map(|n| *n as usize - 1)
            .sum::<usize>();
        handovers += j.resumed_at_handover;
        listener_calls += j.listener_calls;
        redelivered.extend(
            j.resumed_before_handover
                .iter()
                .map(|what| format!("seed {seed}: {what}")),
        );
        if let Err(failure) = check(seed, &outcome) {
            failures.push(failure);
        }
    }
    eprintln!(
        "rolling switch: {} seeds, {} failed, {duplicates} duplicate deliveries, \
         {handovers} resumptions checked against the committed offset ({} before it), \
         {listener_calls} listener calls",
        seeds.len(),
        failures.len(),
        redelivered.len()
    );
    for what in &redelivered {
        eprintln!("  redelivered: {what}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        handovers >= seeds.len() * MEMBERS,
        "partitions changed hands after committed revocations"
    );
}
