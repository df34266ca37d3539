//! The workload the real-cluster tests run while brokers fail or are upgraded: Kafka's own
//! producer writing a topic with acks=all, a group of three of our consumers reading it
//! (committing on revocation, auto-committing every second), and an observer that samples the
//! group's committed offsets and records any that move back.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use tokio::time::{sleep, Duration};

use super::group::{check_delivery, member, wait_until, Seen, MAX_POLL_RECORDS, PARTITIONS};
use super::real_cluster::{Cluster, JavaProducer};

/// A member of the workload's group: auto-commit every second, `max.poll.records` the bound
/// on duplicates per revoked partition assumes.
pub fn member_config(cluster: &Cluster, group: &str, name: &str, protocol: &str) -> ConsumerConfig {
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

/// What the cluster tests run while they break or upgrade brokers: a producer writing 20
/// records every 100 ms, a group of three members consuming `topic`, and an observer of the
/// group's committed offsets.
pub struct Workload {
    topic: String,
    group: String,
    produce_stop: Arc<AtomicBool>,
    producer: tokio::task::JoinHandle<usize>,
    pub seen: Arc<Seen>,
    stops: Vec<Arc<AtomicBool>>,
    members: Vec<tokio::task::JoinHandle<Consumer>>,
    watch_stop: Arc<AtomicBool>,
    regressions: Arc<Mutex<Vec<String>>>,
    watcher: tokio::task::JoinHandle<usize>,
}

/// How a [`Workload`] ended.
pub struct Finished {
    pub written: usize,
    pub duplicates: usize,
    /// How many times the observer read the committed offsets.
    pub samples: usize,
}

impl Workload {
    pub async fn start(cluster: &Cluster, topic: &str, group: &str, protocol: &str) -> Self {
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
            topic: topic.to_owned(),
            group: group.to_owned(),
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

    /// Closes member `index` (committing and leaving the group, as a rolling restart of an
    /// application does) and starts a new one in its place with `protocol`: how a group moves
    /// from one `group.protocol` to the other member by member (KIP-848's online migration).
    pub async fn replace_member(&mut self, cluster: &Cluster, index: usize, protocol: &str) {
        self.stops[index].store(true, Ordering::SeqCst);
        let mut previous = self.members.remove(index).await.unwrap();
        previous
            .close(Duration::from_secs(30))
            .await
            .expect("a replaced member closes cleanly");
        let stop = Arc::new(AtomicBool::new(false));
        let replacement = tokio::spawn(member(
            member_config(
                cluster,
                &self.group,
                &format!("m{index}-{protocol}"),
                protocol,
            ),
            self.topic.clone(),
            Arc::clone(&self.seen),
            Arc::clone(&stop),
            Duration::ZERO,
        ));
        self.members.insert(index, replacement);
        self.stops[index] = stop;
    }

    /// Stops producing, waits until every record written is consumed, lets auto-commit record
    /// the tail, then closes the members (each must close cleanly) and the observer. Checks
    /// delivery (`check_delivery`), that the observer saw no committed offset move back and
    /// that it read them at least 5 times; `run` names the run in a failure.
    pub async fn finish(self, run: &str) -> Finished {
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
                .expect("a member closes cleanly at the end");
        }
        self.watch_stop.store(true, Ordering::SeqCst);
        let samples = self.watcher.await.unwrap();
        let duplicates = check_delivery(&self.seen, written);
        let regressions = self.regressions.lock().unwrap().clone();
        assert!(
            regressions.is_empty(),
            "{run}: committed offsets moved back: {regressions:?}"
        );
        assert!(
            samples >= 5,
            "{run}: the observer read the committed offsets only {samples} times"
        );
        Finished {
            written,
            duplicates,
            samples,
        }
    }
}
