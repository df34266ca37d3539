//! Kafka's `UniformAssignor`: spreads partitions as evenly as subscriptions allow while moving as
//! few as possible from the current target assignment.
//!
//! Homogeneous groups follow `UniformHomogeneousAssignmentBuilder`: every member gets a quota of
//! `total / members` partitions, `total % members` of them one more; members keep current
//! partitions up to their quota and the rest are re-dealt to members with room. One deliberate
//! difference: Kafka hands the extra partitions to members in map order, which can take a
//! partition from a member that holds `quota + 1` only to give another one; here they go first to
//! the members currently holding the most, so no balanced member loses a partition.
//!
//! Heterogeneous groups are in [`super::uniform_heterogeneous`].

use std::collections::BTreeSet;

use uuid::Uuid;

use super::super::assignment::{self, Assignment};
use super::{GroupAssignment, GroupSpec};

/// Assigns every subscribed partition to exactly one of its subscribers.
pub fn assign(spec: &GroupSpec) -> GroupAssignment {
    if spec.is_homogeneous() {
        assign_homogeneous(spec)
    } else {
        super::uniform_heterogeneous::assign(spec)
    }
}

/// The current partitions each member may keep: subscribed, still existing, and not claimed by an
/// earlier member (in member id order), so a stale target cannot assign a partition twice.
pub(super) fn valid_current(spec: &GroupSpec) -> GroupAssignment {
    let mut claimed: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    spec.members
        .iter()
        .map(|(member_id, member)| {
            let mut kept = Assignment::new();
            for (topic_id, partition) in assignment::pairs(&member.current_assignment) {
                let valid = member.subscribed_topic_ids.contains(&topic_id)
                    && partition < spec.partition_count(topic_id)
                    && claimed.insert((topic_id, partition));
                if valid {
                    assignment::insert(&mut kept, topic_id, partition);
                }
            }
            (member_id.clone(), kept)
        })
        .collect()
}

/// All partitions of `topics` that nobody in `assigned` holds, in topic id then partition order.
pub(super) fn unassigned_partitions(
    spec: &GroupSpec,
    topics: &BTreeSet<Uuid>,
    assigned: &GroupAssignment,
) -> Vec<(Uuid, i32)> {
    let held: BTreeSet<(Uuid, i32)> = assigned.values().flat_map(assignment::pairs).collect();
    topics
        .iter()
        .flat_map(|&topic_id| (0..spec.partition_count(topic_id)).map(move |p| (topic_id, p)))
        .filter(|tp| !held.contains(tp))
        .collect()
}

fn assign_homogeneous(spec: &GroupSpec) -> GroupAssignment {
    let Some(first) = spec.members.values().next() else {
        return GroupAssignment::new();
    };
    let topics: BTreeSet<Uuid> = first
        .subscribed_topic_ids
        .iter()
        .copied()
        .filter(|t| spec.partition_counts.contains_key(t))
        .collect();
    let mut result = valid_current(spec);
    let mut unassigned = unassigned_partitions(spec, &topics, &result);

    let total: usize = topics
        .iter()
        .map(|&t| usize::try_from(spec.partition_count(t)).unwrap_or(0))
        .sum();
    let member_count = spec.members.len();
    let min_quota = total / member_count;
    let mut extra = total % member_count;

    // Members holding the most get the extra slots first: they keep what they have.
    let mut order: Vec<(String, usize)> = result
        .iter()
        .map(|(id, a)| (id.clone(), assignment::partition_count(a)))
        .collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));

    let mut room: Vec<(String, usize)> = Vec::new();
    for (member_id, held) in order {
        let mut quota = min_quota;
        if extra > 0 {
            quota += 1;
            extra -= 1;
        }
        if held > quota {
            if let Some(kept) = result.get_mut(&member_id) {
                let surplus: Vec<(Uuid, i32)> = assignment::pairs(kept).skip(quota).collect();
                for (topic_id, partition) in surplus {
                    assignment::remove(kept, topic_id, partition);
                    unassigned.push((topic_id, partition));
                }
            }
        } else if held < quota {
            room.push((member_id, quota - held));
        }
    }

    let mut next = unassigned.into_iter();
    for (member_id, remaining) in room {
        if let Some(target) = result.get_mut(&member_id) {
            for (topic_id, partition) in next.by_ref().take(remaining) {
                assignment::insert(target, topic_id, partition);
            }
        }
    }
    result
}
