//! Shared helpers for the assignor tests: compact constructors, Java's rack layout for tests,
//! validity checks and a seeded random group generator.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{
    ClusterMetadata, ConsumerPartitionAssignor, GroupSubscription, Subscription, TopicPartition,
};

pub fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

pub fn cluster(topics: &[(&str, usize)]) -> ClusterMetadata {
    ClusterMetadata::from_partition_counts(topics.iter().copied())
}

/// Java's `AbstractPartitionAssignorTest.partitionsPerTopic`: brokers `i` on `broker_racks[i]`,
/// partition `i` of the n-th topic on brokers `(i + j + offset) % brokers`, `offset` counting all
/// partitions of earlier topics.
pub fn rack_cluster(
    topics: &[(&str, usize)],
    replication_factor: usize,
    broker_racks: &[&str],
) -> ClusterMetadata {
    let mut cluster = ClusterMetadata::new();
    let mut next = 0;
    for (topic, n) in topics {
        let racks = (0..*n)
            .map(|i| {
                (0..replication_factor)
                    .map(|j| broker_racks[(i + j + next) % broker_racks.len()].to_owned())
                    .collect()
            })
            .collect();
        cluster.add_topic_with_racks(*topic, racks);
        next += n;
    }
    cluster
}

pub fn sub(topics: &[&str]) -> Subscription {
    Subscription::new(topics.iter().copied())
}

pub fn owned(topics: &[&str], owned: Vec<TopicPartition>, generation: Option<i32>) -> Subscription {
    Subscription {
        owned_partitions: owned,
        generation_id: generation,
        ..sub(topics)
    }
}

pub fn group(members: Vec<(&str, Subscription)>) -> GroupSubscription {
    members
        .into_iter()
        .map(|(m, s)| (m.to_owned(), s))
        .collect()
}

/// Runs `assignor`, panicking on error, as member → partitions.
pub fn run(
    assignor: &dyn ConsumerPartitionAssignor,
    cluster: &ClusterMetadata,
    subscriptions: &GroupSubscription,
) -> BTreeMap<String, Vec<TopicPartition>> {
    let assignment = assignor.assign(cluster, subscriptions).expect("assignment");
    assert_eq!(
        assignment.keys().collect::<Vec<_>>(),
        subscriptions.keys().collect::<Vec<_>>(),
        "one assignment per member"
    );
    assignment
        .into_iter()
        .map(|(m, a)| (m, a.partitions))
        .collect()
}

/// Java's `toSortedString`: a member's partitions as sorted `topic-partition` strings.
pub fn sorted_string(partitions: &[TopicPartition]) -> String {
    let mut names: Vec<String> = partitions.iter().map(ToString::to_string).collect();
    names.sort();
    names.join(", ")
}

pub fn set(partitions: &[TopicPartition]) -> BTreeSet<TopicPartition> {
    partitions.iter().cloned().collect()
}

/// No partition twice; only to subscribers; and, if `complete`, every partition of every
/// subscribed topic assigned.
pub fn assert_valid(
    cluster: &ClusterMetadata,
    subscriptions: &GroupSubscription,
    assignment: &BTreeMap<String, Vec<TopicPartition>>,
    complete: bool,
) {
    let mut seen = BTreeSet::new();
    for (member, partitions) in assignment {
        for p in partitions {
            assert!(seen.insert(p.clone()), "{p} assigned twice");
            assert!(
                subscriptions[member].topics.iter().any(|t| **t == *p.topic),
                "{p} given to non-subscriber {member}"
            );
            let count = cluster.partition_count(&p.topic).expect("known topic");
            assert!(
                usize::try_from(p.partition).is_ok_and(|i| i < count),
                "{p} does not exist"
            );
        }
    }
    if complete {
        let subscribed: BTreeSet<&String> = subscriptions
            .values()
            .flat_map(|s| s.topics.iter())
            .collect();
        for topic in subscribed {
            for p in 0..cluster.partition_count(topic).unwrap_or(0) {
                let p = tp(topic, i32::try_from(p).unwrap());
                assert!(seen.contains(&p), "{p} unassigned");
            }
        }
    }
}

pub fn spread(assignment: &BTreeMap<String, Vec<TopicPartition>>) -> usize {
    let sizes = assignment.values().map(Vec::len);
    sizes.clone().max().unwrap_or(0) - sizes.min().unwrap_or(0)
}

/// A random cluster of 1–6 topics with 1–12 partitions and a group of 1–9 members, each
/// subscribing to all topics (`uniform`) or a random non-empty subset.
pub fn random_group(rng: &mut SmallRng, uniform: bool) -> (ClusterMetadata, GroupSubscription) {
    let topics: Vec<String> = (0..rng.gen_range(1..=6)).map(|i| format!("t{i}")).collect();
    let mut cluster = ClusterMetadata::new();
    for t in &topics {
        cluster.add_topic(t.clone(), rng.gen_range(1..=12));
    }
    let mut subscriptions = GroupSubscription::new();
    for m in 0..rng.gen_range(1..=9) {
        let mut chosen: Vec<&str> = topics
            .iter()
            .filter(|_| uniform || rng.gen_bool(0.5))
            .map(String::as_str)
            .collect();
        if chosen.is_empty() {
            chosen.push(&topics[rng.gen_range(0..topics.len())]);
        }
        subscriptions.insert(format!("member-{m}"), sub(&chosen));
    }
    (cluster, subscriptions)
}

pub fn seeded(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}
