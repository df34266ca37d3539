//! The rebalance machinery shared by every request and timer: preparing a rebalance, the join
//! barrier (with the initial-rebalance delay), forming a generation, the sync barrier and
//! assignment propagation, and the expiries (session, pending sync). Each function names the
//! `GroupMetadataManager` method it follows.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{JoinGroupResponse, SyncGroupResponse};

use super::config::ClassicGroupConfig;
use super::coordinator::{str_bytes, ClassicResponse, RequestId};
use super::group::{ClassicGroup, JoinTimer};
use super::member::ClassicGroupMember;
use super::state::ClassicGroupState;
use super::timers::ClassicTimerKey;
use crate::coordinator::ExpelledMember;
use crate::group::group_record::ClassicGroupValue;
use crate::group::timer::Timers;

/// The shard-wide side effects a group operation may have: timers and responses.
pub(super) struct Effects<'a> {
    pub config: &'a ClassicGroupConfig,
    pub timers: &'a mut Timers<ClassicTimerKey>,
    pub outbox: &'a mut Vec<(RequestId, ClassicResponse)>,
    pub records: &'a mut Vec<(String, ClassicGroupValue)>,
    pub expelled: &'a mut Vec<ExpelledMember>,
    pub now_ms: u64,
}

/// JoinGroup v0–6 cannot encode a null protocol name; Kafka's `JoinGroupResponse` sends "".
pub(super) fn join_response_for_version(
    mut response: JoinGroupResponse,
    api_version: i16,
) -> JoinGroupResponse {
    if api_version < 7 && response.protocol_name.is_none() {
        response.protocol_name = Some(Default::default());
    }
    response
}

/// A JoinGroup error answer, as Kafka builds them (`memberId` set, everything else Java's
/// default, which for the protocol name is null where `kafka-protocol`'s is "").
pub(super) fn join_error(member_id: &str, error: ResponseError) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_member_id(str_bytes(member_id))
        .with_error_code(error.code())
        .with_protocol_name(None)
}

/// The success answer of the current generation for `member_id`; `members` is the leader's list.
pub(super) fn join_generation_info(
    group: &ClassicGroup,
    member_id: &str,
    members: Vec<kafka_protocol::messages::join_group_response::JoinGroupResponseMember>,
) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_members(members)
        .with_member_id(str_bytes(member_id))
        .with_generation_id(group.generation_id)
        .with_protocol_name(group.protocol_name.as_deref().map(str_bytes))
        .with_protocol_type(group.protocol_type.as_deref().map(str_bytes))
        .with_leader(str_bytes(group.leader_id.as_deref().unwrap_or_default()))
        .with_skip_assignment(false)
}

impl Effects<'_> {
    fn schedule(&mut self, key: ClassicTimerKey, delay_ms: i32) {
        let delay_ms = u64::try_from(delay_ms).unwrap_or(0);
        self.timers
            .schedule(key, self.now_ms.saturating_add(delay_ms));
    }

    /// Queues the group's `GroupMetadata` record (`newGroupMetadataRecord`): its generation,
    /// protocol, leader and every member with its metadata for the selected protocol and its
    /// current assignment.
    pub fn persist_group(&mut self, group: &ClassicGroup) {
        let value = group.to_record(i64::try_from(self.now_ms).unwrap_or(i64::MAX));
        self.records.push((group.group_id.clone(), value));
    }

    pub fn respond(&mut self, id: RequestId, response: ClassicResponse) {
        self.outbox.push((id, response));
    }

    /// Answers `member`'s parked JoinGroup, if any (`completeJoinFuture`).
    pub fn complete_join(
        &mut self,
        member: &mut ClassicGroupMember,
        response: JoinGroupResponse,
    ) -> bool {
        match member.awaiting_join.take() {
            Some(parked) => {
                let response = join_response_for_version(response, parked.api_version);
                self.respond(parked.request_id, ClassicResponse::JoinGroup(response));
                true
            }
            None => false,
        }
    }

    /// Answers `member`'s parked SyncGroup, if any (`completeSyncFuture`).
    pub fn complete_sync(
        &mut self,
        member: &mut ClassicGroupMember,
        response: SyncGroupResponse,
    ) -> bool {
        match member.awaiting_sync.take() {
            Some(request_id) => {
                self.respond(request_id, ClassicResponse::SyncGroup(response));
                true
            }
            None => false,
        }
    }

    /// Restarts the session timer of `member_id` (`rescheduleClassicGroupMemberHeartbeat`).
    pub fn reschedule_heartbeat(&mut self, group_id: &str, member_id: &str, timeout_ms: i32) {
        self.schedule(ClassicTimerKey::heartbeat(group_id, member_id), timeout_ms);
    }

    pub fn cancel_heartbeat(&mut self, group_id: &str, member_id: &str) {
        self.timers
            .cancel(&ClassicTimerKey::heartbeat(group_id, member_id));
    }

    /// `maybePrepareRebalanceOrCompleteJoin`.
    pub fn maybe_prepare_rebalance_or_complete_join(&mut self, group: &mut ClassicGroup) {
        if group.can_rebalance() {
            self.prepare_rebalance(group);
        } else {
            self.maybe_complete_join_phase(group);
        }
    }

    /// `prepareRebalance`: fail parked syncs, drop the pending-sync deadline and enter
    /// PreparingRebalance; leaving Empty waits the initial-rebalance delay, otherwise the join
    /// completes as soon as everyone has rejoined or the rebalance timeout passes.
    pub fn prepare_rebalance(&mut self, group: &mut ClassicGroup) {
        if group.is_in(ClassicGroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_with_error(
                group,
                ResponseError::RebalanceInProgress,
            );
        }
        self.remove_sync_expiration(group);

        let is_initial_rebalance = group.is_in(ClassicGroupState::Empty);
        if is_initial_rebalance {
            let delay_ms = self.config.group_initial_rebalance_delay_ms;
            let remaining_ms = group.rebalance_timeout_ms().saturating_sub(delay_ms).max(0);
            group.join_timer = JoinTimer::InitialDelay {
                delay_ms,
                remaining_ms,
            };
            self.schedule(ClassicTimerKey::join(&group.group_id), delay_ms);
        }
        group.transition_to(ClassicGroupState::PreparingRebalance);
        if !is_initial_rebalance {
            self.maybe_complete_join_else_schedule(group);
        }
    }

    /// `maybeCompleteJoinElseSchedule`.
    fn maybe_complete_join_else_schedule(&mut self, group: &mut ClassicGroup) {
        if group.has_all_members_joined() {
            self.complete_join_phase(group);
        } else {
            self.schedule_join_completion(group);
        }
    }

    fn schedule_join_completion(&mut self, group: &mut ClassicGroup) {
        group.join_timer = JoinTimer::Complete;
        let timeout_ms = group.rebalance_timeout_ms();
        self.schedule(ClassicTimerKey::join(&group.group_id), timeout_ms);
    }

    /// `maybeCompleteJoinPhase`: never during the initial rebalance (its delay decides).
    pub fn maybe_complete_join_phase(&mut self, group: &mut ClassicGroup) {
        if group.is_in(ClassicGroupState::PreparingRebalance)
            && group.previous_state() != ClassicGroupState::Empty
            && group.has_all_members_joined()
        {
            self.complete_join_phase(group);
        }
    }

    /// `tryCompleteInitialRebalanceElseSchedule`: each new member during the delay extends it by
    /// up to another delay, until the group's rebalance timeout is used up.
    pub fn try_complete_initial_rebalance_else_schedule(
        &mut self,
        group: &mut ClassicGroup,
        delay_ms: i32,
        remaining_ms: i32,
    ) {
        if group.new_member_added && remaining_ms != 0 {
            group.new_member_added = false;
            let new_delay_ms = self
                .config
                .group_initial_rebalance_delay_ms
                .min(remaining_ms);
            let new_remaining_ms = remaining_ms.saturating_sub(delay_ms).max(0);
            group.join_timer = JoinTimer::InitialDelay {
                delay_ms: new_delay_ms,
                remaining_ms: new_remaining_ms,
            };
            self.schedule(ClassicTimerKey::join(&group.group_id), new_delay_ms);
        } else {
            self.complete_join_phase(group);
        }
    }

    /// `completeClassicGroupJoin`: drop dynamic members that did not rejoin, re-elect the leader
    /// if needed, form the next generation and answer every parked JoinGroup.
    pub fn complete_join_phase(&mut self, group: &mut ClassicGroup) {
        self.timers.cancel(&ClassicTimerKey::join(&group.group_id));

        let not_rejoined: Vec<String> = group
            .members
            .values()
            .filter(|m| !m.is_awaiting_join() && !m.is_static())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in &not_rejoined {
            group.remove(member_id);
            self.cancel_heartbeat(&group.group_id, member_id);
            self.note_expelled(group, member_id, "did not rejoin in time");
        }
        if !not_rejoined.is_empty() {
            tracing::debug!(group = %group.group_id, removed = ?not_rejoined, "removed dynamic members that did not rejoin");
        }

        if group.is_in(ClassicGroupState::Dead) {
            return;
        }
        if !group.maybe_elect_new_joined_leader() && !group.members.is_empty() {
            // Nobody rejoined: wait another rebalance timeout for session expiries to clear
            // the group out.
            self.schedule_join_completion(group);
            return;
        }
        group.init_next_generation();
        if group.is_in(ClassicGroupState::Empty) {
            // An emptied group is persisted, so a new coordinator loads it Empty.
            self.persist_group(group);
            return;
        }

        let leader_members = group.current_members();
        let group_id = group.group_id.clone();
        let member_ids: Vec<String> = group.members.keys().cloned().collect();
        for member_id in member_ids {
            let members = if group.is_leader(&member_id) {
                leader_members.clone()
            } else {
                Vec::new()
            };
            let response = join_generation_info(group, &member_id, members);
            let Some(member) = group.members.get_mut(&member_id) else {
                continue;
            };
            self.complete_join(member, response);
            member.is_new = false;
            let session_timeout_ms = member.session_timeout_ms;
            self.reschedule_heartbeat(&group_id, &member_id, session_timeout_ms);
            group.pending_sync_members.insert(member_id);
        }
        self.schedule_pending_sync(group);
    }

    /// `schedulePendingSync`: every member must sync within the rebalance timeout.
    fn schedule_pending_sync(&mut self, group: &mut ClassicGroup) {
        group.sync_timer_generation = group.generation_id;
        let timeout_ms = group.rebalance_timeout_ms();
        self.schedule(ClassicTimerKey::sync(&group.group_id), timeout_ms);
    }

    /// `removeSyncExpiration`.
    fn remove_sync_expiration(&mut self, group: &mut ClassicGroup) {
        group.pending_sync_members.clear();
        self.timers.cancel(&ClassicTimerKey::sync(&group.group_id));
    }

    /// `removePendingSyncMember`: the sync deadline goes once everyone has synced.
    pub fn remove_pending_sync_member(&mut self, group: &mut ClassicGroup, member_id: &str) {
        group.pending_sync_members.remove(member_id);
        let all_synced = group.pending_sync_members.is_empty();
        let keeps_deadline = matches!(
            group.state(),
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable
        ) && !all_synced;
        if !keeps_deadline {
            self.timers.cancel(&ClassicTimerKey::sync(&group.group_id));
        }
    }

    /// `expirePendingSync`: members that never sent SyncGroup are removed and the group
    /// rebalances. A deadline from an older generation is ignored.
    pub fn expire_pending_sync(&mut self, group: &mut ClassicGroup, generation_id: i32) {
        if generation_id != group.generation_id {
            return;
        }
        if !matches!(
            group.state(),
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable
        ) || group.pending_sync_members.is_empty()
        {
            return;
        }
        let pending: Vec<String> = group.pending_sync_members.iter().cloned().collect();
        for member_id in &pending {
            group.remove(member_id);
            self.cancel_heartbeat(&group.group_id, member_id);
            self.note_expelled(group, member_id, "did not sync in time");
        }
        tracing::debug!(group = %group.group_id, removed = ?pending, "removed members that did not sync in time");
        self.prepare_rebalance(group);
    }

    /// `resetAndPropagateAssignmentWithError`.
    fn reset_and_propagate_assignment_with_error(
        &mut self,
        group: &mut ClassicGroup,
        error: ResponseError,
    ) {
        for member in group.members.values_mut() {
            member.assignment = Bytes::new();
        }
        self.propagate_assignment(group, Some(error));
    }

    /// `setAndPropagateAssignment`: members missing from the leader's map get an empty one.
    pub fn set_and_propagate_assignment(
        &mut self,
        group: &mut ClassicGroup,
        mut assignment: BTreeMap<String, Bytes>,
    ) {
        for member in group.members.values_mut() {
            member.assignment = assignment.remove(&member.member_id).unwrap_or_default();
        }
        self.propagate_assignment(group, None);
    }

    /// `propagateAssignment`: answers every parked SyncGroup and restarts those members'
    /// session timers (their expiry was ignored while they were parked).
    fn propagate_assignment(&mut self, group: &mut ClassicGroup, error: Option<ResponseError>) {
        let (protocol_type, protocol_name) = match error {
            None => (
                group.protocol_type.as_deref().map(str_bytes),
                group.protocol_name.as_deref().map(str_bytes),
            ),
            Some(_) => (None, None),
        };
        let error_code = error.map_or(0, |e| e.code());
        let group_id = group.group_id.clone();
        for member in group.members.values_mut() {
            let response = SyncGroupResponse::default()
                .with_protocol_type(protocol_type.clone())
                .with_protocol_name(protocol_name.clone())
                .with_assignment(member.assignment.clone())
                .with_error_code(error_code);
            if self.complete_sync(member, response) {
                self.reschedule_heartbeat(&group_id, &member.member_id, member.session_timeout_ms);
            }
        }
    }

    /// `expireClassicGroupMemberHeartbeat`: a pending member is forgotten; a member that is not
    /// kept alive by a parked join/sync is removed.
    pub fn expire_member_heartbeat(&mut self, group: &mut ClassicGroup, member_id: &str) {
        if group.is_in(ClassicGroupState::Dead) {
            return;
        }
        if group.pending_join_members.contains(member_id) {
            group.remove(member_id);
            if group.is_in(ClassicGroupState::PreparingRebalance) && group.has_all_members_joined()
            {
                self.complete_join_phase(group);
            }
            return;
        }
        let expired = group
            .members
            .get(member_id)
            .is_some_and(|m| !m.has_satisfied_heartbeat());
        if expired {
            tracing::debug!(group = %group.group_id, member = %member_id, "member session expired");
            self.note_expelled(group, member_id, "session expired");
            self.remove_member_and_update_group(group, member_id);
        }
    }

    /// Notes a member a timer removed, for [`Self::take_expelled`].
    fn note_expelled(&mut self, group: &ClassicGroup, member_id: &str, reason: &'static str) {
        self.expelled.push(ExpelledMember {
            group_id: group.group_id.clone(),
            member_id: member_id.to_owned(),
            reason,
        });
    }

    /// `removeMemberAndUpdateClassicGroup`: a parked join is answered UNKNOWN_MEMBER_ID (so a
    /// live client rejoins), then the group rebalances or completes its join.
    fn remove_member_and_update_group(&mut self, group: &mut ClassicGroup, member_id: &str) {
        if let Some(member) = group.members.get_mut(member_id) {
            self.complete_join(member, join_error("", ResponseError::UnknownMemberId));
        }
        group.remove(member_id);
        match group.state() {
            ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(group)
            }
            ClassicGroupState::PreparingRebalance if group.has_all_members_joined() => {
                self.complete_join_phase(group)
            }
            _ => {}
        }
    }

    /// `onUnloaded` for one group: Dead, parked requests answered NOT_COORDINATOR.
    pub fn unload_group(&mut self, group: &mut ClassicGroup) {
        group.transition_to(ClassicGroupState::Dead);
        let not_coordinator = ResponseError::NotCoordinator.code();
        let previous_state = group.previous_state();
        for member in group.members.values_mut() {
            match previous_state {
                ClassicGroupState::PreparingRebalance => {
                    let response = join_error(&member.member_id, ResponseError::NotCoordinator);
                    self.complete_join(member, response);
                }
                ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                    let response = SyncGroupResponse::default().with_error_code(not_coordinator);
                    self.complete_sync(member, response);
                }
                ClassicGroupState::Empty | ClassicGroupState::Dead => {}
            }
        }
        for member_id in group.members.keys() {
            self.cancel_heartbeat(&group.group_id, member_id);
        }
        self.timers.cancel(&ClassicTimerKey::join(&group.group_id));
        self.timers.cancel(&ClassicTimerKey::sync(&group.group_id));
    }
}
