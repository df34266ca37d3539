//! Committed offsets of a deleted topic are removed, as Kafka removes them: when the broker's
//! metadata publisher sees topics deleted it calls `GroupCoordinator.onPartitionsDeleted`, and
//! every shard writes an offset-commit tombstone for each group's offset of those partitions
//! (`OffsetMetadataManager.onPartitionsDeleted`). Without this, a topic deleted and re-created
//! under the same name would hand the new topic the old one's offsets.
//!
//! The shard notices a deletion the next time it runs (a request or its timer) by comparing
//! the controller's topics with those it saw last, by name *and* id, so a topic deleted and
//! re-created in between is a deletion too. A shard loaded after the deletion keeps what its
//! log holds, as Kafka's does (only the shards active at deletion time clean up).

use std::collections::BTreeMap;

use super::GroupCoordinatorShard;
use crate::group::offset_record::OffsetRecord;

/// Topic ids by name, as the shard last saw them.
pub(super) type KnownTopics = BTreeMap<String, uuid::Uuid>;

impl GroupCoordinatorShard {
    /// The controller's topics now.
    pub(super) fn current_topic_ids(&self) -> KnownTopics {
        self.log
            .topics()
            .into_iter()
            .map(|(name, id, _)| (name, id))
            .collect()
    }

    /// Writes tombstones for, and forgets, every committed offset of a topic deleted since the
    /// shard last looked.
    pub(super) fn remove_offsets_of_deleted_topics(&mut self) {
        let now = self.current_topic_ids();
        if now == self.known_topics {
            return;
        }
        let deleted: Vec<String> = self
            .known_topics
            .iter()
            .filter(|(name, id)| now.get(*name) != Some(id))
            .map(|(name, _)| name.clone())
            .collect();
        self.known_topics = now;
        for topic in deleted {
            for (group_id, partition) in self.offsets.delete_topic(&topic) {
                tracing::debug!(group = %group_id, %topic, partition,
                    "deleting the committed offset of a deleted topic");
                let key = OffsetRecord::encode_key(&group_id, &topic, partition);
                self.leading_records.push((Some(key), None));
            }
        }
    }
}
