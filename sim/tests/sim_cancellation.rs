//! Simulation mode: every async method of `Consumer` and `ConsumerHandle` may be dropped at any
//! await point (a `tokio::time::timeout`, a `select!` that took another branch, a task
//! aborted) without leaving the consumer stuck or wrong.
//!
//! - A `poll` dropped while the rebalance listener runs: the listener's future is dropped with
//!   it (the callback is abandoned, as an interrupted Java callback is), the background task
//!   is told the callback finished, the listener is back in place for the next rebalance, and
//!   the next `poll` is not mistaken for one made from inside a callback. Both protocols: a
//!   member whose every callback is cut short still settles with its share of a group that
//!   grows to two members, and every record is delivered.
//! - The other async methods (`commit_sync`, `committed`, `position`, `seek`,
//!   `seek_to_beginning`, `pause`/`resume`, `end_offsets`, `partitions_for`, a handle's
//!   `commit_sync`), each dropped after 0, 1, 3 and 10 ms of simulated time: the call made
//!   again afterwards succeeds and means what it says (a commit is visible to `committed`, a
//!   seek moves the position), and consumption ends with every record delivered.
#![cfg(madsim)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
use kafka_consumer::rt::{Duration, Instant};
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, OffsetAndMetadata, TopicPartition,
};
use madsim::runtime::Handle;
use sim::cluster::Cluster;

const PARTITIONS: i32 = 4;
const PER_PARTITION: usize = 20;
/// Where the other tests' calls are cut: at the first await point, and after some network
/// round trips.
const CUTS_MS: [u64; 4] = [0, 1, 3, 10];

fn config(bootstrap: &[String], group: &str, name: &str, protocol: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id(group)
        .client_id(name)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .enable_auto_commit(false)
        .set("group.protocol", protocol)
        .build()
        .unwrap()
}

async fn cluster() -> Cluster {
    support::filled_cluster(PARTITIONS, PER_PARTITION).await
}

/// Each method sleeps 300 ms after committing: long enough for every `poll` (cut after 50 ms)
/// to be dropped in the middle of it.
#[derive(Clone, Default)]
struct SlowListener {
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl SlowListener {
    fn slow<'a>(&'a mut self, consumer: &'a mut Consumer) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.started.fetch_add(1, Ordering::SeqCst);
            let _ = consumer.commit_sync(None, Duration::from_secs(5)).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            self.finished.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }
}

impl ConsumerRebalanceListener for SlowListener {
    fn on_partitions_revoked<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        _partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.slow(consumer)
    }

    fn on_partitions_assigned<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        _partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.slow(consumer)
    }
}

async fn polls_dropped_mid_callback_settle(protocol: &'static str) {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    let (joined_tx, joined_rx) = tokio::sync::oneshot::channel::<()>();
    // `b` stays until `a` has read its half to the end (else `a` would take it all back).
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    let listener = SlowListener::default();
    let a = Handle::current()
        .create_node()
        .name("a")
        .ip("10.0.9.1".parse().unwrap())
        .build()
        .spawn({
            let bootstrap = bootstrap.clone();
            let listener = listener.clone();
            async move {
                let mut consumer = Consumer::new(config(&bootstrap, "cut", "a", protocol)).unwrap();
                consumer
                    .subscribe_with_listener(["t"], listener)
                    .await
                    .unwrap();
                let mut joined = Some(joined_tx);
                let mut delivered = Vec::new();
                let started = Instant::now();
                let mut settled_at = None;
                let mut cut = 0;
                loop {
                    let poll = consumer.poll(Duration::from_secs(1));
                    match tokio::time::timeout(Duration::from_millis(50), poll).await {
                        Ok(records) => delivered
                            .extend(records.unwrap().iter().map(|r| (r.partition, r.offset))),
                        Err(_) => cut += 1,
                    }
                    if consumer.assignment().len() == PARTITIONS as usize {
                        if let Some(tx) = joined.take() {
                            tx.send(()).unwrap();
                        }
                    }
                    if joined.is_none() && consumer.assignment().len() == 2 {
                        let at = *settled_at.get_or_insert_with(Instant::now);
                        if at.elapsed() >= Duration::from_secs(5) {
                            break;
                        }
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(180),
                        "{protocol}: `a` never settled: {:?}",
                        consumer.assignment()
                    );
                }
                done_tx.send(()).unwrap();
                consumer.close(Duration::from_secs(5)).await.unwrap();
                (delivered, cut)
            }
        });
    let b = Handle::current()
        .create_node()
        .name("b")
        .ip("10.0.9.2".parse().unwrap())
        .build()
        .spawn(async move {
            joined_rx.await.unwrap();
            let mut consumer = Consumer::new(config(&bootstrap, "cut", "b", protocol)).unwrap();
            consumer.subscribe(["t"]).await.unwrap();
            let mut delivered = Vec::new();
            let started = Instant::now();
            while done_rx.try_recv().is_err() {
                let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
                delivered.extend(records.iter().map(|r| (r.partition, r.offset)));
                assert!(
                    started.elapsed() < Duration::from_secs(180),
                    "{protocol}: `a` never told `b` it was done"
                );
            }
            consumer.close(Duration::from_secs(5)).await.unwrap();
            delivered
        });
    let (a_delivered, cut) = a.await.unwrap();
    let b_delivered = b.await.unwrap();
    let started = listener.started.load(Ordering::SeqCst);
    let finished = listener.finished.load(Ordering::SeqCst);
    // The test means something only if callbacks really were cut short.
    assert!(cut > 0, "{protocol}: no poll was cut");
    assert!(
        finished < started,
        "{protocol}: no callback was abandoned ({started} started, {finished} finished)"
    );
    // Assigned (4), revoked, assigned (2): at least three calls reached the listener, so it
    // was back in its slot after each abandoned one.
    assert!(started >= 3, "{protocol}: {started} listener calls");
    let all: BTreeSet<(i32, i64)> = a_delivered.iter().chain(&b_delivered).copied().collect();
    assert_eq!(
        all.len(),
        PARTITIONS as usize * PER_PARTITION,
        "{protocol}: every record delivered"
    );
}

#[madsim::test]
async fn polls_dropped_mid_callback_settle_classic() {
    polls_dropped_mid_callback_settle("classic").await;
}

#[madsim::test]
async fn polls_dropped_mid_callback_settle_consumer() {
    polls_dropped_mid_callback_settle("consumer").await;
}

/// Runs `call` cut after `cut_ms` (its result, if it finished in time, is ignored).
async fn cut<F: std::future::Future>(cut_ms: u64, call: F) {
    let _ = tokio::time::timeout(Duration::from_millis(cut_ms), call).await;
}

#[madsim::test]
async fn every_other_async_method_can_be_dropped_and_called_again() {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    let node = Handle::current()
        .create_node()
        .name("app")
        .ip("10.0.9.3".parse().unwrap())
        .build();
    node.spawn(async move {
        let mut consumer =
            Consumer::new(config(&bootstrap, "cut-calls", "app", "consumer")).unwrap();
        let handle = consumer.handle();
        let p0 = TopicPartition::new("t", 0);
        let all: BTreeSet<TopicPartition> = (0..PARTITIONS)
            .map(|p| TopicPartition::new("t", p))
            .collect();
        consumer.assign(all.iter().cloned()).await.unwrap();
        let timeout = Duration::from_secs(10);
        for (round, cut_ms) in CUTS_MS.into_iter().enumerate() {
            let offset = i64::try_from(round + 1).unwrap();
            let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> =
                [(p0.clone(), OffsetAndMetadata::new(offset))].into();

            cut(cut_ms, consumer.commit_sync(Some(offsets.clone()), timeout)).await;
            consumer
                .commit_sync(Some(offsets.clone()), timeout)
                .await
                .unwrap();
            cut(cut_ms, consumer.committed([p0.clone()], timeout)).await;
            let committed = consumer.committed([p0.clone()], timeout).await.unwrap();
            assert_eq!(
                committed.get(&p0).cloned().flatten().map(|o| o.offset),
                Some(offset),
                "cut {cut_ms}"
            );

            let from_handle: BTreeMap<TopicPartition, OffsetAndMetadata> =
                [(p0.clone(), OffsetAndMetadata::new(offset + 10))].into();
            cut(cut_ms, handle.commit_sync(from_handle.clone(), timeout)).await;
            handle.commit_sync(from_handle, timeout).await.unwrap();
            let committed = consumer.committed([p0.clone()], timeout).await.unwrap();
            assert_eq!(
                committed.get(&p0).cloned().flatten().map(|o| o.offset),
                Some(offset + 10)
            );

            cut(cut_ms, consumer.seek(&p0, 5)).await;
            consumer.seek(&p0, offset).await.unwrap();
            cut(cut_ms, consumer.position(&p0, timeout)).await;
            assert_eq!(consumer.position(&p0, timeout).await.unwrap(), offset);

            cut(cut_ms, consumer.pause([p0.clone()])).await;
            consumer.pause([p0.clone()]).await.unwrap();
            assert!(consumer.paused().contains(&p0));
            cut(cut_ms, consumer.resume([p0.clone()])).await;
            consumer.resume([p0.clone()]).await.unwrap();
            assert!(!consumer.paused().contains(&p0));

            cut(cut_ms, consumer.end_offsets([p0.clone()], timeout)).await;
            let end = consumer.end_offsets([p0.clone()], timeout).await.unwrap();
            assert_eq!(end.get(&p0), Some(&(PER_PARTITION as i64)));
            cut(cut_ms, consumer.partitions_for("t", timeout)).await;
            let partitions = consumer.partitions_for("t", timeout).await.unwrap();
            assert_eq!(partitions.len(), PARTITIONS as usize);

            // A poll cut at the same point loses nothing: records are taken only when a
            // poll returns them.
            cut(cut_ms, consumer.poll(Duration::from_millis(500))).await;
        }
        cut(0, consumer.seek_to_beginning(all.iter().cloned())).await;
        consumer
            .seek_to_beginning(all.iter().cloned())
            .await
            .unwrap();
        let mut delivered = BTreeSet::new();
        let started = Instant::now();
        while delivered.len() < PARTITIONS as usize * PER_PARTITION {
            for r in consumer
                .poll(Duration::from_millis(200))
                .await
                .unwrap()
                .iter()
            {
                assert!(delivered.insert((r.partition, r.offset)), "duplicate {r:?}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{} records after the seeks",
                delivered.len()
            );
        }
        consumer.close(Duration::from_secs(5)).await.unwrap();
    })
    .await
    .unwrap();
}
