//! The classic group coordinator of one `__consumer_offsets` shard: its groups, timers and
//! outbox, and the dispatch of fired timers.

use std::collections::BTreeMap;

use kafka_protocol::messages::{
    DescribeGroupsResponse, HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse,
    ListGroupsResponse, OffsetCommitResponse, OffsetFetchResponse, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::config::ClassicGroupConfig;
use super::group::{ClassicGroup, JoinTimer};
use super::rebalance::Effects;
use super::state::ClassicGroupState;
use super::timers::ClassicTimerKey;
use crate::coordinator::ExpelledMember;
use crate::group::group_record::ClassicGroupValue;
use crate::group::member_id::MemberIdGenerator;
use crate::group::timer::Timers;

/// The caller's handle for one request; the response carries it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// A response to one request, in the wire struct of its API.
#[derive(Debug, Clone, PartialEq)]
pub enum ClassicResponse {
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
    DescribeGroups(DescribeGroupsResponse),
    ListGroups(ListGroupsResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetFetch(OffsetFetchResponse),
}

/// The classic groups of one coordinator shard.
#[derive(Debug, Clone)]
pub struct ClassicGroupCoordinator {
    pub(super) config: ClassicGroupConfig,
    pub(super) groups: BTreeMap<String, ClassicGroup>,
    pub(super) timers: Timers<ClassicTimerKey>,
    pub(super) member_ids: MemberIdGenerator,
    pub(super) outbox: Vec<(RequestId, ClassicResponse)>,
    /// `GroupMetadata` records to append to the shard's log, in order (group id, value).
    pub(super) records: Vec<(String, ClassicGroupValue)>,
    /// The latest time seen; never goes backwards.
    pub(super) now_ms: u64,
    /// Members a timer removed since the last [`Self::take_expelled`].
    pub(super) expelled: Vec<ExpelledMember>,
}

impl ClassicGroupCoordinator {
    /// A coordinator with no groups; `seed` determines the generated member ids.
    pub fn new(config: ClassicGroupConfig, seed: u64) -> Self {
        Self {
            config,
            groups: BTreeMap::new(),
            timers: Timers::default(),
            member_ids: MemberIdGenerator::new(seed),
            outbox: Vec::new(),
            records: Vec::new(),
            now_ms: 0,
            expelled: Vec::new(),
        }
    }

    /// The members timers removed since the last call, in order.
    pub fn take_expelled(&mut self) -> Vec<ExpelledMember> {
        std::mem::take(&mut self.expelled)
    }

    /// Every response produced since the last call, in the order they were produced.
    pub fn take_responses(&mut self) -> Vec<(RequestId, ClassicResponse)> {
        std::mem::take(&mut self.outbox)
    }

    /// When [`Self::poll`] next has work to do.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.timers.next_deadline_ms()
    }

    /// The state of `group_id`, if this shard knows the group.
    pub fn group_state(&self, group_id: &str) -> Option<ClassicGroupState> {
        self.groups.get(group_id).map(ClassicGroup::state)
    }

    /// The generation of `group_id`, if this shard knows the group.
    pub fn group_generation_id(&self, group_id: &str) -> Option<i32> {
        self.groups.get(group_id).map(|g| g.generation_id)
    }

    /// The member ids of `group_id` (empty if unknown), in id order.
    pub fn group_member_ids(&self, group_id: &str) -> Vec<String> {
        self.groups
            .get(group_id)
            .map(|g| g.members.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The leader of `group_id`, if any.
    pub fn group_leader_id(&self, group_id: &str) -> Option<String> {
        self.groups.get(group_id).and_then(|g| g.leader_id.clone())
    }

    /// Recreates `group_id` as an Empty group while the shard is loaded, as Kafka's loader does
    /// for a group known only from its committed offsets; a no-op if the group exists.
    pub fn load_empty_group(&mut self, group_id: &str) {
        let now_ms = self.now_ms;
        self.groups
            .entry(group_id.to_owned())
            .or_insert_with(|| ClassicGroup::created_at(group_id, now_ms));
    }

    /// Installs a group replayed from its `GroupMetadata` record while the shard loads,
    /// replacing any group of that id.
    pub fn restore_group(&mut self, group_id: &str, value: &ClassicGroupValue) {
        self.groups.insert(
            group_id.to_owned(),
            ClassicGroup::from_record(group_id, value),
        );
    }

    /// Forgets `group_id` (a `GroupMetadata` tombstone, or a simple group replaced by a consumer
    /// group while loading).
    pub fn remove_group(&mut self, group_id: &str) {
        self.groups.remove(group_id);
    }

    /// True when `group_id` is a simple group (`isSimpleGroup`) or unknown.
    pub fn is_simple_or_absent(&self, group_id: &str) -> bool {
        self.groups
            .get(group_id)
            .is_none_or(ClassicGroup::is_simple)
    }

    /// `GroupMetadataManager.onLoaded` for classic groups: every loaded member's session timer
    /// starts now, and a group over `group.max.size` rebalances.
    pub fn on_loaded(&mut self, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            self.with_group(&id, |group, fx| {
                for member in group.members.values() {
                    fx.reschedule_heartbeat(
                        &group.group_id,
                        &member.member_id,
                        member.session_timeout_ms,
                    );
                }
                if group.members.len() > fx.config.group_max_size {
                    fx.prepare_rebalance(group);
                }
            });
        }
    }

    /// The `GroupMetadata` records produced since the last call, in order.
    pub fn take_records(&mut self) -> Vec<(String, ClassicGroupValue)> {
        std::mem::take(&mut self.records)
    }

    /// Fires every timer due at `now_ms`, earliest first. Requests do this too before they are
    /// handled, so a late `poll` never lets a request see state a timer should have changed.
    pub fn poll(&mut self, now_ms: u64) {
        self.advance(now_ms);
    }

    fn fire(&mut self, key: ClassicTimerKey) {
        match key {
            ClassicTimerKey::Heartbeat {
                group_id,
                member_id,
            } => self.with_group(&group_id, |group, fx| {
                fx.expire_member_heartbeat(group, &member_id)
            }),
            ClassicTimerKey::Join { group_id } => {
                self.with_group(&group_id, |group, fx| match group.join_timer {
                    JoinTimer::Complete => fx.complete_join_phase(group),
                    JoinTimer::InitialDelay {
                        delay_ms,
                        remaining_ms,
                    } => fx.try_complete_initial_rebalance_else_schedule(
                        group,
                        delay_ms,
                        remaining_ms,
                    ),
                })
            }
            ClassicTimerKey::Sync { group_id } => self.with_group(&group_id, |group, fx| {
                let generation = group.sync_timer_generation;
                fx.expire_pending_sync(group, generation)
            }),
        };
    }

    /// `onUnloaded`: the shard moved away. Every group becomes Dead; parked joins and syncs are
    /// answered NOT_COORDINATOR so their clients look the coordinator up again.
    pub fn unload(&mut self, now_ms: u64) {
        self.advance(now_ms);
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            self.with_group(&id, |group, fx| fx.unload_group(group));
        }
    }

    /// Moves the clock to `now_ms` (never backwards), firing due timers on the way; each timer
    /// runs at its own deadline, so what it schedules is relative to when it was due.
    pub(super) fn advance(&mut self, now_ms: u64) {
        while let Some(deadline_ms) = self.timers.next_deadline_ms().filter(|&d| d <= now_ms) {
            let Some(key) = self.timers.pop_expired(deadline_ms) else {
                break;
            };
            self.now_ms = self.now_ms.max(deadline_ms);
            self.fire(key);
        }
        self.now_ms = self.now_ms.max(now_ms);
    }

    pub(super) fn respond(&mut self, id: RequestId, response: ClassicResponse) {
        self.outbox.push((id, response));
    }

    /// Runs `f` on `group_id` (a no-op returning `None` if the group is unknown) with the
    /// shard's timers and outbox, so group logic can schedule and answer while it mutates.
    pub(super) fn with_group<R>(
        &mut self,
        group_id: &str,
        f: impl FnOnce(&mut ClassicGroup, &mut Effects<'_>) -> R,
    ) -> Option<R> {
        let Self {
            config,
            groups,
            timers,
            outbox,
            records,
            now_ms,
            expelled,
            ..
        } = self;
        let group = groups.get_mut(group_id)?;
        Self::stamp_state_change(group, *now_ms);
        let mut fx = Effects {
            config,
            timers,
            outbox,
            records,
            expelled,
            now_ms: *now_ms,
        };
        let result = f(group, &mut fx);
        Self::stamp_state_change(group, *now_ms);
        Some(result)
    }

    /// `transitionTo` stamps `currentStateTimestamp` with the time of the transition; every
    /// state change happens inside [`Self::with_group`], which stamps it here.
    fn stamp_state_change(group: &mut ClassicGroup, now_ms: u64) {
        if group.take_state_changed() {
            group.current_state_timestamp_ms = Some(now_ms);
        }
    }

    /// The group `group_id`, if this shard knows it as a classic group.
    pub fn group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.groups.get(group_id)
    }

    /// The ids of every classic group, in id order.
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }
}

/// A `StrBytes` copy of `s`.
pub(super) fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}
