//! The data path against a real Apache Kafka broker (issue #27): a subscribed topic created
//! after the classic group formed is consumed with every assignor; pausing a partition while
//! `recv` / `stream` hold its records loses none of them; with `auto.offset.reset=none`,
//! DeleteRecords past the position keeps the position and raises OffsetOutOfRange on every
//! poll until the application seeks.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeMap;

use futures_util::StreamExt;
use kafka_consumer::config::{Assignor, ConsumerConfigBuilder};
use kafka_consumer::network::{NetworkClient, Target};
use kafka_consumer::protocol::ResponseError;
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, ConsumerRecord, Error, TopicPartition,
};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::{DeleteRecordsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use support::real_broker::{
    bootstrap, client, create_topic, delete_topic, keyed_lines, produce_with_java, unique,
};
use tokio::time::{timeout, Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

fn config(bootstrap: &str) -> ConsumerConfigBuilder {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .allow_auto_create_topics(false)
        .client_id("data-path-real-kafka")
}

/// Asserts every partition's offsets run 0, 1, 2, ... with no gap and no repeat, and that
/// `count` records arrived in all.
fn assert_exactly_once_in_order(records: &[ConsumerRecord], count: usize) {
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for r in records {
        let expected = next.entry(r.partition).or_insert(0);
        assert_eq!(
            r.offset,
            *expected,
            "partition {}: expected offset {expected}, got {} (records: {:?})",
            r.partition,
            r.offset,
            records
                .iter()
                .map(|r| (r.partition, r.offset))
                .collect::<Vec<_>>()
        );
        *expected += 1;
    }
    assert_eq!(records.len(), count);
}

/// Issue #27 bug 1: the group forms while the topic does not exist; the topic is created and
/// written to afterwards; every record must be consumed (the leader rejoins when the topic
/// appears in its metadata).
async fn late_topic_is_consumed(assignor: Assignor) {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("late-topic");
    let mut consumer = Consumer::new(
        config(&bootstrap)
            .group_id(unique("late-group"))
            .partition_assignment_strategy(&[assignor])
            .metadata_max_age_ms(1_000)
            .build()
            .unwrap(),
    )
    .unwrap();
    consumer.subscribe([topic.clone()]).await.unwrap();
    // Long enough for the group to form with nothing to assign (the leader waits 5 s for
    // metadata of a topic it has never seen before assigning without it).
    let formed = Instant::now() + Duration::from_secs(8);
    while Instant::now() < formed {
        let records = consumer.poll(Duration::from_millis(500)).await.unwrap();
        assert!(records.is_empty());
    }
    assert!(
        consumer.assignment().is_empty(),
        "the topic does not exist yet"
    );

    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..30));
    let deadline = Instant::now() + TIMEOUT;
    let mut records = Vec::new();
    while records.len() < 30 {
        assert!(
            Instant::now() < deadline,
            "{assignor:?}: only {} of 30 records of the late topic arrived",
            records.len()
        );
        records.extend(consumer.poll(Duration::from_millis(500)).await.unwrap());
    }
    assert_exactly_once_in_order(&records, 30);
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn late_topic_is_consumed_with_range() {
    late_topic_is_consumed(Assignor::Range).await;
}

#[tokio::test]
async fn late_topic_is_consumed_with_roundrobin() {
    late_topic_is_consumed(Assignor::RoundRobin).await;
}

#[tokio::test]
async fn late_topic_is_consumed_with_sticky() {
    late_topic_is_consumed(Assignor::Sticky).await;
}

#[tokio::test]
async fn late_topic_is_consumed_with_cooperative_sticky() {
    late_topic_is_consumed(Assignor::CooperativeSticky).await;
}

/// How the test takes records one at a time.
#[derive(Clone, Copy, Debug)]
enum OneByOne {
    Recv,
    Stream,
}

async fn next_record(consumer: &mut Consumer, how: OneByOne) -> ConsumerRecord {
    let next = async {
        match how {
            OneByOne::Recv => consumer.recv().await,
            OneByOne::Stream => {
                let stream = consumer.stream();
                futures_util::pin_mut!(stream);
                stream.next().await.expect("the stream goes on")
            }
        }
    };
    timeout(TIMEOUT, next)
        .await
        .expect("a record within the timeout")
        .unwrap()
}

/// Issue #27 bug 2: `recv` / `stream` take a whole fetch from the buffer and hand it out one
/// record at a time; pausing a partition meanwhile must keep the rest (their position is
/// already past them) and deliver them after the resume.
async fn pause_keeps_records_held_for_one_by_one(how: OneByOne) {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("pause-held");
    create_topic(&mut admin, &topic, 2).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..100));
    let mut consumer = Consumer::new(config(&bootstrap).build().unwrap()).unwrap();
    let partitions: Vec<TopicPartition> = (0..2)
        .map(|p| TopicPartition::new(topic.as_str(), p))
        .collect();
    consumer.assign(partitions.clone()).await.unwrap();

    let first = next_record(&mut consumer, how).await;
    let paused = first.topic_partition();
    consumer.pause([paused.clone()]).await.unwrap();
    let mut records = vec![first];
    // While paused, only the other partition's records come out.
    let other_partition = partitions.iter().find(|tp| **tp != paused).unwrap();
    let (_, other_count) = consumer
        .end_offsets(partitions.clone(), TIMEOUT)
        .await
        .unwrap()
        .into_iter()
        .find(|(tp, _)| tp == other_partition)
        .unwrap();
    let mut while_paused = 0_i64;
    while while_paused < other_count {
        let record = next_record(&mut consumer, how).await;
        assert_ne!(
            record.topic_partition(),
            paused,
            "a paused partition's record came out"
        );
        records.push(record);
        while_paused += 1;
    }
    consumer.resume([paused.clone()]).await.unwrap();
    while records.len() < 100 {
        records.push(next_record(&mut consumer, how).await);
    }
    assert_exactly_once_in_order(&records, 100);
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn pause_keeps_records_held_for_recv() {
    pause_keeps_records_held_for_one_by_one(OneByOne::Recv).await;
}

#[tokio::test]
async fn pause_keeps_records_held_for_stream() {
    pause_keeps_records_held_for_one_by_one(OneByOne::Stream).await;
}

/// DeleteRecords: moves the log start offset of `topic`'s partition 0 to `offset` (the test
/// broker is a single node, so any node is the leader).
async fn delete_records(client: &mut NetworkClient, topic: &str, offset: i64) {
    let request = DeleteRecordsRequest::default()
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(0)
                .with_offset(offset)])])
        .with_timeout_ms(15_000);
    let response = client.send(Target::LeastLoaded, request).await.unwrap();
    let partition = &response.body.topics[0].partitions[0];
    assert_eq!(
        ResponseError::try_from_code(partition.error_code),
        None,
        "DeleteRecords on {topic}"
    );
    assert_eq!(partition.low_watermark, offset);
}

/// Issue #27 bug 3: DeleteRecords moves the log start past the position with
/// `auto.offset.reset=none`. Every poll reports OffsetOutOfRange with the position (Java
/// raises it again after each round trip), never "no offset for partition"; `position()`
/// still answers the old position; a seek to the new log start resumes consumption.
#[tokio::test]
async fn delete_records_past_the_position_with_reset_none_keeps_the_position() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("reset-none");
    create_topic(&mut admin, &topic, 1).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..20));
    // The log start moves before the consumer exists: a fetch from 5 answered before the
    // deletion would legitimately deliver 5..20.
    delete_records(&mut admin, &topic, 15).await;
    let tp = TopicPartition::new(topic.as_str(), 0);
    let mut consumer = Consumer::new(
        config(&bootstrap)
            .auto_offset_reset(AutoOffsetReset::None)
            .build()
            .unwrap(),
    )
    .unwrap();
    consumer.assign([tp.clone()]).await.unwrap();
    consumer.seek(&tp, 5).await.unwrap();

    for round in 0..3 {
        let deadline = Instant::now() + TIMEOUT;
        let error = loop {
            assert!(Instant::now() < deadline, "round {round}: no error");
            match consumer.poll(Duration::from_secs(1)).await {
                Err(error) => break error,
                Ok(records) => assert!(records.is_empty(), "{records:?}"),
            }
        };
        let Error::OffsetOutOfRange { offsets } = error else {
            panic!("round {round}: expected OffsetOutOfRange, got {error:?}")
        };
        assert_eq!(offsets, vec![(tp.clone(), 5)], "round {round}");
        assert_eq!(
            consumer.position(&tp, TIMEOUT).await.unwrap(),
            5,
            "round {round}: the position is kept"
        );
    }

    consumer.seek(&tp, 15).await.unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let mut records = Vec::new();
    while records.len() < 5 {
        assert!(Instant::now() < deadline, "only {} of 5", records.len());
        records.extend(consumer.poll(Duration::from_millis(500)).await.unwrap());
    }
    assert_eq!(
        records.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (15..20).collect::<Vec<_>>()
    );
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

/// A topic deleted and created again under the same name while a consumer is assigned to it:
/// the new topic has a new topic id, and the consumer starts it over from its beginning
/// (`earliest`) — it does not carry the old topic's position over. Here the new topic already
/// holds more records than the old position when the consumer resumes: carried over, the
/// position would still be in range and the new topic's records below it would be skipped
/// without any error (what Java's consumer does: it keeps the position and, the leader epoch
/// being the same, does not even validate it).
#[tokio::test]
async fn a_topic_created_again_is_read_from_its_start() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("created-again");
    create_topic(&mut admin, &topic, 1).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..20));
    let tp = TopicPartition::new(topic.as_str(), 0);
    let mut consumer =
        Consumer::new(config(&bootstrap).metadata_max_age_ms(500).build().unwrap()).unwrap();
    consumer.assign([tp.clone()]).await.unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let mut old = Vec::new();
    while old.len() < 20 {
        assert!(Instant::now() < deadline, "only {} of 20", old.len());
        old.extend(consumer.poll(Duration::from_millis(500)).await.unwrap());
    }
    assert_eq!(consumer.position(&tp, TIMEOUT).await.unwrap(), 20);

    // No fetch while the topic goes and comes back with 30 records.
    consumer.pause([tp.clone()]).await.unwrap();
    delete_topic(&mut admin, &topic).await;
    let gone = Instant::now() + TIMEOUT;
    loop {
        let response = admin
            .send(
                Target::LeastLoaded,
                kafka_consumer::network::metadata::metadata_request_for_topics(
                    [topic.as_str()],
                    false,
                ),
            )
            .await
            .unwrap();
        let exists = response.body.topics.iter().any(|t| t.error_code == 0);
        if !exists {
            break;
        }
        assert!(
            Instant::now() < gone,
            "{topic} still listed after its deletion"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    create_topic(&mut admin, &topic, 1).await;
    let new_lines: Vec<String> = (0..30)
        .map(|i| format!("i:{i}\tkey-{i}\tnew-{i}"))
        .collect();
    produce_with_java(&bootstrap, &topic, "none", &new_lines);
    // Long enough for metadata (max age 500 ms) to show the new topic id while paused.
    let settle = Instant::now() + Duration::from_secs(3);
    while Instant::now() < settle {
        // A paused partition hands out nothing; errors of the gap are not this test's concern.
        if let Ok(records) = consumer.poll(Duration::from_millis(250)).await {
            assert!(records.is_empty(), "{records:?}");
        }
    }
    consumer.resume([tp.clone()]).await.unwrap();

    let deadline = Instant::now() + TIMEOUT;
    let mut new = Vec::new();
    while new.len() < 30 {
        assert!(
            Instant::now() < deadline,
            "only {} of the new topic's 30 records: {:?}",
            new.len(),
            new.iter()
                .map(|r: &ConsumerRecord| r.offset)
                .collect::<Vec<_>>()
        );
        if let Ok(records) = consumer.poll(Duration::from_millis(500)).await {
            new.extend(records);
        }
    }
    assert_exactly_once_in_order(&new, 30);
    assert!(
        new.iter()
            .all(|r| r.value.as_deref().is_some_and(|v| v.starts_with(b"new-"))),
        "only the new topic's records"
    );
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}
