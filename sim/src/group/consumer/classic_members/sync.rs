//! SyncGroup from a classic member of a consumer group (`classicGroupSyncToConsumerGroup`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use super::super::coordinator::ConsumerGroupCoordinator;
use super::super::error::GroupError;
use super::validate::{
    sync_must_rejoin, throw_if_classic_protocol_unmatched, throw_if_generation_id_unmatched,
    throw_if_member_does_not_use_classic_protocol, validate_consumer_group_member,
};
use crate::group::migration::consumer_protocol::{encode_assignment, version};

impl ConsumerGroupCoordinator {
    /// Answers a classic SyncGroup for the consumer group it names with the member's current
    /// assignment (computed by the server assignor; whatever assignments the request carries
    /// are ignored, the member is never a leader).
    pub fn classic_group_sync(
        &mut self,
        request: &SyncGroupRequest,
        now_ms: u64,
    ) -> SyncGroupResponse {
        self.poll(now_ms);
        self.classic_sync(request, now_ms).unwrap_or_else(|e| {
            tracing::debug!(group_id = %request.group_id.0, error = ?e.error, message = e.message, "classic sync refused");
            SyncGroupResponse::default().with_error_code(e.error.code())
        })
    }

    fn classic_sync(
        &mut self,
        request: &SyncGroupRequest,
        now_ms: u64,
    ) -> Result<SyncGroupResponse, GroupError> {
        let group_id: &str = &request.group_id.0;
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| GroupError::new(ResponseError::UnknownMemberId, "Group not found."))?;
        if group.members.is_empty() {
            return Err(GroupError::new(
                ResponseError::UnknownMemberId,
                "Group is empty.",
            ));
        }
        let member = validate_consumer_group_member(
            group,
            &request.member_id,
            request.group_instance_id.as_deref(),
        )?;
        throw_if_member_does_not_use_classic_protocol(member)?;
        throw_if_generation_id_unmatched(member, request.generation_id)?;
        throw_if_classic_protocol_unmatched(
            member,
            request.protocol_type.as_deref(),
            request.protocol_name.as_deref(),
        )?;
        let member = member.clone();
        if sync_must_rejoin(group, &member) {
            self.schedule_classic_join_timeout_if_absent(
                group_id,
                &member.member_id,
                member.rebalance_timeout_ms,
                now_ms,
            );
            return Err(GroupError::new(
                ResponseError::RebalanceInProgress,
                format!(
                    "A new rebalance is triggered in group {group_id} and member {} should \
                     rejoin to catch up.",
                    member.member_id
                ),
            ));
        }
        // `prepareAssignment`: in the version of the member's own subscription.
        let assignment = member
            .classic
            .as_ref()
            .and_then(|c| version(c.first_metadata()).ok())
            .and_then(|v| encode_assignment(&member.assigned_partitions, &self.topics, v).ok())
            .ok_or_else(|| {
                GroupError::new(
                    ResponseError::UnknownServerError,
                    "Malformed embedded consumer protocol in version deserialization.",
                )
            })?;
        self.cancel_classic_sync_timeout(group_id, &member.member_id);
        self.schedule_session_timeout(group_id, &member.member_id, now_ms);
        Ok(SyncGroupResponse::default()
            .with_protocol_type(request.protocol_type.clone())
            .with_protocol_name(request.protocol_name.clone())
            .with_assignment(assignment))
    }
}
