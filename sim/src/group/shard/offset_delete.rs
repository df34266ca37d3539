//! OffsetDelete on one shard (`OffsetMetadataManager.deleteOffsets`): removes a group's
//! committed offsets for the partitions named, with tombstones in the shard's partition so a
//! coordinator that loads it later does not bring them back.
//!
//! As Kafka:
//! - the group must exist (`GroupMetadataManager.group`): GROUP_ID_NOT_FOUND otherwise, and for
//!   a Dead classic group;
//! - a classic group with members (Stable, PreparingRebalance, CompletingRebalance) that does
//!   not use the `consumer` protocol type is NON_EMPTY_GROUP (`ClassicGroup.validateOffsetDelete`);
//!   a consumer group may always be asked;
//! - every partition of a topic the group is subscribed to (`isSubscribedToTopic`: a member of
//!   a consumer group subscribes to it by name or regex, or a classic member's subscription
//!   lists it) is GROUP_SUBSCRIBED_TO_TOPIC, and its offset stays;
//! - the other partitions are answered without error, and a tombstone is written for each that
//!   has an offset.
//!
//! Group-level errors are the response's top-level error code.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

use super::GroupCoordinatorShard;
use crate::group::classic::ClassicGroupState;
use crate::group::offset_record::OffsetRecord;

impl GroupCoordinatorShard {
    pub(super) fn offset_delete(&mut self, request: &OffsetDeleteRequest) -> OffsetDeleteResponse {
        let group_id = request.group_id.0.as_str();
        if let Err(error) = self.validate_offset_delete(group_id) {
            return OffsetDeleteResponse::default().with_error_code(error.code());
        }
        let mut deleted = Vec::new();
        let topics = {
            let subscribed = self.subscribed_topics(group_id);
            request
                .topics
                .iter()
                .map(|topic| {
                    let name = topic.name.0.as_str();
                    let refused = subscribed(name);
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            let answer = OffsetDeleteResponsePartition::default()
                                .with_partition_index(p.partition_index);
                            if refused {
                                answer.with_error_code(ResponseError::GroupSubscribedToTopic.code())
                            } else {
                                deleted.push((name.to_owned(), p.partition_index));
                                answer
                            }
                        })
                        .collect();
                    OffsetDeleteResponseTopic::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions)
                })
                .collect()
        };
        for (topic, partition) in deleted {
            if self.offsets.get(group_id, &topic, partition).is_some() {
                let key = OffsetRecord::encode_key(group_id, &topic, partition);
                self.leading_records.push((Some(key), None));
                self.offsets.delete(group_id, &topic, partition);
            }
        }
        OffsetDeleteResponse::default().with_topics(topics)
    }

    /// `Group.validateOffsetDelete` on the group `GroupMetadataManager.group` finds.
    fn validate_offset_delete(&self, group_id: &str) -> Result<(), ResponseError> {
        if self.consumer.group(group_id).is_some() {
            return Ok(());
        }
        let group = self
            .classic
            .group(group_id)
            .ok_or(ResponseError::GroupIdNotFound)?;
        match group.state() {
            ClassicGroupState::Dead => Err(ResponseError::GroupIdNotFound),
            ClassicGroupState::Stable
            | ClassicGroupState::PreparingRebalance
            | ClassicGroupState::CompletingRebalance
                if !group.uses_consumer_group_protocol() =>
            {
                Err(ResponseError::NonEmptyGroup)
            }
            _ => Ok(()),
        }
    }
}
