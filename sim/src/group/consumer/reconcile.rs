//! Kafka's `CurrentAssignmentBuilder`: moves one member from its current assignment towards the
//! group's target, one safe step per heartbeat.
//!
//! A partition is never owned by two members at once: a member first revokes what it must give
//! up (UNREVOKED_PARTITIONS, same epoch), and a partition moves to its new owner only once its
//! previous owner no longer holds it (UNRELEASED_PARTITIONS).

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use uuid::Uuid;

use super::assignment::{self, Assignment};
use super::member::{ConsumerGroupMember, MemberState};

/// Kafka's "no owner" partition epoch.
pub const UNOWNED_PARTITION_EPOCH: i32 = -1;

/// The next state of `member` given the target and what it reported owning.
///
/// `partition_epoch` gives the epoch of the member currently owning a partition (assigned or
/// pending revocation), [`UNOWNED_PARTITION_EPOCH`] when free.
pub fn reconcile(
    member: &ConsumerGroupMember,
    target_assignment_epoch: i32,
    target: &Assignment,
    partition_epoch: &dyn Fn(Uuid, i32) -> i32,
    owned: Option<&[TopicPartitions]>,
) -> ConsumerGroupMember {
    match member.state {
        MemberState::Stable if member.member_epoch == target_assignment_epoch => member.clone(),
        MemberState::Stable | MemberState::UnreleasedPartitions => next_assignment(
            member,
            member.member_epoch,
            target_assignment_epoch,
            target,
            partition_epoch,
            owned,
        ),
        MemberState::UnrevokedPartitions => {
            if assignment::owns_any(owned, &member.partitions_pending_revocation) {
                member.clone()
            } else {
                // Revocation acknowledged: the member moves past the epoch it revoked in.
                next_assignment(
                    member,
                    member.member_epoch + 1,
                    target_assignment_epoch,
                    target,
                    partition_epoch,
                    owned,
                )
            }
        }
    }
}

/// Kafka's `computeNextAssignment`.
fn next_assignment(
    member: &ConsumerGroupMember,
    member_epoch: i32,
    target_assignment_epoch: i32,
    target: &Assignment,
    partition_epoch: &dyn Fn(Uuid, i32) -> i32,
    owned: Option<&[TopicPartitions]>,
) -> ConsumerGroupMember {
    let current = &member.assigned_partitions;
    let mut kept = Assignment::new();
    let mut pending_revocation = Assignment::new();
    let mut pending_assignment = Assignment::new();
    let mut has_unreleased_partitions = false;

    for (topic_id, partition) in assignment::pairs(current) {
        if assignment::contains(target, topic_id, partition) {
            assignment::insert(&mut kept, topic_id, partition);
        } else {
            assignment::insert(&mut pending_revocation, topic_id, partition);
        }
    }
    for (topic_id, partition) in assignment::pairs(target) {
        if assignment::contains(current, topic_id, partition) {
            continue;
        }
        if partition_epoch(topic_id, partition) == UNOWNED_PARTITION_EPOCH {
            assignment::insert(&mut pending_assignment, topic_id, partition);
        } else {
            has_unreleased_partitions = true;
        }
    }

    let mut next = member.clone();
    if !pending_revocation.is_empty() && assignment::owns_any(owned, &pending_revocation) {
        next.state = MemberState::UnrevokedPartitions;
        next.update_member_epoch(member_epoch);
        next.assigned_partitions = kept;
        next.partitions_pending_revocation = pending_revocation;
        next.refresh_assignment_epochs(member);
        return next;
    }
    for (topic_id, partition) in assignment::pairs(&pending_assignment) {
        assignment::insert(&mut kept, topic_id, partition);
    }
    next.state = if has_unreleased_partitions {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    next.update_member_epoch(target_assignment_epoch);
    next.assigned_partitions = kept;
    next.partitions_pending_revocation = Assignment::new();
    next.refresh_assignment_epochs(member);
    next
}
