//! Replaying a shard's `__consumer_offsets` partition in log order (Kafka's `CoordinatorLoader`
//! feeding `GroupCoordinatorShard.replay`): committed offsets, classic groups and consumer
//! groups, with Kafka's rules for which group type a record creates or replaces.

use std::collections::BTreeMap;

use super::consumer::{persist, ConsumerGroup};
use super::group_record::{record_type, ClassicGroupValue, GroupRecordKey, GroupRecordValue};
use super::offset_record::OffsetRecord;
use crate::coordinator::CoordinatorRecord;

/// Everything a shard rebuilds from its partition.
#[derive(Debug, Default)]
pub struct LoadedGroups {
    /// Classic groups: `None` for a simple group known only from its offsets.
    pub classic: BTreeMap<String, Option<ClassicGroupValue>>,
    /// Consumer-protocol groups.
    pub consumer: BTreeMap<String, ConsumerGroup>,
    /// Committed offsets by (group, topic, partition): the last record wins, a tombstone
    /// (group deletion, offset expiry) removes the offset.
    pub offsets: BTreeMap<(String, String, i32), OffsetRecord>,
}

impl LoadedGroups {
    /// Replays `records` in offset order. Records of unknown kinds are skipped, as Kafka's
    /// loader skips unknown record types.
    pub fn replay(records: Vec<CoordinatorRecord>) -> Self {
        let mut loaded = Self::default();
        for record in records {
            let Some(key) = record.key else { continue };
            if let Some(group_key) = GroupRecordKey::decode(&key) {
                let value = match record.value.as_deref() {
                    Some(bytes) => match GroupRecordValue::decode(group_key.record_type, bytes) {
                        Some(value) => Some(value),
                        None => continue,
                    },
                    None => None,
                };
                loaded.replay_group_record(&group_key, value);
            } else if let Some(value) = record.value {
                if let Some(offset) = OffsetRecord::decode(&key, &value) {
                    // `OffsetMetadataManager.replay`: offsets of an unknown group create a
                    // simple classic group.
                    if !loaded.consumer.contains_key(&offset.group_id) {
                        loaded
                            .classic
                            .entry(offset.group_id.clone())
                            .or_insert(None);
                    }
                    let key = (
                        offset.group_id.clone(),
                        offset.topic.clone(),
                        offset.partition,
                    );
                    loaded.offsets.insert(key, offset);
                }
            } else if let Some(offset_key) = OffsetRecord::decode_key(&key) {
                // An offset tombstone removes the offset, not its group.
                loaded.offsets.remove(&offset_key);
            }
        }
        loaded
    }

    fn replay_group_record(&mut self, key: &GroupRecordKey, value: Option<GroupRecordValue>) {
        let group_id = key.group_id.as_str();
        if key.record_type == record_type::GROUP_METADATA {
            // `replay(GroupMetadataKey, …)`: the classic group replaces whatever was there; a
            // tombstone removes the group.
            self.consumer.remove(group_id);
            match value {
                Some(GroupRecordValue::Classic(value)) => {
                    self.classic.insert(group_id.to_owned(), Some(value));
                }
                _ => {
                    self.classic.remove(group_id);
                }
            }
            return;
        }
        // `getOrMaybeCreatePersistedConsumerGroup`: a simple classic group is replaced by the
        // consumer group; a real classic group is not (Kafka fails the load there; we skip).
        if let Some(classic) = self.classic.get(group_id) {
            let simple = classic
                .as_ref()
                .is_none_or(|v| v.members.is_empty() && v.protocol_type.is_empty());
            if !simple {
                tracing::warn!(group = %group_id, "consumer group record for a classic group skipped");
                return;
            }
            if value.is_some() {
                self.classic.remove(group_id);
            }
        }
        persist::replay(&mut self.consumer, key, value);
    }
}
