//! Shared by the real-broker group tests (classic and KIP-848): members that record every
//! delivery and listener call, and the delivery check with its duplicate bound.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use tokio::time::{sleep, Duration, Instant};

use super::real_broker::{client, create_topic, produce_with_java};

pub const PARTITIONS: i32 = 12;
pub const MAX_POLL_RECORDS: usize = 500;

pub use super::real_broker::unique;

pub fn lines(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("\\N\tkey-{i}\tvalue-{i}"))
        .collect()
}

/// What all members of one run saw.
#[derive(Default)]
pub struct Seen {
    /// (partition, offset) → times delivered.
    pub deliveries: Mutex<BTreeMap<(i32, i64), u32>>,
    /// Partitions revoked or lost, summed over all callbacks (each may redeliver up to one
    /// poll's worth of uncommitted records).
    pub revoked_partitions: AtomicUsize,
    /// The order of listener calls, per member: `member:revoked|assigned|lost`.
    pub callbacks: Mutex<Vec<String>>,
    /// Broken expectations seen inside callbacks or polls (asserted empty at the end: a
    /// panic inside a listener would only surface as an error from poll).
    pub violations: Mutex<Vec<String>>,
}

impl Seen {
    pub fn unique(&self) -> usize {
        self.deliveries.lock().unwrap().len()
    }
}

/// Commits what was consumed before partitions go away, and records every call.
pub struct CommitOnRevoke {
    pub member: String,
    pub seen: Arc<Seen>,
}

impl CommitOnRevoke {
    pub fn note(&self, what: &str, partitions: &BTreeSet<TopicPartition>) {
        self.seen.callbacks.lock().unwrap().push(format!(
            "{}:{what}:{}",
            self.member,
            partitions.len()
        ));
    }
}

impl CommitOnRevoke {
    pub fn violation(&self, what: String) {
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

/// One member: polls until told to stop, then closes (committing and leaving the group).
/// Returns its final assignment if asked to keep running until the group settles.
pub async fn member(
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

pub async fn wait_until(what: &str, timeout: Duration, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        sleep(Duration::from_millis(50)).await;
    }
}

/// Every record delivered at least once; returns the number of duplicates, checked against
/// the bound: each revoked or lost partition may redeliver at most one poll's worth.
pub fn check_delivery(seen: &Seen, records: usize) -> usize {
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

/// Members join and leave mid-run: m0 alone, m1 joins after a quarter, m2 after half, m0
/// leaves after three quarters; m1 and m2 must settle on every partition exactly once, and
/// every record is delivered (`check_delivery`). `config` gives a member's configuration from
/// the group id and its name; `label` names the run in topics and messages. Returns (duplicates, callbacks).
pub async fn join_and_leave_run(
    bootstrap: &str,
    label: &str,
    records: usize,
    config: impl Fn(&str, &str) -> ConsumerConfig,
) -> (usize, Vec<String>) {
    let mut admin = client(bootstrap.to_owned());
    let topic = unique(&format!("churn-{label}"));
    let group = unique("churn-group");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    produce_with_java(bootstrap, &topic, "none", &lines(records));

    let seen = Arc::new(Seen::default());
    let stops: Vec<Arc<AtomicBool>> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let pace = Duration::from_millis(20);
    let start = |i: usize| {
        tokio::spawn(member(
            config(&group, &format!("m{i}")),
            topic.clone(),
            Arc::clone(&seen),
            Arc::clone(&stops[i]),
            pace,
        ))
    };
    let first = start(0);
    wait_until("a quarter is consumed", Duration::from_secs(60), || {
        seen.unique() >= records / 4
    })
    .await;
    let second = start(1);
    wait_until("half is consumed", Duration::from_secs(60), || {
        seen.unique() >= records / 2
    })
    .await;
    let third = start(2);
    wait_until(
        "three quarters are consumed",
        Duration::from_secs(60),
        || seen.unique() >= records * 3 / 4,
    )
    .await;
    stops[0].store(true, Ordering::SeqCst);
    let mut leaving = first.await.unwrap();
    leaving.close(Duration::from_secs(30)).await.unwrap();
    wait_until("everything is consumed", Duration::from_secs(180), || {
        seen.unique() >= records
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
        "{label}: a partition owned twice: {a:?} {b:?}"
    );
    assert_eq!(
        a.len() + b.len(),
        PARTITIONS as usize,
        "{label}: every partition owned once at the end (assigned callbacks {before})"
    );
    second.close(Duration::from_secs(30)).await.unwrap();
    third.close(Duration::from_secs(30)).await.unwrap();
    let duplicates = check_delivery(&seen, records);
    let callbacks = seen.callbacks.lock().unwrap().clone();
    (duplicates, callbacks)
}
