//! JoinGroup (`GroupCoordinatorService.joinGroup`, `classicGroupJoinToClassicGroup`,
//! `classicGroupJoinNewMember`, `classicGroupJoinExistingMember`,
//! `updateStaticMemberThenRebalanceOrCompleteJoin`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::JoinGroupRequest;

use super::coordinator::{str_bytes, ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::group::ClassicGroup;
use super::member::{ClassicGroupMember, MemberProtocol, ParkedJoin};
use super::rebalance::{join_error, join_generation_info, join_response_for_version, Effects};
use super::state::ClassicGroupState;

/// Who is joining: the parts of the request context a new member records.
struct Joiner<'a> {
    parked: ParkedJoin,
    request: &'a JoinGroupRequest,
    client_id: &'a str,
    client_host: &'a str,
}

impl Joiner<'_> {
    fn protocol_names(&self) -> impl Iterator<Item = &str> {
        self.request.protocols.iter().map(|p| p.name.as_str())
    }

    fn member(&self, member_id: String) -> ClassicGroupMember {
        ClassicGroupMember {
            member_id,
            group_instance_id: self
                .request
                .group_instance_id
                .as_ref()
                .map(|s| s.to_string()),
            client_id: self.client_id.to_owned(),
            client_host: self.client_host.to_owned(),
            rebalance_timeout_ms: self.request.rebalance_timeout_ms,
            session_timeout_ms: self.request.session_timeout_ms,
            protocol_type: self.request.protocol_type.to_string(),
            protocols: MemberProtocol::from_request(&self.request.protocols),
            assignment: Default::default(),
            awaiting_join: Some(self.parked),
            awaiting_sync: None,
            is_new: true,
        }
    }

    /// `ClassicGroup.updateMember`: new protocols and timeouts, and this request parked.
    fn update(&self, member: &mut ClassicGroupMember) {
        member.protocols = MemberProtocol::from_request(&self.request.protocols);
        member.rebalance_timeout_ms = self.request.rebalance_timeout_ms;
        member.session_timeout_ms = self.request.session_timeout_ms;
        member.awaiting_join = Some(self.parked);
    }
}

impl ClassicGroupCoordinator {
    /// Handles JoinGroup `request` (API `api_version`) from `client_id` at `client_host`.
    /// The answer may be immediate or parked until the join barrier completes.
    pub fn join_group(
        &mut self,
        now_ms: u64,
        id: RequestId,
        api_version: i16,
        request: &JoinGroupRequest,
        client_id: &str,
        client_host: &str,
    ) {
        self.advance(now_ms);
        let member_id = request.member_id.as_str();
        let group_id = request.group_id.0.as_str();
        let reject = |error| {
            ClassicResponse::JoinGroup(join_response_for_version(
                join_error(member_id, error),
                api_version,
            ))
        };
        if group_id.is_empty() {
            return self.respond(id, reject(ResponseError::InvalidGroupId));
        }
        if request.session_timeout_ms < self.config.group_min_session_timeout_ms
            || request.session_timeout_ms > self.config.group_max_session_timeout_ms
        {
            return self.respond(id, reject(ResponseError::InvalidSessionTimeout));
        }
        // A group is created by a join without a member id; a member id for an unknown group
        // is rejected (`getOrMaybeCreateClassicGroup` -> UNKNOWN_MEMBER_ID).
        if !self.groups.contains_key(group_id) {
            if !member_id.is_empty() {
                return self.respond(id, reject(ResponseError::UnknownMemberId));
            }
            let group = ClassicGroup::created_at(group_id, self.now_ms);
            // A new group is committed to the log at once (`newEmptyGroupMetadataRecord`).
            let value = group.to_record(i64::try_from(self.now_ms).unwrap_or(i64::MAX));
            self.records.push((group_id.to_owned(), value));
            self.groups.insert(group_id.to_owned(), group);
        }

        let joiner = Joiner {
            parked: ParkedJoin {
                request_id: id,
                api_version,
            },
            request,
            client_id,
            client_host,
        };
        let generated_id = if member_id.is_empty() {
            let prefix = request
                .group_instance_id
                .as_ref()
                .map_or(client_id, |instance| instance.as_str());
            Some(self.member_ids.generate(prefix))
        } else {
            None
        };
        self.with_group(group_id, |group, fx| {
            if !accept_joining_member(group, member_id, fx.config.group_max_size) {
                group.remove(member_id);
                fx.respond(id, reject(ResponseError::GroupMaxSizeReached));
                return;
            }
            match generated_id {
                Some(new_member_id) => join_new_member(group, fx, &joiner, new_member_id),
                None => join_existing_member(group, fx, &joiner),
            }
        });
    }
}

/// `acceptJoiningMember`: enforce `group.max.size`. While rebalancing, the members already
/// parked are counted, so the last members to rejoin are the ones turned away.
fn accept_joining_member(group: &ClassicGroup, member_id: &str, max_size: usize) -> bool {
    match group.state() {
        ClassicGroupState::Empty | ClassicGroupState::Dead => true,
        ClassicGroupState::PreparingRebalance => {
            group
                .members
                .get(member_id)
                .is_some_and(ClassicGroupMember::is_awaiting_join)
                || group.num_awaiting_join() < max_size
        }
        ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
            group.members.contains_key(member_id) || group.members.len() < max_size
        }
    }
}

fn respond_join(
    fx: &mut Effects<'_>,
    joiner: &Joiner<'_>,
    response: kafka_protocol::messages::JoinGroupResponse,
) {
    let response = join_response_for_version(response, joiner.parked.api_version);
    fx.respond(
        joiner.parked.request_id,
        ClassicResponse::JoinGroup(response),
    );
}

/// `classicGroupJoinNewMember`.
fn join_new_member(
    group: &mut ClassicGroup,
    fx: &mut Effects<'_>,
    joiner: &Joiner<'_>,
    new_member_id: String,
) {
    if group.is_in(ClassicGroupState::Dead) {
        return respond_join(
            fx,
            joiner,
            join_error("", ResponseError::CoordinatorNotAvailable),
        );
    }
    if !group.supports_protocols(&joiner.request.protocol_type, joiner.protocol_names()) {
        return respond_join(
            fx,
            joiner,
            join_error("", ResponseError::InconsistentGroupProtocol),
        );
    }
    match joiner.request.group_instance_id.as_ref() {
        Some(instance_id) => match group.static_members.get(instance_id.as_str()).cloned() {
            Some(old_member_id) => {
                replace_static_member(group, fx, joiner, &old_member_id, new_member_id)
            }
            None => add_member_then_rebalance_or_complete_join(group, fx, joiner, new_member_id),
        },
        // KIP-394: v4+ clients must come back with the id handed out here, so a client that
        // loses the response does not leave a ghost member behind.
        None if joiner.parked.api_version >= 4 => {
            group.pending_join_members.insert(new_member_id.clone());
            fx.reschedule_heartbeat(
                &group.group_id,
                &new_member_id,
                joiner.request.session_timeout_ms,
            );
            respond_join(
                fx,
                joiner,
                join_error(&new_member_id, ResponseError::MemberIdRequired),
            );
        }
        None => add_member_then_rebalance_or_complete_join(group, fx, joiner, new_member_id),
    }
}

/// `classicGroupJoinExistingMember`.
fn join_existing_member(group: &mut ClassicGroup, fx: &mut Effects<'_>, joiner: &Joiner<'_>) {
    let member_id = joiner.request.member_id.as_str();
    if group.is_in(ClassicGroupState::Dead) {
        return respond_join(
            fx,
            joiner,
            join_error(member_id, ResponseError::CoordinatorNotAvailable),
        );
    }
    if !group.supports_protocols(&joiner.request.protocol_type, joiner.protocol_names()) {
        return respond_join(
            fx,
            joiner,
            join_error(member_id, ResponseError::InconsistentGroupProtocol),
        );
    }
    if group.pending_join_members.contains(member_id) {
        // Kafka treats a pending (hence dynamic) member id joining with an instance id as an
        // internal error.
        if joiner.request.group_instance_id.is_some() {
            return respond_join(
                fx,
                joiner,
                join_error(member_id, ResponseError::UnknownServerError),
            );
        }
        return add_member_then_rebalance_or_complete_join(group, fx, joiner, member_id.to_owned());
    }
    let instance_id = joiner
        .request
        .group_instance_id
        .as_ref()
        .map(|s| s.as_str());
    if let Err(error) = group.validate_member(member_id, instance_id) {
        let response = join_error(member_id, error).with_protocol_name(None);
        return respond_join(fx, joiner, response);
    }
    let Some(member) = group.members.get(member_id) else {
        return;
    };
    let matches = member.matches(&joiner.request.protocols);
    match group.state() {
        ClassicGroupState::PreparingRebalance => update_member_then_rebalance(group, fx, joiner),
        ClassicGroupState::CompletingRebalance if matches => {
            // It lost its JoinGroup answer: give it the current generation again.
            let members = if group.is_leader(member_id) {
                group.current_members()
            } else {
                Vec::new()
            };
            respond_join(fx, joiner, join_generation_info(group, member_id, members));
        }
        ClassicGroupState::Stable if matches && !group.is_leader(member_id) => {
            respond_join(
                fx,
                joiner,
                join_generation_info(group, member_id, Vec::new()),
            );
        }
        // Changed metadata, or the leader asking for a new assignment (e.g. topic changes).
        ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
            update_member_then_rebalance(group, fx, joiner)
        }
        ClassicGroupState::Empty | ClassicGroupState::Dead => respond_join(
            fx,
            joiner,
            join_error(member_id, ResponseError::UnknownMemberId),
        ),
    }
}

/// `updateMemberThenRebalanceOrCompleteJoin`. A join replacing one already parked for this
/// member leaves the older request unanswered, as Kafka overwrites its future.
fn update_member_then_rebalance(
    group: &mut ClassicGroup,
    fx: &mut Effects<'_>,
    joiner: &Joiner<'_>,
) {
    if let Some(member) = group.members.get_mut(joiner.request.member_id.as_str()) {
        joiner.update(member);
    }
    fx.maybe_prepare_rebalance_or_complete_join(group);
}

/// `addMemberThenRebalanceOrCompleteJoin`: a new member cannot heartbeat while its join is
/// parked, so its liveness is the new-member join timeout instead of its session timeout.
fn add_member_then_rebalance_or_complete_join(
    group: &mut ClassicGroup,
    fx: &mut Effects<'_>,
    joiner: &Joiner<'_>,
    member_id: String,
) {
    if group.is_in(ClassicGroupState::PreparingRebalance)
        && group.previous_state() == ClassicGroupState::Empty
    {
        group.new_member_added = true;
    }
    let timeout_ms = fx.config.group_new_member_join_timeout_ms;
    fx.reschedule_heartbeat(&group.group_id, &member_id, timeout_ms);
    group.add(joiner.member(member_id));
    fx.maybe_prepare_rebalance_or_complete_join(group);
}

/// `updateStaticMemberThenRebalanceOrCompleteJoin` with `ClassicGroup.replaceStaticMember`:
/// the old member id is fenced (its parked join/sync answered FENCED_INSTANCE_ID) and the new
/// id takes its place, assignment included. A Stable group whose selected protocol would not
/// change skips the rebalance.
fn replace_static_member(
    group: &mut ClassicGroup,
    fx: &mut Effects<'_>,
    joiner: &Joiner<'_>,
    old_member_id: &str,
    new_member_id: String,
) {
    let old_leader = group.leader_id.clone();
    let Some(mut old) = group.members.remove(old_member_id) else {
        return;
    };
    let fenced_join = join_error(old_member_id, ResponseError::FencedInstanceId)
        .with_protocol_name(None)
        .with_protocol_type(None);
    fx.complete_join(&mut old, fenced_join);
    let fenced_sync = kafka_protocol::messages::SyncGroupResponse::default()
        .with_error_code(ResponseError::FencedInstanceId.code());
    fx.complete_sync(&mut old, fenced_sync);
    // The old id's heartbeat timer may fire later; it finds no member and does nothing.

    let mut member = ClassicGroupMember {
        member_id: new_member_id.clone(),
        awaiting_join: None,
        awaiting_sync: None,
        is_new: false,
        ..old
    };
    fx.reschedule_heartbeat(&group.group_id, &new_member_id, member.session_timeout_ms);
    joiner.update(&mut member);
    if group.is_leader(old_member_id) {
        group.leader_id = Some(new_member_id.clone());
    }
    if let Some(instance_id) = &member.group_instance_id {
        group
            .static_members
            .insert(instance_id.clone(), new_member_id.clone());
    }
    group.members.insert(new_member_id.clone(), member);

    match group.state() {
        ClassicGroupState::Stable => {
            if group.select_protocol() == group.protocol_name {
                tracing::debug!(group = %group.group_id, member = %new_member_id, "static member replaced without rebalance");
                answer_replaced_static_member(group, fx, &new_member_id, old_leader);
                // The new member id replaces the old one in the persisted group.
                fx.persist_group(group);
            } else {
                fx.maybe_prepare_rebalance_or_complete_join(group);
            }
        }
        // The leader may already have assigned to the old id: only a new rebalance makes the
        // assignment consistent again.
        ClassicGroupState::CompletingRebalance => fx.prepare_rebalance(group),
        ClassicGroupState::PreparingRebalance => fx.maybe_complete_join_phase(group),
        ClassicGroupState::Empty | ClassicGroupState::Dead => {}
    }
}

/// The answer to a static member that replaced its old id in a Stable group without a
/// rebalance. KIP-814 (JoinGroup v9+): a replaced leader gets the member list with
/// `skipAssignment`, so it knows it leads without computing a new assignment.
fn answer_replaced_static_member(
    group: &mut ClassicGroup,
    fx: &mut Effects<'_>,
    new_member_id: &str,
    old_leader: Option<String>,
) {
    let Some(parked) = group
        .members
        .get(new_member_id)
        .and_then(|m| m.awaiting_join)
    else {
        return;
    };
    let response = if parked.api_version >= 9 {
        let is_leader = group.is_leader(new_member_id);
        let members = if is_leader {
            group.current_members()
        } else {
            Vec::new()
        };
        join_generation_info(group, new_member_id, members).with_skip_assignment(is_leader)
    } else {
        join_generation_info(group, new_member_id, Vec::new())
            .with_leader(str_bytes(old_leader.as_deref().unwrap_or_default()))
    };
    if let Some(member) = group.members.get_mut(new_member_id) {
        fx.complete_join(member, response);
    }
}
