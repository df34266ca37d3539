//! A consumer dropped without `close` against a real Apache Kafka 4.x broker, both group
//! protocols (issue #28): the drop returns at once, and the background task leaves the group
//! on its own, so the other member owns every partition well within the session timeout.
//!
//! Each case: members `a` and `b` share a 4-partition topic; `a` is dropped unclosed while it
//! owns some; the test measures how long until `b` owns all four. Classic members here have a
//! 30 s session timeout; KIP-848 members get the test broker's 6 s
//! (`group.consumer.session.timeout.ms` in `testing/kafka/run`). Without the leave on drop `b`
//! waits out `a`'s session. `b` runs its background task on the test's own runtime
//! (`BackgroundRuntime::Shared`), `a` on a thread of its own (the default).
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`); compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use kafka_consumer::{AutoOffsetReset, BackgroundRuntime, Consumer, ConsumerConfig};
use support::group::unique;
use support::real_broker::{bootstrap, client, create_topic};
use tokio::time::{Duration, Instant};

const PARTITIONS: usize = 4;
const CLASSIC_SESSION_TIMEOUT: Duration = Duration::from_secs(30);
const CONSUMER_SESSION_TIMEOUT: Duration = Duration::from_secs(6);

fn config(bootstrap: &str, protocol: &str, group: &str) -> ConsumerConfig {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol);
    if protocol == "classic" {
        builder = builder
            .set(
                "session.timeout.ms",
                CLASSIC_SESSION_TIMEOUT.as_millis().to_string(),
            )
            .set("heartbeat.interval.ms", "500");
    }
    builder.build().unwrap()
}

/// Returns how long `b` waited for every partition after `a` was dropped.
async fn hand_over_after_drop(protocol: &str) -> Option<Duration> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let bootstrap = bootstrap()?;
    let topic = unique("drop-leave");
    let group = unique("drop-leave-group");
    create_topic(&mut client(bootstrap.clone()), &topic, PARTITIONS as i32).await;

    let mut a = Consumer::new(config(&bootstrap, protocol, &group)).unwrap();
    // `b`'s background task runs on the test's runtime (`a` has a thread of its own).
    let shared = BackgroundRuntime::current().expect("inside the test's runtime");
    let mut b = Consumer::with_runtime(config(&bootstrap, protocol, &group), shared).unwrap();
    a.subscribe([topic.clone()]).await.unwrap();
    b.subscribe([topic.clone()]).await.unwrap();
    let started = Instant::now();
    while a.assignment().is_empty()
        || b.assignment().is_empty()
        || a.assignment().len() + b.assignment().len() < PARTITIONS
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{protocol}: the group never shared the partitions: a {:?}, b {:?}",
            a.assignment(),
            b.assignment()
        );
        a.poll(Duration::from_millis(50)).await.unwrap();
        b.poll(Duration::from_millis(50)).await.unwrap();
    }

    let dropping = Instant::now();
    drop(a);
    let drop_took = dropping.elapsed();
    assert!(
        drop_took < Duration::from_millis(100),
        "{protocol}: dropping the consumer blocked for {drop_took:?}"
    );
    while b.assignment().len() < PARTITIONS {
        assert!(
            dropping.elapsed() < Duration::from_secs(90),
            "{protocol}: b owns only {:?}",
            b.assignment()
        );
        b.poll(Duration::from_millis(50)).await.unwrap();
    }
    let waited = dropping.elapsed();
    b.close(Duration::from_secs(10)).await.unwrap();
    eprintln!(
        "{protocol}: drop returned in {drop_took:?}; b owned every partition {waited:?} after"
    );
    Some(waited)
}

#[tokio::test]
async fn classic_member_dropped_unclosed_leaves_its_group() {
    if let Some(waited) = hand_over_after_drop("classic").await {
        assert!(
            waited < CLASSIC_SESSION_TIMEOUT / 4,
            "b waited {waited:?}: the dropped member did not leave"
        );
    }
}

#[tokio::test]
async fn consumer_protocol_member_dropped_unclosed_leaves_its_group() {
    if let Some(waited) = hand_over_after_drop("consumer").await {
        assert!(
            waited < CONSUMER_SESSION_TIMEOUT / 2,
            "b waited {waited:?}: the dropped member did not leave"
        );
    }
}
