//! When committed offsets expire: Kafka's `offsets.retention.minutes` and
//! `offsets.retention.check.interval.ms`, and its `OffsetExpirationCondition`.
//!
//! The rule itself (which base time a group's offsets count from, which topics may expire) is
//! the group's; this file holds the settings and the per-offset test, so the shard's periodic
//! cleanup (`shard::offset_expiry`) only has to ask each group for its condition.

use super::offsets::OffsetAndMetadata;

/// The broker settings of offset expiry. Virtual milliseconds, so a simulation can shrink them
/// to seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetsRetentionConfig {
    /// `offsets.retention.minutes` (Kafka: 7 days) in milliseconds: how long an offset is kept
    /// after its base time (the commit, or the moment its classic group became Empty).
    pub offsets_retention_ms: u64,
    /// `offsets.retention.check.interval.ms` (Kafka: 10 minutes): how often a shard looks for
    /// expired offsets and empty groups to delete (`cleanupGroupMetadata`).
    pub offsets_retention_check_interval_ms: u64,
}

impl Default for OffsetsRetentionConfig {
    fn default() -> Self {
        Self {
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
        }
    }
}

/// Kafka's `OffsetExpirationConditionImpl`: what an offset's age is measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetExpirationCondition {
    /// From the offset's own commit time (simple groups, consumer groups, Stable classic groups
    /// of the consumer protocol for topics no member subscribes to).
    CommitTimestamp,
    /// From when the classic group became Empty; its commit time if the group has no
    /// `currentStateTimestamp` (a record written without one).
    StateTimestamp(Option<u64>),
}

impl OffsetExpirationCondition {
    /// `isOffsetExpired`: an offset with an explicit expire timestamp (OffsetCommit v2–v4
    /// `retention_time_ms`) expires then; any other once `offsets_retention_ms` have passed
    /// since the base time.
    pub fn is_offset_expired(
        self,
        offset: &OffsetAndMetadata,
        now_ms: u64,
        offsets_retention_ms: u64,
    ) -> bool {
        if let Some(expire_timestamp_ms) = offset.expire_timestamp_ms {
            return now_ms >= expire_timestamp_ms;
        }
        let base_ms = match self {
            Self::CommitTimestamp => offset.commit_timestamp_ms,
            Self::StateTimestamp(state_ms) => state_ms.unwrap_or(offset.commit_timestamp_ms),
        };
        now_ms
            .checked_sub(base_ms)
            .is_some_and(|age_ms| age_ms >= offsets_retention_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(commit_ms: u64, expire_ms: Option<u64>) -> OffsetAndMetadata {
        OffsetAndMetadata {
            committed_offset: 1,
            leader_epoch: None,
            metadata: String::new(),
            commit_timestamp_ms: commit_ms,
            expire_timestamp_ms: expire_ms,
        }
    }

    #[test]
    fn age_counts_from_the_commit_or_the_state_change() {
        let by_commit = OffsetExpirationCondition::CommitTimestamp;
        assert!(!by_commit.is_offset_expired(&offset(1_000, None), 10_999, 10_000));
        assert!(by_commit.is_offset_expired(&offset(1_000, None), 11_000, 10_000));
        let by_state = OffsetExpirationCondition::StateTimestamp(Some(5_000));
        assert!(!by_state.is_offset_expired(&offset(1_000, None), 14_999, 10_000));
        assert!(by_state.is_offset_expired(&offset(1_000, None), 15_000, 10_000));
        let no_state = OffsetExpirationCondition::StateTimestamp(None);
        assert!(no_state.is_offset_expired(&offset(1_000, None), 11_000, 10_000));
        // A base time after now (a commit after the group emptied) is not expired.
        let later = OffsetExpirationCondition::StateTimestamp(Some(20_000));
        assert!(!later.is_offset_expired(&offset(1_000, None), 15_000, 1));
    }

    #[test]
    fn an_explicit_expire_timestamp_wins() {
        let by_commit = OffsetExpirationCondition::CommitTimestamp;
        assert!(by_commit.is_offset_expired(&offset(1_000, Some(2_000)), 2_000, 10_000));
        assert!(!by_commit.is_offset_expired(&offset(1_000, Some(50_000)), 20_000, 10_000));
    }
}
