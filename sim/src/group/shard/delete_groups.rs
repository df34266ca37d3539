//! DeleteGroups on one shard (`GroupCoordinatorShard.deleteGroups`): each named group is checked
//! (`validateDeleteGroup`), then its committed offsets and the group itself are deleted with
//! tombstones in the shard's partition, so a coordinator that loads the partition later
//! (a move, a restart) does not bring them back.
//!
//! Per group, as Kafka:
//! - unknown (or a Dead classic group): GROUP_ID_NOT_FOUND;
//! - a classic group in Stable, PreparingRebalance or CompletingRebalance, or a consumer group
//!   with members: NON_EMPTY_GROUP;
//! - an Empty classic group (simple groups included) or a member-less consumer group: deleted,
//!   offsets first (`deleteAllOffsets`), then the group's own tombstones
//!   (`createGroupTombstoneRecords`).
//!
//! All the tombstones of one request are appended as one batch, as Kafka's write operation does;
//! a refused append fences the shard and the runtime answers NOT_COORDINATOR for every group.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use super::GroupCoordinatorShard;
use crate::group::classic::ClassicGroupState;
use crate::group::group_record::{record_type, GroupRecordKey};
use crate::group::offset_record::OffsetRecord;

impl GroupCoordinatorShard {
    pub(super) fn delete_groups(&mut self, request: &DeleteGroupsRequest) -> DeleteGroupsResponse {
        let mut results = Vec::with_capacity(request.groups_names.len());
        let mut deleted = Vec::new();
        for group_id in &request.groups_names {
            let id = group_id.0.as_str();
            let error_code = match self.validate_delete_group(id) {
                Ok(()) => {
                    let offsets = self.delete_all_offsets(id);
                    self.delete_group(id);
                    deleted.push((id.to_owned(), offsets));
                    0
                }
                Err(error) => error.code(),
            };
            results.push(
                DeletableGroupResult::default()
                    .with_group_id(group_id.clone())
                    .with_error_code(error_code),
            );
        }
        tracing::debug!(?deleted, "groups deleted (group, offsets removed)");
        DeleteGroupsResponse::default().with_results(results)
    }

    /// `GroupMetadataManager.validateDeleteGroup`: the group must exist and be empty.
    pub(super) fn validate_delete_group(&self, group_id: &str) -> Result<(), ResponseError> {
        if let Some(group) = self.consumer.group(group_id) {
            // `ConsumerGroup.validateDeleteGroup`.
            return if group.members.is_empty() {
                Ok(())
            } else {
                Err(ResponseError::NonEmptyGroup)
            };
        }
        // `ClassicGroup.validateDeleteGroup`.
        match self.classic.group_state(group_id) {
            None | Some(ClassicGroupState::Dead) => Err(ResponseError::GroupIdNotFound),
            Some(ClassicGroupState::Empty) => Ok(()),
            Some(
                ClassicGroupState::Stable
                | ClassicGroupState::PreparingRebalance
                | ClassicGroupState::CompletingRebalance,
            ) => Err(ResponseError::NonEmptyGroup),
        }
    }

    /// `OffsetMetadataManager.deleteAllOffsets`: a tombstone for every committed offset of the
    /// group; returns how many.
    pub(super) fn delete_all_offsets(&mut self, group_id: &str) -> usize {
        let offsets = self.offsets.group_offsets(group_id);
        for (topic, partition, _) in &offsets {
            let key = OffsetRecord::encode_key(group_id, topic, *partition);
            self.leading_records.push((Some(key), None));
        }
        self.offsets.delete_group(group_id);
        offsets.len()
    }

    /// Removes an empty group with its tombstones (`createGroupTombstoneRecords`): a classic
    /// group's `GroupMetadata` tombstone now; a consumer group's record tombstones are written by
    /// the flush, which sees the group gone from memory.
    pub(super) fn delete_group(&mut self, group_id: &str) {
        if self.consumer.remove_empty_group(group_id) {
            return;
        }
        if self.classic.group_state(group_id).is_some() {
            self.classic.remove_group(group_id);
            let key = GroupRecordKey::group(record_type::GROUP_METADATA, group_id);
            self.leading_records.push((Some(key.encode()), None));
        }
    }
}
