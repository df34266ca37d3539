//! A consumer group's state: Kafka's `ConsumerGroup` without the timeline machinery.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use uuid::Uuid;

use super::assignment::{self, Assignment};
use super::member::ConsumerGroupMember;
use super::reconcile::UNOWNED_PARTITION_EPOCH;
use super::topics::TopicsImage;

/// Kafka's `ConsumerGroup.ConsumerGroupState`, as describe reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch moved past the target assignment; the next heartbeat recomputes it.
    Assigning,
    /// Some member has not reached the target assignment yet.
    Reconciling,
    /// Every member owns exactly its target assignment.
    Stable,
}

impl ConsumerGroupState {
    /// Kafka's `toString()`, the `GroupState` string of ConsumerGroupDescribe.
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// A subscribed topic as the group last saw it; a change bumps the group epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscribedTopic {
    /// Topic id.
    pub id: Uuid,
    /// Partition count.
    pub partition_count: i32,
}

/// One consumer group.
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    /// The group id.
    pub group_id: String,
    /// Bumped on every membership, subscription or subscribed-metadata change.
    pub group_epoch: i32,
    /// The group epoch the target assignment was computed for.
    pub assignment_epoch: i32,
    /// Members by member id.
    pub members: BTreeMap<String, ConsumerGroupMember>,
    /// Member id of every static member, by instance id.
    pub static_members: BTreeMap<String, String>,
    /// Target assignment by member id, computed at `assignment_epoch`.
    pub target_assignment: BTreeMap<String, Assignment>,
    /// When the target assignment was last computed (Kafka 4.4's `assignmentTimestamp`);
    /// `None` when it never was here or the time is not known, which lets the next one be
    /// computed at once.
    pub assignment_timestamp_ms: Option<u64>,
    /// Kafka's subscription metadata: every subscribed topic that exists, by name.
    pub subscription_metadata: BTreeMap<String, SubscribedTopic>,
    /// Set when subscribed topics changed in the cluster: the next heartbeat recomputes the
    /// subscription metadata (Kafka's `requestMetadataRefresh`).
    pub metadata_refresh_requested: bool,
}

impl ConsumerGroup {
    /// An empty group at epoch 0.
    pub fn new(group_id: &str) -> Self {
        Self::at_epoch(group_id, 0)
    }

    /// An empty group whose group epoch and (empty) target assignment are at `epoch`: a new
    /// group starts at [`ConsumerGroupConfig::initial_group_epoch`](super::ConsumerGroupConfig::initial_group_epoch).
    pub fn at_epoch(group_id: &str, epoch: i32) -> Self {
        Self {
            group_id: group_id.to_owned(),
            group_epoch: epoch,
            assignment_epoch: epoch,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            target_assignment: BTreeMap::new(),
            assignment_timestamp_ms: None,
            subscription_metadata: BTreeMap::new(),
            metadata_refresh_requested: false,
        }
    }

    /// Kafka's `maybeUpdateGroupState`.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The member holding instance id `instance_id`.
    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.static_members
            .get(instance_id)
            .and_then(|member_id| self.members.get(member_id))
    }

    /// Stores `member`, keeping the static member index in step.
    pub fn update_member(&mut self, member: ConsumerGroupMember) {
        if let Some(instance_id) = &member.instance_id {
            self.static_members
                .insert(instance_id.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes member `member_id` and its target assignment.
    pub fn remove_member(&mut self, member_id: &str) -> Option<ConsumerGroupMember> {
        let member = self.members.remove(member_id)?;
        if let Some(instance_id) = &member.instance_id {
            if self.static_members.get(instance_id).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance_id);
            }
        }
        self.target_assignment.remove(member_id);
        Some(member)
    }

    /// Kafka's `supportsClassicProtocols`: a classic joiner must use the consumer protocol type
    /// and share at least one assignor name with every classic member already in the group.
    pub fn supports_classic_protocols<'a>(
        &self,
        protocol_type: &str,
        mut protocol_names: impl Iterator<Item = &'a str>,
    ) -> bool {
        if protocol_type != crate::group::migration::CONSUMER_PROTOCOL_TYPE {
            return false;
        }
        if self.members.is_empty() {
            return protocol_names.next().is_some();
        }
        let classic: Vec<_> = self
            .members
            .values()
            .filter_map(|m| m.classic.as_ref())
            .collect();
        protocol_names.any(|name| {
            classic
                .iter()
                .all(|c| c.supported_protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// Kafka's `allMembersUseClassicProtocolExcept(Set)`: once `leaving` are gone, only classic
    /// members remain (none at all counts as true; the caller checks for an empty group).
    pub fn all_members_use_classic_protocol_except(&self, leaving: &[String]) -> bool {
        self.members
            .iter()
            .filter(|(id, _)| !leaving.contains(id))
            .all(|(_, m)| m.uses_classic_protocol())
    }

    /// Kafka's `waitingOnUnreleasedPartition`: the member waits for a target partition another
    /// member still holds.
    pub fn waiting_on_unreleased_partition(&self, member: &ConsumerGroupMember) -> bool {
        if member.state != super::member::MemberState::UnreleasedPartitions {
            return false;
        }
        let Some(target) = self.target_assignment.get(&member.member_id) else {
            return false;
        };
        let epochs = self.partition_epochs();
        assignment::pairs(target).any(|(topic_id, p)| {
            !assignment::contains(&member.assigned_partitions, topic_id, p)
                && Self::partition_epoch(&epochs, topic_id, p) != UNOWNED_PARTITION_EPOCH
        })
    }

    /// Kafka's `currentPartitionEpoch` for every owned partition: the epoch of the member that
    /// holds it, assigned or still pending revocation.
    pub fn partition_epochs(&self) -> BTreeMap<(Uuid, i32), i32> {
        let mut epochs = BTreeMap::new();
        for member in self.members.values() {
            let held = assignment::pairs(&member.assigned_partitions)
                .chain(assignment::pairs(&member.partitions_pending_revocation));
            for tp in held {
                epochs.insert(tp, member.member_epoch);
            }
        }
        epochs
    }

    /// The epoch of the owner of a partition, [`UNOWNED_PARTITION_EPOCH`] when free.
    pub fn partition_epoch(epochs: &BTreeMap<(Uuid, i32), i32>, topic_id: Uuid, p: i32) -> i32 {
        epochs
            .get(&(topic_id, p))
            .copied()
            .unwrap_or(UNOWNED_PARTITION_EPOCH)
    }

    /// Kafka's `computeSubscriptionMetadata`: the existing topics any member subscribes to.
    pub fn compute_subscription_metadata(
        &self,
        topics: &TopicsImage,
    ) -> BTreeMap<String, SubscribedTopic> {
        self.members
            .values()
            .flat_map(|m| subscribed_topic_names(m, topics))
            .filter_map(|name| {
                let topic = topics.topic(&name)?;
                Some((
                    name,
                    SubscribedTopic {
                        id: topic.id,
                        partition_count: topic.partition_count,
                    },
                ))
            })
            .collect()
    }

    /// Kafka's `ModernGroup.subscribedTopicNames` check used when topics change: whether any
    /// member subscribes to one of `names`, directly or through a regex.
    pub fn subscribes_to_any(&self, names: &[String]) -> bool {
        self.members.values().any(|m| {
            names.iter().any(|name| {
                m.subscribed_topic_names.contains(name)
                    || m.subscribed_topic_regex
                        .as_deref()
                        .and_then(compile_full_match)
                        .is_some_and(|re| re.is_match(name))
            })
        })
    }
}

/// A member's effective subscription: its topic names plus the existing non-internal topics its
/// regex fully matches.
pub fn subscribed_topic_names(
    member: &ConsumerGroupMember,
    topics: &TopicsImage,
) -> BTreeSet<String> {
    let mut names = member.subscribed_topic_names.clone();
    if let Some(re) = member
        .subscribed_topic_regex
        .as_deref()
        .and_then(compile_full_match)
    {
        names.extend(
            topics
                .iter()
                .map(|(name, _)| name)
                .filter(|name| !is_internal_topic(name) && re.is_match(name))
                .map(str::to_owned),
        );
    }
    names
}

/// Compiles `pattern` to match whole topic names only, like RE2J's `Matcher.matches()`.
pub fn compile_full_match(pattern: &str) -> Option<Regex> {
    Regex::new(&format!("^(?:{pattern})$")).ok()
}

/// Kafka's `Topic.isInternal`: never matched by a regex subscription.
fn is_internal_topic(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}
