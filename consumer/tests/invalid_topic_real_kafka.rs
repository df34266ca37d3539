//! Illegal topic names against a real Apache Kafka 4.x broker (issue #26), with each group
//! protocol: `subscribe` and `assign` refuse a name Kafka does not allow with
//! `Error::InvalidTopic` naming it (alone or next to a legal topic) and leave no subscription
//! behind; `partitions_for` of such a name fails with the broker's INVALID_TOPIC_EXCEPTION;
//! then `unsubscribe` and a subscription to a real topic consume everything produced to it,
//! exactly once and in order per partition. The same sequence as the `invalid-topic`
//! scenario of the simulator.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeMap;

use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, Error, TopicPartition};
use support::group::{lines, unique};
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::time::{Duration, Instant};

const RECORDS: usize = 200;
const PARTITIONS: i32 = 3;
const ILLEGAL: &str = "bad!topic";

fn refused_naming(result: kafka_consumer::Result<()>, topic: &str) {
    match result {
        Err(Error::InvalidTopic { topics, reason }) => {
            assert_eq!(topics, [topic], "{reason}");
        }
        other => panic!("expected InvalidTopic naming {topic:?}, got {other:?}"),
    }
}

async fn refuse_then_recover(bootstrap: &str, protocol: &str) {
    let mut admin = client(bootstrap.to_owned());
    let topic = unique(&format!("invalid-topic-{protocol}"));
    create_topic(&mut admin, &topic, PARTITIONS).await;
    produce_with_java(bootstrap, &topic, "none", &lines(RECORDS));

    let config = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(unique(&format!("invalid-topic-group-{protocol}")))
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol)
        .build()
        .unwrap();
    let mut consumer = Consumer::new(config).unwrap();

    refused_naming(consumer.subscribe([ILLEGAL]).await, ILLEGAL);
    refused_naming(consumer.subscribe([topic.as_str(), ILLEGAL]).await, ILLEGAL);
    let long = "a".repeat(250);
    refused_naming(consumer.subscribe([long.as_str()]).await, &long);
    refused_naming(
        consumer.assign([TopicPartition::new(ILLEGAL, 0)]).await,
        ILLEGAL,
    );
    assert!(consumer.subscription().is_empty(), "nothing was subscribed");
    assert!(
        matches!(
            consumer.poll(Duration::from_millis(100)).await,
            Err(Error::IllegalState(_))
        ),
        "no subscription was left behind"
    );
    // The broker's own answer for the name, through a call that reaches it.
    match consumer
        .partitions_for(ILLEGAL, Duration::from_secs(10))
        .await
    {
        Err(Error::InvalidTopic { topics, .. }) => assert_eq!(topics, [ILLEGAL]),
        other => panic!("partitions_for({ILLEGAL:?}): {other:?}"),
    }

    consumer.unsubscribe().await.unwrap();
    consumer.subscribe([topic.as_str()]).await.unwrap();
    let mut seen: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.values().map(Vec::len).sum::<usize>() < RECORDS {
        assert!(
            Instant::now() < deadline,
            "{protocol}: only {} of {RECORDS} records",
            seen.values().map(Vec::len).sum::<usize>()
        );
        for r in consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap()
            .iter()
        {
            let value = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
            seen.entry(r.partition).or_default().push((r.offset, value));
        }
    }
    let extra = consumer.poll(Duration::from_millis(500)).await.unwrap();
    assert_eq!(
        extra.count(),
        0,
        "{protocol}: nothing beyond what was produced"
    );
    let mut values = Vec::new();
    for (partition, records) in &seen {
        let offsets: Vec<i64> = records.iter().map(|(o, _)| *o).collect();
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(
            offsets, expected,
            "{protocol}: partition {partition} in order, once"
        );
        values.extend(records.iter().map(|(_, v)| v.clone()));
    }
    values.sort();
    let mut expected: Vec<String> = (0..RECORDS).map(|i| format!("value-{i}")).collect();
    expected.sort();
    assert_eq!(values, expected, "{protocol}: exactly what was produced");
    consumer.close(Duration::from_secs(30)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn illegal_names_are_refused_and_the_consumer_recovers_classic() {
    let Some(bootstrap) = bootstrap() else { return };
    refuse_then_recover(&bootstrap, "classic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn illegal_names_are_refused_and_the_consumer_recovers_consumer_protocol() {
    let Some(bootstrap) = bootstrap() else { return };
    refuse_then_recover(&bootstrap, "consumer").await;
}
