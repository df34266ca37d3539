//! Checks shared by the classic requests a consumer group answers.

use kafka_protocol::error::ResponseError;

use super::super::error::GroupError;
use super::super::group::ConsumerGroup;
use super::super::heartbeat::{throw_if_instance_id_is_fenced, unknown_member};
use super::super::member::{ConsumerGroupMember, MemberState};
use crate::group::migration::CONSUMER_PROTOCOL_TYPE;

/// Kafka's `validateConsumerGroupMember`: a static member by its instance id (which must map to
/// `member_id`), else a member by id.
pub(super) fn validate_consumer_group_member<'g>(
    group: &'g ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<&'g ConsumerGroupMember, GroupError> {
    match instance_id {
        None => group
            .members
            .get(member_id)
            .ok_or_else(|| unknown_member(&group.group_id, member_id)),
        Some(instance_id) => {
            let member = group.static_member(instance_id).ok_or_else(|| {
                GroupError::new(
                    ResponseError::UnknownMemberId,
                    format!(
                        "Member with instance id {instance_id} is not a member of group {}.",
                        group.group_id
                    ),
                )
            })?;
            throw_if_instance_id_is_fenced(member, member_id, instance_id)?;
            Ok(member)
        }
    }
}

/// Kafka's `throwIfMemberDoesNotUseClassicProtocol`.
pub(super) fn throw_if_member_does_not_use_classic_protocol(
    member: &ConsumerGroupMember,
) -> Result<(), GroupError> {
    if member.uses_classic_protocol() {
        return Ok(());
    }
    Err(GroupError::new(
        ResponseError::UnknownMemberId,
        format!(
            "Member {} does not use the classic protocol.",
            member.member_id
        ),
    ))
}

/// Kafka's `throwIfGenerationIdUnmatched`: a classic member's generation is its member epoch.
pub(super) fn throw_if_generation_id_unmatched(
    member: &ConsumerGroupMember,
    generation_id: i32,
) -> Result<(), GroupError> {
    if member.member_epoch == generation_id {
        return Ok(());
    }
    Err(GroupError::new(
        ResponseError::IllegalGeneration,
        format!(
            "The request generation id {generation_id} is not equal to the member epoch {} of \
             member {}.",
            member.member_epoch, member.member_id
        ),
    ))
}

/// Kafka's `throwIfClassicProtocolUnmatched`: absent fields are not checked.
pub(super) fn throw_if_classic_protocol_unmatched(
    member: &ConsumerGroupMember,
    protocol_type: Option<&str>,
    protocol_name: Option<&str>,
) -> Result<(), GroupError> {
    let member_protocol = member.classic.as_ref().map_or("", |c| c.protocol_name());
    if let Some(protocol_type) = protocol_type.filter(|t| *t != CONSUMER_PROTOCOL_TYPE) {
        return Err(GroupError::new(
            ResponseError::InconsistentGroupProtocol,
            format!(
                "The protocol type {protocol_type} from member {} request is not equal to the \
                 group protocol type {CONSUMER_PROTOCOL_TYPE}.",
                member.member_id
            ),
        ));
    }
    if let Some(protocol_name) = protocol_name.filter(|n| *n != member_protocol) {
        return Err(GroupError::new(
            ResponseError::InconsistentGroupProtocol,
            format!(
                "The protocol name {protocol_name} from member {} request is not equal to the \
                 protocol name {member_protocol} returned in the join response.",
                member.member_id
            ),
        ));
    }
    Ok(())
}

/// Kafka's `throwIfRebalanceInProgress` (SyncGroup): the group epoch moved past the member. A
/// member revoking partitions has already rejoined, so it may collect what it keeps.
pub(super) fn sync_must_rejoin(group: &ConsumerGroup, member: &ConsumerGroupMember) -> bool {
    group.group_epoch > member.member_epoch && member.state != MemberState::UnrevokedPartitions
}

/// The three reasons `classicGroupHeartbeatToConsumerGroup` answers REBALANCE_IN_PROGRESS: the
/// group epoch moved past the member, it has partitions to revoke, or partitions it waited for
/// were released and it can collect them.
pub(super) fn heartbeat_must_rejoin(group: &ConsumerGroup, member: &ConsumerGroupMember) -> bool {
    member.member_epoch < group.group_epoch
        || member.state == MemberState::UnrevokedPartitions
        || (member.state == MemberState::UnreleasedPartitions
            && !group.waiting_on_unreleased_partition(member))
}
