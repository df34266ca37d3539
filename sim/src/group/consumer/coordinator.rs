//! `ConsumerGroupCoordinator`: all consumer groups of one `__consumer_offsets` shard, their
//! timers and the topic metadata they are assigned from.
//!
//! Requests are answered in `heartbeat.rs`, `describe.rs` and `offset_validation.rs`; this file
//! holds the state, fencing and the timers every request first catches up on.

use std::collections::BTreeMap;

use tracing::debug;

use super::config::ConsumerGroupConfig;
use super::group::ConsumerGroup;
use super::topics::TopicsImage;
use crate::coordinator::ExpelledMember;
use crate::group::member_id::MemberIdGenerator;
use crate::group::timer::Timers;

/// A coordinator timer, keyed per member like Kafka's `groupSessionTimeoutKey` and
/// `consumerGroupRebalanceTimeoutKey`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerKey {
    /// Fences the member when it stops heartbeating.
    Session { group_id: String, member_id: String },
    /// Fences the member when it has not revoked partitions in time.
    Rebalance { group_id: String, member_id: String },
    /// Fences a classic member told to rejoin (REBALANCE_IN_PROGRESS) that did not send
    /// JoinGroup within its rebalance timeout (`consumerGroupJoinKey`).
    ClassicJoin { group_id: String, member_id: String },
    /// Fences a classic member that did not send SyncGroup within its rebalance timeout after
    /// its JoinGroup (`consumerGroupSyncKey`).
    ClassicSync { group_id: String, member_id: String },
}

/// The KIP-848 group coordinator of one shard: sans-IO, driven with virtual milliseconds.
#[derive(Debug, Clone)]
pub struct ConsumerGroupCoordinator {
    pub(super) config: ConsumerGroupConfig,
    pub(super) topics: TopicsImage,
    pub(super) groups: BTreeMap<String, ConsumerGroup>,
    pub(super) timers: Timers<TimerKey>,
    /// The member epoch each rebalance timer was scheduled for: it only fences a member still at
    /// that epoch, as Kafka's timer task checks.
    pub(super) rebalance_timeout_epochs: BTreeMap<(String, String), i32>,
    /// Source of coordinator-generated member ids (v0 joins and classic joins with an empty
    /// member id), seeded so a run replays ([`Self::seed_member_ids`]).
    pub(super) member_ids: MemberIdGenerator,
    /// Groups that fencing left with classic members only and that the migration policy lets
    /// become classic groups again; the shard hands them to the classic coordinator
    /// ([`Self::take_downgraded_groups`]).
    pub(super) downgraded: Vec<DowngradedGroup>,
    /// Members fenced by a timer since the last [`Self::take_expelled`].
    pub(super) expelled: Vec<ExpelledMember>,
}

/// A consumer group removed from this coordinator to become a classic group (Kafka's
/// `convertToClassicGroup`): the group as it was when its last consumer-protocol member was
/// fenced, and the members whose departure triggered the conversion.
#[derive(Debug, Clone)]
pub struct DowngradedGroup {
    /// The group before the leaving members were removed (its target assignment is what the
    /// classic members are handed).
    pub group: ConsumerGroup,
    /// The members whose departure triggered the downgrade.
    pub leaving_member_ids: Vec<String>,
    /// Whether the classic group starts a rebalance: always after members left; after a static
    /// member's replacement (`validateOnlineDowngradeWithReplacedMember`) only if the joining
    /// instance's subscription differs from the replaced one's.
    pub rebalance: bool,
}

impl ConsumerGroupCoordinator {
    /// A coordinator with no groups, assigning from `topics`.
    pub fn new(config: ConsumerGroupConfig, topics: TopicsImage) -> Self {
        Self {
            config,
            topics,
            groups: BTreeMap::new(),
            timers: Timers::default(),
            rebalance_timeout_epochs: BTreeMap::new(),
            member_ids: MemberIdGenerator::new(0),
            downgraded: Vec::new(),
            expelled: Vec::new(),
        }
    }

    /// Seeds the member ids this coordinator generates (the shard's seed).
    pub fn seed_member_ids(&mut self, seed: u64) {
        self.member_ids = MemberIdGenerator::new(seed);
    }

    /// The group `group_id`, if this shard hosts it as a consumer group.
    pub fn group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.groups.get(group_id)
    }

    /// The settings this coordinator runs with.
    pub fn config(&self) -> &ConsumerGroupConfig {
        &self.config
    }

    /// The topic metadata assignments are computed from.
    pub fn topics(&self) -> &TopicsImage {
        &self.topics
    }

    /// When [`Self::poll`] next has work to do.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.timers.next_deadline_ms()
    }

    /// Fires every timer due at `now_ms`: expired sessions and overdue revocations fence their
    /// members. Every request handler calls this first, so the broker only needs to call it to
    /// make fencing visible without traffic.
    pub fn poll(&mut self, now_ms: u64) {
        while let Some(key) = self.timers.pop_expired(now_ms) {
            match key {
                TimerKey::Session {
                    group_id,
                    member_id,
                } => {
                    debug!(group_id, member_id, "fencing member: session expired");
                    self.expel(&group_id, &member_id, "session expired");
                }
                TimerKey::ClassicJoin {
                    group_id,
                    member_id,
                } => {
                    debug!(
                        group_id,
                        member_id, "fencing member: the classic member failed to rejoin in time"
                    );
                    self.expel(&group_id, &member_id, "did not rejoin in time");
                }
                TimerKey::ClassicSync {
                    group_id,
                    member_id,
                } => {
                    debug!(
                        group_id,
                        member_id, "fencing member: the classic member failed to sync in time"
                    );
                    self.expel(&group_id, &member_id, "did not sync in time");
                }
                TimerKey::Rebalance {
                    group_id,
                    member_id,
                } => {
                    let expected = self
                        .rebalance_timeout_epochs
                        .remove(&(group_id.clone(), member_id.clone()));
                    let current = self
                        .groups
                        .get(&group_id)
                        .and_then(|g| g.members.get(&member_id))
                        .map(|m| m.member_epoch);
                    if expected.is_some() && expected == current {
                        debug!(
                            group_id,
                            member_id,
                            "fencing member: partitions not revoked within rebalance timeout"
                        );
                        self.expel(&group_id, &member_id, "did not revoke in time");
                    }
                }
            }
        }
    }

    /// Replaces the topic metadata. Groups subscribed to a changed topic refresh their
    /// subscription metadata on their next heartbeat, which bumps the group epoch when it differs
    /// (Kafka's `onNewMetadataImage` + `requestMetadataRefresh`).
    pub fn on_topics_changed(&mut self, topics: TopicsImage) {
        let changed = self.topics.changed_names(&topics);
        self.topics = topics;
        if changed.is_empty() {
            return;
        }
        for group in self.groups.values_mut() {
            if group.subscribes_to_any(&changed) {
                group.metadata_refresh_requested = true;
            }
        }
    }

    /// Kafka's `consumerGroupFenceMember`: removes the member (see [`Self::fence_members`]).
    pub(super) fn fence_member(&mut self, group_id: &str, member_id: &str) {
        self.fence_members(group_id, &[member_id.to_owned()]);
    }

    /// [`Self::fence_member`] for a timer, noting the member for [`Self::take_expelled`] if it
    /// was still in the group.
    fn expel(&mut self, group_id: &str, member_id: &str, reason: &'static str) {
        let present = self
            .groups
            .get(group_id)
            .is_some_and(|g| g.members.contains_key(member_id));
        if present {
            self.expelled.push(ExpelledMember {
                group_id: group_id.to_owned(),
                member_id: member_id.to_owned(),
                reason,
            });
        }
        self.fence_member(group_id, member_id);
    }

    /// The members timers fenced since the last call, in order.
    pub fn take_expelled(&mut self) -> Vec<ExpelledMember> {
        std::mem::take(&mut self.expelled)
    }

    /// Kafka's `consumerGroupFenceMembers`: if only classic members would remain and
    /// `validateOnlineDowngradeWithFencedMembers` allows it, the whole group leaves this
    /// coordinator to become a classic group; otherwise the members are removed, the
    /// subscription metadata refreshed without them, the group epoch bumped once and their
    /// timers cancelled. The target assignment is recomputed by the next heartbeat or join.
    /// Unknown groups and members are ignored, as Kafka's timer tasks do.
    pub(super) fn fence_members(&mut self, group_id: &str, member_ids: &[String]) {
        let Some(group) = self.groups.get(group_id) else {
            return;
        };
        let leaving: Vec<String> = member_ids
            .iter()
            .filter(|id| group.members.contains_key(*id))
            .cloned()
            .collect();
        if leaving.is_empty() {
            return;
        }
        if self.validate_online_downgrade(group, &leaving) {
            debug!(
                group_id,
                ?leaving,
                "downgrading consumer group to a classic group"
            );
            if let Some(group) = self.groups.remove(group_id) {
                for member_id in group.members.keys() {
                    self.cancel_timers(group_id, member_id);
                }
                self.downgraded.push(DowngradedGroup {
                    group,
                    leaving_member_ids: leaving,
                    rebalance: true,
                });
            }
            return;
        }
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        for member_id in &leaving {
            group.remove_member(member_id);
        }
        group.subscription_metadata = group.compute_subscription_metadata(&self.topics);
        group.group_epoch += 1;
        debug!(
            group_id,
            ?leaving,
            group_epoch = group.group_epoch,
            "bumped group epoch: members removed"
        );
        for member_id in &leaving {
            self.cancel_timers(group_id, member_id);
        }
    }

    /// Kafka's `validateOnlineDowngradeWithReplacedMember`: a classic static member replacing
    /// `replaced` leaves only classic members, the policy allows downgrades and the group fits
    /// in a classic group.
    pub(super) fn validate_online_downgrade_with_replaced_member(
        &self,
        group: &ConsumerGroup,
        replaced: &str,
    ) -> bool {
        if !group.all_members_use_classic_protocol_except(&[replaced.to_owned()]) {
            return false;
        }
        if !self.config.migration_policy.is_downgrade_enabled() {
            debug!(
                group_id = group.group_id,
                "not downgrading at a static member's replacement: online downgrade is disabled"
            );
            return false;
        }
        if group.members.len() > self.config.classic_group_max_size {
            debug!(
                group_id = group.group_id,
                "not downgrading at a static member's replacement: larger than a classic group may be"
            );
            return false;
        }
        true
    }

    /// Hands `group_id` to the classic coordinator after a static member's replacement
    /// (`convertToClassicGroup` with a joining member): every member's timers are cancelled.
    pub(super) fn downgrade_after_replacement(&mut self, group_id: &str, rebalance: bool) {
        if let Some(group) = self.groups.remove(group_id) {
            for member_id in group.members.keys() {
                self.cancel_timers(group_id, member_id);
            }
            self.downgraded.push(DowngradedGroup {
                group,
                leaving_member_ids: Vec::new(),
                rebalance,
            });
        }
    }

    /// Kafka's `validateOnlineDowngradeWithFencedMembers`: the members left after `leaving` all
    /// use the classic protocol, there is at least one, the policy allows downgrades and they
    /// fit in a classic group.
    fn validate_online_downgrade(&self, group: &ConsumerGroup, leaving: &[String]) -> bool {
        if !group.all_members_use_classic_protocol_except(leaving) {
            return false;
        }
        let remaining = group.members.len() - leaving.len();
        if remaining == 0 {
            debug!(
                group_id = group.group_id,
                "not downgrading an empty consumer group"
            );
            return false;
        }
        if !self.config.migration_policy.is_downgrade_enabled() {
            debug!(
                group_id = group.group_id,
                "cannot downgrade consumer group: online downgrade is disabled"
            );
            return false;
        }
        if remaining > self.config.classic_group_max_size {
            debug!(
                group_id = group.group_id,
                "cannot downgrade consumer group: more members than the classic group max size"
            );
            return false;
        }
        true
    }

    /// The groups fencing turned into classic groups since the last call.
    pub fn take_downgraded_groups(&mut self) -> Vec<DowngradedGroup> {
        std::mem::take(&mut self.downgraded)
    }

    /// Installs a group converted from a classic group (Kafka's `convertToConsumerGroup`) and
    /// starts each member's session timer with its classic session timeout.
    pub fn adopt_upgraded_group(&mut self, group: ConsumerGroup, now_ms: u64) {
        let group_id = group.group_id.clone();
        let member_ids: Vec<String> = group.members.keys().cloned().collect();
        self.groups.insert(group_id.clone(), group);
        for member_id in member_ids {
            self.schedule_session_timeout(&group_id, &member_id, now_ms);
        }
    }

    /// (Re)starts the member's session timer: a classic member's own session timeout
    /// (`classicProtocolSessionTimeout`), the group's otherwise.
    pub(super) fn schedule_session_timeout(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: u64,
    ) {
        let session_timeout_ms = self
            .groups
            .get(group_id)
            .and_then(|g| g.members.get(member_id))
            .map_or(self.config.session_timeout_ms, |m| {
                m.session_timeout_ms(self.config.session_timeout_ms)
            });
        self.schedule_session_timeout_ms(group_id, member_id, session_timeout_ms, now_ms);
    }

    /// (Re)starts the member's session timer with `session_timeout_ms`.
    pub(super) fn schedule_session_timeout_ms(
        &mut self,
        group_id: &str,
        member_id: &str,
        session_timeout_ms: i32,
        now_ms: u64,
    ) {
        let session_timeout_ms = u64::try_from(session_timeout_ms).unwrap_or(0);
        self.timers.schedule(
            TimerKey::Session {
                group_id: group_id.to_owned(),
                member_id: member_id.to_owned(),
            },
            now_ms.saturating_add(session_timeout_ms),
        );
    }

    pub(super) fn schedule_rebalance_timeout(
        &mut self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        rebalance_timeout_ms: i32,
        now_ms: u64,
    ) {
        self.timers.schedule(
            TimerKey::Rebalance {
                group_id: group_id.to_owned(),
                member_id: member_id.to_owned(),
            },
            now_ms.saturating_add(u64::try_from(rebalance_timeout_ms).unwrap_or(0)),
        );
        self.rebalance_timeout_epochs
            .insert((group_id.to_owned(), member_id.to_owned()), member_epoch);
    }

    pub(super) fn cancel_rebalance_timeout(&mut self, group_id: &str, member_id: &str) {
        self.timers.cancel(&TimerKey::Rebalance {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        });
        self.rebalance_timeout_epochs
            .remove(&(group_id.to_owned(), member_id.to_owned()));
    }

    pub(super) fn cancel_timers(&mut self, group_id: &str, member_id: &str) {
        let (group_id, member_id) = (group_id.to_owned(), member_id.to_owned());
        for key in [
            TimerKey::Session {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
            TimerKey::ClassicJoin {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
            TimerKey::ClassicSync {
                group_id: group_id.clone(),
                member_id: member_id.clone(),
            },
        ] {
            self.timers.cancel(&key);
        }
        self.cancel_rebalance_timeout(&group_id, &member_id);
    }

    /// `scheduleConsumerGroupJoinTimeoutIfAbsent`: a classic member told to rejoin must do so
    /// within its rebalance timeout; an earlier deadline is kept.
    pub(super) fn schedule_classic_join_timeout_if_absent(
        &mut self,
        group_id: &str,
        member_id: &str,
        rebalance_timeout_ms: i32,
        now_ms: u64,
    ) {
        let key = TimerKey::ClassicJoin {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        };
        if self.timers.deadline_ms(&key).is_none() {
            let timeout_ms = u64::try_from(rebalance_timeout_ms).unwrap_or(0);
            self.timers.schedule(key, now_ms.saturating_add(timeout_ms));
        }
    }

    /// `cancelConsumerGroupJoinTimeout`.
    pub(super) fn cancel_classic_join_timeout(&mut self, group_id: &str, member_id: &str) {
        self.timers.cancel(&TimerKey::ClassicJoin {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        });
    }

    /// `scheduleConsumerGroupSyncTimeout`: the SyncGroup must follow the JoinGroup within the
    /// member's rebalance timeout.
    pub(super) fn schedule_classic_sync_timeout(
        &mut self,
        group_id: &str,
        member_id: &str,
        rebalance_timeout_ms: i32,
        now_ms: u64,
    ) {
        let timeout_ms = u64::try_from(rebalance_timeout_ms).unwrap_or(0);
        self.timers.schedule(
            TimerKey::ClassicSync {
                group_id: group_id.to_owned(),
                member_id: member_id.to_owned(),
            },
            now_ms.saturating_add(timeout_ms),
        );
    }

    /// `cancelConsumerGroupSyncTimeout`.
    pub(super) fn cancel_classic_sync_timeout(&mut self, group_id: &str, member_id: &str) {
        self.timers.cancel(&TimerKey::ClassicSync {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        });
    }
}
