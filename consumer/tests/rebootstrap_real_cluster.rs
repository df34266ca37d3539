//! Rebootstrap (KIP-899) on a real 3-broker Apache Kafka cluster: every broker a consumer knows
//! is replaced, and only its bootstrap address still leads to the cluster.
//!
//! The test starts its own cluster (`testing/kafka/run up --brokers 3`) on
//! `KAFKA_REBOOTSTRAP_VERSION` (e.g. 4.4.0), on `KAFKA_REBOOTSTRAP_PORT` (default 29392) and the
//! three ports after it, in `KAFKA_REBOOTSTRAP_STATE_DIR` (default: a new temporary dir), and
//! stops it at the end. The consumers' `bootstrap.servers` is a TCP proxy the test runs, as a
//! load balancer or DNS name in front of a cluster is in production; it forwards each
//! connection to a broker that answers.
//!
//! Interleaving: two consumers assigned the topic's three partitions read its first 300
//! records through brokers they learned from Metadata (ports P..P+2); all three brokers stop
//! and come back on ports P+10..P+12 (the proxy follows them); 300 more records are written.
//! - With `metadata.recovery.strategy=rebootstrap` (the default, as in Java since 4.0) every
//!   known broker fails, the client forgets them and starts over from `bootstrap.servers`
//!   (Java's `NetworkClient` rebootstrap): it must read all 600 records, in order, with no
//!   poll error.
//! - With `metadata.recovery.strategy=none` the client keeps trying the brokers it knew
//!   (Java's behaviour before KIP-899): it must read nothing more in the 15 s after the other
//!   consumer finished, which shows that rebootstrapping, not chance, reached the moved
//!   brokers.
//!
//! Without `KAFKA_REBOOTSTRAP_VERSION` the test prints a loud SKIPPED line and passes, unless
//! `REQUIRE_KAFKA_REBOOTSTRAP=1` (set by CI). Needs java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::sync::{Arc, Mutex};

use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use support::real_broker::unique;
use support::real_cluster::{produce, NodeAction, OwnCluster};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Duration, Instant};

const PARTITIONS: i32 = 3;

/// A TCP proxy standing for the cluster's bootstrap address: each connection goes to the
/// first of `targets` that accepts it.
struct BootstrapProxy {
    address: String,
    targets: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl BootstrapProxy {
    async fn start(targets: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let targets = Arc::new(Mutex::new(targets));
        let shared = Arc::clone(&targets);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let candidates = shared.lock().unwrap().clone();
                tokio::spawn(async move {
                    for target in candidates {
                        if let Ok(mut outbound) = TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        BootstrapProxy {
            address,
            targets,
            task,
        }
    }

    fn retarget(&self, targets: Vec<String>) {
        *self.targets.lock().unwrap() = targets;
    }
}

impl Drop for BootstrapProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn assigned_consumer(bootstrap: &str, topic: &str, strategy: &str) -> Consumer {
    let config = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .client_id(format!("rebootstrap-{strategy}"))
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("metadata.recovery.strategy", strategy)
        .build()
        .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    consumer
        .assign((0..PARTITIONS).map(|p| TopicPartition::new(topic, p)))
        .await
        .unwrap();
    consumer
}

/// Polls until `values` holds `count` records or `timeout` passes; returns the poll errors.
async fn read_until(
    consumer: &mut Consumer,
    values: &mut Vec<(i32, i64, String)>,
    count: usize,
    timeout: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let mut errors = Vec::new();
    while values.len() < count && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)).await {
            Ok(records) => values.extend(records.iter().map(|r| {
                let value = String::from_utf8_lossy(r.value.as_deref().unwrap_or_default());
                (r.partition, r.offset, value.into_owned())
            })),
            Err(error) => errors.push(error.to_string()),
        }
    }
    errors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_known_broker_replaced_the_consumer_rebootstraps() {
    let Some(mut own) = OwnCluster::from_env(
        "REBOOTSTRAP",
        "KAFKA_REBOOTSTRAP_VERSION",
        29392,
        "KAFKA_REBOOTSTRAP_VERSION=4.4.0",
    ) else {
        return;
    };
    let port = own.port();
    let cluster = &mut own.cluster;
    let topic = unique("rebootstrap");
    cluster.create_topic(&topic, PARTITIONS).await;
    let first = produce(cluster, &topic, 300).await;

    let proxy = BootstrapProxy::start(cluster.bootstrap.clone()).await;
    let mut rebootstrapping = assigned_consumer(&proxy.address, &topic, "rebootstrap").await;
    let mut stuck = assigned_consumer(&proxy.address, &topic, "none").await;
    let (mut read, mut read_stuck) = (Vec::new(), Vec::new());
    let timeout = Duration::from_secs(60);
    let errors = read_until(&mut rebootstrapping, &mut read, first, timeout).await;
    assert!(errors.is_empty(), "poll errors before the move: {errors:?}");
    let errors = read_until(&mut stuck, &mut read_stuck, first, timeout).await;
    assert!(errors.is_empty(), "poll errors before the move: {errors:?}");
    assert_eq!((read.len(), read_stuck.len()), (first, first));

    eprintln!("rebootstrap: every broker stops and comes back on a new port");
    for broker in 1..=3 {
        cluster.act(NodeAction::Stop, broker).await;
    }
    for broker in 1..=3 {
        cluster.move_broker(broker, port + 9 + broker as u16).await;
    }
    eprintln!("rebootstrap: brokers now at {:?}", cluster.bootstrap);
    proxy.retarget(cluster.bootstrap.clone());
    let second = produce(cluster, &topic, 300).await;
    let total = first + second;

    let errors = read_until(
        &mut rebootstrapping,
        &mut read,
        total,
        Duration::from_secs(120),
    )
    .await;
    assert!(errors.is_empty(), "poll errors after the move: {errors:?}");
    assert_eq!(
        read.len(),
        total,
        "the rebootstrapping consumer read {} of {total} records",
        read.len()
    );
    for partition in 0..PARTITIONS {
        let offsets: Vec<i64> = read
            .iter()
            .filter(|(p, _, _)| *p == partition)
            .map(|(_, o, _)| *o)
            .collect();
        let expected: Vec<i64> = (0..offsets.len() as i64).collect();
        assert_eq!(
            offsets, expected,
            "partition {partition}: in order, once each"
        );
    }

    let _ = read_until(&mut stuck, &mut read_stuck, total, Duration::from_secs(15)).await;
    assert_eq!(
        read_stuck.len(),
        first,
        "with metadata.recovery.strategy=none the consumer reached the moved brokers"
    );
    rebootstrapping
        .close(Duration::from_secs(10))
        .await
        .expect("the rebootstrapped consumer closes cleanly");
    let _ = stuck.close(Duration::from_secs(5)).await;
    eprintln!(
        "rebootstrap: {total} records read after every broker moved; with strategy none, \
         {} (the records before the move)",
        read_stuck.len()
    );
}
