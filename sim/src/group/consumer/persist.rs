//! A consumer group as records (Kafka's `ConsumerGroup*` record family) and back, plus
//! `onLoaded` for consumer groups.
//!
//! The shard writes the difference between the records of a group before and after each
//! operation, which is the set of records Kafka's `GroupMetadataManager` emits for that
//! operation; replaying them in log order rebuilds the group (`GroupMetadataManager.replay`).

use std::collections::BTreeMap;

use super::coordinator::ConsumerGroupCoordinator;
use super::group::ConsumerGroup;
use super::member::{ConsumerGroupMember, MemberState};
use crate::group::group_record::{
    record_type, ConsumerCurrentAssignmentValue, ConsumerMemberMetadataValue, GroupRecordKey,
    GroupRecordValue,
};

/// The records that describe `group` completely, by key.
pub fn group_records(group: &ConsumerGroup) -> BTreeMap<GroupRecordKey, GroupRecordValue> {
    let id = group.group_id.as_str();
    let mut records = BTreeMap::new();
    records.insert(
        GroupRecordKey::group(record_type::CONSUMER_GROUP_METADATA, id),
        GroupRecordValue::GroupEpoch(group.group_epoch),
    );
    if !group.subscription_metadata.is_empty() {
        records.insert(
            GroupRecordKey::group(record_type::CONSUMER_GROUP_PARTITION_METADATA, id),
            GroupRecordValue::PartitionMetadata(group.subscription_metadata.clone()),
        );
    }
    records.insert(
        GroupRecordKey::group(record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, id),
        GroupRecordValue::AssignmentMetadata {
            epoch: group.assignment_epoch,
            timestamp_ms: group.assignment_timestamp_ms,
        },
    );
    for (member_id, member) in &group.members {
        records.insert(
            GroupRecordKey::member(record_type::CONSUMER_GROUP_MEMBER_METADATA, id, member_id),
            GroupRecordValue::MemberMetadata(ConsumerMemberMetadataValue {
                rack_id: member.rack_id.clone(),
                instance_id: member.instance_id.clone(),
                client_id: member.client_id.clone(),
                client_host: member.client_host.clone(),
                subscribed_topic_names: member.subscribed_topic_names.clone(),
                subscribed_topic_regex: member.subscribed_topic_regex.clone(),
                rebalance_timeout_ms: member.rebalance_timeout_ms,
                server_assignor: member.server_assignor_name.clone(),
                classic: member.classic.clone(),
            }),
        );
        records.insert(
            GroupRecordKey::member(
                record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                id,
                member_id,
            ),
            GroupRecordValue::CurrentAssignment(ConsumerCurrentAssignmentValue {
                member_epoch: member.member_epoch,
                previous_member_epoch: member.previous_member_epoch,
                state: member.state,
                assigned_partitions: member.assigned_partitions.clone(),
                partitions_pending_revocation: member.partitions_pending_revocation.clone(),
                assignment_epochs: member.assignment_epochs.clone(),
            }),
        );
    }
    for (member_id, target) in &group.target_assignment {
        records.insert(
            GroupRecordKey::member(
                record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                id,
                member_id,
            ),
            GroupRecordValue::TargetAssignment(target.clone()),
        );
    }
    records
}

/// Applies one replayed record (`value` `None` is a tombstone) to the consumer groups being
/// loaded, as Kafka's `replay` methods do: a record creates its group, a member tombstone removes
/// the member, a group-epoch tombstone removes the group.
pub fn replay(
    groups: &mut BTreeMap<String, ConsumerGroup>,
    key: &GroupRecordKey,
    value: Option<GroupRecordValue>,
) {
    let group_id = key.group_id.as_str();
    let Some(value) = value else {
        let Some(group) = groups.get_mut(group_id) else {
            return;
        };
        let member_id = key.member_id.as_deref().unwrap_or_default();
        match key.record_type {
            record_type::CONSUMER_GROUP_METADATA => {
                groups.remove(group_id);
            }
            record_type::CONSUMER_GROUP_PARTITION_METADATA => group.subscription_metadata.clear(),
            record_type::CONSUMER_GROUP_MEMBER_METADATA => {
                group.remove_member(member_id);
            }
            record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA => {
                group.assignment_epoch = -1;
                group.assignment_timestamp_ms = None;
            }
            record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER => {
                group.target_assignment.remove(member_id);
            }
            record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT => {
                if let Some(member) = group.members.get_mut(member_id) {
                    member.member_epoch = -1;
                    member.previous_member_epoch = -1;
                    member.assigned_partitions.clear();
                    member.partitions_pending_revocation.clear();
                    member.assignment_epochs.clear();
                }
            }
            _ => {}
        }
        return;
    };
    let group = groups
        .entry(group_id.to_owned())
        .or_insert_with(|| ConsumerGroup::new(group_id));
    let member_id = key.member_id.as_deref().unwrap_or_default();
    let member = |group: &ConsumerGroup| {
        group
            .members
            .get(member_id)
            .cloned()
            .unwrap_or_else(|| ConsumerGroupMember::new(member_id))
    };
    match value {
        GroupRecordValue::GroupEpoch(epoch) => group.group_epoch = epoch,
        GroupRecordValue::AssignmentMetadata {
            epoch,
            timestamp_ms,
        } => {
            group.assignment_epoch = epoch;
            group.assignment_timestamp_ms = timestamp_ms;
        }
        GroupRecordValue::PartitionMetadata(topics) => group.subscription_metadata = topics,
        GroupRecordValue::TargetAssignment(target) => {
            group.target_assignment.insert(member_id.to_owned(), target);
        }
        GroupRecordValue::MemberMetadata(m) => {
            let mut updated = member(group);
            updated.rack_id = m.rack_id;
            updated.instance_id = m.instance_id;
            updated.client_id = m.client_id;
            updated.client_host = m.client_host;
            updated.subscribed_topic_names = m.subscribed_topic_names;
            updated.subscribed_topic_regex = m.subscribed_topic_regex;
            updated.rebalance_timeout_ms = m.rebalance_timeout_ms;
            updated.server_assignor_name = m.server_assignor;
            updated.classic = m.classic;
            group.update_member(updated);
        }
        GroupRecordValue::CurrentAssignment(c) => {
            let mut updated = member(group);
            updated.member_epoch = c.member_epoch;
            updated.previous_member_epoch = c.previous_member_epoch;
            updated.state = c.state;
            updated.assigned_partitions = c.assigned_partitions;
            updated.partitions_pending_revocation = c.partitions_pending_revocation;
            updated.assignment_epochs = c.assignment_epochs;
            group.update_member(updated);
        }
        GroupRecordValue::Classic(_) => {}
    }
}

impl ConsumerGroupCoordinator {
    /// The ids of every consumer group of this shard.
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }

    /// Installs a group rebuilt by [`replay`] while the shard loads.
    pub fn restore_group(&mut self, group: ConsumerGroup) {
        self.groups.insert(group.group_id.clone(), group);
    }

    /// Kafka's `onLoaded` for consumer groups: every member's session timer starts now, a member
    /// still revoking partitions gets its rebalance timer again, and every group refreshes its
    /// subscription metadata on its next heartbeat (a fresh group's metadata has expired).
    pub fn on_loaded(&mut self, now_ms: u64) {
        let mut sessions = Vec::new();
        let mut revoking = Vec::new();
        for (group_id, group) in &mut self.groups {
            group.metadata_refresh_requested = true;
            for (member_id, member) in &group.members {
                sessions.push((group_id.clone(), member_id.clone()));
                if member.state == MemberState::UnrevokedPartitions {
                    revoking.push((
                        group_id.clone(),
                        member_id.clone(),
                        member.member_epoch,
                        member.rebalance_timeout_ms,
                    ));
                }
            }
        }
        // Kafka's `onLoaded` starts every member's timer with the group's session timeout,
        // classic members included (their own applies again from their next request).
        let session_timeout_ms = self.config.session_timeout_ms;
        for (group_id, member_id) in sessions {
            self.schedule_session_timeout_ms(&group_id, &member_id, session_timeout_ms, now_ms);
        }
        for (group_id, member_id, epoch, timeout_ms) in revoking {
            self.schedule_rebalance_timeout(&group_id, &member_id, epoch, timeout_ms, now_ms);
        }
    }
}
