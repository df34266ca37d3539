//! The compatibility suite: what every supported Apache Kafka release (3.9 to 4.4) must give
//! the consumer, run against whatever broker `KAFKA_BOOTSTRAP` names (`KAFKA_VERSION=3.9.2
//! testing/kafka/run up` starts an older one; CI runs this file on 3.9, 4.0 and 4.2).
//!
//! - assign mode: consume, commit, read the commits back;
//! - `seek`, `beginning_offsets`/`end_offsets` and `offsets_for_times` (ListOffsets);
//! - a classic group member restarted resumes from its committed offsets, and so does a
//!   KIP-848 (`group.protocol=consumer`) member where the broker has ConsumerGroupHeartbeat;
//! - where it does not (3.9, configured classic-only as production 3.9 clusters are),
//!   `group.protocol=consumer` ends in an error from `poll`, not a hang.
//!
//! Whether the broker has KIP-848 comes from `KAFKA_VERSION` (4.0+ has it; the harness runs
//! 3.9 classic-only), else from its ApiVersions (see `broker_has_kip848`).
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeMap;

use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::Target;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use support::real_broker::{bootstrap, client, create_topic, produce_with_java, unique};
use support::real_cluster::kafka_major;
use tokio::time::{sleep, timeout, Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);
const PARTITIONS: i32 = 3;
/// ConsumerGroupHeartbeat's API key (KIP-848).
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;

fn config(bootstrap: &str, group: &str, protocol: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .client_id("compat-real-kafka")
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol)
        .build()
        .unwrap()
}

fn partitions(topic: &str) -> Vec<TopicPartition> {
    (0..PARTITIONS)
        .map(|p| TopicPartition::new(topic, p))
        .collect()
}

/// `count` keyed records on a fresh 3-partition topic; returns the topic.
async fn topic_with_records(bootstrap: &str, label: &str, count: usize) -> String {
    let topic = unique(&format!("compat-{label}"));
    let mut admin = client(bootstrap.to_owned());
    create_topic(&mut admin, &topic, PARTITIONS).await;
    let lines: Vec<String> = (0..count)
        .map(|i| format!("\\N\tkey-{i}\tvalue-{i}"))
        .collect();
    produce_with_java(bootstrap, &topic, "none", &lines);
    topic
}

/// Whether the broker runs KIP-848 groups: from `KAFKA_VERSION` when set (4.0 and newer),
/// else from ApiVersions (ConsumerGroupHeartbeat listed). ApiVersions alone cannot tell for
/// 3.9: it lists ConsumerGroupHeartbeat even with only the classic protocol enabled, and then
/// answers every heartbeat with UNSUPPORTED_VERSION.
async fn broker_has_kip848(bootstrap: &str) -> bool {
    if let Ok(version) = std::env::var("KAFKA_VERSION") {
        return kafka_major(&version) >= 4;
    }
    let mut admin = client(bootstrap.to_owned());
    admin
        .send(Target::Node(-1), metadata_request_for_topics([], false))
        .await
        .unwrap();
    let table = admin
        .api_versions(-1)
        .expect("ApiVersions of the bootstrap connection");
    table.broker_range(CONSUMER_GROUP_HEARTBEAT).is_some()
}

/// Polls until `count` records arrived; returns (partition, offset) of each in order.
async fn consume(consumer: &mut Consumer, count: usize) -> Vec<(i32, i64)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while seen.len() < count {
        assert!(
            Instant::now() < deadline,
            "only {} of {count} records",
            seen.len()
        );
        let records = consumer.poll(Duration::from_millis(300)).await.unwrap();
        seen.extend(records.iter().map(|r| (r.partition, r.offset)));
    }
    seen
}

#[tokio::test]
async fn assign_consumes_commits_and_reads_the_commits_back() {
    let Some(bootstrap) = bootstrap() else { return };
    let topic = topic_with_records(&bootstrap, "assign", 300).await;
    let group = unique("compat-assign-group");
    let mut consumer = Consumer::new(config(&bootstrap, &group, "classic")).unwrap();
    consumer.assign(partitions(&topic)).await.unwrap();
    let seen = consume(&mut consumer, 300).await;
    assert_eq!(seen.len(), 300, "exactly the records written");
    consumer.commit_sync(None, TIMEOUT).await.unwrap();
    let ends = consumer
        .end_offsets(partitions(&topic), TIMEOUT)
        .await
        .unwrap();
    let committed = consumer
        .committed(partitions(&topic), TIMEOUT)
        .await
        .unwrap();
    for tp in partitions(&topic) {
        assert_eq!(
            committed[&tp].as_ref().map(|o| o.offset),
            Some(ends[&tp]),
            "{tp}: the commit is the position after the last record"
        );
    }
    assert_eq!(ends.values().sum::<i64>(), 300);
    consumer.close(TIMEOUT).await.unwrap();
}

#[tokio::test]
async fn seek_and_offsets_for_times_find_the_records() {
    let Some(bootstrap) = bootstrap() else { return };
    let topic = unique("compat-times");
    let mut admin = client(bootstrap.clone());
    create_topic(&mut admin, &topic, 1).await;
    // Two batches a second apart: the second's timestamps are later than every first one's.
    let batch = |range: std::ops::Range<usize>| -> Vec<String> {
        range.map(|i| format!("\\N\tk{i}\tvalue-{i}")).collect()
    };
    produce_with_java(&bootstrap, &topic, "none", &batch(0..50));
    sleep(Duration::from_millis(1_100)).await;
    produce_with_java(&bootstrap, &topic, "none", &batch(50..100));

    let mut consumer =
        Consumer::new(config(&bootstrap, &unique("compat-times"), "classic")).unwrap();
    let tp = TopicPartition::new(&*topic, 0);
    consumer.assign([tp.clone()]).await.unwrap();
    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while records.len() < 100 {
        assert!(Instant::now() < deadline, "only {} of 100", records.len());
        records.extend(consumer.poll(Duration::from_millis(300)).await.unwrap());
    }
    let second_batch_ts = records[50].timestamp_ms;
    assert!(
        records[..50]
            .iter()
            .all(|r| r.timestamp_ms < second_batch_ts),
        "the batches' timestamps are apart"
    );

    let found = consumer
        .offsets_for_times(BTreeMap::from([(tp.clone(), second_batch_ts)]), TIMEOUT)
        .await
        .unwrap();
    let hit = found[&tp].expect("a record that recent exists");
    assert_eq!(hit.offset, 50, "the first record of the second batch");
    assert_eq!(hit.timestamp_ms, second_batch_ts);
    let after_all = consumer
        .offsets_for_times(
            BTreeMap::from([(tp.clone(), records[99].timestamp_ms + 60_000)]),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(after_all[&tp], None, "no record is that recent");

    assert_eq!(
        consumer
            .beginning_offsets([tp.clone()], TIMEOUT)
            .await
            .unwrap()[&tp],
        0
    );
    assert_eq!(
        consumer.end_offsets([tp.clone()], TIMEOUT).await.unwrap()[&tp],
        100
    );
    consumer.seek(&tp, hit.offset).await.unwrap();
    let again = consumer.poll(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        again.iter().next().map(|r| r.offset),
        Some(50),
        "fetching resumes at the seek position"
    );
    consumer.close(TIMEOUT).await.unwrap();
}

/// A member consumes about half, commits and closes; a new member of the same group (the
/// restarted one) gets exactly the rest, starting at the committed offsets.
async fn restarted_member_resumes(bootstrap: &str, protocol: &str) {
    const RECORDS: usize = 600;
    let topic = topic_with_records(bootstrap, protocol, RECORDS).await;
    let group = unique(&format!("compat-{protocol}-group"));

    let mut first = Consumer::new(config(bootstrap, &group, protocol)).unwrap();
    first.subscribe([topic.as_str()]).await.unwrap();
    let before = consume(&mut first, RECORDS / 2).await;
    first.commit_sync(None, TIMEOUT).await.unwrap();
    let committed = first.committed(partitions(&topic), TIMEOUT).await.unwrap();
    first.close(TIMEOUT).await.unwrap();
    let committed: BTreeMap<i32, i64> = committed
        .into_iter()
        .map(|(tp, o)| (tp.partition, o.map_or(0, |o| o.offset)))
        .collect();
    let committed_total: i64 = committed.values().sum();
    assert_eq!(
        committed_total as usize,
        before.len(),
        "{protocol}: the commit covers exactly what was consumed"
    );

    let mut restarted = Consumer::new(config(bootstrap, &group, protocol)).unwrap();
    restarted.subscribe([topic.as_str()]).await.unwrap();
    let after = consume(&mut restarted, RECORDS - before.len()).await;
    let extra = restarted.poll(Duration::from_secs(1)).await.unwrap();
    assert_eq!(extra.count(), 0, "{protocol}: nothing delivered twice");
    let mut first_offset: BTreeMap<i32, i64> = BTreeMap::new();
    for (partition, offset) in &after {
        first_offset.entry(*partition).or_insert(*offset);
    }
    for (partition, offset) in first_offset {
        assert_eq!(
            offset, committed[&partition],
            "{protocol}: partition {partition} resumed at its committed offset"
        );
    }
    restarted.close(TIMEOUT).await.unwrap();
}

#[tokio::test]
async fn classic_group_member_restarted_resumes_from_its_commits() {
    let Some(bootstrap) = bootstrap() else { return };
    restarted_member_resumes(&bootstrap, "classic").await;
}

#[tokio::test]
async fn consumer_protocol_member_restarted_resumes_or_fails_clearly_without_kip848() {
    let Some(bootstrap) = bootstrap() else { return };
    if broker_has_kip848(&bootstrap).await {
        restarted_member_resumes(&bootstrap, "consumer").await;
        return;
    }
    // No KIP-848 on this broker: joining with group.protocol=consumer must fail, visibly.
    let topic = topic_with_records(&bootstrap, "no-kip848", 10).await;
    let mut consumer =
        Consumer::new(config(&bootstrap, &unique("compat-no-kip848"), "consumer")).unwrap();
    consumer.subscribe([topic.as_str()]).await.unwrap();
    let outcome = timeout(Duration::from_secs(60), async {
        loop {
            if let Err(error) = consumer.poll(Duration::from_millis(500)).await {
                return error;
            }
        }
    })
    .await;
    let error = outcome.expect(
        "group.protocol=consumer on a broker without ConsumerGroupHeartbeat: poll never \
         returned an error within 60 s (the consumer hangs instead of failing clearly)",
    );
    eprintln!("group.protocol=consumer without KIP-848: {error}");
    let text = error.to_string();
    assert!(
        text.contains("ConsumerGroupHeartbeat") || text.to_lowercase().contains("unsupported"),
        "the error names what the broker lacks: {text}"
    );
}
