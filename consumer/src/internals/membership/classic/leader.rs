//! The group leader's share of a classic rebalance (Java's `ConsumerCoordinator.onLeaderElected`):
//! read every member's subscription, run the assignor on the cluster metadata, encode the
//! assignments for SyncGroup, and remember the partition counts it assigned from so a later
//! change triggers a rebalance. The snapshot covers every topic the group subscribes to, also
//! those the metadata does not have yet (Java's `MetadataSnapshot` over `metadataTopics()`): a
//! topic created after the assignment changes the snapshot and so triggers the rebalance that
//! assigns it.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;

use crate::assignor::protocol::{
    decode_subscription, encode_assignment, CONSUMER_PROTOCOL_VERSION,
};
use crate::assignor::{
    ClusterMetadata, ConsumerPartitionAssignor, GroupSubscription, Subscription,
};
use crate::error::Error;
use crate::internals::context::ManagerContext;

/// Each member's encoded assignment, for SyncGroup.
pub(crate) type EncodedAssignments = Vec<(String, Bytes)>;
/// Partition counts by topic.
pub(crate) type PartitionCounts = BTreeMap<String, usize>;

/// One member's subscription as the leader received it.
#[derive(Debug, Clone)]
pub(crate) struct MemberSubscription {
    /// The member id.
    pub member_id: String,
    /// The decoded subscription (with the member's `group.instance.id`).
    pub subscription: Subscription,
}

/// Decodes the JoinGroup response's member list. A subscription the leader cannot read fails
/// the rebalance loudly (Java throws too): assigning around it would starve that member.
pub(crate) fn decode_members(
    members: &[JoinGroupResponseMember],
) -> Result<Vec<MemberSubscription>, Error> {
    members
        .iter()
        .map(|m| {
            let mut subscription = decode_subscription(&m.metadata).map_err(|e| Error::Fatal {
                code: None,
                message: format!(
                    "cannot read the subscription of member {}: {e}",
                    m.member_id
                ),
            })?;
            subscription.group_instance_id = m.group_instance_id.as_ref().map(ToString::to_string);
            Ok(MemberSubscription {
                member_id: m.member_id.to_string(),
                subscription,
            })
        })
        .collect()
}

/// Every topic some member subscribes to.
pub(crate) fn group_topics(members: &[MemberSubscription]) -> BTreeSet<String> {
    members
        .iter()
        .flat_map(|m| m.subscription.topics.iter().cloned())
        .collect()
}

/// The partition counts of `topics` in the current metadata. Absent topics, and topics the
/// metadata lists without partitions yet (a topic being created answers
/// LEADER_NOT_AVAILABLE), are left out: both mean "nothing to assign", so a topic that goes
/// from one to the other does not rebalance twice.
pub(crate) fn partition_counts<'a>(
    ctx: &ManagerContext<'_>,
    topics: impl IntoIterator<Item = &'a String>,
) -> PartitionCounts {
    topics
        .into_iter()
        .filter_map(|t| {
            let topic = ctx.metadata.topic(t)?;
            (!topic.partitions.is_empty()).then(|| (t.clone(), topic.partitions.len()))
        })
        .collect()
}

/// Java's `MetadataSnapshot`: the partition counts of every topic this member fetches
/// metadata for — its own subscription and, on the leader, the whole group's — so that a
/// subscribed topic that appears, disappears or grows after the assignment is noticed.
pub(crate) fn metadata_snapshot(ctx: &ManagerContext<'_>) -> PartitionCounts {
    partition_counts(ctx, ctx.subscriptions.metadata_topics().iter())
}

/// The assignor's view of the cluster: partitions of the group's topics with their replicas'
/// racks (for rack-aware assignment, KIP-881).
fn cluster_metadata(ctx: &ManagerContext<'_>, topics: &BTreeSet<String>) -> ClusterMetadata {
    let mut cluster = ClusterMetadata::new();
    for name in topics {
        let Some(topic) = ctx.metadata.topic(name) else {
            continue;
        };
        let racks = topic
            .partitions
            .values()
            .map(|p| {
                p.replica_nodes
                    .iter()
                    .filter_map(|node| ctx.metadata.broker(*node)?.rack.clone())
                    .collect()
            })
            .collect();
        cluster.add_topic_with_racks(name.clone(), racks);
    }
    cluster
}

/// Runs `assignor` for the group; returns each member's encoded assignment and the metadata
/// snapshot it assigned from (taken after the group subscription was set).
pub(crate) fn assign(
    ctx: &ManagerContext<'_>,
    assignor: &dyn ConsumerPartitionAssignor,
    members: &[MemberSubscription],
) -> Result<(EncodedAssignments, PartitionCounts), Error> {
    let topics = group_topics(members);
    let cluster = cluster_metadata(ctx, &topics);
    let subscriptions: GroupSubscription = members
        .iter()
        .map(|m| (m.member_id.clone(), m.subscription.clone()))
        .collect();
    let assignment = assignor
        .assign(&cluster, &subscriptions)
        .map_err(|e| Error::Fatal {
            code: None,
            message: format!("assignor {} failed: {e}", assignor.name()),
        })?;
    let mut encoded = Vec::with_capacity(assignment.len());
    for (member_id, member_assignment) in &assignment {
        tracing::info!(member_id, partitions = ?member_assignment.partitions, "leader assigned");
        let bytes =
            encode_assignment(member_assignment, CONSUMER_PROTOCOL_VERSION).map_err(|e| {
                Error::Internal(format!("cannot encode the assignment of {member_id}: {e}").into())
            })?;
        encoded.push((member_id.clone(), bytes));
    }
    Ok((encoded, metadata_snapshot(ctx)))
}
