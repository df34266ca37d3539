//! The shard's periodic group metadata cleanup (`GroupCoordinatorShard.cleanupGroupMetadata`,
//! every `offsets.retention.check.interval.ms` from the end of loading): expired offsets get
//! tombstones (`OffsetMetadataManager.cleanupExpiredOffsets`), and a group whose offsets are all
//! gone and that is empty is deleted with its own tombstones (`maybeDeleteGroup`).
//!
//! Which offsets may expire is the group's rule (`offsetExpirationCondition`,
//! `isSubscribedToTopic`): for a consumer group, offsets of topics no member subscribes to (by
//! name or through a regex), each from its commit time; for a classic group see
//! `classic::expiration`. An empty group without any offset is deleted at the first check.

use std::collections::BTreeSet;

use super::GroupCoordinatorShard;
use crate::group::consumer::group::subscribed_topic_names;
use crate::group::offset_record::OffsetRecord;
use crate::group::offsets_retention::OffsetExpirationCondition;

impl GroupCoordinatorShard {
    /// Runs the cleanup if its timer is due; true if it ran (consumer groups may have gone).
    pub(super) fn maybe_cleanup_group_metadata(&mut self, now_ms: u64) -> bool {
        match self.next_offsets_cleanup_ms {
            Some(deadline_ms) if deadline_ms <= now_ms => {
                self.cleanup_group_metadata(now_ms);
                // `scheduleGroupMetadataExpiration`: the next cycle one interval after this one
                // was due (the runtime polls at the deadline, so that is one interval from now;
                // a late poll skips the cycles it missed).
                let interval_ms = self
                    .offsets_retention
                    .offsets_retention_check_interval_ms
                    .max(1);
                let missed = (now_ms - deadline_ms) / interval_ms;
                self.next_offsets_cleanup_ms =
                    Some(deadline_ms.saturating_add((missed + 1).saturating_mul(interval_ms)));
                true
            }
            _ => false,
        }
    }

    /// `cleanupGroupMetadata`: every group, classic and consumer, in group id order.
    fn cleanup_group_metadata(&mut self, now_ms: u64) {
        let mut group_ids: BTreeSet<String> = self.classic.group_ids().into_iter().collect();
        group_ids.extend(self.consumer.group_ids());
        for group_id in group_ids {
            if self.cleanup_expired_offsets(&group_id, now_ms) && self.is_empty_group(&group_id) {
                tracing::debug!(group = %group_id, "deleting an empty group whose offsets expired");
                self.delete_group(&group_id);
            }
        }
    }

    /// `cleanupExpiredOffsets`: writes a tombstone for each expired offset of `group_id`; true if
    /// the group has no offset left.
    fn cleanup_expired_offsets(&mut self, group_id: &str, now_ms: u64) -> bool {
        let offsets = self.offsets.group_offsets(group_id);
        if offsets.is_empty() {
            return true;
        }
        let Some(condition) = self.offset_expiration_condition(group_id) else {
            return false;
        };
        let retention_ms = self.offsets_retention.offsets_retention_ms;
        let total = offsets.len();
        let expired: Vec<(String, i32)> = {
            let subscribed = self.subscribed_topics(group_id);
            offsets
                .into_iter()
                .filter(|(topic, _, offset)| {
                    !subscribed(topic) && condition.is_offset_expired(offset, now_ms, retention_ms)
                })
                .map(|(topic, partition, _)| (topic, partition))
                .collect()
        };
        let all_expired = expired.len() == total;
        for (topic, partition) in expired {
            tracing::debug!(group = %group_id, %topic, partition, "expired offset");
            let key = OffsetRecord::encode_key(group_id, &topic, partition);
            self.leading_records.push((Some(key), None));
            self.offsets.delete(group_id, &topic, partition);
        }
        all_expired
    }

    /// `Group.offsetExpirationCondition`: a consumer group's offsets count from their commit.
    fn offset_expiration_condition(&self, group_id: &str) -> Option<OffsetExpirationCondition> {
        if self.consumer.group(group_id).is_some() {
            return Some(OffsetExpirationCondition::CommitTimestamp);
        }
        self.classic.group(group_id)?.offset_expiration_condition()
    }

    /// `Group.isSubscribedToTopic` of `group_id`, as a predicate.
    pub(super) fn subscribed_topics(&self, group_id: &str) -> Box<dyn Fn(&str) -> bool + '_> {
        if let Some(group) = self.consumer.group(group_id) {
            // `ModernGroup.subscribedTopicNames`: names and regex-resolved topics.
            let topics: BTreeSet<String> = group
                .members
                .values()
                .flat_map(|m| subscribed_topic_names(m, self.consumer.topics()))
                .collect();
            return Box::new(move |topic| topics.contains(topic));
        }
        match self.classic.group(group_id) {
            Some(group) => Box::new(move |topic| group.is_subscribed_to_topic(topic)),
            None => Box::new(|_| false),
        }
    }

    /// `Group.isEmpty`: a consumer group without members, a classic group in Empty.
    fn is_empty_group(&self, group_id: &str) -> bool {
        match self.consumer.group(group_id) {
            Some(group) => group.members.is_empty(),
            None => {
                self.classic.group_state(group_id)
                    == Some(crate::group::classic::ClassicGroupState::Empty)
            }
        }
    }
}
