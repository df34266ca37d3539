//! Subscribe mode with `group.protocol=consumer` (KIP-848) against a real Apache Kafka 4.x
//! broker: records written by Kafka's own Java producer, consumed by groups of our consumers
//! that heartbeat with ConsumerGroupHeartbeat and reconcile the broker's assignments.
//!
//! - with each server assignor (`uniform`, `range`), members join and leave mid-run: nothing
//!   is lost, duplicates stay within uncommitted work, the final assignment covers every
//!   partition exactly once;
//! - a restarted member resumes from the committed offsets (commits carry the member epoch).
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
use kafka_consumer::rt::SeededRng;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use rand::RngCore;
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::time::{sleep, Duration, Instant};

const PARTITIONS: i32 = 12;
const MAX_POLL_RECORDS: usize = 500;

fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", SeededRng::from_runtime().next_u64())
}

fn lines(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("\\N\tkey-{i}\tvalue-{i}"))
        .collect()
}

/// What all members of one run saw.
#[derive(Default)]
struct Seen {
    /// (partition, offset) → times delivered.
    deliveries: Mutex<BTreeMap<(i32, i64), u32>>,
    /// Partitions revoked or lost, summed over all callbacks (each may redeliver up to one
    /// poll's worth of uncommitted records).
    revoked_partitions: AtomicUsize,
    /// The order of listener calls, per member: `member:revoked|assigned|lost`.
    callbacks: Mutex<Vec<String>>,
    /// Broken expectations seen inside callbacks or polls (asserted empty at the end: a
    /// panic inside a listener would only surface as an error from poll).
    violations: Mutex<Vec<String>>,
}

impl Seen {
    fn unique(&self) -> usize {
        self.deliveries.lock().unwrap().len()
    }
}

/// Commits what was consumed before partitions go away, and records every call.
struct CommitOnRevoke {
    member: String,
    seen: Arc<Seen>,
}

impl CommitOnRevoke {
    fn note(&self, what: &str, partitions: &BTreeSet<TopicPartition>) {
        self.seen.callbacks.lock().unwrap().push(format!(
            "{}:{what}:{}",
            self.member,
            partitions.len()
        ));
    }
}

impl CommitOnRevoke {
    fn violation(&self, what: String) {
        self.seen
            .violations
            .lock()
            .unwrap()
            .push(format!("{}: {what}", self.member));
    }
}

impl ConsumerRebalanceListener for CommitOnRevoke {
    fn on_partitions_revoked<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.note("revoked", partitions);
            self.seen
                .revoked_partitions
                .fetch_add(partitions.len(), Ordering::SeqCst);
            if !partitions
                .iter()
                .all(|tp| consumer.assignment().contains(tp))
            {
                self.violation(format!(
                    "revoked {partitions:?} not all in the assignment {:?} inside the callback",
                    consumer.assignment()
                ));
            }
            if !partitions.is_empty() {
                consumer.commit_sync(None, Duration::from_secs(30)).await?;
            }
            Ok(())
        })
    }

    fn on_partitions_assigned<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.note("assigned", partitions);
            if !partitions
                .iter()
                .all(|tp| consumer.assignment().contains(tp))
            {
                self.violation(format!(
                    "assigned {partitions:?} missing from the assignment"
                ));
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
            self.note("lost", partitions);
            self.seen
                .revoked_partitions
                .fetch_add(partitions.len(), Ordering::SeqCst);
            Ok(())
        })
    }
}

fn config(bootstrap: &str, group: &str, assignor: &str, member: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .client_id(member)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", "consumer")
        .set("group.remote.assignor", assignor)
        .set("max.poll.records", MAX_POLL_RECORDS.to_string())
        .set("auto.commit.interval.ms", "1000")
        .build()
        .unwrap()
}

/// One member: polls until told to stop, then closes (committing and leaving the group).
/// Returns its final assignment if asked to keep running until the group settles.
async fn member(
    config: ConsumerConfig,
    topic: String,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    pace: Duration,
) -> Consumer {
    let name = config.client_id().to_owned();
    let mut consumer = Consumer::new(config).unwrap();
    consumer
        .subscribe_with_listener(
            [topic],
            CommitOnRevoke {
                member: name,
                seen: Arc::clone(&seen),
            },
        )
        .await
        .unwrap();
    while !stop.load(Ordering::SeqCst) {
        let records = match consumer.poll(Duration::from_millis(200)).await {
            Ok(records) => records,
            Err(error) => {
                seen.violations
                    .lock()
                    .unwrap()
                    .push(format!("poll failed: {error}"));
                continue;
            }
        };
        {
            let mut deliveries = seen.deliveries.lock().unwrap();
            for record in records.iter() {
                *deliveries
                    .entry((record.partition, record.offset))
                    .or_default() += 1;
            }
        }
        if !pace.is_zero() && !records.is_empty() {
            sleep(pace).await;
        }
    }
    consumer
}

async fn wait_until(what: &str, timeout: Duration, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        sleep(Duration::from_millis(50)).await;
    }
}

/// Every record delivered at least once; returns the number of duplicates, checked against
/// the bound: each revoked or lost partition may redeliver at most one poll's worth.
fn check_delivery(seen: &Seen, records: usize) -> usize {
    let violations = seen.violations.lock().unwrap();
    assert!(violations.is_empty(), "violations: {violations:?}");
    let deliveries = seen.deliveries.lock().unwrap();
    let mut per_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for (partition, offset) in deliveries.keys() {
        per_partition.entry(*partition).or_default().push(*offset);
    }
    for (partition, offsets) in &per_partition {
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(
            offsets, &expected,
            "partition {partition} has a gap: a record was lost"
        );
    }
    assert_eq!(deliveries.len(), records, "every record delivered");
    let duplicates: usize = deliveries.values().map(|n| (*n as usize) - 1).sum();
    let bound = seen.revoked_partitions.load(Ordering::SeqCst) * MAX_POLL_RECORDS;
    assert!(
        duplicates <= bound,
        "{duplicates} duplicates exceed the uncommitted-work bound {bound}"
    );
    duplicates
}

/// Members join and leave mid-run; returns (duplicates, callbacks).
async fn join_and_leave_run(bootstrap: &str, assignor: &str) -> (usize, Vec<String>) {
    const RECORDS: usize = 30_000;
    let mut admin = client(bootstrap.to_owned());
    let topic = unique(&format!("kip848-churn-{assignor}"));
    let group = unique("kip848-group");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    produce_with_java(bootstrap, &topic, "none", &lines(RECORDS));

    let seen = Arc::new(Seen::default());
    let stops: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let pace = Duration::from_millis(20);
    let start = |i: usize| {
        tokio::spawn(member(
            config(bootstrap, &group, assignor, &format!("m{i}")),
            topic.clone(),
            Arc::clone(&seen),
            Arc::clone(&stops[i]),
            pace,
        ))
    };
    let first = start(0);
    wait_until("a quarter is consumed", Duration::from_secs(60), || {
        seen.unique() >= RECORDS / 4
    })
    .await;
    let second = start(1);
    wait_until("half is consumed", Duration::from_secs(60), || {
        seen.unique() >= RECORDS / 2
    })
    .await;
    let third = start(2);
    wait_until(
        "three quarters are consumed",
        Duration::from_secs(60),
        || seen.unique() >= RECORDS * 3 / 4,
    )
    .await;
    stops[0].store(true, Ordering::SeqCst);
    let mut leaving = first.await.unwrap();
    leaving.close(Duration::from_secs(30)).await.unwrap();
    wait_until("everything is consumed", Duration::from_secs(180), || {
        seen.unique() >= RECORDS
    })
    .await;
    // The two remaining members settle on all 12 partitions, each exactly once.
    let settled = || {
        let callbacks = seen.callbacks.lock().unwrap();
        callbacks
            .iter()
            .filter(|c| c.contains(":assigned:"))
            .count()
    };
    let before = settled();
    // The broker's heartbeat interval (5 s by default) paces the consumer protocol's
    // reconciliation: let the last one after m0 left finish.
    wait_until(
        "the two remaining members own every partition",
        Duration::from_secs(60),
        || {
            let callbacks = seen.callbacks.lock().unwrap();
            let mut owned: BTreeMap<&str, i64> = BTreeMap::new();
            for c in callbacks.iter() {
                let mut parts = c.split(':');
                let (Some(m), Some(what), Some(n)) = (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let n: i64 = n.parse().unwrap_or(0);
                let entry = owned.entry(m).or_default();
                match what {
                    "assigned" => *entry += n,
                    _ => *entry -= n,
                }
            }
            owned.get("m1").copied().unwrap_or(0) + owned.get("m2").copied().unwrap_or(0)
                == i64::from(PARTITIONS)
        },
    )
    .await;
    sleep(Duration::from_secs(2)).await;
    stops[1].store(true, Ordering::SeqCst);
    stops[2].store(true, Ordering::SeqCst);
    let mut second = second.await.unwrap();
    let mut third = third.await.unwrap();
    let a = second.assignment().clone();
    let b = third.assignment().clone();
    assert!(
        a.is_disjoint(&b),
        "{assignor:?}: a partition owned twice: {a:?} {b:?}"
    );
    assert_eq!(
        a.len() + b.len(),
        PARTITIONS as usize,
        "{assignor:?}: every partition owned once at the end (assigned callbacks {before})"
    );
    second.close(Duration::from_secs(30)).await.unwrap();
    third.close(Duration::from_secs(30)).await.unwrap();
    let duplicates = check_delivery(&seen, RECORDS);
    let callbacks = seen.callbacks.lock().unwrap().clone();
    (duplicates, callbacks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_members_join_and_leave_mid_run_with_each_server_assignor() {
    let Some(bootstrap) = bootstrap() else { return };
    for assignor in ["uniform", "range"] {
        let (duplicates, callbacks) = join_and_leave_run(&bootstrap, assignor).await;
        assert!(
            callbacks.iter().any(|c| c.starts_with("m0:revoked")),
            "{assignor}: the leaving member revoked: {callbacks:?}"
        );
        // The members that stay took part in the reconciliations.
        for m in ["m1", "m2"] {
            assert!(
                callbacks
                    .iter()
                    .any(|c| c.starts_with(&format!("{m}:assigned"))),
                "{assignor}: {m} took part: {callbacks:?}"
            );
        }
        eprintln!("{assignor}: {duplicates} duplicates; callbacks {callbacks:?}");
    }
}

#[tokio::test]
async fn kip848_a_restarted_member_resumes_from_committed_offsets() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("kip848-resume");
    let group = unique("kip848-group");
    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&bootstrap, &topic, "none", &lines(900));

    let consume = |expected: usize| {
        let config = config(&bootstrap, &group, "uniform", "resume");
        let topic = topic.clone();
        async move {
            let mut consumer = Consumer::new(config).unwrap();
            consumer.subscribe([topic]).await.unwrap();
            let mut values = BTreeSet::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while values.len() < expected {
                assert!(
                    Instant::now() < deadline,
                    "only {} of {expected}",
                    values.len()
                );
                for r in consumer
                    .poll(Duration::from_millis(200))
                    .await
                    .unwrap()
                    .iter()
                {
                    values.insert(String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap());
                }
            }
            let extra = consumer.poll(Duration::from_millis(500)).await.unwrap();
            assert_eq!(extra.count(), 0, "nothing beyond what was produced");
            assert_eq!(consumer.assignment().len(), 3);
            let metadata = consumer.group_metadata().unwrap();
            assert!(
                metadata.generation_id > 0 && !metadata.member_id.is_empty(),
                "the member epoch and the client-generated member id: {metadata:?}"
            );
            consumer.close(Duration::from_secs(30)).await.unwrap();
            values
        }
    };
    let first = consume(900).await;
    assert_eq!(first.len(), 900);
    produce_with_java(&bootstrap, &topic, "none", &lines(1_200)[900..]);
    let second = consume(300).await;
    let expected: BTreeSet<String> = (900..1_200).map(|i| format!("value-{i}")).collect();
    assert_eq!(
        second, expected,
        "resumed exactly after the committed offsets"
    );
}

/// A static member (`group.instance.id`) that closes leaves with epoch -2: the broker keeps
/// its place for the session timeout, so restarting within it gives the same partitions back
/// and the other member sees no rebalance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_a_static_member_restarted_within_the_session_gets_its_partitions_back() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("kip848-static");
    let group = unique("kip848-group");
    create_topic(&mut admin, &topic, 4).await;
    let seen = Arc::new(Seen::default());
    let static_config = |member: &str| {
        ConsumerConfig::builder()
            .bootstrap_servers([bootstrap.as_str()])
            .group_id(group.as_str())
            .client_id(member)
            .group_instance_id(member)
            .auto_offset_reset(AutoOffsetReset::Earliest)
            .set("group.protocol", "consumer")
            .build()
            .unwrap()
    };
    let start = |member: &'static str| {
        let config = static_config(member);
        let topic = topic.clone();
        let seen = Arc::clone(&seen);
        async move {
            let mut consumer = Consumer::new(config).unwrap();
            consumer
                .subscribe_with_listener(
                    [topic],
                    CommitOnRevoke {
                        member: member.to_owned(),
                        seen,
                    },
                )
                .await
                .unwrap();
            consumer
        }
    };
    let poll_until_owning = |mut consumer: Consumer, count: usize| async move {
        let deadline = Instant::now() + Duration::from_secs(60);
        while consumer.assignment().len() != count {
            assert!(
                Instant::now() < deadline,
                "owns {:?}",
                consumer.assignment()
            );
            consumer.poll(Duration::from_millis(100)).await.unwrap();
        }
        consumer
    };
    let s0 = start("s0").await;
    let s0 = poll_until_owning(s0, 4).await;
    let s1 = start("s1").await;
    // Both poll until the broker split the partitions between them.
    let stop = Arc::new(AtomicBool::new(false));
    let s1_task = {
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut s1 = s1;
            while !stop.load(Ordering::SeqCst) {
                s1.poll(Duration::from_millis(100)).await.unwrap();
            }
            s1
        })
    };
    let mut s0 = poll_until_owning(s0, 2).await;
    wait_until("s1 owns two partitions", Duration::from_secs(30), || {
        seen.callbacks
            .lock()
            .unwrap()
            .iter()
            .any(|c| c == "s1:assigned:2")
    })
    .await;
    let before = s0.assignment().clone();
    let s1_calls_before = seen
        .callbacks
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("s1:"))
        .count();
    s0.close(Duration::from_secs(10)).await.unwrap();
    let s0 = start("s0").await;
    let s0 = poll_until_owning(s0, 2).await;
    assert_eq!(*s0.assignment(), before, "the same partitions back");
    sleep(Duration::from_secs(2)).await;
    let s1_calls_after = seen
        .callbacks
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("s1:"))
        .count();
    assert_eq!(
        s1_calls_after,
        s1_calls_before,
        "the other member saw no rebalance: {:?}",
        seen.callbacks.lock().unwrap()
    );
    stop.store(true, Ordering::SeqCst);
    let mut s1 = s1_task.await.unwrap();
    let mut s0 = s0;
    s0.close(Duration::from_secs(10)).await.unwrap();
    s1.close(Duration::from_secs(10)).await.unwrap();
    let violations = seen.violations.lock().unwrap();
    assert!(violations.is_empty(), "violations: {violations:?}");
}
