//! Server-side assignors (KIP-848 `group.consumer.assignors`): pure functions from the group's
//! subscriptions and current target assignment to the next target assignment.
//!
//! - [`uniform`]: Kafka's default `UniformAssignor`, balanced and sticky.
//! - [`range`]: Kafka's server `RangeAssignor`, co-partitioned ranges per topic.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::assignment::Assignment;

pub mod range;
pub mod uniform;
mod uniform_heterogeneous;

#[cfg(test)]
mod properties;

/// The assignors Kafka ships, by their `name()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServerAssignor {
    /// `uniform`.
    Uniform,
    /// `range`.
    Range,
}

impl ServerAssignor {
    /// The name members send in `ServerAssignor` and describe reports.
    pub fn name(self) -> &'static str {
        match self {
            ServerAssignor::Uniform => "uniform",
            ServerAssignor::Range => "range",
        }
    }

    /// Computes the target assignment for every member of `spec`.
    pub fn assign(self, spec: &GroupSpec) -> GroupAssignment {
        match self {
            ServerAssignor::Uniform => uniform::assign(spec),
            ServerAssignor::Range => range::assign(spec),
        }
    }
}

/// What an assignor knows about one member (Kafka's `MemberSubscription` plus its current target
/// assignment, used for stickiness).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSpec {
    /// Static members sort first in the range assignor, so a restarted instance keeps its range.
    pub instance_id: Option<String>,
    /// Subscribed topics that exist.
    pub subscribed_topic_ids: BTreeSet<Uuid>,
    /// The member's previous target assignment.
    pub current_assignment: Assignment,
}

/// Kafka's `GroupSpec` and `SubscribedTopicDescriber` in one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSpec {
    /// Members by member id.
    pub members: BTreeMap<String, MemberSpec>,
    /// Partition count of every subscribed topic.
    pub partition_counts: BTreeMap<Uuid, i32>,
}

impl GroupSpec {
    /// Kafka's `SubscriptionType.HOMOGENEOUS`: every member subscribes to the same topics.
    pub fn is_homogeneous(&self) -> bool {
        let mut subscriptions = self.members.values().map(|m| &m.subscribed_topic_ids);
        match subscriptions.next() {
            Some(first) => subscriptions.all(|s| s == first),
            None => true,
        }
    }

    /// Partition count of `topic_id`, 0 when unknown.
    pub fn partition_count(&self, topic_id: Uuid) -> i32 {
        self.partition_counts.get(&topic_id).copied().unwrap_or(0)
    }
}

/// Target assignment by member id; every member of the spec has an entry.
pub type GroupAssignment = BTreeMap<String, Assignment>;
