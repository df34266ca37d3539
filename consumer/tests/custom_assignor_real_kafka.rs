//! An application's own classic-protocol assignor against a real Apache Kafka broker: two
//! members register `first-takes-all` (every partition to the member whose id sorts first)
//! and name it in `partition.assignment.strategy`; the group settles with one member owning
//! all four partitions and the other none, so the coordinator chose the registered protocol
//! and the leader ran our assignor. A member that names an assignor it never registered fails
//! at `build`, before it could join.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`); compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;

use kafka_consumer::assignor::{
    Assignment, AssignorError, ClusterMetadata, ConsumerPartitionAssignor, GroupAssignment,
    GroupSubscription,
};
use kafka_consumer::config::ConfigError;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use support::real_broker::{bootstrap, client, create_topic, delete_topic, unique};
use tokio::time::{Duration, Instant};

const PARTITIONS: i32 = 4;

/// Every subscribed partition to the member whose id sorts first.
#[derive(Debug, Default)]
struct FirstTakesAll;

impl ConsumerPartitionAssignor for FirstTakesAll {
    fn name(&self) -> &'static str {
        "first-takes-all"
    }

    fn assign(
        &self,
        cluster: &ClusterMetadata,
        subscriptions: &GroupSubscription,
    ) -> Result<GroupAssignment, AssignorError> {
        let topics: BTreeSet<&String> = subscriptions.values().flat_map(|s| &s.topics).collect();
        let everything: Vec<TopicPartition> = topics
            .into_iter()
            .flat_map(|topic| {
                let count = cluster.partition_count(topic).unwrap_or(0) as i32;
                (0..count).map(move |p| TopicPartition::new(topic.as_str(), p))
            })
            .collect();
        Ok(subscriptions
            .keys()
            .enumerate()
            .map(|(i, member)| {
                let partitions = if i == 0 {
                    everything.clone()
                } else {
                    Vec::new()
                };
                (member.clone(), Assignment::new(partitions))
            })
            .collect())
    }
}

fn config(bootstrap: &str, group: &str, name: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .client_id(name)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .assignor(FirstTakesAll::default)
        .set("partition.assignment.strategy", "first-takes-all")
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_registered_assignor_decides_the_groups_assignment() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("custom-assignor");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    let group = unique("custom-assignor-group");
    let mut a = Consumer::new(config(&bootstrap, &group, "a")).unwrap();
    let mut b = Consumer::new(config(&bootstrap, &group, "b")).unwrap();
    a.subscribe([topic.clone()]).await.unwrap();
    b.subscribe([topic.clone()]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let sizes = loop {
        a.poll(Duration::from_millis(100)).await.unwrap();
        b.poll(Duration::from_millis(100)).await.unwrap();
        let mut sizes = [a.assignment().len(), b.assignment().len()];
        sizes.sort_unstable();
        let both_joined = a.group_metadata().unwrap().generation_id
            == b.group_metadata().unwrap().generation_id
            && a.group_metadata().unwrap().generation_id > 0;
        if both_joined && sizes == [0, PARTITIONS as usize] {
            break sizes;
        }
        assert!(
            Instant::now() < deadline,
            "the group never settled on first-takes-all: sizes {sizes:?}"
        );
    };
    assert_eq!(sizes, [0, PARTITIONS as usize]);
    a.close(Duration::from_secs(10)).await.unwrap();
    b.close(Duration::from_secs(10)).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[test]
fn naming_an_unregistered_assignor_fails_the_build() {
    let error = ConsumerConfig::builder()
        .bootstrap_servers(["localhost:9092"])
        .group_id("g")
        .set("partition.assignment.strategy", "first-takes-all")
        .build()
        .unwrap_err();
    assert!(matches!(error, ConfigError::InvalidValue { .. }), "{error}");
}
