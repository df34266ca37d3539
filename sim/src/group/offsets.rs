//! Committed offsets of one coordinator shard: storage only.
//!
//! Validation is the job of the group's coordinator (classic groups validate by generation and
//! member id, KIP-848 consumer groups by member epoch), so both protocols store through the same
//! [`OffsetStore`] after their own checks, mirroring Kafka's split between
//! `Group.validateOffsetCommit` and `OffsetMetadataManager`'s offset map.
//!
//! Transactional offset commits are out of scope (the simulation has no transactions), so
//! OffsetFetch never answers UNSTABLE_OFFSET_COMMIT and `require_stable` changes nothing.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, OffsetCommitResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

/// The offset Kafka reports for a partition without a committed offset.
pub const INVALID_OFFSET: i64 = -1;

/// One committed offset (Kafka's `OffsetAndMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub committed_offset: i64,
    /// `None` when the client sent -1 (unknown epoch).
    pub leader_epoch: Option<i32>,
    pub metadata: String,
    pub commit_timestamp_ms: u64,
    /// When the offset expires regardless of its group (`expireTimestampMs`): set only by
    /// OffsetCommit v2–v4 with a `retention_time_ms` other than -1, which then overrides
    /// `offsets.retention.minutes` for this offset (Kafka's "old expiration semantics").
    pub expire_timestamp_ms: Option<u64>,
}

/// The topics and partitions an OffsetFetch asks for; `None` means "all committed".
pub type RequestedTopics = Option<Vec<(TopicName, Vec<i32>)>>;

/// Committed offsets by group, topic and partition.
#[derive(Debug, Clone, Default)]
pub struct OffsetStore {
    offsets: BTreeMap<String, BTreeMap<TopicName, BTreeMap<i32, OffsetAndMetadata>>>,
}

impl OffsetStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The committed offset of one partition.
    pub fn get(&self, group_id: &str, topic: &str, partition: i32) -> Option<&OffsetAndMetadata> {
        self.offsets
            .get(group_id)?
            .iter()
            .find(|(name, _)| name.0.as_str() == topic)?
            .1
            .get(&partition)
    }

    /// Whether `group_id` has any committed offset.
    pub fn has_offsets(&self, group_id: &str) -> bool {
        self.offsets.contains_key(group_id)
    }

    /// Stores every partition of an already validated commit (`OffsetMetadataManager.commitOffset`):
    /// metadata longer than `offset_metadata_max_bytes` is refused per partition with
    /// OFFSET_METADATA_TOO_LARGE, the rest are stored with `now_ms` as commit time.
    pub fn commit(
        &mut self,
        now_ms: u64,
        request: &OffsetCommitRequest,
        offset_metadata_max_bytes: usize,
    ) -> OffsetCommitResponse {
        let group_id = request.group_id.0.to_string();
        let mut topics = Vec::with_capacity(request.topics.len());
        for topic in &request.topics {
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for partition in &topic.partitions {
                let metadata = partition.committed_metadata.as_deref().unwrap_or_default();
                let error_code = if metadata_too_large(metadata, offset_metadata_max_bytes) {
                    ResponseError::OffsetMetadataTooLarge.code()
                } else {
                    let offset = OffsetAndMetadata {
                        committed_offset: partition.committed_offset,
                        leader_epoch: (partition.committed_leader_epoch >= 0)
                            .then_some(partition.committed_leader_epoch),
                        metadata: metadata.to_owned(),
                        commit_timestamp_ms: now_ms,
                        // `OffsetMetadataManager.expireTimestampMs`.
                        expire_timestamp_ms: (request.retention_time_ms != -1)
                            .then(|| now_ms.saturating_add_signed(request.retention_time_ms)),
                    };
                    self.offsets
                        .entry(group_id.clone())
                        .or_default()
                        .entry(topic.name.clone())
                        .or_default()
                        .insert(partition.partition_index, offset);
                    0
                };
                partitions.push(
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(error_code),
                );
            }
            topics.push(
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name.clone())
                    .with_topic_id(topic.topic_id)
                    .with_partitions(partitions),
            );
        }
        OffsetCommitResponse::default().with_topics(topics)
    }

    /// Puts back one offset replayed from the shard's log (a coordinator being loaded).
    pub fn restore(
        &mut self,
        group_id: &str,
        topic: &str,
        partition: i32,
        offset: OffsetAndMetadata,
    ) {
        self.offsets
            .entry(group_id.to_owned())
            .or_default()
            .entry(TopicName(StrBytes::from_string(topic.to_owned())))
            .or_default()
            .insert(partition, offset);
    }

    /// The answer to a commit refused as a whole: `error` on every partition
    /// (`OffsetCommitRequest.getErrorResponse`).
    pub fn commit_error_response(
        request: &OffsetCommitRequest,
        error: ResponseError,
    ) -> OffsetCommitResponse {
        let topics = request
            .topics
            .iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|p| {
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(error.code())
                    })
                    .collect();
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name.clone())
                    .with_topic_id(topic.topic_id)
                    .with_partitions(partitions)
            })
            .collect();
        OffsetCommitResponse::default().with_topics(topics)
    }

    /// OffsetFetch of one group in the v8+ shape (`fetchOffsets` / `fetchAllOffsets`). When the
    /// group is not `visible` (unknown or Dead), requested partitions read as -1 and "all" is
    /// empty, as in Kafka.
    pub fn fetch_group(
        &self,
        group_id: &GroupId,
        requested: &RequestedTopics,
        visible: bool,
    ) -> OffsetFetchResponseGroup {
        let stored = self.offsets.get(group_id.0.as_str()).filter(|_| visible);
        let partition = |index: i32, offset: Option<&OffsetAndMetadata>| match offset {
            Some(o) => OffsetFetchResponsePartitions::default()
                .with_partition_index(index)
                .with_committed_offset(o.committed_offset)
                .with_committed_leader_epoch(o.leader_epoch.unwrap_or(-1))
                .with_metadata(Some(StrBytes::from_string(o.metadata.clone()))),
            None => OffsetFetchResponsePartitions::default()
                .with_partition_index(index)
                .with_committed_offset(INVALID_OFFSET)
                .with_committed_leader_epoch(-1)
                .with_metadata(Some(StrBytes::default())),
        };
        let topics = match requested {
            Some(requested) => requested
                .iter()
                .map(|(name, indexes)| {
                    let offsets = stored.and_then(|s| s.get(name));
                    let partitions = indexes
                        .iter()
                        .map(|&i| partition(i, offsets.and_then(|o| o.get(&i))))
                        .collect();
                    OffsetFetchResponseTopics::default()
                        .with_name(name.clone())
                        .with_partitions(partitions)
                })
                .collect(),
            None => stored
                .into_iter()
                .flatten()
                .map(|(name, offsets)| {
                    let partitions = offsets
                        .iter()
                        .map(|(&i, o)| partition(i, Some(o)))
                        .collect();
                    OffsetFetchResponseTopics::default()
                        .with_name(name.clone())
                        .with_partitions(partitions)
                })
                .collect(),
        };
        OffsetFetchResponseGroup::default()
            .with_group_id(group_id.clone())
            .with_topics(topics)
    }

    /// Forgets every group's offsets of `topic` (the topic was deleted); returns the
    /// `(group, partition)` of each one forgotten, in order. Groups left without offsets are
    /// forgotten too, as [`Self::delete`] does.
    pub fn delete_topic(&mut self, topic: &str) -> Vec<(String, i32)> {
        let mut deleted = Vec::new();
        for (group_id, topics) in &mut self.offsets {
            topics.retain(|name, partitions| {
                if name.0.as_str() != topic {
                    return true;
                }
                deleted.extend(partitions.keys().map(|&p| (group_id.clone(), p)));
                false
            });
        }
        self.offsets.retain(|_, topics| !topics.is_empty());
        deleted
    }

    /// Forgets every offset of `group_id` (group deletion).
    pub fn delete_group(&mut self, group_id: &str) {
        self.offsets.remove(group_id);
    }

    /// Forgets one offset (an expired offset's tombstone); a group left without offsets is
    /// forgotten too.
    pub fn delete(&mut self, group_id: &str, topic: &str, partition: i32) {
        let Some(topics) = self.offsets.get_mut(group_id) else {
            return;
        };
        topics.retain(|name, partitions| {
            if name.0.as_str() == topic {
                partitions.remove(&partition);
            }
            !partitions.is_empty()
        });
        if topics.is_empty() {
            self.offsets.remove(group_id);
        }
    }

    /// Every committed offset of `group_id` as (topic, partition, offset), in key order.
    pub fn group_offsets(&self, group_id: &str) -> Vec<(String, i32, OffsetAndMetadata)> {
        self.offsets
            .get(group_id)
            .into_iter()
            .flatten()
            .flat_map(|(topic, partitions)| {
                partitions
                    .iter()
                    .map(|(partition, offset)| (topic.0.to_string(), *partition, offset.clone()))
            })
            .collect()
    }
}

/// The v0–7 single-group shape of a v8+ group answer: its topics and its error code.
pub fn to_single_group_shape(
    group: OffsetFetchResponseGroup,
) -> (Vec<OffsetFetchResponseTopic>, i16) {
    let topics = group
        .topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    OffsetFetchResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_committed_offset(p.committed_offset)
                        .with_committed_leader_epoch(p.committed_leader_epoch)
                        .with_metadata(p.metadata)
                        .with_error_code(p.error_code)
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    (topics, group.error_code)
}

/// Kafka's `isMetadataInvalid`: committed metadata longer than `offset.metadata.max.bytes`
/// (counted in UTF-16 units, as Java's `String.length`) is refused with
/// OFFSET_METADATA_TOO_LARGE, and such a partition is not checked further.
pub fn metadata_too_large(metadata: &str, offset_metadata_max_bytes: usize) -> bool {
    metadata.encode_utf16().count() > offset_metadata_max_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };

    fn commit_request(metadata: &str) -> OffsetCommitRequest {
        OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(42)
                    .with_committed_leader_epoch(3)
                    .with_committed_metadata(Some(StrBytes::from_string(
                        metadata.to_owned(),
                    )))])])
    }

    #[test]
    fn commit_then_fetch_and_unknown_partition_is_minus_one() {
        let mut store = OffsetStore::new();
        let response = store.commit(7, &commit_request("m"), 4096);
        assert_eq!(response.topics[0].partitions[0].error_code, 0);
        let stored = store.get("g", "t", 0).cloned();
        assert_eq!(
            stored,
            Some(OffsetAndMetadata {
                committed_offset: 42,
                leader_epoch: Some(3),
                metadata: "m".into(),
                commit_timestamp_ms: 7,
                expire_timestamp_ms: None,
            })
        );
        let group = GroupId(StrBytes::from_static_str("g"));
        let requested = Some(vec![(
            TopicName(StrBytes::from_static_str("t")),
            vec![0, 1],
        )]);
        let fetched = store.fetch_group(&group, &requested, true);
        let offsets: Vec<i64> = fetched.topics[0]
            .partitions
            .iter()
            .map(|p| p.committed_offset)
            .collect();
        assert_eq!(offsets, [42, -1]);
        let invisible = store.fetch_group(&group, &requested, false);
        assert_eq!(invisible.topics[0].partitions[0].committed_offset, -1);
        assert!(store.fetch_group(&group, &None, false).topics.is_empty());
        assert_eq!(store.fetch_group(&group, &None, true).topics.len(), 1);
    }

    #[test]
    fn metadata_too_large_is_refused_per_partition() {
        let mut store = OffsetStore::new();
        let response = store.commit(0, &commit_request("xyz"), 2);
        assert_eq!(
            response.topics[0].partitions[0].error_code,
            ResponseError::OffsetMetadataTooLarge.code()
        );
        assert!(!store.has_offsets("g"));
    }
}
