//! Simulation mode: a member that only ever calls `poll(Duration::ZERO)`. A rebalance waits
//! for the application's acknowledged poll; a zero-timeout `poll` must neither wait for the
//! answer past its own timeout nor hand out records before the answer, and the answer it did
//! not wait for must count at its next call. Member `a` consumes alone with zero-timeout polls
//! (sleeping 10 ms between them), `b` joins; both protocols: the group settles with two
//! partitions each, every record is delivered, and no record of a partition `a` gave up
//! reaches `a` after it gave it up.
#![cfg(madsim)]

mod support;

use std::collections::BTreeSet;

use kafka_consumer::rt::{Duration, Instant};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
use madsim::runtime::Handle;

const PARTITIONS: i32 = 4;
const PER_PARTITION: usize = 20;

fn config(bootstrap: &[String], name: &str, protocol: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id("poll-zero")
        .client_id(name)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol)
        .build()
        .unwrap()
}

async fn zero_timeout_member_rebalances(protocol: &'static str) {
    let cluster = support::filled_cluster(PARTITIONS, PER_PARTITION).await;
    let bootstrap = cluster.bootstrap_servers();
    let (joined_tx, joined_rx) = tokio::sync::oneshot::channel::<()>();
    let a = Handle::current()
        .create_node()
        .name("a")
        .ip("10.0.8.1".parse().unwrap())
        .build()
        .spawn({
            let bootstrap = bootstrap.clone();
            async move {
                let mut consumer = Consumer::new(config(&bootstrap, "a", protocol)).unwrap();
                consumer.subscribe(["t"]).await.unwrap();
                let mut joined = Some(joined_tx);
                let mut delivered = Vec::new();
                let started = Instant::now();
                let mut settled: Option<(Instant, BTreeSet<i32>)> = None;
                loop {
                    let records = consumer.poll(Duration::ZERO).await.unwrap();
                    for r in records.iter() {
                        let tp = kafka_consumer::TopicPartition::new(&*r.topic, r.partition);
                        // Callbacks run before records are collected: what a poll returns
                        // belongs to the assignment it leaves behind.
                        assert!(
                            consumer.assignment().contains(&tp),
                            "a record of {tp}, which `a` does not hold"
                        );
                        delivered.push((r.partition, r.offset));
                    }
                    if consumer.assignment().len() == PARTITIONS as usize {
                        if let Some(tx) = joined.take() {
                            tx.send(()).unwrap();
                        }
                    }
                    if joined.is_none() && consumer.assignment().len() == 2 && settled.is_none() {
                        let owned = consumer.assignment().iter().map(|tp| tp.partition);
                        settled = Some((Instant::now(), owned.collect()));
                    }
                    // Settled: read on a while, so its partitions are read to their end.
                    if let Some((at, _)) = &settled {
                        if at.elapsed() >= Duration::from_secs(10) {
                            break;
                        }
                    }
                    assert!(
                        started.elapsed() < Duration::from_secs(120),
                        "`a` never settled: {:?}",
                        consumer.assignment()
                    );
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                let owned = settled.map(|(_, owned)| owned).unwrap_or_default();
                consumer.close(Duration::from_secs(5)).await.unwrap();
                (delivered, owned)
            }
        });
    let b = Handle::current()
        .create_node()
        .name("b")
        .ip("10.0.8.2".parse().unwrap())
        .build()
        .spawn(async move {
            joined_rx.await.unwrap();
            let mut consumer = Consumer::new(config(&bootstrap, "b", protocol)).unwrap();
            consumer.subscribe(["t"]).await.unwrap();
            let mut delivered = Vec::new();
            let started = Instant::now();
            let mut settled_at = None;
            loop {
                let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
                delivered.extend(records.iter().map(|r| (r.partition, r.offset)));
                if consumer.assignment().len() == 2 {
                    let at = *settled_at.get_or_insert_with(Instant::now);
                    if at.elapsed() >= Duration::from_secs(5) {
                        break;
                    }
                }
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "`b` never settled"
                );
            }
            consumer.close(Duration::from_secs(5)).await.unwrap();
            delivered
        });
    let (a_delivered, a_owned) = a.await.unwrap();
    let b_delivered = b.await.unwrap();
    assert_eq!(a_owned.len(), 2, "{protocol}: two partitions each");
    let all: BTreeSet<(i32, i64)> = a_delivered.iter().chain(&b_delivered).copied().collect();
    assert_eq!(
        all.len(),
        PARTITIONS as usize * PER_PARTITION,
        "{protocol}: every record delivered"
    );
}

#[madsim::test]
async fn a_zero_timeout_member_rebalances_classic() {
    zero_timeout_member_rebalances("classic").await;
}

#[madsim::test]
async fn a_zero_timeout_member_rebalances_consumer() {
    zero_timeout_member_rebalances("consumer").await;
}
