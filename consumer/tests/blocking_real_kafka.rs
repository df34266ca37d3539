//! The blocking facade and the record stream against a real Apache Kafka broker.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;

use futures_util::StreamExt;
use kafka_consumer::blocking::BlockingConsumer;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use support::real_broker::{bootstrap, client, create_topic, produce_with_java, unique};
use tokio::time::{Duration, Instant};

fn lines(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("\\N\tkey-{i}\tvalue-{i}")).collect()
}

fn config(bootstrap: &str, group: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .enable_auto_commit(false)
        .build()
        .unwrap()
}

/// Creates a 3-partition topic holding `count` records, outside any runtime the test uses.
fn topic_with_records(bootstrap: &str, prefix: &str, count: usize) -> String {
    let topic = unique(prefix);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut admin = client(bootstrap.to_owned());
        create_topic(&mut admin, &topic, 3).await;
    });
    produce_with_java(bootstrap, &topic, "none", &lines(0..count));
    topic
}

#[test]
fn a_blocking_consumer_joins_consumes_commits_and_leaves() {
    let Some(bootstrap) = bootstrap() else { return };
    let topic = topic_with_records(&bootstrap, "blocking", 500);
    let group = unique("blocking-group");
    let mut consumer = BlockingConsumer::new(config(&bootstrap, &group)).unwrap();
    consumer.subscribe([topic.clone()]).unwrap();
    assert_eq!(
        consumer.subscription(),
        [topic.clone()].into_iter().collect()
    );
    let mut values = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while values.len() < 500 {
        assert!(Instant::now() < deadline, "only {} of 500", values.len());
        for r in consumer.poll(Duration::from_millis(200)).unwrap().iter() {
            values.insert(String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap());
        }
    }
    assert_eq!(values.len(), 500);
    assert_eq!(
        consumer.assignment().len(),
        3,
        "the only member gets every partition"
    );
    consumer.commit_sync(None, Duration::from_secs(30)).unwrap();
    let partitions: Vec<TopicPartition> = (0..3).map(|p| TopicPartition::new(&*topic, p)).collect();
    let committed = consumer
        .committed(partitions.clone(), Duration::from_secs(30))
        .unwrap();
    let ends = consumer
        .end_offsets(partitions, Duration::from_secs(30))
        .unwrap();
    for (tp, end) in ends {
        assert_eq!(
            committed[&tp].as_ref().map(|o| o.offset).unwrap_or(0),
            end,
            "{tp}"
        );
    }
    consumer.unsubscribe().unwrap();
    assert!(consumer.assignment().is_empty());
    consumer.close(Duration::from_secs(30)).unwrap();
}

#[tokio::test]
async fn the_record_stream_yields_every_record_in_partition_order() {
    let Some(bootstrap) = bootstrap() else { return };
    let topic = unique("stream");
    let mut admin = client(bootstrap.clone());
    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&bootstrap, &topic, "none", &lines(0..300));
    let mut consumer = Consumer::new(config(&bootstrap, &unique("stream-group"))).unwrap();
    consumer.subscribe([topic]).await.unwrap();
    let records: Vec<_> = tokio::time::timeout(
        Duration::from_secs(60),
        consumer.stream().take(300).collect::<Vec<_>>(),
    )
    .await
    .expect("300 records within a minute");
    let mut last = [-1i64; 3];
    for record in &records {
        let record = record.as_ref().unwrap();
        let p = usize::try_from(record.partition).unwrap();
        assert!(record.offset > last[p], "partition order");
        last[p] = record.offset;
    }
    assert_eq!(records.len(), 300);
    consumer.close(Duration::from_secs(30)).await.unwrap();
}
