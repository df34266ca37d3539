//! Deadlines, close and idleness of the whole consumer (application side, background task,
//! network client) against the fake broker, which answers ApiVersions and Metadata and drops
//! the connection on anything else — so the group coordinator is never found.
//!
//! Dual-mode: real loopback sockets under `cargo test`, madsim's simulated ones (and virtual
//! time) under `cargo stest`.

mod support;

use std::collections::BTreeMap;

use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, Error, OffsetAndMetadata, TopicPartition,
};
use kafka_protocol::messages::ApiKey;
use support::fake_broker::FakeBroker;
use tokio::time::{sleep, Duration, Instant};

fn settings(addr: std::net::SocketAddr, group: Option<&str>) -> ConsumerConfig {
    let builder = ConsumerConfig::builder()
        .bootstrap_servers([addr.to_string()])
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .retry_backoff_ms(100)
        .retry_backoff_max_ms(1_000);
    match group {
        Some(group) => builder.group_id(group),
        None => builder,
    }
    .build()
    .unwrap()
}

fn find_coordinator_attempts(broker: &FakeBroker) -> usize {
    broker
        .malformed()
        .iter()
        .filter(|m| m.contains("FindCoordinator"))
        .count()
}

#[tokio::test]
async fn committed_times_out_at_its_deadline_while_discovery_keeps_retrying() {
    let (broker, addr) = FakeBroker::start().await;
    let mut consumer = Consumer::new(settings(addr, Some("g"))).unwrap();
    let started = Instant::now();
    let result = consumer
        .committed([TopicPartition::new("t", 0)], Duration::from_secs(3))
        .await;
    let elapsed = started.elapsed();
    assert!(
        matches!(
            result,
            Err(Error::Timeout {
                operation: "committed",
                ..
            })
        ),
        "{result:?}"
    );
    assert!(elapsed >= Duration::from_secs(3), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "the reaper fails it at its deadline: {elapsed:?}"
    );
    // Level-triggered discovery retried with exponential backoff (100 ms doubling to 1 s):
    // several attempts in 3 s, but nowhere near a busy loop.
    let attempts = find_coordinator_attempts(&broker);
    assert!(
        (2..=15).contains(&attempts),
        "{attempts} FindCoordinator attempts"
    );
    consumer.close(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn close_fails_pending_async_commits_when_the_coordinator_is_unknown() {
    let (_broker, addr) = FakeBroker::start().await;
    let mut consumer = Consumer::new(settings(addr, Some("g"))).unwrap();
    let tp = TopicPartition::new("t", 0);
    consumer.assign([tp.clone()]).await.unwrap();
    let pending = consumer.commit_async(Some(BTreeMap::from([(tp, OffsetAndMetadata::new(5))])));
    sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    consumer.close(Duration::from_secs(10)).await.unwrap();
    let elapsed = started.elapsed();
    // KAFKA-19357: close does not wait out its timeout for a coordinator that is not there.
    assert!(elapsed < Duration::from_secs(2), "close took {elapsed:?}");
    let result = pending.await;
    assert!(
        matches!(result, Err(Error::CommitFailed { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_idle_assigned_consumer_with_a_group_does_not_spin() {
    // KAFKA-20426: assign mode + group.id, nothing to fetch (the topic has no leader) and no
    // coordinator: the background loop must sleep between deadlines, not spin.
    let (broker, addr) = FakeBroker::start().await;
    let mut consumer = Consumer::new(settings(addr, Some("g"))).unwrap();
    consumer
        .assign([TopicPartition::new("t", 0)])
        .await
        .unwrap();
    let records = consumer.poll(Duration::from_secs(5)).await.unwrap();
    assert!(records.is_empty());
    let metrics = consumer.metrics();
    let metadata_requests = broker
        .received_requests()
        .iter()
        .filter(|r| r.api_key == ApiKey::Metadata as i16)
        .count();
    eprintln!(
        "idle 5 s: {metadata_requests} Metadata requests, {} FindCoordinator attempts, {} loop iterations",
        find_coordinator_attempts(&broker),
        metrics.background_loop_iterations
    );
    // Metadata refreshes are spaced by retry.backoff.ms (100 ms): at most ~50 in 5 s.
    assert!(
        metadata_requests <= 60,
        "{metadata_requests} Metadata requests in 5 s"
    );
    assert!(
        metrics.background_loop_iterations <= 400,
        "{} background loop iterations in 5 s",
        metrics.background_loop_iterations
    );
    consumer.close(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn dropping_the_consumer_stops_the_background_task() {
    let (broker, addr) = FakeBroker::start().await;
    let mut consumer = Consumer::new(settings(addr, None)).unwrap();
    consumer
        .assign([TopicPartition::new("t", 0)])
        .await
        .unwrap();
    let _ = consumer.poll(Duration::from_millis(500)).await.unwrap();
    drop(consumer);
    sleep(Duration::from_millis(500)).await;
    let before = broker.received_requests().len();
    sleep(Duration::from_secs(2)).await;
    assert_eq!(
        broker.received_requests().len(),
        before,
        "no requests after drop"
    );
}
