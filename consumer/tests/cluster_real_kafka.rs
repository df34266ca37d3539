//! A group of three consumers on a real 3-broker Apache Kafka cluster (`testing/kafka/run up
//! --brokers 3`: racks r1/r2/r3, replication factor 3, min.insync.replicas 2) while brokers die.
//!
//! `group_survives_the_coordinator_and_a_leader_being_killed` (each group protocol the
//! cluster's Kafka version has): Kafka's own producer writes a 12-partition topic with
//! acks=all the whole time; the group's coordinator broker is killed with SIGKILL and
//! restarted, then the broker leading the most partitions is. Invariants:
//! - every record written is delivered (per partition, offsets 0..end without a gap), and
//!   duplicates stay within one poll's worth per revoked or lost partition;
//! - the group's committed offsets, sampled by an observer, never move back;
//! - no poll returns an error (the consumer treats broker loss as retriable, as Java does).
//!
//! `seeded_chaos_keeps_every_record`: for `CHAOS_SECONDS` (default 60), a schedule drawn from
//! `CHAOS_SEED` (random when unset; the group protocol too, unless `CHAOS_PROTOCOL` is set) takes one broker down every 5-15 s (SIGKILL or controlled
//! shutdown; the coordinator's broker, a partition leader's, or any) and brings it back at the
//! next step, while the producer writes and a group of three consumes. Same invariants; the
//! duplicate bound is the group tests' (one poll's worth per revoked or lost partition). The
//! schedule and a one-line repro are printed first.
//!
//! Only one broker is ever down, and every member's bootstrap list names all three brokers,
//! so recovery never needs a rebootstrap (KIP-899): the consumer must ride it out on the
//! metadata it has.
//!
//! Tests in this file break the shared cluster, so they run one at a time (a mutex), and each
//! restarts what it killed. Needs the `KAFKA_*CLUSTER*` variables (see
//! `support::real_cluster`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rt::SeededRng;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use rand::RngCore;
use support::group::{check_delivery, member, wait_until, Seen, MAX_POLL_RECORDS, PARTITIONS};
use support::real_broker::unique;
use support::real_cluster::{cluster, Cluster, JavaProducer, NodeAction};
use tokio::time::{sleep, Duration};

/// The cluster is shared by this file's tests: one breaks it at a time.
static CLUSTER_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn member_config(cluster: &Cluster, group: &str, name: &str, protocol: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers(cluster.bootstrap.iter().map(String::as_str))
        .group_id(group)
        .client_id(name)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol)
        .set("max.poll.records", MAX_POLL_RECORDS.to_string())
        .set("auto.commit.interval.ms", "1000")
        .build()
        .unwrap()
}

/// Samples the group's committed offsets about once a second through a consumer that is not
/// a member (OffsetFetch without a member id, as an admin client sends it) and records every
/// committed offset that is lower than one seen before on the same partition.
async fn watch_commits(
    config: ConsumerConfig,
    partitions: Vec<TopicPartition>,
    stop: Arc<AtomicBool>,
    regressions: Arc<Mutex<Vec<String>>>,
) -> usize {
    let mut observer = Consumer::new(config).unwrap();
    let mut highest: BTreeMap<i32, i64> = BTreeMap::new();
    let mut samples = 0;
    while !stop.load(Ordering::SeqCst) {
        // Errors are expected while the coordinator moves: only answers are compared.
        if let Ok(committed) = observer
            .committed(partitions.clone(), Duration::from_secs(5))
            .await
        {
            samples += 1;
            for (tp, offset) in committed {
                let Some(offset) = offset else { continue };
                let seen = highest.entry(tp.partition).or_insert(offset.offset);
                if offset.offset < *seen {
                    regressions.lock().unwrap().push(format!(
                        "partition {} committed {} after {}",
                        tp.partition, offset.offset, seen
                    ));
                }
                *seen = (*seen).max(offset.offset);
            }
        }
        sleep(Duration::from_secs(1)).await;
    }
    let _ = observer.close(Duration::from_secs(5)).await;
    samples
}

/// Writes `per_tick` records every 100 ms until `stop`.
async fn keep_producing(
    mut producer: JavaProducer,
    per_tick: usize,
    stop: Arc<AtomicBool>,
) -> usize {
    while !stop.load(Ordering::SeqCst) {
        producer.write(per_tick);
        sleep(Duration::from_millis(100)).await;
    }
    // Real-broker test only (compiled out under madsim): waits for the producer process.
    #[allow(clippy::disallowed_methods)]
    let finished = tokio::task::spawn_blocking(move || producer.finish());
    finished.await.unwrap()
}

/// The broker that leads the most partitions of `topic`, other than `not`.
async fn busiest_leader(cluster: &Cluster, topic: &str, not: i32) -> i32 {
    let mut per_broker: BTreeMap<i32, usize> = BTreeMap::new();
    for (_, leader) in cluster.leaders(topic).await {
        if leader != not {
            *per_broker.entry(leader).or_default() += 1;
        }
    }
    per_broker
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(broker, _)| broker)
        .unwrap_or(if not == 1 { 2 } else { 1 })
}

/// What both cluster tests run while they break brokers: a producer writing 20 records every
/// 100 ms, a group of three members consuming `topic` with `protocol`, and an observer of the
/// group's committed offsets.
struct Workload {
    produce_stop: Arc<AtomicBool>,
    producer: tokio::task::JoinHandle<usize>,
    seen: Arc<Seen>,
    stops: Vec<Arc<AtomicBool>>,
    members: Vec<tokio::task::JoinHandle<Consumer>>,
    watch_stop: Arc<AtomicBool>,
    regressions: Arc<Mutex<Vec<String>>>,
    watcher: tokio::task::JoinHandle<usize>,
}

/// How a [`Workload`] ended.
struct Finished {
    written: usize,
    duplicates: usize,
    /// How many times the observer read the committed offsets.
    samples: usize,
    /// Committed offsets lower than one the observer had seen before.
    regressions: Vec<String>,
}

impl Workload {
    async fn start(cluster: &Cluster, topic: &str, group: &str, protocol: &str) -> Self {
        let produce_stop = Arc::new(AtomicBool::new(false));
        let producer = tokio::spawn(keep_producing(
            JavaProducer::start(cluster, topic),
            20,
            Arc::clone(&produce_stop),
        ));
        let seen = Arc::new(Seen::default());
        let stops: Vec<Arc<AtomicBool>> =
            (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
        let members = (0..3)
            .map(|i| {
                tokio::spawn(member(
                    member_config(cluster, group, &format!("m{i}"), protocol),
                    topic.to_owned(),
                    Arc::clone(&seen),
                    Arc::clone(&stops[i]),
                    Duration::ZERO,
                ))
            })
            .collect();
        let watch_stop = Arc::new(AtomicBool::new(false));
        let regressions = Arc::new(Mutex::new(Vec::new()));
        let observer_config = ConsumerConfig::builder()
            .bootstrap_servers(cluster.bootstrap.iter().map(String::as_str))
            .group_id(group)
            .client_id("observer")
            .enable_auto_commit(false)
            .build()
            .unwrap();
        let watcher = tokio::spawn(watch_commits(
            observer_config,
            (0..PARTITIONS)
                .map(|p| TopicPartition::new(topic, p))
                .collect(),
            Arc::clone(&watch_stop),
            Arc::clone(&regressions),
        ));
        Self {
            produce_stop,
            producer,
            seen,
            stops,
            members,
            watch_stop,
            regressions,
            watcher,
        }
    }

    /// Stops producing, waits until every record written is consumed, lets auto-commit record
    /// the tail, then closes the members (each must close cleanly) and the observer.
    async fn finish(self) -> Finished {
        self.produce_stop.store(true, Ordering::SeqCst);
        let written = self.producer.await.unwrap();
        let seen = &self.seen;
        wait_until(
            "every record written is consumed",
            Duration::from_secs(180),
            || seen.unique() >= written,
        )
        .await;
        sleep(Duration::from_secs(3)).await;
        for stop in &self.stops {
            stop.store(true, Ordering::SeqCst);
        }
        for handle in self.members {
            let mut consumer = handle.await.unwrap();
            consumer
                .close(Duration::from_secs(30))
                .await
                .expect("a member closes cleanly after the chaos");
        }
        self.watch_stop.store(true, Ordering::SeqCst);
        let samples = self.watcher.await.unwrap();
        let duplicates = check_delivery(&self.seen, written);
        let regressions = self.regressions.lock().unwrap().clone();
        Finished {
            written,
            duplicates,
            samples,
            regressions,
        }
    }
}

async fn kill_coordinator_and_leader(cluster: &Cluster, protocol: &str) {
    let topic = unique(&format!("cluster-chaos-{protocol}"));
    let group = unique(&format!("cluster-group-{protocol}"));
    cluster.create_topic(&topic, PARTITIONS).await;
    let workload = Workload::start(cluster, &topic, &group, protocol).await;
    let seen = Arc::clone(&workload.seen);

    wait_until("the group consumes", Duration::from_secs(120), || {
        seen.unique() >= 1_000
    })
    .await;
    let coordinator = cluster.coordinator(&group).await;
    eprintln!("{protocol}: killing the coordinator's broker {coordinator}");
    cluster.act(NodeAction::Kill, coordinator).await;
    sleep(Duration::from_secs(5)).await;
    cluster.act(NodeAction::Restart, coordinator).await;

    let consumed = seen.unique();
    wait_until(
        "the group consumes after the coordinator came back",
        Duration::from_secs(120),
        || seen.unique() >= consumed + 1_000,
    )
    .await;
    let leader = busiest_leader(cluster, &topic, coordinator).await;
    eprintln!("{protocol}: killing broker {leader}, the busiest leader");
    cluster.act(NodeAction::Kill, leader).await;
    sleep(Duration::from_secs(5)).await;
    cluster.act(NodeAction::Restart, leader).await;
    sleep(Duration::from_secs(3)).await;

    let Finished {
        written,
        duplicates,
        samples,
        regressions,
    } = workload.finish().await;
    assert!(
        regressions.is_empty(),
        "{protocol}: committed offsets moved back: {regressions:?}"
    );
    assert!(
        samples >= 5,
        "{protocol}: the observer read the committed offsets only {samples} times"
    );
    eprintln!(
        "{protocol}: {written} records written and delivered, {duplicates} duplicates, \
         {samples} commit samples, killed brokers {coordinator} (coordinator) and {leader} (leader)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_group_survives_the_coordinator_and_a_leader_being_killed() {
    let Some(cluster) = cluster() else { return };
    let _one_at_a_time = CLUSTER_LOCK.lock().await;
    kill_coordinator_and_leader(&cluster, "classic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_group_survives_the_coordinator_and_a_leader_being_killed() {
    let Some(cluster) = cluster() else { return };
    if !cluster.has_kip848() {
        eprintln!(
            "SKIPPED: Kafka {} has no KIP-848 consumer groups",
            cluster.version()
        );
        return;
    }
    let _one_at_a_time = CLUSTER_LOCK.lock().await;
    kill_coordinator_and_leader(&cluster, "consumer").await;
}

/// Whom a chaos step takes down; resolved to a broker id when the step runs.
#[derive(Debug, Clone, Copy)]
enum Victim {
    Coordinator,
    /// The leader of this partition of the test topic.
    Leader(i32),
    Broker(i32),
}

/// One step of the schedule: after `after_ms`, take `victim` down by `action` (Kill or Stop);
/// the next step first restarts it.
#[derive(Debug, Clone, Copy)]
struct ChaosStep {
    after_ms: u64,
    action: NodeAction,
    victim: Victim,
}

fn chaos_schedule(seed: u64, seconds: u64, brokers: i32) -> Vec<ChaosStep> {
    let mut rng = SeededRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut elapsed_ms = 0;
    loop {
        let after_ms = 5_000 + rng.below_inclusive(10_000);
        elapsed_ms += after_ms;
        if elapsed_ms > seconds * 1_000 {
            return steps;
        }
        let action = if rng.below_inclusive(1) == 0 {
            NodeAction::Kill
        } else {
            NodeAction::Stop
        };
        let victim = match rng.below_inclusive(2) {
            0 => Victim::Coordinator,
            1 => {
                Victim::Leader(rng.below_inclusive(u64::from(PARTITIONS.unsigned_abs()) - 1) as i32)
            }
            _ => {
                Victim::Broker(1 + rng.below_inclusive(u64::try_from(brokers - 1).unwrap()) as i32)
            }
        };
        steps.push(ChaosStep {
            after_ms,
            action,
            victim,
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_chaos_keeps_every_record() {
    let Some(cluster) = cluster() else { return };
    let _one_at_a_time = CLUSTER_LOCK.lock().await;
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .map(|s| s.parse::<u64>().expect("CHAOS_SEED is a u64"))
        .unwrap_or_else(|| SeededRng::from_runtime().next_u64() % 1_000_000);
    let seconds = std::env::var("CHAOS_SECONDS")
        .ok()
        .map(|s| {
            s.parse::<u64>()
                .expect("CHAOS_SECONDS is a number of seconds")
        })
        .unwrap_or(60);
    // CHAOS_PROTOCOL=classic|consumer, else drawn from the seed (consumer only on 4.0+).
    let protocol = match std::env::var("CHAOS_PROTOCOL").as_deref() {
        Ok("classic") => "classic",
        Ok("consumer") => {
            assert!(
                cluster.has_kip848(),
                "CHAOS_PROTOCOL=consumer but Kafka {} has no KIP-848",
                cluster.version()
            );
            "consumer"
        }
        Ok(other) => panic!("CHAOS_PROTOCOL must be classic or consumer, got {other:?}"),
        Err(_) if cluster.has_kip848() && seed % 2 == 1 => "consumer",
        Err(_) => "classic",
    };
    let brokers = i32::try_from(cluster.bootstrap.len()).unwrap();
    let schedule = chaos_schedule(seed, seconds, brokers);
    eprintln!(
        "chaos: seed {seed}, {seconds} s, group.protocol={protocol}, Kafka {}; repro: \
         CHAOS_SEED={seed} CHAOS_SECONDS={seconds} CHAOS_PROTOCOL={protocol} cargo test -p \
         kafka-consumer --test cluster_real_kafka seeded_chaos -- --nocapture",
        cluster.version()
    );
    for step in &schedule {
        eprintln!(
            "chaos schedule: after {} ms {:?} {:?}",
            step.after_ms, step.action, step.victim
        );
    }

    let topic = unique("cluster-chaos-seeded");
    let group = unique("cluster-chaos-group");
    cluster.create_topic(&topic, PARTITIONS).await;
    let workload = Workload::start(&cluster, &topic, &group, protocol).await;
    let seen = Arc::clone(&workload.seen);
    wait_until("the group consumes", Duration::from_secs(120), || {
        seen.unique() >= 500
    })
    .await;

    let mut down: Option<i32> = None;
    for step in &schedule {
        sleep(Duration::from_millis(step.after_ms)).await;
        if let Some(broker) = down.take() {
            eprintln!("chaos: restart broker {broker}");
            cluster.act(NodeAction::Restart, broker).await;
        }
        let broker = match step.victim {
            Victim::Coordinator => cluster.coordinator(&group).await,
            Victim::Leader(partition) => {
                let leaders = cluster.leaders(&topic).await;
                // A partition without a leader right now: take any leader instead.
                leaders
                    .iter()
                    .find(|(p, _)| *p == partition)
                    .unwrap_or(&leaders[0])
                    .1
            }
            Victim::Broker(id) => id,
        };
        eprintln!(
            "chaos: {:?} broker {broker} ({:?})",
            step.action, step.victim
        );
        cluster.act(step.action, broker).await;
        down = Some(broker);
    }
    if let Some(broker) = down.take() {
        eprintln!("chaos: restart broker {broker}");
        cluster.act(NodeAction::Restart, broker).await;
    }

    let Finished {
        written,
        duplicates,
        samples,
        regressions,
    } = workload.finish().await;
    assert!(
        regressions.is_empty(),
        "seed {seed}: committed offsets moved back: {regressions:?}"
    );
    eprintln!(
        "chaos seed {seed} ({protocol}): {written} records produced, {} delivered, {duplicates} \
         duplicates, {} committed-offset regressions, {samples} commit samples",
        seen.unique(),
        regressions.len()
    );
}
