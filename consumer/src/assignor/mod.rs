//! Client-side partition assignors for the classic group protocol, faithful to Kafka's Java
//! client: [`range`], [`round_robin`], [`sticky`] and [`cooperative_sticky`], plus the
//! `ConsumerProtocol` wire format ([`protocol`]) that carries subscriptions and assignments inside
//! JoinGroup and SyncGroup.
//!
//! In the classic protocol the broker does not assign partitions: it elects one member the group
//! leader, hands it every member's [`Subscription`], and the leader's chosen assignor computes the
//! [`Assignment`]s it sends back in SyncGroup. Every member must therefore agree on the algorithm
//! bit for bit with whatever Java consumers share the group, which is why these follow Java's
//! ordering rules exactly (member ordering, partition ordering, tie breaks), and why every
//! assignor is a pure function of its inputs: `BTreeMap`s in, `BTreeMap`s out, no randomness.
//!
//! Select assignors from `partition.assignment.strategy` names with [`assignors_for_strategy`].

pub mod cooperative_sticky;
pub mod error;
pub mod protocol;
pub mod range;
mod registered;
pub mod round_robin;
pub mod sticky;

mod abstract_sticky;
pub use abstract_sticky::MemberData;
#[cfg(test)]
mod protocol_proptests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use bytes::Bytes;

pub use cooperative_sticky::CooperativeStickyAssignor;
pub use error::{AssignorError, ConsumerProtocolError, ConsumerProtocolMessage};
pub use range::RangeAssignor;
pub use registered::RegisteredAssignor;
pub use round_robin::RoundRobinAssignor;
pub use sticky::StickyAssignor;

/// Java's `AbstractStickyAssignor.DEFAULT_GENERATION`: "no generation known".
pub const DEFAULT_GENERATION: i32 = -1;

/// Java's default `partition.assignment.strategy` (Kafka 3.0+): range first, so a group keeps
/// working with older members, and cooperative-sticky so the group can be upgraded to it with a
/// single rolling bounce.
pub const DEFAULT_PARTITION_ASSIGNMENT_STRATEGY: &[&str] = &["range", "cooperative-sticky"];

/// One partition of one topic: the crate's [`crate::TopicPartition`]. Its ordering (topic,
/// then partition) is Java's `TopicPartitionComparator`, which the assignors rely on, and it
/// displays as Java's `TopicPartition.toString`, `topic-partition`.
pub use crate::types::TopicPartition;

/// How an assignor moves partitions between members (Java's `RebalanceProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RebalanceProtocol {
    /// Every member revokes everything before joining; the assignment may reshuffle freely.
    Eager,
    /// Members keep their partitions through the rebalance; a partition that must move is first
    /// only revoked, and handed to its new owner in a follow-up rebalance.
    Cooperative,
}

impl RebalanceProtocol {
    /// The protocol's id in Java (`RebalanceProtocol.id()`).
    pub fn id(self) -> u8 {
        match self {
            Self::Eager => 0,
            Self::Cooperative => 1,
        }
    }
}

/// One member's subscription as the leader sees it (Java's `ConsumerPartitionAssignor.Subscription`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    /// The topics the member wants to consume.
    pub topics: Vec<String>,
    /// Assignor-specific data from [`ConsumerPartitionAssignor::subscription_user_data`].
    pub user_data: Option<Bytes>,
    /// The partitions the member owns now (ConsumerProtocolSubscription v1+; empty for eager
    /// members, which revoke everything before joining).
    pub owned_partitions: Vec<TopicPartition>,
    /// The generation in which the member last received an assignment (v2+); `None` for a new
    /// member or an older client.
    pub generation_id: Option<i32>,
    /// The member's `client.rack` (v3+), used by rack-aware assignment.
    pub rack_id: Option<String>,
    /// The member's `group.instance.id` if it is a static member. It is not part of the
    /// subscription bytes: the coordinator reports it in the JoinGroup response's member list.
    pub group_instance_id: Option<String>,
}

impl Subscription {
    /// A subscription to `topics` with nothing else set.
    pub fn new<S: Into<String>>(topics: impl IntoIterator<Item = S>) -> Self {
        Self {
            topics: topics.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }
}

/// One member's assignment (Java's `ConsumerPartitionAssignor.Assignment`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// The partitions assigned to the member.
    pub partitions: Vec<TopicPartition>,
    /// Assignor-specific data for the member; none of the built-in assignors sets it.
    pub user_data: Option<Bytes>,
}

impl Assignment {
    /// An assignment of `partitions` without user data.
    pub fn new(partitions: Vec<TopicPartition>) -> Self {
        Self {
            partitions,
            user_data: None,
        }
    }
}

/// The cluster metadata an assignor needs: each topic's partitions and, for rack-aware
/// assignment (KIP-881), the racks holding each partition's replicas.
///
/// Partition `i` of a topic is at index `i`: Kafka partitions are numbered densely from zero,
/// which Java's assignors assume too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterMetadata {
    topics: BTreeMap<String, Vec<BTreeSet<String>>>,
}

impl ClusterMetadata {
    /// Empty metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// Metadata without rack information from `(topic, partition count)` pairs.
    pub fn from_partition_counts<S: Into<String>>(
        counts: impl IntoIterator<Item = (S, usize)>,
    ) -> Self {
        let mut cluster = Self::new();
        for (topic, count) in counts {
            cluster.add_topic(topic, count);
        }
        cluster
    }

    /// Adds (or replaces) a topic with `partitions` partitions and no rack information.
    pub fn add_topic(&mut self, topic: impl Into<String>, partitions: usize) {
        self.topics
            .insert(topic.into(), vec![BTreeSet::new(); partitions]);
    }

    /// Adds (or replaces) a topic whose partition `i` has replicas on the racks `replica_racks[i]`
    /// (replicas on brokers without a rack contribute nothing).
    pub fn add_topic_with_racks(
        &mut self,
        topic: impl Into<String>,
        replica_racks: Vec<BTreeSet<String>>,
    ) {
        self.topics.insert(topic.into(), replica_racks);
    }

    /// The number of partitions of `topic`, if the metadata knows it.
    pub fn partition_count(&self, topic: &str) -> Option<usize> {
        self.topics.get(topic).map(Vec::len)
    }

    /// The racks of `topic`'s partitions, indexed by partition.
    pub fn partition_racks(&self, topic: &str) -> Option<&[BTreeSet<String>]> {
        self.topics.get(topic).map(Vec::as_slice)
    }
}

/// Member id → subscription, as the leader receives them from JoinGroup.
pub type GroupSubscription = BTreeMap<String, Subscription>;
/// Member id → assignment, as the leader sends them in SyncGroup.
pub type GroupAssignment = BTreeMap<String, Assignment>;

/// A client-side partition assignor (Java's `ConsumerPartitionAssignor`).
pub trait ConsumerPartitionAssignor: fmt::Debug + Send + Sync {
    /// The protocol name sent in JoinGroup (`range`, `roundrobin`, `sticky`, `cooperative-sticky`).
    fn name(&self) -> &'static str;

    /// The rebalance protocols this assignor's assignments obey, preferred first.
    fn supported_protocols(&self) -> &'static [RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    /// The version of the assignor's user data and algorithm.
    fn version(&self) -> i16 {
        0
    }

    /// User data to send in this member's subscription (e.g. the sticky assignor's previous
    /// assignment), computed from state kept by [`Self::on_assignment`].
    fn subscription_user_data(&self, _topics: &BTreeSet<String>) -> Option<Bytes> {
        None
    }

    /// Computes the group's assignment; runs on the group leader only. The result has one entry
    /// per member of `subscriptions`. Topics missing from `cluster` (or with no partitions) are
    /// skipped, as Java does.
    fn assign(
        &self,
        cluster: &ClusterMetadata,
        subscriptions: &GroupSubscription,
    ) -> Result<GroupAssignment, AssignorError>;

    /// Called on every member with the assignment it received in `generation`.
    fn on_assignment(&mut self, _assignment: &Assignment, _generation: i32) {}
}

/// The assignor for one `partition.assignment.strategy` entry: a short name (`range`,
/// `roundrobin`, `sticky`, `cooperative-sticky`) or the Java class name it stands for, so a
/// configuration written for the Java client works unchanged.
pub fn assignor_by_name(name: &str) -> Result<Box<dyn ConsumerPartitionAssignor>, AssignorError> {
    let name = name.trim();
    let short = name
        .strip_prefix("org.apache.kafka.clients.consumer.")
        .unwrap_or(name);
    match short {
        "range" | "RangeAssignor" => Ok(Box::new(RangeAssignor)),
        "roundrobin" | "RoundRobinAssignor" => Ok(Box::new(RoundRobinAssignor)),
        "sticky" | "StickyAssignor" => Ok(Box::new(StickyAssignor::default())),
        "cooperative-sticky" | "CooperativeStickyAssignor" => {
            Ok(Box::new(CooperativeStickyAssignor::default()))
        }
        _ => Err(AssignorError::UnknownAssignor {
            name: name.to_owned(),
        }),
    }
}

/// The assignors for a whole `partition.assignment.strategy` list, in order (the order is the
/// member's preference in JoinGroup). Like Java, two entries that resolve to the same assignor
/// name are an error.
pub fn assignors_for_strategy<S: AsRef<str>>(
    names: &[S],
) -> Result<Vec<Box<dyn ConsumerPartitionAssignor>>, AssignorError> {
    let mut seen = BTreeSet::new();
    let mut assignors = Vec::with_capacity(names.len());
    for name in names {
        let assignor = assignor_by_name(name.as_ref())?;
        if !seen.insert(assignor.name()) {
            return Err(AssignorError::DuplicateAssignorName {
                name: assignor.name().to_owned(),
            });
        }
        assignors.push(assignor);
    }
    Ok(assignors)
}

/// Java's `MemberInfo` ordering: static members (with a `group.instance.id`) first, by instance
/// id, then dynamic members by member id. Static members' ids survive restarts, so ordering by
/// them keeps range and round-robin assignments stable across rolling bounces.
fn member_order<'a>(member_id: &'a str, subscription: &'a Subscription) -> (bool, &'a str) {
    match &subscription.group_instance_id {
        Some(instance) => (false, instance.as_str()),
        None => (true, member_id),
    }
}

/// The partition count of every topic that some member subscribes to and that the metadata
/// knows with at least one partition (Java's `AbstractPartitionAssignor.assign`).
fn subscribed_topics<'a>(
    cluster: &'a ClusterMetadata,
    subscriptions: &GroupSubscription,
) -> BTreeMap<String, &'a [BTreeSet<String>]> {
    subscriptions
        .values()
        .flat_map(|s| s.topics.iter())
        .filter_map(|topic| {
            cluster
                .partition_racks(topic)
                .filter(|racks| !racks.is_empty())
                .map(|racks| (topic.clone(), racks))
        })
        .collect()
}

/// Java's `AbstractPartitionAssignor.useRackAwareAssignment`: rack-aware logic pays off only if
/// some member has a rack that some replica is on, and the partitions are not all on the same
/// racks (if they were, every member would be equally close to every partition).
fn use_rack_aware_assignment<'a>(
    consumer_racks: &BTreeSet<&str>,
    partition_racks: impl IntoIterator<Item = &'a BTreeSet<String>> + Clone,
) -> bool {
    let all_partition_racks: BTreeSet<&str> = partition_racks
        .clone()
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if consumer_racks.is_empty() || consumer_racks.is_disjoint(&all_partition_racks) {
        return false;
    }
    !partition_racks.into_iter().all(|racks| {
        racks
            .iter()
            .map(String::as_str)
            .eq(all_partition_racks.iter().copied())
    })
}

/// A subscription's rack, treating the empty string as none (Java filters `!r.isEmpty()`).
fn rack_of(subscription: &Subscription) -> Option<&str> {
    subscription.rack_id.as_deref().filter(|r| !r.is_empty())
}

/// Wraps raw per-member partition lists as assignments without user data.
fn into_group_assignment(raw: BTreeMap<String, Vec<TopicPartition>>) -> GroupAssignment {
    raw.into_iter()
        .map(|(member, partitions)| (member, Assignment::new(partitions)))
        .collect()
}
