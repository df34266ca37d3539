//! Subscribe mode with `group.protocol=consumer` (KIP-848) against a real Apache Kafka 4.x
//! broker: records written by Kafka's own Java producer, consumed by groups of our consumers
//! that heartbeat with ConsumerGroupHeartbeat and reconcile the broker's assignments.
//!
//! - with each server assignor (`uniform`, `range`), members join and leave mid-run: nothing
//!   is lost, duplicates stay within uncommitted work, the final assignment covers every
//!   partition exactly once;
//! - a restarted member resumes from the committed offsets (commits carry the member epoch).
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
use support::group::*;
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::time::{sleep, Duration, Instant};

fn config(bootstrap: &str, group: &str, assignor: &str, member: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .client_id(member)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", "consumer")
        .set("group.remote.assignor", assignor)
        .set("max.poll.records", MAX_POLL_RECORDS.to_string())
        .set("auto.commit.interval.ms", "1000")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_members_join_and_leave_mid_run_with_each_server_assignor() {
    let Some(bootstrap) = bootstrap() else { return };
    for assignor in ["uniform", "range"] {
        let (duplicates, callbacks) =
            join_and_leave_run(&bootstrap, assignor, 30_000, |group, member| {
                config(&bootstrap, group, assignor, member)
            })
            .await;
        assert!(
            callbacks.iter().any(|c| c.starts_with("m0:revoked")),
            "{assignor}: the leaving member revoked: {callbacks:?}"
        );
        // The members that stay took part in the reconciliations.
        for m in ["m1", "m2"] {
            assert!(
                callbacks
                    .iter()
                    .any(|c| c.starts_with(&format!("{m}:assigned"))),
                "{assignor}: {m} took part: {callbacks:?}"
            );
        }
        eprintln!("{assignor}: {duplicates} duplicates; callbacks {callbacks:?}");
    }
}

#[tokio::test]
async fn kip848_a_restarted_member_resumes_from_committed_offsets() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("kip848-resume");
    let group = unique("kip848-group");
    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&bootstrap, &topic, "none", &lines(900));

    let consume = |expected: usize| {
        let config = config(&bootstrap, &group, "uniform", "resume");
        let topic = topic.clone();
        async move {
            let mut consumer = Consumer::new(config).unwrap();
            consumer.subscribe([topic]).await.unwrap();
            let mut values = BTreeSet::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while values.len() < expected {
                assert!(
                    Instant::now() < deadline,
                    "only {} of {expected}",
                    values.len()
                );
                for r in consumer
                    .poll(Duration::from_millis(200))
                    .await
                    .unwrap()
                    .iter()
                {
                    values.insert(String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap());
                }
            }
            let extra = consumer.poll(Duration::from_millis(500)).await.unwrap();
            assert_eq!(extra.count(), 0, "nothing beyond what was produced");
            assert_eq!(consumer.assignment().len(), 3);
            let metadata = consumer.group_metadata().unwrap();
            assert!(
                metadata.generation_id > 0 && !metadata.member_id.is_empty(),
                "the member epoch and the client-generated member id: {metadata:?}"
            );
            consumer.close(Duration::from_secs(30)).await.unwrap();
            values
        }
    };
    let first = consume(900).await;
    assert_eq!(first.len(), 900);
    produce_with_java(&bootstrap, &topic, "none", &lines(1_200)[900..]);
    let second = consume(300).await;
    let expected: BTreeSet<String> = (900..1_200).map(|i| format!("value-{i}")).collect();
    assert_eq!(
        second, expected,
        "resumed exactly after the committed offsets"
    );
}

/// A static member (`group.instance.id`) that closes leaves with epoch -2: the broker keeps
/// its place for the session timeout, so restarting within it gives the same partitions back
/// and the other member sees no rebalance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_a_static_member_restarted_within_the_session_gets_its_partitions_back() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("kip848-static");
    let group = unique("kip848-group");
    create_topic(&mut admin, &topic, 4).await;
    let seen = Arc::new(Seen::default());
    let static_config = |member: &str| {
        ConsumerConfig::builder()
            .bootstrap_servers([bootstrap.as_str()])
            .group_id(group.as_str())
            .client_id(member)
            .group_instance_id(member)
            .auto_offset_reset(AutoOffsetReset::Earliest)
            .set("group.protocol", "consumer")
            .build()
            .unwrap()
    };
    let start = |member: &'static str| {
        let config = static_config(member);
        let topic = topic.clone();
        let seen = Arc::clone(&seen);
        async move {
            let mut consumer = Consumer::new(config).unwrap();
            consumer
                .subscribe_with_listener(
                    [topic],
                    CommitOnRevoke {
                        member: member.to_owned(),
                        seen,
                    },
                )
                .await
                .unwrap();
            consumer
        }
    };
    let poll_until_owning = |mut consumer: Consumer, count: usize| async move {
        let deadline = Instant::now() + Duration::from_secs(60);
        while consumer.assignment().len() != count {
            assert!(
                Instant::now() < deadline,
                "owns {:?}",
                consumer.assignment()
            );
            consumer.poll(Duration::from_millis(100)).await.unwrap();
        }
        consumer
    };
    let s0 = start("s0").await;
    let s0 = poll_until_owning(s0, 4).await;
    let s1 = start("s1").await;
    // Both poll until the broker split the partitions between them.
    let stop = Arc::new(AtomicBool::new(false));
    let s1_task = {
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut s1 = s1;
            while !stop.load(Ordering::SeqCst) {
                s1.poll(Duration::from_millis(100)).await.unwrap();
            }
            s1
        })
    };
    let mut s0 = poll_until_owning(s0, 2).await;
    // KIP-848 may hand s1 its partitions one reconciliation at a time: count what it holds.
    let s1_owns = || -> i64 {
        seen.callbacks
            .lock()
            .unwrap()
            .iter()
            .filter_map(|c| {
                let mut parts = c.split(':');
                let (member, what, n) = (parts.next()?, parts.next()?, parts.next()?);
                let n: i64 = n.parse().ok()?;
                (member == "s1").then_some(if what == "assigned" { n } else { -n })
            })
            .sum()
    };
    // s0 keeps polling meanwhile: its reconciliation ends with `on_partitions_assigned`, which
    // runs inside poll, and only then does its heartbeat release the revoked partitions.
    let deadline = Instant::now() + Duration::from_secs(30);
    while s1_owns() != 2 {
        assert!(
            Instant::now() < deadline,
            "timed out waiting until s1 owns two partitions"
        );
        s0.poll(Duration::from_millis(100)).await.unwrap();
    }
    let before = s0.assignment().clone();
    let s1_calls_before = seen
        .callbacks
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("s1:"))
        .count();
    s0.close(Duration::from_secs(10)).await.unwrap();
    let s0 = start("s0").await;
    let s0 = poll_until_owning(s0, 2).await;
    assert_eq!(*s0.assignment(), before, "the same partitions back");
    sleep(Duration::from_secs(2)).await;
    let s1_calls_after = seen
        .callbacks
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("s1:"))
        .count();
    assert_eq!(
        s1_calls_after,
        s1_calls_before,
        "the other member saw no rebalance: {:?}",
        seen.callbacks.lock().unwrap()
    );
    stop.store(true, Ordering::SeqCst);
    let mut s1 = s1_task.await.unwrap();
    let mut s0 = s0;
    s0.close(Duration::from_secs(10)).await.unwrap();
    s1.close(Duration::from_secs(10)).await.unwrap();
    let violations = seen.violations.lock().unwrap();
    assert!(violations.is_empty(), "violations: {violations:?}");
}
