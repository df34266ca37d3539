//! Classic → consumer: Kafka's `ConsumerGroup.fromClassicGroup`, used by `convertToConsumerGroup`
//! when the first ConsumerGroupHeartbeat member joins a non-empty classic group.

use kafka_protocol::error::ResponseError;

use super::consumer_protocol::{decode_assignment, decode_subscription, MalformedConsumerProtocol};
use crate::group::classic::ClassicGroup;
use crate::group::consumer::assignment;
use crate::group::consumer::error::GroupError;
use crate::group::consumer::member::{ClassicMemberMetadata, MemberState};
use crate::group::consumer::{
    ConsumerGroup, ConsumerGroupConfig, ConsumerGroupMember, TopicsImage,
};

/// Kafka's `validateOnlineUpgrade` (4.1): the policy must allow upgrades, the group must use the
/// embedded consumer protocol and fit in a consumer group. Refusals are GROUP_ID_NOT_FOUND.
pub fn validate_online_upgrade(
    classic: &ClassicGroup,
    config: &ConsumerGroupConfig,
) -> Result<(), GroupError> {
    let group_id = &classic.group_id;
    let refuse = |reason: &str| {
        Err(GroupError::new(
            ResponseError::GroupIdNotFound,
            format!("Cannot upgrade classic group {group_id} to consumer group because {reason}."),
        ))
    };
    if !config.migration_policy.is_upgrade_enabled() {
        return refuse("online upgrade is disabled");
    }
    if classic.protocol_type.as_deref() != Some(super::CONSUMER_PROTOCOL_TYPE) {
        return refuse("the group does not use the consumer embedded protocol");
    }
    if classic.members.len() > config.max_size {
        return refuse("the group size exceeds the consumer group maximum size");
    }
    Ok(())
}

/// The consumer group a classic group becomes: group and assignment epochs are its generation;
/// every member is STABLE at that epoch, owning (and targeted with) the assignment it last
/// received, subscribed as its JoinGroup metadata says, and keeps its classic metadata. Members
/// of a group that was rebalancing are told to rejoin by the epoch bump the joining member
/// causes. Refused (GROUP_ID_NOT_FOUND) when an assignment or subscription cannot be read or
/// an assignment carries user data the server assignors would drop.
pub fn consumer_group_from_classic(
    classic: &ClassicGroup,
    topics: &TopicsImage,
) -> Result<ConsumerGroup, GroupError> {
    let group_id = &classic.group_id;
    let refuse = |reason: &str| {
        GroupError::new(
            ResponseError::GroupIdNotFound,
            format!("Cannot upgrade classic group {group_id} to consumer group because {reason}."),
        )
    };
    let malformed =
        |_: MalformedConsumerProtocol| refuse("the embedded consumer protocol is malformed");
    let protocol_name = classic.protocol_name.as_deref().unwrap_or_default();
    let mut group = ConsumerGroup::new(group_id);
    group.group_epoch = classic.generation_id;
    group.assignment_epoch = classic.generation_id;
    for member in classic.members.values() {
        // An empty assignment (never synced) is no partitions.
        let assigned = if member.assignment.is_empty() {
            Default::default()
        } else {
            if super::consumer_protocol::has_user_data(&member.assignment).map_err(malformed)? {
                return Err(refuse(
                    "an unsupported custom assignor is in use. Please refer to the documentation \
                     or switch to a default assignor before re-attempting the upgrade",
                ));
            }
            decode_assignment(&member.assignment, topics).map_err(malformed)?
        };
        let subscription =
            decode_subscription(&member.metadata(protocol_name)).map_err(malformed)?;
        let mut converted = ConsumerGroupMember::new(&member.member_id);
        converted.member_epoch = classic.generation_id;
        converted.previous_member_epoch = classic.generation_id;
        converted.state = MemberState::Stable;
        converted.instance_id = member.group_instance_id.clone();
        converted.rack_id = subscription.rack_id.clone();
        converted.rebalance_timeout_ms = member.rebalance_timeout_ms;
        converted.client_id = member.client_id.clone();
        converted.client_host = member.client_host.clone();
        converted.subscribed_topic_names = subscription.topics.clone();
        converted.assigned_partitions = assigned.clone();
        // Kafka's conversion records no assignment epochs, and its default is the member
        // epoch: every partition counts as assigned at the classic generation.
        converted.assignment_epochs = assignment::pairs(&assigned)
            .map(|tp| (tp, classic.generation_id))
            .collect();
        converted.classic = Some(ClassicMemberMetadata {
            session_timeout_ms: member.session_timeout_ms,
            supported_protocols: member
                .protocols
                .iter()
                .map(|p| (p.name.clone(), p.metadata.clone()))
                .collect(),
        });
        group
            .target_assignment
            .insert(member.member_id.clone(), assigned);
        group.update_member(converted);
    }
    group.subscription_metadata = group.compute_subscription_metadata(topics);
    Ok(group)
}
