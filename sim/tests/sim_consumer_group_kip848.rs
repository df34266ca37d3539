//! Simulation mode: our consumer with `group.protocol=consumer` (KIP-848, ConsumerGroupHeartbeat
//! and client-side reconciliation) as three group members on their own simulated nodes against
//! a 3-broker simulated cluster whose coordinator assigns with the `uniform` server assignor,
//! while a fault plan drawn from the seed cuts members off the network (one way and both ways),
//! often for longer than the broker's `group.consumer.session.timeout.ms`, so members get
//! fenced and rejoin (see `plan` for why brokers are not killed here).
//!
//! The shape and the checks are those of `sim_consumer_group.rs` (the classic protocol).
//! Invariants, checked for every seed (`SIM_KIP848_SEEDS`, default 12; `SIM_KIP848_SEED=N`
//! runs one):
//! - every record is delivered at least once once the faults heal;
//! - the listener sees a coherent assignment: it is never told a partition it owns is
//!   assigned again, nor revoked or lost a partition it does not own;
//! - within one ownership, a member's offsets of a partition only go up;
//! - at the end the members' assignments are disjoint and cover every partition.
#![cfg(madsim)]

mod support;

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
use sim::fault::{Direction, Fault, FaultPlan};
use sim::group::consumer::config::ConsumerGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;
use support::batch;

const PARTITIONS: i32 = 12;
const RECORDS_PER_PARTITION: usize = 400;
const MEMBERS: usize = 3;
const GROUP: &str = "sim-group-kip848";
const OFFSETS_PARTITIONS: i32 = 3;

/// What the members saw, in virtual-time order.
#[derive(Default)]
struct Journal {
    deliveries: BTreeMap<(i32, i64), u32>,
    violations: Vec<String>,
    /// Per member: partitions owned (per the listener) and the last offset seen in each.
    owned: BTreeMap<usize, BTreeMap<TopicPartition, Option<i64>>>,
    callbacks: usize,
    /// The first errors `poll` returned (shown when a seed fails).
    errors: Vec<String>,
}

type Shared = Arc<Mutex<Journal>>;

struct Recorder {
    member: usize,
    journal: Shared,
}

impl Recorder {
    fn apply(&self, what: &str, partitions: &BTreeSet<TopicPartition>) {
        let mut journal = self.journal.lock().unwrap();
        journal.callbacks += 1;
        let member = self.member;
        let mut violations = Vec::new();
        let owned = journal.owned.entry(member).or_default();
        for tp in partitions {
            let had = owned.contains_key(tp);
            match what {
                "assigned" if had => violations.push(format!("m{member}: {tp} assigned twice")),
                "assigned" => {
                    owned.insert(tp.clone(), None);
                }
                _ if !had => violations.push(format!("m{member}: {tp} {what} but not owned")),
                _ => {
                    owned.remove(tp);
                }
            }
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
            self.apply("revoked", partitions);
            if !partitions.is_empty() {
                // Best effort, as applications do: a failed commit only means redelivery.
                let _ = consumer.commit_sync(None, Duration::from_secs(5)).await;
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
            self.apply("assigned", partitions);
            Ok(())
        })
    }

    fn on_partitions_lost<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.apply("lost", partitions);
            Ok(())
        })
    }
}

fn config(bootstrap: &[String], member: usize) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id(GROUP)
        .client_id(format!("m{member}"))
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", "consumer")
        .set("group.remote.assignor", "uniform")
        .set("max.poll.interval.ms", "20000")
        .set("auto.commit.interval.ms", "1000")
        .set("request.timeout.ms", "5000")
        .set("max.poll.records", "10")
        .build()
        .unwrap()
}

/// Notes each record and checks it belongs to an ownership and moves forward.
fn record_deliveries(journal: &Shared, index: usize, records: &kafka_consumer::ConsumerRecords) {
    let mut j = journal.lock().unwrap();
    for r in records.iter() {
        *j.deliveries.entry((r.partition, r.offset)).or_default() += 1;
        let tp = r.topic_partition();
        let last = j.owned.entry(index).or_default().get(&tp).copied();
        match last {
            None => j
                .violations
                .push(format!("m{index}: record of {tp} it does not own")),
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

/// A member: polls until `stop`, recording what it gets; returns its final assignment.
async fn member(
    index: usize,
    bootstrap: Vec<String>,
    journal: Shared,
    stop: Arc<AtomicBool>,
) -> BTreeSet<TopicPartition> {
    let mut consumer = Consumer::new(config(&bootstrap, index)).unwrap();
    consumer
        .subscribe_with_listener(
            ["t"],
            Recorder {
                member: index,
                journal: Arc::clone(&journal),
            },
        )
        .await
        .unwrap();
    while !stop.load(Ordering::SeqCst) {
        let records = match consumer.poll(Duration::from_millis(100)).await {
            Ok(records) => records,
            Err(error) => {
                // Errors come back at once: note them and pace the retry, or the member would
                // spin without virtual time moving.
                {
                    let mut j = journal.lock().unwrap();
                    if j.errors.len() < 20 {
                        j.errors.push(format!("m{index}: {error}"));
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        record_deliveries(&journal, index, &records);
        // Processing time: consumption spans the whole fault window (~30 virtual s).
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let assignment = consumer.assignment().clone();
    let _ = consumer.close(Duration::from_secs(10)).await;
    assignment
}

/// The fault plan for a seed: three network cuts of a member (both ways or outbound only)
/// within the first 40 virtual seconds, each healed within 15 s — often longer than the
/// broker's session timeout, so the member is fenced and rejoins.
///
/// Broker kills, restarts and coordinator moves are left out: the simulated coordinator does
/// not persist KIP-848 membership (`sim/FIDELITY.md`), so after a move it answers the members'
/// heartbeats GROUP_ID_NOT_FOUND, which Kafka's own consumer (like ours) treats as fatal; a real
/// coordinator reloads the group from `__consumer_offsets`.
fn plan(seed: u64) -> FaultPlan {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut plan = FaultPlan::new();
    for _ in 0..3 {
        let at = rng.gen_range(3_000..40_000);
        let heal = at + rng.gen_range(2_000..15_000);
        let node = format!("member-{}", rng.gen_range(0..MEMBERS));
        let direction = if rng.gen_bool(0.5) {
            Direction::Both
        } else {
            Direction::Out
        };
        plan.push((
            at,
            Fault::ClogNode {
                node: node.clone(),
                direction,
            },
        ));
        plan.push((heal, Fault::UnclogNode { node, direction }));
    }
    plan.sort_by_key(|(at, _)| *at);
    plan
}

struct Outcome {
    journal: Journal,
    assignments: Vec<BTreeSet<TopicPartition>>,
    plan: FaultPlan,
}

async fn run_group(seed: u64) -> Outcome {
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(3)
            .topic("t", PARTITIONS)
            .offsets_partitions(OFFSETS_PARTITIONS)
            .group_shards(Arc::new(GroupCoordinatorFactory {
                // Short enough that a member cut off by the fault plan is fenced.
                consumer: ConsumerGroupConfig {
                    heartbeat_interval_ms: 1_000,
                    session_timeout_ms: 6_000,
                    ..ConsumerGroupConfig::default()
                },
                ..GroupCoordinatorFactory::default()
            }))
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
            ))
        })
        .collect();
    let plan = plan(seed);
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
    // Let the group settle after the last fault before reading the final assignments.
    tokio::time::sleep(Duration::from_secs(20)).await;
    stop.store(true, Ordering::SeqCst);
    let mut assignments = Vec::new();
    for handle in handles {
        assignments.push(handle.await.unwrap());
    }
    let journal = std::mem::take(&mut *journal.lock().unwrap());
    Outcome {
        journal,
        assignments,
        plan,
    }
}

fn run(seed: u64) -> Outcome {
    #[allow(clippy::disallowed_methods)] // outside the simulation: one OS thread per runtime
    let thread = std::thread::spawn(move || {
        madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default())
            .block_on(run_group(seed))
    });
    thread.join().unwrap()
}

fn check(seed: u64, outcome: &Outcome) -> Result<(), String> {
    let j = &outcome.journal;
    let repro =
        format!("SIM_KIP848_SEED={seed} cargo stest -p sim --test sim_consumer_group_kip848");
    if let Some(v) = j.violations.first() {
        return Err(format!(
            "seed {seed}: {v} (plan {:?}); repro: {repro}",
            outcome.plan
        ));
    }
    let total = PARTITIONS as usize * RECORDS_PER_PARTITION;
    if j.deliveries.len() != total {
        return Err(format!(
            "seed {seed}: {} of {total} records delivered (plan {:?}, poll errors {:?}); \
             repro: {repro}",
            j.deliveries.len(),
            outcome.plan,
            j.errors
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
            "seed {seed}: {} of {PARTITIONS} partitions owned at the end: {:?}; repro: {repro}",
            union.len(),
            outcome.assignments
        ));
    }
    Ok(())
}

#[test]
fn a_kip848_group_of_our_consumers_survives_seeded_faults() {
    let seeds: Vec<u64> = match std::env::var("SIM_KIP848_SEED") {
        Ok(seed) => vec![seed.parse().expect("SIM_KIP848_SEED is a number")],
        Err(_) => {
            let count: u64 = std::env::var("SIM_KIP848_SEEDS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(12);
            (1..=count).collect()
        }
    };
    let mut failures = Vec::new();
    let mut duplicates = 0usize;
    let mut callbacks = 0usize;
    for &seed in &seeds {
        let outcome = run(seed);
        duplicates += outcome
            .journal
            .deliveries
            .values()
            .map(|n| *n as usize - 1)
            .sum::<usize>();
        callbacks += outcome.journal.callbacks;
        if let Err(failure) = check(seed, &outcome) {
            failures.push(failure);
        }
    }
    eprintln!(
        "{} seeds: {} failed, {duplicates} duplicate deliveries, {callbacks} listener calls",
        seeds.len(),
        failures.len()
    );
    assert!(
        callbacks >= seeds.len() * MEMBERS,
        "the members took part in rebalances"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
