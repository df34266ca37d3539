//! The `roundrobin` assignor (Java's `RoundRobinAssignor`).
//!
//! Lays out every subscribed partition (topics by name, partitions in order) and deals them to
//! the members in member order (static members by `group.instance.id` first, then dynamic ones
//! by member id), skipping a member that does not subscribe to the partition's topic. Identical
//! subscriptions give counts within one of each other; differing ones can leave it unbalanced.

use std::collections::BTreeMap;

use super::{
    into_group_assignment, member_order, subscribed_topics, AssignorError, ClusterMetadata,
    ConsumerPartitionAssignor, GroupAssignment, GroupSubscription, TopicPartition,
};

/// The `roundrobin` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobinAssignor;

impl RoundRobinAssignor {
    /// Its protocol name.
    pub const NAME: &'static str = "roundrobin";
}

impl ConsumerPartitionAssignor for RoundRobinAssignor {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn assign(
        &self,
        cluster: &ClusterMetadata,
        subscriptions: &GroupSubscription,
    ) -> Result<GroupAssignment, AssignorError> {
        let mut assignment: BTreeMap<String, Vec<TopicPartition>> = subscriptions
            .keys()
            .map(|member| (member.clone(), Vec::new()))
            .collect();
        let mut members: Vec<(&String, &super::Subscription)> = subscriptions.iter().collect();
        members.sort_by(|a, b| member_order(a.0, a.1).cmp(&member_order(b.0, b.1)));

        // The circular iterator: `next` is the member to consider for the next partition.
        let mut next = 0;
        for (topic, racks) in subscribed_topics(cluster, subscriptions) {
            for partition in (0..racks.len()).filter_map(|p| i32::try_from(p).ok()) {
                // Some member subscribes to `topic` (that is how it got here), so this ends.
                while !members[next].1.topics.contains(&topic) {
                    next = (next + 1) % members.len();
                }
                if let Some(list) = assignment.get_mut(members[next].0) {
                    list.push(TopicPartition::new(topic.clone(), partition));
                }
                next = (next + 1) % members.len();
            }
        }
        Ok(into_group_assignment(assignment))
    }
}
