//! Follower fetching (KIP-392) on the real 3-broker cluster: its brokers carry racks r1–r3 and
//! `replica.selector.class=RackAwareReplicaSelector`, and every partition has a replica on
//! every broker (replication factor 3).
//!
//! A consumer with `client.rack=r<B>`, where broker B leads the fewest partitions of the test
//! topic, reads the whole topic; a leader answers its first Fetch with B as the
//! `preferred_read_replica`, and the consumer fetches from B until the lease
//! (`metadata.max.age.ms`) ends or B fails. Invariants: every record is read, in order, once;
//! once it has read them all, every Fetch it sends for the next 3 s goes to broker B. A
//! consumer without `client.rack` reading the same topic keeps fetching from the leaders
//! (more than one broker), which shows the rack is what moved the fetches.
//!
//! The Fetch requests are counted from the consumer's own trace events ("sending Fetch",
//! with the node it goes to). Needs the `KAFKA_*CLUSTER*` variables (see
//! `support::real_cluster`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use std::collections::BTreeMap;
use support::log_capture::LogCapture;
use support::real_broker::unique;
use support::real_cluster::{cluster, produce, Cluster};
use tokio::time::{Duration, Instant};

const PARTITIONS: i32 = 6;
const RECORDS: usize = 600;

/// Fetch requests sent per node since the capture was last taken.
fn take_fetches(logs: &LogCapture) -> BTreeMap<i32, usize> {
    let mut per_node = BTreeMap::new();
    for line in logs.take().lines() {
        if !line.contains("sending Fetch") {
            continue;
        }
        let node = line
            .split_whitespace()
            .find_map(|field| field.strip_prefix("node="))
            .and_then(|n| n.parse::<i32>().ok())
            .unwrap_or_else(|| panic!("a Fetch trace line without its node: {line}"));
        *per_node.entry(node).or_default() += 1;
    }
    per_node
}

/// Reads the whole topic with `rack` (or none), then polls for 3 s more; returns the Fetch
/// requests sent per node in those 3 s.
async fn fetches_after_reading(
    cluster: &Cluster,
    topic: &str,
    rack: Option<&str>,
    logs: &LogCapture,
) -> BTreeMap<i32, usize> {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers(cluster.bootstrap.iter().map(String::as_str))
        .client_id(format!("follower-fetch-{}", rack.unwrap_or("no-rack")))
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest);
    if let Some(rack) = rack {
        builder = builder.set("client.rack", rack);
    }
    let mut consumer = Consumer::new(builder.build().unwrap()).unwrap();
    consumer
        .assign((0..PARTITIONS).map(|p| TopicPartition::new(topic, p)))
        .await
        .unwrap();
    let mut read: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while read.values().map(Vec::len).sum::<usize>() < RECORDS {
        assert!(
            Instant::now() < deadline,
            "rack {rack:?}: read {read:?} of {RECORDS} records in 60 s"
        );
        for record in consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap()
            .iter()
        {
            read.entry(record.partition)
                .or_default()
                .push(record.offset);
        }
    }
    for (partition, offsets) in &read {
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(
            offsets, &expected,
            "partition {partition}: in order, once each"
        );
    }
    take_fetches(logs);
    let idle_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < idle_until {
        let records = consumer.poll(Duration::from_millis(200)).await.unwrap();
        assert!(records.is_empty(), "nothing more was written");
    }
    let fetches = take_fetches(logs);
    consumer.close(Duration::from_secs(10)).await.unwrap();
    fetches
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_with_a_rack_fetches_from_the_same_rack_replica() {
    let Some(cluster) = cluster() else { return };
    // The only test of this binary: it may install the process-wide subscriber.
    let logs = LogCapture::install("kafka_consumer::internals::fetch_request_manager=trace");

    let topic = unique("follower-fetch");
    cluster.create_topic(&topic, PARTITIONS).await;
    let written = produce(&cluster, &topic, RECORDS).await;
    assert_eq!(written, RECORDS);

    let leaders = cluster.leaders(&topic).await;
    let brokers = i32::try_from(cluster.bootstrap.len()).unwrap();
    let rack_broker = (1..=brokers)
        .min_by_key(|b| leaders.iter().filter(|(_, l)| l == b).count())
        .unwrap();
    let led_elsewhere = leaders.iter().filter(|(_, l)| *l != rack_broker).count();
    assert!(
        led_elsewhere > 0,
        "every partition is led by broker {rack_broker}: nothing to move ({leaders:?})"
    );

    let rack = format!("r{rack_broker}");
    let with_rack = fetches_after_reading(&cluster, &topic, Some(&rack), &logs).await;
    eprintln!(
        "client.rack={rack}: Fetch requests per broker in 3 s after reading everything: \
         {with_rack:?} (leaders {leaders:?})"
    );
    assert!(
        with_rack.get(&rack_broker).copied().unwrap_or(0) > 0,
        "no Fetch went to broker {rack_broker}: {with_rack:?}"
    );
    assert!(
        with_rack.keys().all(|node| *node == rack_broker),
        "with client.rack={rack}, Fetch requests went to other brokers: {with_rack:?} \
         (leaders {leaders:?})"
    );

    let without_rack = fetches_after_reading(&cluster, &topic, None, &logs).await;
    eprintln!("no client.rack: Fetch requests per broker in 3 s: {without_rack:?}");
    assert!(
        without_rack.keys().any(|node| *node != rack_broker),
        "without client.rack every Fetch went to broker {rack_broker}: {without_rack:?} \
         (leaders {leaders:?})"
    );
}
