//! LeaveGroup (`classicGroupLeave`, `classicGroupLeaveToClassicGroup`,
//! `removeCurrentMemberFromClassicGroup`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use super::coordinator::{ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::group::ClassicGroup;
use super::rebalance::{join_error, Effects};
use super::state::ClassicGroupState;

impl ClassicGroupCoordinator {
    /// Handles LeaveGroup: v0–2 name one member by id; v3+ carry a batch, each member by id or
    /// (administratively, with an empty member id) by group instance id.
    pub fn leave_group(
        &mut self,
        now_ms: u64,
        id: RequestId,
        api_version: i16,
        request: &LeaveGroupRequest,
    ) {
        self.advance(now_ms);
        let identities = if api_version < 3 {
            vec![MemberIdentity::default().with_member_id(request.member_id.clone())]
        } else {
            request.members.clone()
        };
        let group_id = request.group_id.0.as_str();
        let outcome = if group_id.is_empty() {
            Err(ResponseError::InvalidGroupId)
        } else {
            self.with_group(group_id, |group, fx| leave(group, fx, &identities))
                .unwrap_or(Err(ResponseError::UnknownMemberId))
        };
        let response = match outcome {
            Err(error) => LeaveGroupResponse::default().with_error_code(error.code()),
            // Before v3 there is no per-member list: the one member's error is the answer.
            Ok(members) if api_version < 3 => LeaveGroupResponse::default()
                .with_error_code(members.first().map_or(0, |m| m.error_code)),
            Ok(members) => LeaveGroupResponse::default().with_members(members),
        };
        self.respond(id, ClassicResponse::LeaveGroup(response));
    }
}

fn leave(
    group: &mut ClassicGroup,
    fx: &mut Effects<'_>,
    identities: &[MemberIdentity],
) -> Result<Vec<MemberResponse>, ResponseError> {
    if group.is_in(ClassicGroupState::Dead) {
        return Err(ResponseError::CoordinatorNotAvailable);
    }
    let mut responses = Vec::with_capacity(identities.len());
    let mut any_left = false;
    for identity in identities {
        let member_id = identity.member_id.as_str();
        let instance_id = identity.group_instance_id.as_ref().map(|s| s.as_str());
        let result = if member_id.is_empty() {
            match instance_id
                .and_then(|i| group.static_members.get(i))
                .cloned()
            {
                Some(static_member_id) => {
                    remove_current_member(group, fx, &static_member_id);
                    Ok(())
                }
                None => Err(ResponseError::UnknownMemberId),
            }
        } else if group.pending_join_members.contains(member_id) {
            group.remove(member_id);
            fx.cancel_heartbeat(&group.group_id, member_id);
            Ok(())
        } else {
            group.validate_member(member_id, instance_id).map(|()| {
                remove_current_member(group, fx, member_id);
            })
        };
        any_left |= result.is_ok();
        responses.push(
            MemberResponse::default()
                .with_member_id(identity.member_id.clone())
                .with_group_instance_id(identity.group_instance_id.clone())
                .with_error_code(result.err().map_or(0, |e| e.code())),
        );
    }
    if any_left {
        match group.state() {
            ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                fx.maybe_prepare_rebalance_or_complete_join(group)
            }
            ClassicGroupState::PreparingRebalance => fx.maybe_complete_join_phase(group),
            ClassicGroupState::Empty | ClassicGroupState::Dead => {}
        }
    }
    Ok(responses)
}

/// `removeCurrentMemberFromClassicGroup`: a parked join is answered UNKNOWN_MEMBER_ID first.
/// A parked SyncGroup of the leaving member is left unanswered, as in Kafka.
fn remove_current_member(group: &mut ClassicGroup, fx: &mut Effects<'_>, member_id: &str) {
    fx.cancel_heartbeat(&group.group_id, member_id);
    if let Some(member) = group.members.get_mut(member_id) {
        fx.complete_join(member, join_error("", ResponseError::UnknownMemberId));
    }
    group.remove(member_id);
}
