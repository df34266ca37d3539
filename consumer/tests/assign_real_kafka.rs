//! Assign mode end to end against a real Apache Kafka broker: records produced by Kafka's own
//! Java producer, consumed through `Consumer` with and without a `group.id`.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use kafka_consumer::config::ConsumerConfigBuilder;
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, ConsumerRecord, Error, OffsetAndMetadata,
    TopicPartition,
};
use support::real_broker::{
    bootstrap, client, create_topic, delete_topic, keyed_lines, produce_with_java, unique,
};
use tokio::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The tests' configuration, still open for more settings.
fn config(bootstrap: &str, group: Option<&str>) -> ConsumerConfigBuilder {
    let builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        // The tests name missing topics and expect them to stay missing.
        .allow_auto_create_topics(false)
        .client_id("assign-real-kafka");
    match group {
        Some(group) => builder.group_id(group),
        None => builder,
    }
}

fn settings(bootstrap: &str, group: Option<&str>) -> ConsumerConfig {
    config(bootstrap, group).build().unwrap()
}

fn partitions(topic: &str, count: i32) -> Vec<TopicPartition> {
    (0..count).map(|p| TopicPartition::new(topic, p)).collect()
}

/// Polls until `count` records arrived; fails on more within a short grace period after.
async fn consume_exactly(consumer: &mut Consumer, count: usize) -> Vec<ConsumerRecord> {
    let deadline = Instant::now() + TIMEOUT;
    let mut records = Vec::new();
    while records.len() < count {
        assert!(
            Instant::now() < deadline,
            "only {} of {count} records",
            records.len()
        );
        records.extend(consumer.poll(Duration::from_millis(500)).await.unwrap());
    }
    let extra = consumer.poll(Duration::from_millis(500)).await.unwrap();
    assert_eq!(extra.count(), 0, "unexpected extra records: {extra:?}");
    assert_eq!(records.len(), count);
    records
}

fn values(records: &[ConsumerRecord]) -> BTreeSet<String> {
    records
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
        .collect()
}

fn expected_values(range: std::ops::Range<usize>) -> BTreeSet<String> {
    range.map(|i| format!("value-{i}")).collect()
}

fn check_order_and_fields(records: &[ConsumerRecord]) {
    let mut last: BTreeMap<i32, i64> = BTreeMap::new();
    for r in records {
        if let Some(prev) = last.insert(r.partition, r.offset) {
            assert!(r.offset > prev, "offsets increase within a partition");
        }
        let value = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
        let i = value.trim_start_matches("value-");
        assert_eq!(r.key.as_deref(), Some(format!("key-{i}").as_bytes()));
        assert_eq!(r.headers.len(), 1);
        assert_eq!(&r.headers[0].key[..], b"i");
        assert_eq!(r.headers[0].value.as_deref(), Some(i.as_bytes()));
        assert!(r.timestamp_ms > 1_577_836_800_000);
        assert!(r.leader_epoch.is_some());
    }
}

#[tokio::test]
async fn consumes_everything_commits_and_a_new_consumer_resumes() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("assign-resume");
    let group = unique("group");
    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..60));

    let mut first = Consumer::new(settings(&bootstrap, Some(&group))).unwrap();
    first.assign(partitions(&topic, 3)).await.unwrap();
    let records = consume_exactly(&mut first, 60).await;
    assert_eq!(values(&records), expected_values(0..60));
    check_order_and_fields(&records);
    first.commit_sync(None, TIMEOUT).await.unwrap();

    let ends = first
        .end_offsets(partitions(&topic, 3), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(ends.values().sum::<i64>(), 60);
    let committed = first
        .committed(partitions(&topic, 3), TIMEOUT)
        .await
        .unwrap();
    for tp in partitions(&topic, 3) {
        let position = first.position(&tp, TIMEOUT).await.unwrap();
        assert_eq!(position, ends[&tp], "position of {tp}");
        let expected = (ends[&tp] > 0).then_some(ends[&tp]);
        assert_eq!(
            committed[&tp].as_ref().map(|o| o.offset),
            expected,
            "committed {tp}"
        );
    }
    let metrics = first.metrics();
    assert_eq!(metrics.records_consumed, 60);
    assert!(metrics.fetch_responses > 0);
    assert!(metrics.partitions.values().all(|p| p.lag.unwrap_or(0) == 0));
    first.close(TIMEOUT).await.unwrap();

    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(60..80));
    let mut second = Consumer::new(settings(&bootstrap, Some(&group))).unwrap();
    second.assign(partitions(&topic, 3)).await.unwrap();
    let records = consume_exactly(&mut second, 20).await;
    assert_eq!(
        values(&records),
        expected_values(60..80),
        "resumed at the committed offsets"
    );
    second.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn by_duration_resets_by_time_and_falls_back_to_the_end() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("assign-by-duration");
    create_topic(&mut admin, &topic, 1).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..10));
    let tp = TopicPartition::new(topic.as_str(), 0);
    let position = |reset: &'static str| {
        let (bootstrap, tp) = (bootstrap.clone(), tp.clone());
        async move {
            let config = config(&bootstrap, None)
                .set("auto.offset.reset", reset)
                .build()
                .unwrap();
            let mut consumer = Consumer::new(config).unwrap();
            consumer.assign([tp.clone()]).await.unwrap();
            let position = consumer.position(&tp, TIMEOUT).await.unwrap();
            consumer.close(TIMEOUT).await.unwrap();
            position
        }
    };
    // Every record is younger than a day: the reset finds the first one.
    assert_eq!(position("by_duration:P1D").await, 0);
    // None is younger than zero: no offset by time, so Java's fallback, the log end.
    assert_eq!(position("by_duration:PT0S").await, 10);
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn seek_position_pause_and_offset_lookups() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("assign-seek");
    create_topic(&mut admin, &topic, 1).await;
    let before_ms = kafka_consumer::rt::wall_clock_ms() - 1_000;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..30));
    let tp = TopicPartition::new(topic.as_str(), 0);

    // No group: positions come from auto.offset.reset alone.
    let mut consumer = Consumer::new(settings(&bootstrap, None)).unwrap();
    consumer.assign([tp.clone()]).await.unwrap();
    assert_eq!(
        consumer
            .beginning_offsets([tp.clone()], TIMEOUT)
            .await
            .unwrap()[&tp],
        0
    );
    assert_eq!(
        consumer.end_offsets([tp.clone()], TIMEOUT).await.unwrap()[&tp],
        30
    );
    let times = consumer
        .offsets_for_times(BTreeMap::from([(tp.clone(), before_ms)]), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(times[&tp].unwrap().offset, 0);
    let far_future = kafka_consumer::rt::wall_clock_ms() + 3_600_000;
    let times = consumer
        .offsets_for_times(BTreeMap::from([(tp.clone(), far_future)]), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(times[&tp], None);

    assert_eq!(consumer.position(&tp, TIMEOUT).await.unwrap(), 0);
    consumer.seek(&tp, 10).await.unwrap();
    assert_eq!(consumer.position(&tp, TIMEOUT).await.unwrap(), 10);
    let records = consume_exactly(&mut consumer, 20).await;
    assert_eq!(records[0].offset, 10);
    assert_eq!(consumer.position(&tp, TIMEOUT).await.unwrap(), 30);

    consumer.seek_to_beginning([tp.clone()]).await.unwrap();
    assert_eq!(consumer.position(&tp, TIMEOUT).await.unwrap(), 0);
    consumer.seek_to_end([tp.clone()]).await.unwrap();
    assert_eq!(consumer.position(&tp, TIMEOUT).await.unwrap(), 30);

    consumer.seek(&tp, 25).await.unwrap();
    consumer.pause([tp.clone()]).await.unwrap();
    assert!(consumer.paused().contains(&tp));
    let paused = consumer.poll(Duration::from_millis(1_500)).await.unwrap();
    assert!(paused.is_empty(), "paused partitions are not fetched");
    consumer.resume([tp.clone()]).await.unwrap();
    let records = consume_exactly(&mut consumer, 5).await;
    assert_eq!(records[0].offset, 25);

    assert!(matches!(
        consumer.seek(&tp, -1).await,
        Err(Error::InvalidArgument(_))
    ));
    let other = TopicPartition::new(topic.as_str(), 7);
    assert!(matches!(
        consumer.seek(&other, 1).await,
        Err(Error::IllegalState(_))
    ));
    assert!(
        matches!(
            consumer.commit_sync(None, TIMEOUT).await,
            Err(Error::IllegalState(_))
        ),
        "no group.id: commits are illegal"
    );

    let partitions = consumer.partitions_for(&topic, TIMEOUT).await.unwrap();
    assert_eq!(partitions.len(), 1);
    assert!(partitions[0].leader.is_some());
    let topics = consumer.list_topics(TIMEOUT).await.unwrap();
    assert!(topics.contains_key(&topic));
    assert!(consumer
        .partitions_for("no-such-topic-xyz", TIMEOUT)
        .await
        .unwrap()
        .is_empty());
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn reset_policy_none_reports_the_partitions_until_a_seek() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("assign-none");
    create_topic(&mut admin, &topic, 2).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..10));

    let mut consumer = Consumer::new(
        config(&bootstrap, Some(&unique("group")))
            .auto_offset_reset(AutoOffsetReset::None)
            .build()
            .unwrap(),
    )
    .unwrap();
    consumer.assign(partitions(&topic, 2)).await.unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let error = loop {
        assert!(Instant::now() < deadline, "no NoOffsetForPartition error");
        match consumer.poll(Duration::from_secs(1)).await {
            Err(error) => break error,
            Ok(records) => assert!(records.is_empty()),
        }
    };
    let Error::NoOffsetForPartition { partitions: named } = error else {
        panic!("unexpected error {error:?}")
    };
    assert_eq!(named, partitions(&topic, 2));
    assert!(matches!(
        consumer
            .position(&TopicPartition::new(topic.as_str(), 0), TIMEOUT)
            .await,
        Err(Error::NoOffsetForPartition { .. })
    ));
    for tp in partitions(&topic, 2) {
        consumer.seek(&tp, 0).await.unwrap();
    }
    let records = consume_exactly(&mut consumer, 10).await;
    assert_eq!(values(&records), expected_values(0..10));
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn async_commit_callbacks_run_in_order_and_close_auto_commits() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("assign-async");
    let group = unique("group");
    create_topic(&mut admin, &topic, 1).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..10));
    let tp = TopicPartition::new(topic.as_str(), 0);

    let mut consumer = Consumer::new(
        config(&bootstrap, Some(&group))
            .enable_auto_commit(true)
            .auto_commit_interval_ms(600_000)
            .build()
            .unwrap(),
    )
    .unwrap();
    consumer.assign([tp.clone()]).await.unwrap();
    consume_exactly(&mut consumer, 10).await;

    let order = Arc::new(Mutex::new(Vec::new()));
    for offset in [3, 5, 7] {
        let order = Arc::clone(&order);
        consumer
            .commit_async_with_callback(
                Some(BTreeMap::from([(
                    tp.clone(),
                    OffsetAndMetadata::new(offset),
                )])),
                move |offsets, result| {
                    result.unwrap();
                    order
                        .lock()
                        .unwrap()
                        .push(offsets.values().next().unwrap().offset);
                },
            )
            .unwrap();
    }
    let awaited = consumer.commit_async(Some(BTreeMap::from([(
        tp.clone(),
        OffsetAndMetadata::new(8),
    )])));
    awaited.await.unwrap();
    // commit_sync of nothing still waits for earlier async commits and runs their callbacks.
    consumer
        .commit_sync(Some(BTreeMap::new()), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(*order.lock().unwrap(), [3, 5, 7]);
    let committed = consumer.committed([tp.clone()], TIMEOUT).await.unwrap();
    assert_eq!(committed[&tp].as_ref().unwrap().offset, 8);

    // Close commits the consumed position (10) although the interval never elapsed.
    consumer.close(TIMEOUT).await.unwrap();
    let mut checker = Consumer::new(settings(&bootstrap, Some(&group))).unwrap();
    let committed = checker.committed([tp.clone()], TIMEOUT).await.unwrap();
    assert_eq!(committed[&tp].as_ref().unwrap().offset, 10);
    assert!(committed[&tp].as_ref().unwrap().leader_epoch.is_some());
    checker.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn calls_in_the_wrong_state_are_rejected() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut consumer = Consumer::new(settings(&bootstrap, Some("g"))).unwrap();
    assert!(matches!(
        consumer.poll(Duration::from_millis(10)).await,
        Err(Error::IllegalState(_))
    ));
    let unassigned = TopicPartition::new("t", 0);
    assert!(matches!(
        consumer
            .commit_sync(
                Some(BTreeMap::from([(unassigned, OffsetAndMetadata::new(1))])),
                TIMEOUT
            )
            .await,
        Err(Error::IllegalState(_))
    ));
    let wakeup = consumer.wakeup_handle();
    consumer
        .assign([TopicPartition::new("no-such-topic-for-wakeup", 0)])
        .await
        .unwrap();
    wakeup.wakeup();
    assert!(matches!(
        consumer.poll(Duration::from_secs(5)).await,
        Err(Error::Wakeup)
    ));
    consumer.close(Duration::from_secs(5)).await.unwrap();
    assert!(matches!(
        consumer.poll(Duration::from_millis(10)).await,
        Err(Error::IllegalState(_))
    ));
}

/// `allow.auto.create.topics` (Java's default: true): the consumer's Metadata requests for
/// topics it names ask the broker to create missing ones, which it does when its own
/// `auto.create.topics.enable` is on (the harness broker's is, with `num.partitions=1`); with
/// `false` a missing topic stays missing.
#[tokio::test]
async fn allow_auto_create_topics_decides_whether_a_named_missing_topic_is_created() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let kept_missing = unique("auto-create-off");
    let created = unique("auto-create-on");
    let consumer = |allow: bool| {
        Consumer::new(
            config(&bootstrap, None)
                .allow_auto_create_topics(allow)
                .build()
                .unwrap(),
        )
        .unwrap()
    };

    let mut refusing = consumer(false);
    for _ in 0..3 {
        let partitions = refusing
            .partitions_for(&kept_missing, TIMEOUT)
            .await
            .unwrap();
        assert!(partitions.is_empty(), "{partitions:?}");
    }
    refusing.close(TIMEOUT).await.unwrap();

    let mut creating = consumer(true);
    let deadline = Instant::now() + TIMEOUT;
    // Kafka answers the request that creates a topic before its partition has a leader, so
    // the first answers may still list no partition.
    let partitions = loop {
        let partitions = creating.partitions_for(&created, TIMEOUT).await.unwrap();
        if !partitions.is_empty() || Instant::now() > deadline {
            break partitions;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(partitions.len(), 1, "{partitions:?}");
    let topics = creating.list_topics(TIMEOUT).await.unwrap();
    assert!(topics.contains_key(&created));
    assert!(
        !topics.contains_key(&kept_missing),
        "created though refused"
    );
    creating.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &created).await;
}
