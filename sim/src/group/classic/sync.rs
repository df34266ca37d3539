//! SyncGroup (`classicGroupSync`, `classicGroupSyncToClassicGroup`, `validateSyncGroup`).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use super::coordinator::{str_bytes, ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::group::ClassicGroup;
use super::state::ClassicGroupState;

impl ClassicGroupCoordinator {
    /// Handles SyncGroup. Followers in CompletingRebalance are parked until the leader's
    /// SyncGroup delivers the assignment.
    pub fn sync_group(
        &mut self,
        now_ms: u64,
        id: RequestId,
        _api_version: i16,
        request: &SyncGroupRequest,
    ) {
        self.advance(now_ms);
        let error = |e: ResponseError| {
            ClassicResponse::SyncGroup(SyncGroupResponse::default().with_error_code(e.code()))
        };
        let group_id = request.group_id.0.as_str();
        if group_id.is_empty() {
            return self.respond(id, error(ResponseError::InvalidGroupId));
        }
        let handled = self.with_group(group_id, |group, fx| {
            if group.is_in(ClassicGroupState::Empty) {
                return fx.respond(id, error(ResponseError::UnknownMemberId));
            }
            if let Err(e) = validate_sync_group(group, request) {
                return fx.respond(id, error(e));
            }
            let member_id = request.member_id.as_str();
            match group.state() {
                ClassicGroupState::PreparingRebalance => {
                    fx.respond(id, error(ResponseError::RebalanceInProgress))
                }
                ClassicGroupState::CompletingRebalance => {
                    if let Some(member) = group.members.get_mut(member_id) {
                        member.awaiting_sync = Some(id);
                    }
                    fx.remove_pending_sync_member(group, member_id);
                    if group.is_leader(member_id) {
                        let assignment: BTreeMap<String, _> = request
                            .assignments
                            .iter()
                            .map(|a| (a.member_id.to_string(), a.assignment.clone()))
                            .collect();
                        fx.set_and_propagate_assignment(group, assignment);
                        // The leader's assignment is persisted with the generation
                        // (`newGroupMetadataRecord`), which is what a new coordinator loads.
                        fx.persist_group(group);
                        group.transition_to(ClassicGroupState::Stable);
                    }
                }
                ClassicGroupState::Stable => {
                    fx.remove_pending_sync_member(group, member_id);
                    let assignment = group
                        .members
                        .get(member_id)
                        .map(|m| m.assignment.clone())
                        .unwrap_or_default();
                    let response = SyncGroupResponse::default()
                        .with_protocol_type(group.protocol_type.as_deref().map(str_bytes))
                        .with_protocol_name(group.protocol_name.as_deref().map(str_bytes))
                        .with_assignment(assignment);
                    fx.respond(id, ClassicResponse::SyncGroup(response));
                }
                // validate_sync_group answers Dead; Empty was answered above.
                ClassicGroupState::Empty | ClassicGroupState::Dead => {}
            }
        });
        if handled.is_none() {
            self.respond(id, error(ResponseError::UnknownMemberId));
        }
    }
}

/// `validateSyncGroup`: Dead, then member, then generation, then protocol consistency.
fn validate_sync_group(
    group: &ClassicGroup,
    request: &SyncGroupRequest,
) -> Result<(), ResponseError> {
    if group.is_in(ClassicGroupState::Dead) {
        return Err(ResponseError::CoordinatorNotAvailable);
    }
    let instance_id = request.group_instance_id.as_ref().map(|s| s.as_str());
    group.validate_member(request.member_id.as_str(), instance_id)?;
    if request.generation_id != group.generation_id {
        return Err(ResponseError::IllegalGeneration);
    }
    let inconsistent = |requested: &Option<kafka_protocol::protocol::StrBytes>,
                        ours: &Option<String>| {
        matches!((requested, ours), (Some(r), Some(o)) if r.as_str() != o)
    };
    if inconsistent(&request.protocol_type, &group.protocol_type)
        || inconsistent(&request.protocol_name, &group.protocol_name)
    {
        return Err(ResponseError::InconsistentGroupProtocol);
    }
    Ok(())
}
