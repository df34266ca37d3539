//! ConsumerGroupDescribe: Kafka's `ConsumerGroup.asDescribedGroup`.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::assignment::Assignment;
use super::coordinator::ConsumerGroupCoordinator;
use super::heartbeat::assignor_name;
use super::member::ConsumerGroupMember;
use super::topics::TopicsImage;
use crate::group::list::GROUP_TYPE_CONSUMER;

/// `MemberType` of a consumer-protocol member (describe v1).
const CONSUMER_MEMBER_TYPE: i8 = 1;
/// `MemberType` of a classic-protocol member of a consumer group (`asConsumerGroupDescribeMember`).
const CLASSIC_MEMBER_TYPE: i8 = 0;

impl ConsumerGroupCoordinator {
    /// Answers a ConsumerGroupDescribe at `now_ms`, one entry per requested group id, unknown
    /// ones with GROUP_ID_NOT_FOUND.
    pub fn consumer_group_describe(
        &mut self,
        request: &ConsumerGroupDescribeRequest,
        now_ms: u64,
    ) -> ConsumerGroupDescribeResponse {
        self.poll(now_ms);
        let groups = request
            .group_ids
            .iter()
            .map(|group_id| self.describe_group(&group_id.0))
            .collect();
        ConsumerGroupDescribeResponse::default().with_groups(groups)
    }

    /// Every consumer group as ListGroups reports it (`ModernGroup.asListedGroup`): protocol
    /// type "consumer", the group state and group type "consumer"; unfiltered.
    pub fn listed_groups(&mut self, now_ms: u64) -> Vec<ListedGroup> {
        self.poll(now_ms);
        self.groups
            .values()
            .map(|g| {
                ListedGroup::default()
                    .with_group_id(GroupId(StrBytes::from_string(g.group_id.clone())))
                    .with_protocol_type(StrBytes::from_static_str("consumer"))
                    .with_group_state(StrBytes::from_static_str(g.state().name()))
                    .with_group_type(StrBytes::from_static_str(GROUP_TYPE_CONSUMER))
            })
            .collect()
    }

    /// Kafka's `maybeDeleteEmptyConsumerGroup`: forgets `group_id` if it is a consumer group
    /// without members (a classic JoinGroup then creates a classic group in its place). The
    /// shard writes the group's tombstones.
    pub fn remove_empty_group(&mut self, group_id: &str) -> bool {
        if self
            .groups
            .get(group_id)
            .is_some_and(|g| g.members.is_empty())
        {
            self.groups.remove(group_id);
            true
        } else {
            false
        }
    }

    fn describe_group(&self, group_id: &StrBytes) -> DescribedGroup {
        let Some(group) = self.groups.get(group_id.as_str()) else {
            return DescribedGroup::default()
                .with_group_id(group_id.clone().into())
                .with_error_code(ResponseError::GroupIdNotFound.code())
                .with_error_message(Some(StrBytes::from_string(format!(
                    "Group {} not found.",
                    group_id.as_str()
                ))));
        };
        let members = group
            .members
            .values()
            .map(|member| {
                let target = group
                    .target_assignment
                    .get(&member.member_id)
                    .cloned()
                    .unwrap_or_default();
                Member::default()
                    .with_member_id(StrBytes::from_string(member.member_id.clone()))
                    .with_instance_id(member.instance_id.clone().map(StrBytes::from_string))
                    .with_rack_id(member.rack_id.clone().map(StrBytes::from_string))
                    .with_member_epoch(member.member_epoch)
                    .with_client_id(StrBytes::from_string(member.client_id.clone()))
                    .with_client_host(StrBytes::from_string(member.client_host.clone()))
                    .with_subscribed_topic_names(
                        member
                            .subscribed_topic_names
                            .iter()
                            .map(|n| TopicName(StrBytes::from_string(n.clone())))
                            .collect(),
                    )
                    // Kafka's member keeps "" for "no regex" and describes it as such.
                    .with_subscribed_topic_regex(Some(StrBytes::from_string(
                        member.subscribed_topic_regex.clone().unwrap_or_default(),
                    )))
                    .with_assignment(self.described_assignment(member))
                    .with_target_assignment(described(&target, &self.topics))
                    .with_member_type(if member.uses_classic_protocol() {
                        CLASSIC_MEMBER_TYPE
                    } else {
                        CONSUMER_MEMBER_TYPE
                    })
            })
            .collect();
        DescribedGroup::default()
            .with_group_id(group_id.clone().into())
            .with_group_state(StrBytes::from_static_str(group.state().name()))
            .with_group_epoch(group.group_epoch)
            .with_assignment_epoch(group.assignment_epoch)
            .with_assignor_name(StrBytes::from_string(assignor_name(
                group,
                self.config.default_assignor(),
            )))
            .with_members(members)
    }

    /// A member's described assignment. From Kafka 4.4 it includes the partitions pending
    /// revocation, which the member is still responsible for (`asConsumerGroupDescribeMember`:
    /// per topic its assigned partitions, then those pending revocation); before, only the
    /// assigned ones.
    fn described_assignment(&self, member: &ConsumerGroupMember) -> DescribedAssignment {
        if !self
            .config
            .kafka_version
            .describes_partitions_pending_revocation()
        {
            return described(&member.assigned_partitions, &self.topics);
        }
        let mut owned: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for assignment in [
            &member.assigned_partitions,
            &member.partitions_pending_revocation,
        ] {
            for (topic_id, partitions) in assignment {
                owned.entry(*topic_id).or_default().extend(partitions);
            }
        }
        described_topics(owned.into_iter(), &self.topics)
    }
}

/// Kafka's `topicPartitionsFromMap`: topics that no longer exist are left out.
fn described(assignment: &Assignment, topics: &TopicsImage) -> DescribedAssignment {
    described_topics(
        assignment
            .iter()
            .map(|(topic_id, partitions)| (*topic_id, partitions.iter().copied().collect())),
        topics,
    )
}

/// Partitions by topic id as ConsumerGroupDescribe describes them, in the order given.
fn described_topics(
    assignment: impl Iterator<Item = (Uuid, Vec<i32>)>,
    topics: &TopicsImage,
) -> DescribedAssignment {
    DescribedAssignment::default().with_topic_partitions(
        assignment
            .filter_map(|(topic_id, partitions)| {
                let name = topics.name_of(topic_id)?;
                Some(
                    TopicPartitions::default()
                        .with_topic_id(topic_id)
                        .with_topic_name(TopicName(StrBytes::from_string(name.to_owned())))
                        .with_partitions(partitions),
                )
            })
            .collect(),
    )
}
