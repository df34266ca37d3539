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
use crate::group::timer::Timers;

/// A coordinator timer, keyed per member like Kafka's `groupSessionTimeoutKey` and
/// `consumerGroupRebalanceTimeoutKey`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerKey {
    /// Fences the member when it stops heartbeating.
    Session { group_id: String, member_id: String },
    /// Fences the member when it has not revoked partitions in time.
    Rebalance { group_id: String, member_id: String },
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
    /// Source of coordinator-generated member ids (v0 joins with an empty member id).
    pub(super) next_generated_member_id: u64,
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
            next_generated_member_id: 0,
        }
    }

    /// The group `group_id`, if this shard hosts it as a consumer group.
    pub fn group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.groups.get(group_id)
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
                    self.fence_member(&group_id, &member_id);
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
                        self.fence_member(&group_id, &member_id);
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

    /// Kafka's `consumerGroupFenceMember`: removes the member, refreshes the subscription
    /// metadata without it, bumps the group epoch and cancels the member's timers. The target
    /// assignment is recomputed by the next heartbeat. Unknown groups and members are ignored, as
    /// Kafka's timer tasks do.
    pub(super) fn fence_member(&mut self, group_id: &str, member_id: &str) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.remove_member(member_id).is_none() {
            return;
        }
        group.subscription_metadata = group.compute_subscription_metadata(&self.topics);
        group.group_epoch += 1;
        debug!(
            group_id,
            member_id,
            group_epoch = group.group_epoch,
            "bumped group epoch: member removed"
        );
        self.cancel_timers(group_id, member_id);
    }

    pub(super) fn schedule_session_timeout(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: u64,
    ) {
        let session_timeout_ms = u64::try_from(self.config.session_timeout_ms).unwrap_or(0);
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
        self.timers.cancel(&TimerKey::Session {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        });
        self.cancel_rebalance_timeout(group_id, member_id);
    }
}
