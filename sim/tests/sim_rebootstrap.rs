//! Simulation mode: rebootstrapping (KIP-899, KIP-1102) when every broker moved.
//!
//! Three brokers reached through a bootstrap listener (`10.0.1.N:9092`) and advertised in
//! Metadata on another port (9093), as brokers behind a bootstrap address. A consumer reads
//! half of a partition; then every broker restarts advertising, and listening on, 9094
//! (`Fault::MoveListeners`): each address the consumer learned from Metadata is gone. With
//! `metadata.recovery.strategy=rebootstrap` (the default) the consumer asks the bootstrap
//! listener again, learns the new addresses and reads the second half; with `none` it keeps
//! trying the old addresses and reads nothing more.
//!
//! Which trigger fires depends on the backoffs, as in Java's client. A reconnect backoff
//! longer than the metadata retry backoff leaves every known broker blacked out when the next
//! metadata request is due (KIP-899). With the default backoffs (both growing to 1 s) some
//! broker's backoff has usually just ended when metadata is due, so the client keeps trying
//! old addresses until `metadata.recovery.rebootstrap.trigger.ms` (KIP-1102) has passed.
#![cfg(madsim)]

mod support;

use kafka_consumer::rt::Duration;
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, MetadataRecoveryStrategy, TopicPartition,
};
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::fault::Fault;
use support::batch;

const HALF: usize = 20;

/// The values the consumer reads within 60 virtual seconds of the move, with `pairs` set on
/// top of the strategy.
async fn read_across_a_move(
    strategy: MetadataRecoveryStrategy,
    pairs: &'static [(&'static str, &'static str)],
) -> Vec<String> {
    let cluster = Cluster::builder()
        .brokers(3)
        .topic("t", 1)
        .offsets_partitions(1)
        .config(|c| c.advertised_port = Some(9093))
        .build()
        .await;
    for i in 0..HALF {
        cluster
            .controller()
            .append("t", 0, batch(&[&format!("a{i}")]))
            .unwrap();
    }
    let bootstrap = cluster.bootstrap_servers();
    assert!(
        bootstrap.iter().all(|b| b.ends_with(":9092")),
        "{bootstrap:?}"
    );
    let consumer = Handle::current()
        .create_node()
        .name("consumer")
        .ip("10.0.5.1".parse().unwrap())
        .build()
        .spawn(async move {
            let mut builder = ConsumerConfig::builder()
                .bootstrap_servers(bootstrap)
                .auto_offset_reset(AutoOffsetReset::Earliest)
                .metadata_recovery_strategy(strategy);
            for &(key, value) in pairs {
                builder = builder.set(key, value);
            }
            let config = builder.build().unwrap();
            let mut consumer = Consumer::new(config).unwrap();
            consumer
                .assign([TopicPartition::new("t", 0)])
                .await
                .unwrap();
            let mut values = Vec::new();
            // 10 s before the move, 60 s after it.
            for _ in 0..700 {
                let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
                values.extend(records.iter().map(|r| {
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"")).into_owned()
                }));
                if values.len() >= 2 * HALF {
                    break;
                }
            }
            let _ = consumer.close(Duration::from_secs(1)).await;
            values
        });
    tokio::time::sleep(Duration::from_secs(10)).await;
    cluster.apply(&Fault::MoveListeners { port: 9094 });
    tokio::time::sleep(Duration::from_secs(1)).await;
    for i in 0..HALF {
        cluster
            .controller()
            .append("t", 0, batch(&[&format!("b{i}")]))
            .unwrap();
    }
    consumer.await.unwrap()
}

fn values(prefix: &str) -> Vec<String> {
    (0..HALF).map(|i| format!("{prefix}{i}")).collect()
}

/// Reconnect backoff 5 s: once each old address failed, none may be tried when metadata is
/// next due, and the request goes to a bootstrap server (KIP-899; the 300 s trigger is far).
const LONG_RECONNECT_BACKOFF: &[(&str, &str)] = &[
    ("reconnect.backoff.ms", "5000"),
    ("reconnect.backoff.max.ms", "5000"),
];

/// Default backoffs, a 10 s trigger: metadata wanted for 10 s without an answer (KIP-1102).
const SHORT_TRIGGER: &[(&str, &str)] = &[("metadata.recovery.rebootstrap.trigger.ms", "10000")];

fn everything() -> Vec<String> {
    values("a").into_iter().chain(values("b")).collect()
}

#[madsim::test]
async fn a_consumer_whose_known_brokers_are_all_blacked_out_rebootstraps() {
    let read = read_across_a_move(
        MetadataRecoveryStrategy::Rebootstrap,
        LONG_RECONNECT_BACKOFF,
    )
    .await;
    assert_eq!(read, everything(), "every record once, in order");
}

#[madsim::test]
async fn a_consumer_without_metadata_past_the_trigger_rebootstraps() {
    let read = read_across_a_move(MetadataRecoveryStrategy::Rebootstrap, SHORT_TRIGGER).await;
    assert_eq!(read, everything(), "every record once, in order");
}

#[madsim::test]
async fn without_rebootstrap_a_consumer_whose_brokers_are_blacked_out_is_stuck() {
    let read = read_across_a_move(MetadataRecoveryStrategy::None, LONG_RECONNECT_BACKOFF).await;
    assert_eq!(read, values("a"), "only what it read before the move");
}

#[madsim::test]
async fn without_rebootstrap_the_trigger_does_nothing() {
    let read = read_across_a_move(MetadataRecoveryStrategy::None, SHORT_TRIGGER).await;
    assert_eq!(read, values("a"), "only what it read before the move");
}
