//! Heartbeat (`classicGroupHeartbeat`, `classicGroupHeartbeatToClassicGroup`,
//! `validateClassicGroupHeartbeat`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::coordinator::{ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::state::ClassicGroupState;

impl ClassicGroupCoordinator {
    /// Handles Heartbeat. Besides keeping the session alive, its error tells a member to
    /// rejoin (REBALANCE_IN_PROGRESS) or that it was dropped (UNKNOWN_MEMBER_ID, ...).
    pub fn heartbeat(
        &mut self,
        now_ms: u64,
        id: RequestId,
        _api_version: i16,
        request: &HeartbeatRequest,
    ) {
        self.advance(now_ms);
        let group_id = request.group_id.0.as_str();
        let result = if group_id.is_empty() {
            Err(ResponseError::InvalidGroupId)
        } else {
            self.with_group(group_id, |group, fx| {
                if group.is_in(ClassicGroupState::Dead) {
                    return Err(ResponseError::CoordinatorNotAvailable);
                }
                let member_id = request.member_id.as_str();
                let instance_id = request.group_instance_id.as_ref().map(|s| s.as_str());
                group.validate_member(member_id, instance_id)?;
                if request.generation_id != group.generation_id {
                    return Err(ResponseError::IllegalGeneration);
                }
                let session_timeout_ms = group
                    .members
                    .get(member_id)
                    .map_or(0, |m| m.session_timeout_ms);
                match group.state() {
                    ClassicGroupState::Empty | ClassicGroupState::Dead => {
                        Err(ResponseError::UnknownMemberId)
                    }
                    ClassicGroupState::PreparingRebalance => {
                        fx.reschedule_heartbeat(&group.group_id, member_id, session_timeout_ms);
                        Err(ResponseError::RebalanceInProgress)
                    }
                    // Members heartbeat between their JoinGroup answer and SyncGroup too.
                    ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                        fx.reschedule_heartbeat(&group.group_id, member_id, session_timeout_ms);
                        Ok(())
                    }
                }
            })
            .unwrap_or(Err(ResponseError::UnknownMemberId))
        };
        let error_code = result.err().map_or(0, |e| e.code());
        let response = HeartbeatResponse::default().with_error_code(error_code);
        self.respond(id, ClassicResponse::Heartbeat(response));
    }
}
