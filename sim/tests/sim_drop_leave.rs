//! Simulation mode: a group member dropped without `close` (issue #28, the project's own).
//!
//! Members `a` and `b`, each on its own simulated node, share a 4-partition topic; once both
//! own partitions, `a`'s application drops its `Consumer` unclosed. The dropped consumer's
//! background task leaves on its own, so `b` owns every partition promptly — well before the
//! 30 s session timeout — with both protocols. A static member keeps Java's close semantics:
//! it does not leave (classic: no LeaveGroup; KIP-848: the epoch -2 heartbeat, its place kept
//! for the session timeout), so `b` waits out the session. `b` runs its background task on a
//! shared runtime (`BackgroundRuntime::Shared`), `a` on the default one.
#![cfg(madsim)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rt::{Duration, Instant};
use kafka_consumer::{AutoOffsetReset, BackgroundRuntime, Consumer, ConsumerConfig};
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::group::classic::ClassicGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;

const PARTITIONS: i32 = 4;
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Protocol {
    Classic,
    Consumer,
}

fn config(
    bootstrap: &[String],
    protocol: Protocol,
    name: &str,
    static_member: bool,
) -> ConsumerConfig {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id("drop-leave")
        .client_id(name)
        .auto_offset_reset(AutoOffsetReset::Earliest);
    builder = match protocol {
        Protocol::Classic => builder
            .set(
                "session.timeout.ms",
                SESSION_TIMEOUT.as_millis().to_string(),
            )
            .set("heartbeat.interval.ms", "1000"),
        Protocol::Consumer => builder.set("group.protocol", "consumer"),
    };
    if static_member {
        builder = builder.set("group.instance.id", format!("instance-{name}"));
    }
    builder.build().unwrap()
}

/// Runs the case; returns how long after `a`'s drop `b` owned every partition (virtual time).
async fn hand_over_after_drop(protocol: Protocol, static_member: bool) -> Duration {
    let mut factory = GroupCoordinatorFactory {
        classic: ClassicGroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..ClassicGroupConfig::default()
        },
        ..GroupCoordinatorFactory::default()
    };
    factory.consumer.session_timeout_ms = SESSION_TIMEOUT.as_millis() as i32;
    factory.consumer.heartbeat_interval_ms = 1_000;
    let cluster = Cluster::builder()
        .brokers(1)
        .topic("t", PARTITIONS)
        .group_shards(Arc::new(factory))
        .build()
        .await;
    let bootstrap = cluster.bootstrap_servers();
    let a_owns = Arc::new(AtomicBool::new(false));
    let drop_a = Arc::new(AtomicBool::new(false));
    let dropped_at: Arc<Mutex<Option<Instant>>> = Arc::default();

    let a = Handle::current()
        .create_node()
        .name("a")
        .ip("10.0.4.1".parse().unwrap())
        .build()
        .spawn({
            let (bootstrap, a_owns, drop_a, dropped_at) = (
                bootstrap.clone(),
                Arc::clone(&a_owns),
                Arc::clone(&drop_a),
                Arc::clone(&dropped_at),
            );
            async move {
                let mut consumer =
                    Consumer::new(config(&bootstrap, protocol, "a", static_member)).unwrap();
                consumer.subscribe(["t"]).await.unwrap();
                while !drop_a.load(Ordering::SeqCst) {
                    consumer.poll(Duration::from_millis(100)).await.unwrap();
                    a_owns.store(!consumer.assignment().is_empty(), Ordering::SeqCst);
                }
                *dropped_at.lock().unwrap() = Some(Instant::now());
                drop(consumer);
                // The node lives on, as a process would after dropping one consumer.
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        });

    let b = Handle::current()
        .create_node()
        .name("b")
        .ip("10.0.4.2".parse().unwrap())
        .build()
        .spawn({
            let (bootstrap, a_owns, drop_a, dropped_at) = (
                bootstrap.clone(),
                Arc::clone(&a_owns),
                Arc::clone(&drop_a),
                Arc::clone(&dropped_at),
            );
            async move {
                // `b`'s background task runs on the node's runtime (`a` has the default).
                let shared = BackgroundRuntime::current().expect("inside the simulation");
                let mut consumer = Consumer::with_runtime(
                    config(&bootstrap, protocol, "b", static_member),
                    shared,
                )
                .unwrap();
                consumer.subscribe(["t"]).await.unwrap();
                let started = Instant::now();
                loop {
                    consumer.poll(Duration::from_millis(100)).await.unwrap();
                    let owned = consumer.assignment().len();
                    if !drop_a.load(Ordering::SeqCst) {
                        assert!(
                            started.elapsed() < Duration::from_secs(60),
                            "{protocol:?}: the group never shared the partitions"
                        );
                        if owned > 0 && a_owns.load(Ordering::SeqCst) {
                            drop_a.store(true, Ordering::SeqCst);
                        }
                        continue;
                    }
                    let Some(dropped) = *dropped_at.lock().unwrap() else {
                        continue;
                    };
                    if owned == PARTITIONS as usize {
                        let waited = dropped.elapsed();
                        consumer.close(Duration::from_secs(10)).await.unwrap();
                        return waited;
                    }
                    assert!(
                        dropped.elapsed() < SESSION_TIMEOUT * 3,
                        "{protocol:?}: b never got every partition"
                    );
                }
            }
        });
    let waited = b.await.unwrap();
    a.abort();
    eprintln!(
        "{protocol:?} static={static_member}: b owned every partition {waited:?} after a's drop"
    );
    waited
}

#[madsim::test]
async fn a_dropped_classic_member_leaves_its_group_promptly() {
    let waited = hand_over_after_drop(Protocol::Classic, false).await;
    assert!(waited < Duration::from_secs(5), "b waited {waited:?}");
}

#[madsim::test]
async fn a_dropped_consumer_protocol_member_leaves_its_group_promptly() {
    let waited = hand_over_after_drop(Protocol::Consumer, false).await;
    assert!(waited < Duration::from_secs(5), "b waited {waited:?}");
}

#[madsim::test]
async fn a_dropped_static_classic_member_keeps_its_place_as_java_close_does() {
    let waited = hand_over_after_drop(Protocol::Classic, true).await;
    assert!(
        waited >= SESSION_TIMEOUT - Duration::from_secs(5),
        "b waited only {waited:?}: the static member left"
    );
}

#[madsim::test]
async fn a_dropped_static_consumer_protocol_member_keeps_its_place_as_java_close_does() {
    let waited = hand_over_after_drop(Protocol::Consumer, true).await;
    assert!(
        waited >= SESSION_TIMEOUT - Duration::from_secs(5),
        "b waited only {waited:?}: the static member left"
    );
}
