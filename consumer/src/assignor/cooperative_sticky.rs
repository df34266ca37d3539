//! The `cooperative-sticky` assignor (Java's `CooperativeStickyAssignor`): the sticky algorithm
//! (see `abstract_sticky`) under the cooperative rebalance protocol.
//!
//! Members keep consuming their partitions through a rebalance, so a partition must never be
//! assigned to a new owner while its old owner may still hold it. The assignor therefore leaves
//! every partition that changes owner *out* of this round's assignment: its old owner sees it
//! missing and revokes it, then rejoins, and the follow-up rebalance assigns it to the new owner
//! (the partition is now unowned).
//!
//! Ownership comes from the subscription's owned partitions and generation (ConsumerProtocol
//! v2+); for older members the generation is read from the user data, a single big-endian i32.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::abstract_sticky::{self, MemberData};
use super::{
    into_group_assignment, Assignment, AssignorError, ClusterMetadata, ConsumerPartitionAssignor,
    GroupAssignment, GroupSubscription, RebalanceProtocol, Subscription, TopicPartition,
    DEFAULT_GENERATION,
};

/// The `cooperative-sticky` assignor. Its state is the generation of its last assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CooperativeStickyAssignor {
    generation: i32,
}

impl Default for CooperativeStickyAssignor {
    fn default() -> Self {
        Self {
            generation: DEFAULT_GENERATION,
        }
    }
}

impl CooperativeStickyAssignor {
    /// Its protocol name.
    pub const NAME: &'static str = "cooperative-sticky";

    /// What the member owned: its subscription's fields when it carries a generation (v2+),
    /// otherwise its owned partitions with the generation from its user data.
    pub fn member_data(subscription: &Subscription) -> MemberData {
        if let Some(generation) = subscription.generation_id {
            return MemberData {
                partitions: subscription.owned_partitions.clone(),
                generation: Some(generation),
            };
        }
        let generation = subscription
            .user_data
            .as_ref()
            .map(|data| match data.get(..4) {
                Some(&[a, b, c, d]) => i32::from_be_bytes([a, b, c, d]),
                _ => DEFAULT_GENERATION,
            });
        MemberData {
            partitions: subscription.owned_partitions.clone(),
            generation,
        }
    }
}

impl ConsumerPartitionAssignor for CooperativeStickyAssignor {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn supported_protocols(&self) -> &'static [RebalanceProtocol] {
        &[RebalanceProtocol::Cooperative, RebalanceProtocol::Eager]
    }

    fn subscription_user_data(&self, _topics: &BTreeSet<String>) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(&self.generation.to_be_bytes()))
    }

    fn assign(
        &self,
        cluster: &ClusterMetadata,
        subscriptions: &GroupSubscription,
    ) -> Result<GroupAssignment, AssignorError> {
        let result =
            abstract_sticky::assign(Self::NAME, cluster, subscriptions, Self::member_data)?;
        let mut assignment = result.assignment;
        let transferring = match result.partitions_transferring_ownership {
            Some(transferring) => transferring,
            None => partitions_transferring_ownership(subscriptions, &assignment),
        };
        for (tp, consumer) in transferring {
            if let Some(list) = assignment.get_mut(&consumer) {
                list.retain(|p| *p != tp);
            }
        }
        Ok(into_group_assignment(assignment))
    }

    fn on_assignment(&mut self, _assignment: &Assignment, generation: i32) {
        self.generation = generation;
    }
}

/// Partitions newly assigned to one member while revoked from another: the ones that must wait
/// for the follow-up rebalance.
fn partitions_transferring_ownership(
    subscriptions: &GroupSubscription,
    assignment: &BTreeMap<String, Vec<TopicPartition>>,
) -> BTreeMap<TopicPartition, String> {
    let mut added = BTreeMap::new();
    let mut revoked = BTreeSet::new();
    for (consumer, assigned) in assignment {
        let owned: &[TopicPartition] = subscriptions
            .get(consumer)
            .map_or(&[], |s| s.owned_partitions.as_slice());
        let owned_set: BTreeSet<&TopicPartition> = owned.iter().collect();
        let assigned_set: BTreeSet<&TopicPartition> = assigned.iter().collect();
        for tp in assigned {
            if !owned_set.contains(tp) {
                added.insert(tp.clone(), consumer.clone());
            }
        }
        revoked.extend(
            owned
                .iter()
                .filter(|tp| !assigned_set.contains(tp))
                .cloned(),
        );
    }
    added.retain(|tp, _| revoked.contains(tp));
    added
}
