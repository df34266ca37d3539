//! A rolling switch of a group of our consumers from `group.protocol=classic` to
//! `group.protocol=consumer` and back, against a real Apache Kafka 4.1 broker, which migrates
//! the group online (`group.consumer.migration.policy`, BIDIRECTIONAL by default): the first
//! ConsumerGroupHeartbeat member upgrades the classic group, the remaining classic members keep
//! consuming inside the consumer group; on the way back the last consumer-protocol member
//! leaving downgrades the group, and neither switch loses anything.
//!
//! Three classic members start; one at a time each is closed (revoking with a commit and leaving)
//! and replaced by a consumer-protocol member, then each of those by a classic member again,
//! while Kafka's own Java producer writes more records between the steps. Checked: every record
//! delivered at least once with duplicates bounded by uncommitted work (`check_delivery`), the
//! listeners never see more partitions owned than exist (a partition owned by two members at
//! once), after each replacement the live members own every partition, the final members own
//! every partition exactly once, and the broker lists the group as a consumer group after the
//! first half and as a classic group after the second.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kafka_consumer::network::Target;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
use kafka_protocol::messages::ListGroupsRequest;
use support::group::*;
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::task::JoinHandle;
use tokio::time::{Duration, Instant};

/// Records Kafka's producer writes before the switch, and again after each replacement.
const RECORDS_PER_STEP: usize = 3_000;
const MEMBERS: usize = 3;

fn config(bootstrap: &str, group: &str, member: &str, consumer_protocol: bool) -> ConsumerConfig {
    let builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .client_id(member)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("max.poll.records", MAX_POLL_RECORDS.to_string())
        .set("auto.commit.interval.ms", "1000");
    if consumer_protocol {
        builder.set("group.protocol", "consumer")
    } else {
        builder
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "1000")
    }
    .build()
    .unwrap()
}

/// Partitions each member owns according to its listener calls (`member:what:count`).
fn owned_per_member(seen: &Seen) -> BTreeMap<String, i64> {
    let callbacks = seen.callbacks.lock().unwrap();
    let mut owned: BTreeMap<String, i64> = BTreeMap::new();
    for call in callbacks.iter() {
        let mut parts = call.split(':');
        let (Some(member), Some(what), Some(n)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let n: i64 = n.parse().unwrap_or(0);
        let entry = owned.entry(member.to_owned()).or_default();
        match what {
            "assigned" => *entry += n,
            _ => *entry -= n,
        }
    }
    owned
}

/// The group's type as ListGroups reports it.
async fn group_type(
    admin: &mut kafka_consumer::network::NetworkClient,
    group: &str,
) -> Option<String> {
    // The coordinator answers ListGroups from its last committed state: let the last write land.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let listed = admin
        .send(Target::LeastLoaded, ListGroupsRequest::default())
        .await
        .unwrap()
        .body;
    listed
        .groups
        .iter()
        .find(|g| g.group_id.0.as_str() == group)
        .map(|g| g.group_type.to_string())
}

struct Running {
    name: String,
    stop: Arc<AtomicBool>,
    task: JoinHandle<Consumer>,
}

fn start(
    bootstrap: &str,
    group: &str,
    topic: &str,
    name: &str,
    consumer_protocol: bool,
    seen: &Arc<Seen>,
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(member(
        config(bootstrap, group, name, consumer_protocol),
        topic.to_owned(),
        Arc::clone(seen),
        Arc::clone(&stop),
        Duration::from_millis(5),
    ));
    Running {
        name: name.to_owned(),
        stop,
        task,
    }
}

/// Waits until `live` own every partition between them (per the listeners) and keep owning
/// them for 3 s in a row (a rebalance still under way would break it), watching that the total
/// never exceeds the partition count.
async fn wait_settled(seen: &Seen, live: &[String], what: &str) {
    let settled = || {
        let owned = owned_per_member(seen);
        let total: i64 = owned.values().sum();
        if total > i64::from(PARTITIONS) {
            seen.violations
                .lock()
                .unwrap()
                .push(format!("{total} partitions owned at once: {owned:?}"));
        }
        let live_total: i64 = live
            .iter()
            .map(|m| owned.get(m).copied().unwrap_or(0))
            .sum();
        live_total == i64::from(PARTITIONS) && total == i64::from(PARTITIONS)
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut since: Option<Instant> = None;
    loop {
        if settled() {
            let start = *since.get_or_insert_with(Instant::now);
            if start.elapsed() >= Duration::from_secs(3) {
                return;
            }
        } else {
            since = None;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting until {what}: owned {:?}",
            owned_per_member(seen)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Kafka's producer, without holding up the members (it is a JVM started per call).
fn produce(bootstrap: &str, topic: &str, first: usize) {
    let lines: Vec<String> = (first..first + RECORDS_PER_STEP)
        .map(|i| format!("\\N\tkey-{i}\tvalue-{i}"))
        .collect();
    tokio::task::block_in_place(|| produce_with_java(bootstrap, topic, "none", &lines));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_switch_to_consumer_and_back_to_classic_loses_nothing() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("migration");
    let group = unique("migration-group");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    let mut produced = 0;
    produce(&bootstrap, &topic, produced);
    produced += RECORDS_PER_STEP;

    let seen = Arc::new(Seen::default());
    let mut running: Vec<Running> = (0..MEMBERS)
        .map(|i| {
            start(
                &bootstrap,
                &group,
                &topic,
                &format!("classic{i}"),
                false,
                &seen,
            )
        })
        .collect();
    let live: Vec<String> = running.iter().map(|r| r.name.clone()).collect();
    wait_settled(&seen, &live, "the classic group owns every partition").await;

    for to_consumer in [true, false] {
        let prefix = if to_consumer {
            "consumer"
        } else {
            "back-to-classic"
        };
        for i in 0..MEMBERS {
            let old = running.remove(0);
            old.stop.store(true, Ordering::SeqCst);
            let mut consumer = old.task.await.unwrap();
            consumer.close(Duration::from_secs(30)).await.unwrap();
            produce(&bootstrap, &topic, produced);
            produced += RECORDS_PER_STEP;
            let name = format!("{prefix}{i}");
            running.push(start(&bootstrap, &group, &topic, &name, to_consumer, &seen));
            let live: Vec<String> = running.iter().map(|r| r.name.clone()).collect();
            wait_settled(
                &seen,
                &live,
                &format!("{live:?} own every partition after replacing {}", old.name),
            )
            .await;
        }
        let expected = if to_consumer { "consumer" } else { "classic" };
        assert_eq!(
            group_type(&mut admin, &group).await.as_deref(),
            Some(expected),
            "the group was {}",
            if to_consumer {
                "upgraded"
            } else {
                "downgraded"
            }
        );
    }
    wait_until("everything is consumed", Duration::from_secs(180), || {
        seen.unique() >= produced
    })
    .await;
    let live: Vec<String> = running.iter().map(|r| r.name.clone()).collect();
    wait_settled(&seen, &live, "the final members still own every partition").await;

    let mut finals = Vec::new();
    for r in running {
        r.stop.store(true, Ordering::SeqCst);
        finals.push(r.task.await.unwrap());
    }
    let mut union = BTreeSet::new();
    for consumer in &finals {
        for tp in consumer.assignment() {
            assert!(union.insert(tp.clone()), "{tp} owned twice at the end");
        }
    }
    assert_eq!(
        union.len(),
        PARTITIONS as usize,
        "every partition owned at the end; listener calls {:?}",
        seen.callbacks.lock().unwrap()
    );
    for mut consumer in finals {
        consumer.close(Duration::from_secs(30)).await.unwrap();
    }
    let duplicates = check_delivery(&seen, produced);
    let callbacks = seen.callbacks.lock().unwrap().clone();
    eprintln!(
        "rolling switch: {produced} records, {duplicates} duplicates; callbacks {callbacks:?}"
    );
}
