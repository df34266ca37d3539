//! Simulation mode: follower fetching (KIP-392, issue #18).
//!
//! Three brokers in racks r1, r2, r3, one partition replicated on all three. With the cluster's
//! rack-aware replica selector (Kafka's `replica.selector.class`), a consumer whose
//! `client.rack` is a follower's rack is sent there by the leader's `preferred_read_replica`
//! and fetches from that follower from then on; without the selector, or in the leader's own
//! rack, every fetch goes to the leader. Fetches are counted per broker from the wire tap
//! (requests with API key 1 from the consumer's address).
#![cfg(madsim)]

mod support;

use std::collections::BTreeMap;

use kafka_consumer::rt::Duration;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use madsim::runtime::Handle;
use sim::broker::WireKind;
use sim::cluster::Cluster;
use support::batch;

const FETCH: i16 = 1;
const RECORDS: usize = 60;
const CLIENT_IP: &str = "10.0.5.1";

/// Consumes every record with `client.rack = rack` and returns (the leader, fetches per
/// broker).
async fn fetches_by_broker(
    selector: bool,
    rack_of: impl Fn(i32) -> i32,
) -> (i32, BTreeMap<i32, usize>) {
    let cluster = Cluster::builder()
        .brokers(3)
        .topic("t", 1)
        .offsets_partitions(1)
        .record_wire()
        .config(|c| {
            c.racks = (1..=3).map(|id| (id, format!("r{id}"))).collect();
            c.rack_aware_replica_selector = selector;
        })
        .build()
        .await;
    let leader = cluster
        .controller()
        .read()
        .partition("t", 0)
        .unwrap()
        .leader;
    let rack = format!("r{}", rack_of(leader));
    for i in 0..RECORDS / 2 {
        cluster
            .controller()
            .append("t", 0, batch(&[&format!("a{i}")]))
            .unwrap();
    }
    let bootstrap = cluster.bootstrap_servers();
    let consumer = Handle::current()
        .create_node()
        .name("consumer")
        .ip(CLIENT_IP.parse().unwrap())
        .build()
        .spawn(async move {
            let config = ConsumerConfig::builder()
                .bootstrap_servers(bootstrap)
                .client_rack(rack)
                .auto_offset_reset(AutoOffsetReset::Earliest)
                .build()
                .unwrap();
            let mut consumer = Consumer::new(config).unwrap();
            consumer
                .assign([TopicPartition::new("t", 0)])
                .await
                .unwrap();
            let mut values = Vec::new();
            for _ in 0..400 {
                let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
                values.extend(records.iter().map(|r| {
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"")).into_owned()
                }));
                if values.len() >= RECORDS {
                    break;
                }
            }
            consumer.close(Duration::from_secs(5)).await.unwrap();
            values
        });
    // The second half arrives while the consumer fetches.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for i in 0..RECORDS / 2 {
        cluster
            .controller()
            .append("t", 0, batch(&[&format!("b{i}")]))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let values = consumer.await.unwrap();
    let expected: Vec<String> = (0..RECORDS / 2)
        .map(|i| format!("a{i}"))
        .chain((0..RECORDS / 2).map(|i| format!("b{i}")))
        .collect();
    assert_eq!(values, expected, "every record once, in order");
    let mut fetches = BTreeMap::new();
    for e in cluster.wire_events() {
        if e.kind == WireKind::Request
            && e.api_key == Some(FETCH)
            && e.peer.ip().to_string() == CLIENT_IP
        {
            *fetches.entry(e.broker).or_insert(0) += 1;
        }
    }
    (leader, fetches)
}

/// The follower whose rack the consumer shares gets the fetches; the leader only the first.
#[madsim::test]
async fn a_consumer_in_a_followers_rack_fetches_from_that_follower() {
    let follower = |leader: i32| leader % 3 + 1;
    let (leader, fetches) = fetches_by_broker(true, follower).await;
    let at_follower = fetches.get(&follower(leader)).copied().unwrap_or(0);
    let at_leader = fetches.get(&leader).copied().unwrap_or(0);
    eprintln!("leader {leader}: fetches per broker {fetches:?}");
    assert!(at_follower >= 10, "{fetches:?}");
    assert!(
        at_leader <= 2,
        "the leader answers the first fetch with its preferred replica: {fetches:?}"
    );
    assert_eq!(fetches.len(), 2, "the third broker gets none: {fetches:?}");
}

/// Without the selector (Kafka's default `replica.selector.class`), the leader serves.
#[madsim::test]
async fn without_the_selector_the_leader_serves() {
    let follower = |leader: i32| leader % 3 + 1;
    let (leader, fetches) = fetches_by_broker(false, follower).await;
    assert_eq!(
        fetches.keys().copied().collect::<Vec<_>>(),
        vec![leader],
        "{fetches:?}"
    );
}

/// A consumer in the leader's own rack stays on the leader.
#[madsim::test]
async fn in_the_leaders_rack_the_leader_serves() {
    let (leader, fetches) = fetches_by_broker(true, |leader| leader).await;
    assert_eq!(
        fetches.keys().copied().collect::<Vec<_>>(),
        vec![leader],
        "{fetches:?}"
    );
}
