//! A rolling upgrade of a real 3-broker Apache Kafka cluster under a consuming group, then the
//! group's move to KIP-848 member by member: what a production cluster goes through when it
//! leaves 3.9 for 4.x.
//!
//! The test starts its own cluster (`testing/kafka/run up --brokers 3`: a controller and three
//! brokers, racks r1–r3, replication factor 3, min ISR 2) on `KAFKA_UPGRADE_FROM` (e.g. 3.9.2),
//! on `KAFKA_UPGRADE_PORT` (default 29292) and the three ports after it, in
//! `KAFKA_UPGRADE_STATE_DIR` (default: a new temporary dir), and stops it at the end. Then:
//! 1. Kafka's own producer writes a 12-partition topic (acks=all, idempotent) the whole time,
//!    and a group of three of our consumers reads it with `group.protocol=classic`, the only
//!    protocol 3.9 runs in production;
//! 2. brokers 1, 2 and 3, then the controller, are restarted one at a time on
//!    `KAFKA_UPGRADE_TO` (default 4.4.0), each by controlled shutdown, as Kafka's upgrade notes
//!    prescribe: for minutes brokers of two versions, with different ApiVersions tables, lead
//!    the topic's partitions and the group's coordinator moves between them;
//! 3. the upgrade is finalized with `kafka-features upgrade --release-version <to>`, which
//!    raises `metadata.version` and `group.version` (KIP-848 groups) to the release's defaults;
//! 4. each member in turn is closed and replaced by one with `group.protocol=consumer`: the
//!    coordinator converts the classic group online (KIP-848's migration,
//!    `group.consumer.migration.policy=bidirectional` by default) and the last classic member's
//!    departure leaves a consumer-protocol group.
//!
//! Invariants, as in `cluster_real_kafka`: every record written is delivered (per partition,
//! offsets 0..end without a gap); duplicates stay within one poll's worth per revoked or lost
//! partition; the committed offsets an observer samples never move back; no poll returns an
//! error; every member closes cleanly; each consumer-protocol member is assigned partitions.
//!
//! Without `KAFKA_UPGRADE_FROM` the test prints a loud SKIPPED line and passes, unless
//! `REQUIRE_KAFKA_UPGRADE=1` (set by CI). Needs java and the jars of both versions (the
//! harness fetches them from Maven Central); compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::sync::Arc;

use support::cluster_workload::{Finished, Workload};
use support::group::{wait_until, PARTITIONS};
use support::real_broker::unique;
use support::real_cluster::{kafka_major, OwnCluster};
use tokio::time::Duration;

/// `major.minor` of a release: what `--release-version` takes.
fn release_version(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_upgrade_then_migration_to_the_consumer_protocol() {
    let to = std::env::var("KAFKA_UPGRADE_TO")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "4.4.0".to_owned());
    assert!(
        kafka_major(&to) >= 4,
        "KAFKA_UPGRADE_TO={to}: the migration to group.protocol=consumer needs Kafka 4.0 or newer"
    );
    let Some(own) = OwnCluster::from_env(
        "UPGRADE",
        "KAFKA_UPGRADE_FROM",
        29292,
        "KAFKA_UPGRADE_FROM=3.9.2 KAFKA_UPGRADE_TO=4.4.0",
    ) else {
        return;
    };
    let from = own.cluster.version().to_owned();
    let cluster = &own.cluster;
    eprintln!("upgrade: a 3-broker cluster on Kafka {from}, to be upgraded to {to}");

    let topic = unique("upgrade");
    let group = unique("upgrade-group");
    cluster.create_topic(&topic, PARTITIONS).await;
    let mut workload = Workload::start(cluster, &topic, &group, "classic").await;
    let seen = Arc::clone(&workload.seen);
    let consumes_on = |what: &'static str| {
        let seen = Arc::clone(&seen);
        let before = seen.unique();
        async move {
            wait_until(what, Duration::from_secs(120), || {
                seen.unique() >= before + 500
            })
            .await;
        }
    };
    consumes_on("the classic group consumes on the old cluster").await;

    for node in ["1", "2", "3", "controller"] {
        eprintln!("upgrade: restarting {node} on Kafka {to}");
        cluster.restart_on_version(node, &to).await;
        consumes_on("the group consumes after a node was upgraded").await;
    }

    let release = release_version(&to);
    cluster
        .features(&["upgrade", "--release-version", &release])
        .await;
    let features = cluster.features(&["describe"]).await;
    let group_version = features
        .lines()
        .find(|line| line.contains("Feature: group.version"))
        .unwrap_or_else(|| panic!("no group.version feature after the upgrade: {features}"));
    assert!(
        group_version.contains("FinalizedVersionLevel: 1"),
        "group.version is not finalized at 1 after `upgrade --release-version {release}`: \
         {group_version}"
    );
    eprintln!("upgrade: finalized {release}: {group_version}");
    consumes_on("the group consumes after the upgrade was finalized").await;

    for index in 0..3 {
        eprintln!("upgrade: member {index} moves to group.protocol=consumer");
        workload.replace_member(cluster, index, "consumer").await;
        consumes_on("the group consumes after a member changed protocol").await;
    }
    let callbacks = seen.callbacks.lock().unwrap().clone();
    for index in 0..3 {
        let name = format!("m{index}-consumer:assigned:");
        assert!(
            callbacks
                .iter()
                .any(|c| c.strip_prefix(&name).is_some_and(|n| n != "0")),
            "consumer-protocol member {index} was never assigned a partition: {callbacks:?}"
        );
    }

    let Finished {
        written,
        duplicates,
        samples,
    } = workload.finish(&format!("upgrade {from} -> {to}")).await;
    eprintln!(
        "upgrade {from} -> {to}, classic -> consumer: {written} records produced, {} delivered, \
         {duplicates} duplicates, 0 committed-offset regressions, {samples} commit samples",
        seen.unique(),
    );
}
