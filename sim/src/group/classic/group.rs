//! One classic group's membership and generation (Kafka's `ClassicGroup`), without timers or
//! responses: the coordinator drives it and answers the parked requests it hands back.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;

use super::member::{ClassicGroupMember, MemberProtocol};
use super::state::ClassicGroupState;
use crate::group::group_record::{ClassicGroupValue, ClassicMemberValue};

/// How the group's join timer should be handled when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinTimer {
    /// The rebalance timeout: complete the join with whoever rejoined.
    Complete,
    /// The initial-rebalance delay: extend it if a member arrived meanwhile, else complete.
    InitialDelay { delay_ms: i32, remaining_ms: i32 },
}

/// A classic group. Members are kept in a `BTreeMap` so every iteration (member lists, leader
/// re-election, votes) is ordered by member id: deterministic where Kafka iterates a `HashMap`.
#[derive(Debug, Clone)]
pub struct ClassicGroup {
    pub group_id: String,
    state: ClassicGroupState,
    previous_state: ClassicGroupState,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<String>,
    pub members: BTreeMap<String, ClassicGroupMember>,
    /// group.instance.id -> member id.
    pub static_members: BTreeMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED that have not joined yet.
    pub pending_join_members: BTreeSet<String>,
    /// Members of the current generation that have not sent SyncGroup yet.
    pub pending_sync_members: BTreeSet<String>,
    /// A member was added during the initial-rebalance delay, so the delay may be extended.
    pub new_member_added: bool,
    pub join_timer: JoinTimer,
    /// The generation the pending-sync timer was scheduled for; a stale expiry is ignored.
    pub sync_timer_generation: i32,
    /// When the group entered its current state (Kafka's `currentStateTimestamp`): offsets of an
    /// Empty group expire `offsets.retention.minutes` after it. `None` for a group replayed from
    /// a record without one. The coordinator stamps it ([`Self::take_state_changed`]).
    pub current_state_timestamp_ms: Option<u64>,
    /// The state changed since the coordinator last stamped `current_state_timestamp_ms`.
    state_changed: bool,
}

impl ClassicGroup {
    /// A new, Empty group (created by a first JoinGroup or a "simple" offset commit).
    pub fn new(group_id: &str) -> Self {
        Self {
            group_id: group_id.to_owned(),
            state: ClassicGroupState::Empty,
            previous_state: ClassicGroupState::Empty,
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_join_members: BTreeSet::new(),
            pending_sync_members: BTreeSet::new(),
            new_member_added: false,
            join_timer: JoinTimer::Complete,
            sync_timer_generation: 0,
            current_state_timestamp_ms: None,
            state_changed: false,
        }
    }

    /// A new, Empty group created at `now_ms` (Kafka's constructor stamps
    /// `currentStateTimestamp` with its creation time).
    pub fn created_at(group_id: &str, now_ms: u64) -> Self {
        let mut group = Self::new(group_id);
        group.current_state_timestamp_ms = Some(now_ms);
        group
    }

    /// Whether the state changed since the last call (the caller stamps the time).
    pub fn take_state_changed(&mut self) -> bool {
        std::mem::take(&mut self.state_changed)
    }

    /// A Stable group at `generation_id` with protocol type `protocol_type` and no members yet:
    /// the shape `ClassicGroup.fromConsumerGroup` starts from before adding the members.
    pub fn stable(group_id: &str, generation_id: i32, protocol_type: &str) -> Self {
        let mut group = Self::new(group_id);
        group.generation_id = generation_id;
        group.protocol_type = Some(protocol_type.to_owned());
        group.state = ClassicGroupState::Stable;
        group.previous_state = ClassicGroupState::Stable;
        group
    }

    pub fn state(&self) -> ClassicGroupState {
        self.state
    }

    pub fn previous_state(&self) -> ClassicGroupState {
        self.previous_state
    }

    pub fn is_in(&self, state: ClassicGroupState) -> bool {
        self.state == state
    }

    /// Moves to `to`. An illegal transition is a coordinator bug, never peer input.
    pub fn transition_to(&mut self, to: ClassicGroupState) {
        debug_assert!(
            to.is_valid_previous(self.state),
            "group {}: illegal transition {} -> {}",
            self.group_id,
            self.state,
            to
        );
        tracing::debug!(
            group = %self.group_id,
            from = %self.state,
            to = %to,
            generation = self.generation_id,
            "classic group state transition"
        );
        self.previous_state = self.state;
        self.state = to;
        self.state_changed = true;
    }

    /// A rebalance may start from Empty, Stable and CompletingRebalance (`canRebalance`).
    pub fn can_rebalance(&self) -> bool {
        ClassicGroupState::PreparingRebalance.is_valid_previous(self.state)
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.is_awaiting_join())
            .count()
    }

    /// Every member has a parked JoinGroup and no MEMBER_ID_REQUIRED member is outstanding.
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_join_members.is_empty()
    }

    /// The largest rebalance timeout of the members: the join barrier's and sync's deadline.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// `ClassicGroup.validateMember`: instance id checks first (a known instance id mapped to
    /// another member id means this caller was replaced), then the member id.
    pub fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), ResponseError> {
        if let Some(instance_id) = group_instance_id {
            match self.static_members.get(instance_id) {
                None => return Err(ResponseError::UnknownMemberId),
                Some(existing) if existing != member_id => {
                    return Err(ResponseError::FencedInstanceId)
                }
                Some(_) => {}
            }
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ResponseError::UnknownMemberId)
        }
    }

    /// The protocols every member supports, in name order.
    fn candidate_protocols(&self) -> Vec<&str> {
        let mut members = self.members.values();
        let Some(first) = members.next() else {
            return Vec::new();
        };
        let mut names: BTreeSet<&str> = first.protocols.iter().map(|p| p.name.as_str()).collect();
        for member in members {
            names.retain(|n| member.protocols.iter().any(|p| p.name == *n));
        }
        names.into_iter().collect()
    }

    /// `supportsProtocols`: an Empty group takes any non-empty type and protocol list; otherwise
    /// the type must match and one of the protocols must be supported by every member.
    pub fn supports_protocols<'a>(
        &self,
        protocol_type: &str,
        mut protocol_names: impl Iterator<Item = &'a str>,
    ) -> bool {
        if self.is_in(ClassicGroupState::Empty) {
            return !protocol_type.is_empty() && protocol_names.next().is_some();
        }
        let candidates = self.candidate_protocols();
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocol_names.any(|name| candidates.contains(&name))
    }

    /// `selectProtocol`: each member votes for its most preferred candidate; the most votes win.
    /// Ties go to the smallest name (Kafka breaks them by `HashMap` order).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(choice) = member.vote(&candidates) {
                *votes.entry(choice).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (name, count) in votes {
            if best.is_none_or(|(_, best_count)| count > best_count) {
                best = Some((name, count));
            }
        }
        best.map(|(name, _)| name.to_owned())
    }

    /// `ClassicGroup.add`: the first member fixes the protocol type and becomes leader.
    pub fn add(&mut self, member: ClassicGroupMember) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        if let Some(instance_id) = &member.group_instance_id {
            self.static_members
                .insert(instance_id.clone(), member.member_id.clone());
        }
        self.pending_join_members.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// `ClassicGroup.remove`: also forgets pending join/sync entries; a removed leader is
    /// replaced by the first remaining member.
    pub fn remove(&mut self, member_id: &str) -> Option<ClassicGroupMember> {
        let removed = self.members.remove(member_id);
        if let Some(instance_id) = removed.as_ref().and_then(|m| m.group_instance_id.as_ref()) {
            self.static_members.remove(instance_id);
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// `maybeElectNewJoinedLeader`: a leader that did not rejoin hands over to the first member
    /// that did. False when nobody rejoined (or there is no leader at all).
    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.as_ref() else {
            return false;
        };
        if self
            .members
            .get(leader)
            .is_some_and(|m| m.is_awaiting_join())
        {
            return true;
        }
        match self.members.values().find(|m| m.is_awaiting_join()) {
            Some(new_leader) => {
                tracing::debug!(
                    group = %self.group_id,
                    old_leader = %leader,
                    new_leader = %new_leader.member_id,
                    "leader failed to rejoin; elected a new one"
                );
                self.leader_id = Some(new_leader.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// `initNextGeneration`: bump the generation and select the protocol; CompletingRebalance,
    /// or Empty without members.
    pub fn init_next_generation(&mut self) {
        self.generation_id += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition_to(ClassicGroupState::Empty);
        } else {
            self.protocol_name = self.select_protocol();
            self.transition_to(ClassicGroupState::CompletingRebalance);
        }
        self.pending_sync_members.clear();
    }

    /// The member list the leader receives: ids, instance ids and metadata for the selected
    /// protocol.
    pub fn current_members(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        self.members
            .values()
            .map(|m| {
                JoinGroupResponseMember::default()
                    .with_member_id(m.member_id.clone().into())
                    .with_group_instance_id(m.group_instance_id.clone().map(Into::into))
                    .with_metadata(m.metadata(protocol))
            })
            .collect()
    }

    /// The group as Kafka persists it (`GroupCoordinatorRecordHelpers.newGroupMetadataRecord`):
    /// each member with its metadata for the selected protocol and its current assignment.
    pub fn to_record(&self, current_state_timestamp_ms: i64) -> ClassicGroupValue {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        ClassicGroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation_id: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader_id: self.leader_id.clone(),
            current_state_timestamp_ms,
            members: self
                .members
                .values()
                .map(|m| ClassicMemberValue {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// `GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)`: Stable with the
    /// persisted members when there are any, else Empty. Each member supports only the selected
    /// protocol, with the metadata it was persisted with; nothing is parked or pending.
    pub fn from_record(group_id: &str, value: &ClassicGroupValue) -> Self {
        let mut group = Self::new(group_id);
        group.generation_id = value.generation_id;
        group.protocol_type =
            (!value.protocol_type.is_empty()).then(|| value.protocol_type.clone());
        group.protocol_name = value.protocol_name.clone();
        for m in &value.members {
            let rebalance_timeout_ms = if m.rebalance_timeout_ms == -1 {
                m.session_timeout_ms
            } else {
                m.rebalance_timeout_ms
            };
            group.add(ClassicGroupMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: value.protocol_type.clone(),
                protocols: value
                    .protocol_name
                    .iter()
                    .map(|name| MemberProtocol {
                        name: name.clone(),
                        metadata: m.subscription.clone(),
                    })
                    .collect(),
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
            });
        }
        // `add` made the first member leader; the persisted leader wins.
        group.leader_id = value.leader_id.clone();
        if !group.members.is_empty() {
            group.state = ClassicGroupState::Stable;
            group.previous_state = ClassicGroupState::Stable;
        }
        group.protocol_type =
            (!value.protocol_type.is_empty()).then(|| value.protocol_type.clone());
        group.current_state_timestamp_ms = u64::try_from(value.current_state_timestamp_ms).ok();
        group.state_changed = false;
        group
    }

    /// Kafka's `isSimpleGroup`: Empty, no protocol type, nobody pending (a group created only to
    /// hold committed offsets).
    pub fn is_simple(&self) -> bool {
        self.protocol_type.is_none()
            && self.members.is_empty()
            && self.pending_join_members.is_empty()
    }
}
