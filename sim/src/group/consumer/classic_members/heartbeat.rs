//! Heartbeat from a classic member of a consumer group (`classicGroupHeartbeatToConsumerGroup`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::super::coordinator::ConsumerGroupCoordinator;
use super::super::error::GroupError;
use super::validate::{
    heartbeat_must_rejoin, throw_if_generation_id_unmatched,
    throw_if_member_does_not_use_classic_protocol, validate_consumer_group_member,
};

impl ConsumerGroupCoordinator {
    /// Answers a classic Heartbeat for the consumer group it names: it keeps the member's session
    /// alive, and REBALANCE_IN_PROGRESS tells it to rejoin whenever its assignment must move
    /// (starting its rejoin deadline).
    pub fn classic_group_heartbeat(
        &mut self,
        request: &HeartbeatRequest,
        now_ms: u64,
    ) -> HeartbeatResponse {
        self.poll(now_ms);
        let error = match self.classic_heartbeat(request, now_ms) {
            Ok(()) => 0,
            Err(e) => e.error.code(),
        };
        HeartbeatResponse::default().with_error_code(error)
    }

    fn classic_heartbeat(
        &mut self,
        request: &HeartbeatRequest,
        now_ms: u64,
    ) -> Result<(), GroupError> {
        let group_id: &str = &request.group_id.0;
        let group = self.groups.get(group_id).ok_or_else(|| {
            GroupError::new(
                ResponseError::UnknownMemberId,
                format!("Group {group_id} not found."),
            )
        })?;
        let member = validate_consumer_group_member(
            group,
            &request.member_id,
            request.group_instance_id.as_deref(),
        )?;
        throw_if_member_does_not_use_classic_protocol(member)?;
        throw_if_generation_id_unmatched(member, request.generation_id)?;
        let rejoin = heartbeat_must_rejoin(group, member);
        let member_id = member.member_id.clone();
        let rebalance_timeout_ms = member.rebalance_timeout_ms;
        self.schedule_session_timeout(group_id, &member_id, now_ms);
        if rejoin {
            self.schedule_classic_join_timeout_if_absent(
                group_id,
                &member_id,
                rebalance_timeout_ms,
                now_ms,
            );
            return Err(GroupError::new(
                ResponseError::RebalanceInProgress,
                "The member must rejoin.",
            ));
        }
        Ok(())
    }
}
