//! Subscribe mode with the classic group protocol against a real Apache Kafka broker: records
//! written by Kafka's own Java producer, consumed by groups of our consumers.
//!
//! - 3 members consume 300k records from 12 partitions: every record is delivered, duplicates
//!   only around rebalances and within what was handed out but not yet committed;
//! - with each assignor, members join and leave mid-run: nothing is lost, the final assignment
//!   covers every partition exactly once;
//! - a restarted member resumes from the committed offsets.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kafka_consumer::config::Assignor;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
use support::group::*;
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::time::{Duration, Instant};

fn config(bootstrap: &str, group: &str, assignor: Assignor, member: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .client_id(member)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .partition_assignment_strategy(&[assignor])
        .set("max.poll.records", MAX_POLL_RECORDS.to_string())
        .set("heartbeat.interval.ms", "500")
        .set("session.timeout.ms", "10000")
        .set("auto.commit.interval.ms", "1000")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_consume_300k_records_at_least_once() {
    let Some(bootstrap) = bootstrap() else { return };
    const RECORDS: usize = 300_000;
    let mut admin = client(bootstrap.clone());
    let topic = unique("group-300k");
    let group = unique("group");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    produce_with_java(&bootstrap, &topic, "lz4", &lines(RECORDS));

    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let members: Vec<_> = (0..3)
        .map(|i| {
            tokio::spawn(member(
                config(&bootstrap, &group, Assignor::Range, &format!("m{i}")),
                topic.clone(),
                Arc::clone(&seen),
                Arc::clone(&stop),
                Duration::ZERO,
            ))
        })
        .collect();
    wait_until(
        "300k records are consumed",
        Duration::from_secs(180),
        || seen.unique() >= RECORDS,
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    for handle in members {
        let mut consumer = handle.await.unwrap();
        consumer.close(Duration::from_secs(30)).await.unwrap();
    }
    let duplicates = check_delivery(&seen, RECORDS);
    let callbacks = seen.callbacks.lock().unwrap().clone();
    for m in ["m0", "m1", "m2"] {
        assert!(
            callbacks
                .iter()
                .any(|c| c.starts_with(&format!("{m}:assigned"))),
            "{m} took part: {callbacks:?}"
        );
    }
    eprintln!("300k run: {duplicates} duplicates; callbacks {callbacks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_and_leave_mid_run_with_each_assignor() {
    let Some(bootstrap) = bootstrap() else { return };
    for assignor in [
        Assignor::Range,
        Assignor::RoundRobin,
        Assignor::Sticky,
        Assignor::CooperativeSticky,
    ] {
        let (duplicates, callbacks) =
            join_and_leave_run(&bootstrap, assignor.name(), 60_000, |group, member| {
                config(&bootstrap, group, assignor, member)
            })
            .await;
        let leaving_revoked = callbacks.iter().any(|c| c.starts_with("m0:revoked"));
        assert!(
            leaving_revoked,
            "{assignor:?}: the leaving member revoked: {callbacks:?}"
        );
        if assignor == Assignor::CooperativeSticky {
            // Incremental: m0 keeps partitions across the joins (no revoke-everything).
            let m0_revokes: Vec<&String> = callbacks
                .iter()
                .filter(|c| c.starts_with("m0:revoked"))
                .collect();
            assert!(
                m0_revokes.iter().all(|c| !c.ends_with(":12")) || m0_revokes.len() == 1,
                "cooperative never revokes everything before joins: {callbacks:?}"
            );
        }
        eprintln!("{assignor:?}: {duplicates} duplicates; callbacks {callbacks:?}");
    }
}

#[tokio::test]
async fn a_restarted_member_resumes_from_committed_offsets() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("group-resume");
    let group = unique("group");
    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&bootstrap, &topic, "none", &lines(900));

    let consume = |expected: usize| {
        let config = config(&bootstrap, &group, Assignor::Range, "resume");
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
            assert!(
                consumer.metrics().rebalances >= 1,
                "the join counts as a rebalance"
            );
            let metadata = consumer.group_metadata().unwrap();
            assert!(metadata.generation_id > 0 && !metadata.member_id.is_empty());
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
