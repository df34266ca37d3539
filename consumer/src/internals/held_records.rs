//! Records `recv` / `stream` took from the fetch buffer but have not returned yet (kept in
//! the buffer, under its lock).
//!
//! Taking them from the buffer already moved the partitions' consumed positions past them, so
//! they are the only copy: dropping them loses them for good (the next fetch starts after them,
//! and auto-commit may commit past them). They are dropped only when the application moves
//! the position itself (seek) or loses the partition (unassignment). A pause keeps them and
//! only holds them back until the resume, as Java's fetch collector keeps the completed
//! fetches of paused partitions (`pausedCompletedFetches`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::types::{ConsumerRecord, OffsetAndMetadata, TopicPartition};

/// Records held for `recv`, in the order they were fetched.
#[derive(Debug, Default)]
pub(crate) struct HeldRecords {
    records: VecDeque<ConsumerRecord>,
}

impl HeldRecords {
    /// Holds records taken from the buffer, after those already held.
    pub fn hold(&mut self, records: impl IntoIterator<Item = ConsumerRecord>) {
        self.records.extend(records);
    }

    /// The first held record of a partition that is not paused.
    pub fn next(&mut self, paused: &BTreeSet<TopicPartition>) -> Option<ConsumerRecord> {
        let index = self
            .records
            .iter()
            .position(|r| !Self::is_paused(r, paused))?;
        self.records.remove(index)
    }

    /// Drops the records of `partitions` (the application moved their positions).
    pub fn drop_partitions(&mut self, partitions: &[TopicPartition]) {
        self.records.retain(|r| {
            !partitions
                .iter()
                .any(|tp| *tp.topic == *r.topic && tp.partition == r.partition)
        });
    }

    /// Keeps only the records of `assignment`.
    pub fn retain_assigned(&mut self, assignment: &BTreeSet<TopicPartition>) {
        self.records
            .retain(|r| assignment.contains(&r.topic_partition()));
    }

    /// The offset of the first held record of `partition`: its consumed position as the
    /// application sees it.
    pub fn first_offset(&self, partition: &TopicPartition) -> Option<i64> {
        self.records
            .iter()
            .find(|r| *r.topic == *partition.topic && r.partition == partition.partition)
            .map(|r| r.offset)
    }

    /// For every partition with held records, the position of its first one (what a commit
    /// may cover: nothing held has been returned).
    pub fn first_positions(&self) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        let mut positions = BTreeMap::new();
        for record in self.records.iter().rev() {
            positions.insert(
                record.topic_partition(),
                OffsetAndMetadata::with_leader_epoch(record.offset, record.leader_epoch),
            );
        }
        positions
    }

    fn is_paused(record: &ConsumerRecord, paused: &BTreeSet<TopicPartition>) -> bool {
        paused
            .iter()
            .any(|tp| *tp.topic == *record.topic && tp.partition == record.partition)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::types::TimestampType;

    fn record(partition: i32, offset: i64) -> ConsumerRecord {
        ConsumerRecord {
            topic: Arc::from("t"),
            partition,
            offset,
            timestamp_ms: 0,
            timestamp_type: TimestampType::CreateTime,
            leader_epoch: Some(3),
            key: None,
            value: None,
            headers: Vec::new(),
        }
    }

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new("t", partition)
    }

    fn offsets(held: &mut HeldRecords, paused: &BTreeSet<TopicPartition>) -> Vec<(i32, i64)> {
        std::iter::from_fn(|| held.next(paused))
            .map(|r| (r.partition, r.offset))
            .collect()
    }

    /// Issue #27 bug 2: pausing a partition while `recv` holds its records must keep them
    /// (their position is already past them) and hand them out, in order, after the resume.
    #[test]
    fn a_paused_partition_keeps_its_held_records_until_resumed() {
        let mut held = HeldRecords::default();
        held.hold([record(0, 5), record(1, 7), record(0, 6), record(1, 8)]);
        let paused: BTreeSet<TopicPartition> = [tp(0)].into_iter().collect();

        assert_eq!(offsets(&mut held, &paused), vec![(1, 7), (1, 8)]);
        assert!(held.next(&paused).is_none(), "only paused records left");
        assert_eq!(
            held.first_offset(&tp(0)),
            Some(5),
            "position() while paused"
        );
        assert_eq!(
            held.first_positions().get(&tp(0)).map(|o| o.offset),
            Some(5),
            "a commit while paused stops before the held records"
        );

        let resumed = BTreeSet::new();
        assert_eq!(offsets(&mut held, &resumed), vec![(0, 5), (0, 6)]);
        assert!(held.first_positions().is_empty());
    }

    #[test]
    fn seek_and_unassignment_drop_held_records() {
        let mut held = HeldRecords::default();
        held.hold([record(0, 5), record(1, 7), record(2, 9)]);
        held.drop_partitions(&[tp(1)]);
        held.retain_assigned(&[tp(0), tp(1)].into_iter().collect());
        assert_eq!(offsets(&mut held, &BTreeSet::new()), vec![(0, 5)]);
    }
}
