//! KIP-899 end to end: a consumer whose brokers all moved finds them again through its
//! bootstrap server (`metadata.recovery.strategy=rebootstrap`, the default), and stays stuck
//! with `none`. Against the fake broker on loopback; the network client's own rebootstrap
//! tests (`connection_loopback.rs`) run in both modes, this one on real tokio only.
#![cfg(not(madsim))]

mod support;

use kafka_consumer::{Consumer, ConsumerConfig};
use kafka_protocol::messages::ApiKey;
use support::fake_broker::FakeBroker;
use tokio::time::Duration;

#[tokio::test]
async fn a_consumer_whose_brokers_moved_finds_them_through_the_bootstrap_server() {
    for strategy in ["rebootstrap", "none"] {
        let (broker, addr) = FakeBroker::start().await;
        let gone = {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            listener.local_addr().unwrap()
        };
        broker.advertise(gone);
        let config = ConsumerConfig::from_pairs([
            ("bootstrap.servers", addr.to_string().as_str()),
            ("metadata.recovery.strategy", strategy),
            // Node 1 stays blacked out for the whole test once it failed.
            ("reconnect.backoff.ms", "30000"),
            ("reconnect.backoff.max.ms", "30000"),
        ])
        .unwrap();
        let mut consumer = Consumer::new(config).unwrap();
        consumer
            .partitions_for("orders", Duration::from_secs(5))
            .await
            .expect("metadata from the bootstrap server");
        let before = broker.received_count(ApiKey::Metadata);
        // The cluster moved: node 1 is now where the bootstrap server is.
        broker.advertise(addr);
        let again = consumer
            .partitions_for("orders", Duration::from_secs(3))
            .await;
        match strategy {
            "rebootstrap" => {
                again.expect("found through the bootstrap server");
                assert!(broker.received_count(ApiKey::Metadata) > before);
            }
            _ => {
                assert!(again.is_err(), "none: only node 1 is tried");
                assert_eq!(broker.received_count(ApiKey::Metadata), before);
            }
        }
        consumer.close(Duration::from_secs(1)).await.unwrap();
    }
}
