//! LeaveGroup for classic members of a consumer group (`classicGroupLeaveToConsumerGroup`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::debug;

use super::super::coordinator::ConsumerGroupCoordinator;
use super::super::error::GroupError;
use super::super::group::ConsumerGroup;
use super::super::heartbeat::{throw_if_instance_id_is_fenced, unknown_instance, unknown_member};
use super::validate::throw_if_member_does_not_use_classic_protocol;

impl ConsumerGroupCoordinator {
    /// Answers a LeaveGroup (API `api_version`) for the consumer group it names: v0–2 name one
    /// member, v3+ a batch (static members may be named by instance id alone). Each classic
    /// member named is fenced; the members go together, so the group epoch moves once, or the
    /// group becomes a classic group if only classic members remain
    /// (`consumerGroupFenceMembers`).
    pub fn classic_group_leave(
        &mut self,
        request: &LeaveGroupRequest,
        api_version: i16,
        now_ms: u64,
    ) -> LeaveGroupResponse {
        self.poll(now_ms);
        let identities = if api_version < 3 {
            vec![MemberIdentity::default().with_member_id(request.member_id.clone())]
        } else {
            request.members.clone()
        };
        let group_id: &str = &request.group_id.0;
        let Some(group) = self.groups.get(group_id) else {
            return LeaveGroupResponse::default()
                .with_error_code(ResponseError::UnknownMemberId.code());
        };
        let mut responses = Vec::with_capacity(identities.len());
        let mut leaving = Vec::new();
        for identity in &identities {
            let instance_id = identity.group_instance_id.as_deref();
            let response = MemberResponse::default()
                .with_member_id(identity.member_id.clone())
                .with_group_instance_id(identity.group_instance_id.clone());
            match leaving_member_id(group, &identity.member_id, instance_id) {
                Ok(member_id) => {
                    debug!(
                        group_id,
                        member_id, "classic member left the consumer group"
                    );
                    responses
                        .push(response.with_member_id(StrBytes::from_string(member_id.clone())));
                    leaving.push(member_id);
                }
                Err(e) => responses.push(response.with_error_code(e.error.code())),
            }
        }
        if !leaving.is_empty() {
            self.fence_members(group_id, &leaving);
        }
        if api_version < 3 {
            // Before v3 there is no per-member list: the one member's error is the answer.
            return LeaveGroupResponse::default()
                .with_error_code(responses.first().map_or(0, |m| m.error_code));
        }
        LeaveGroupResponse::default().with_members(responses)
    }
}

/// The id of the classic member `member_id` / `instance_id` names (an admin removal names a
/// static member by instance id with an empty member id).
fn leaving_member_id(
    group: &ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<String, GroupError> {
    let member = match instance_id {
        None => group
            .members
            .get(member_id)
            .ok_or_else(|| unknown_member(&group.group_id, member_id))?,
        Some(instance_id) => {
            let member = group
                .static_member(instance_id)
                .ok_or_else(|| unknown_instance(instance_id))?;
            if !member_id.is_empty() {
                throw_if_instance_id_is_fenced(member, member_id, instance_id)?;
            }
            member
        }
    };
    throw_if_member_does_not_use_classic_protocol(member)?;
    Ok(member.member_id.clone())
}
