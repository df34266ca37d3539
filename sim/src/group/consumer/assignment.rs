//! Partition sets keyed by topic id, and their wire forms.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{
    consumer_group_heartbeat_request, consumer_group_heartbeat_response,
};
use uuid::Uuid;

/// Partitions by topic id, like Kafka's `Map<Uuid, Set<Integer>>`; ordered so that every
/// response and every assignor pass is deterministic. Topics never map to an empty set.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Number of partitions in `assignment`.
pub fn partition_count(assignment: &Assignment) -> usize {
    assignment.values().map(BTreeSet::len).sum()
}

/// True when `assignment` holds `partition` of `topic_id`.
pub fn contains(assignment: &Assignment, topic_id: Uuid, partition: i32) -> bool {
    assignment
        .get(&topic_id)
        .is_some_and(|partitions| partitions.contains(&partition))
}

/// Adds `partition` of `topic_id` to `assignment`.
pub fn insert(assignment: &mut Assignment, topic_id: Uuid, partition: i32) {
    assignment.entry(topic_id).or_default().insert(partition);
}

/// Removes `partition` of `topic_id` from `assignment`, dropping the topic when it empties.
pub fn remove(assignment: &mut Assignment, topic_id: Uuid, partition: i32) {
    if let Some(partitions) = assignment.get_mut(&topic_id) {
        partitions.remove(&partition);
        if partitions.is_empty() {
            assignment.remove(&topic_id);
        }
    }
}

/// Every (topic id, partition) of `assignment` in order.
pub fn pairs(assignment: &Assignment) -> impl Iterator<Item = (Uuid, i32)> + '_ {
    assignment
        .iter()
        .flat_map(|(topic_id, partitions)| partitions.iter().map(move |p| (*topic_id, *p)))
}

/// Kafka's `GroupMetadataManager.isSubset`: the owned partitions reported by a member are all in
/// `assigned`. An absent owned list is not a subset, because nothing proves the member dropped
/// what it should no longer own.
pub fn is_subset(
    owned: Option<&[consumer_group_heartbeat_request::TopicPartitions]>,
    assigned: &Assignment,
) -> bool {
    let Some(owned) = owned else {
        return false;
    };
    owned.iter().all(|topic| {
        assigned
            .get(&topic.topic_id)
            .is_some_and(|partitions| topic.partitions.iter().all(|p| partitions.contains(p)))
    })
}

/// True when the owned partitions reported by a member still include one of `revoking`.
/// An absent owned list counts as still owning them: the member has not confirmed anything.
pub fn owns_any(
    owned: Option<&[consumer_group_heartbeat_request::TopicPartitions]>,
    revoking: &Assignment,
) -> bool {
    let Some(owned) = owned else {
        return true;
    };
    owned.iter().any(|topic| {
        revoking
            .get(&topic.topic_id)
            .is_some_and(|partitions| topic.partitions.iter().any(|p| partitions.contains(p)))
    })
}

/// The heartbeat response's `Assignment` for `assignment`.
pub fn to_heartbeat_assignment(
    assignment: &Assignment,
) -> consumer_group_heartbeat_response::Assignment {
    consumer_group_heartbeat_response::Assignment::default().with_topic_partitions(
        assignment
            .iter()
            .map(|(topic_id, partitions)| {
                consumer_group_heartbeat_response::TopicPartitions::default()
                    .with_topic_id(*topic_id)
                    .with_partitions(partitions.iter().copied().collect())
            })
            .collect(),
    )
}
