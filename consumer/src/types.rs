//! The values the consumer API hands out and takes: partitions, offsets, records.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

pub use crate::records::TimestampType;

/// A topic partition. The topic name is shared (`Arc<str>`) so records and maps keyed by
/// partition do not copy it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: Arc<str>,
    /// The partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`-`partition`.
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// A committed (or to-be-committed) offset: the offset of the next record to consume, the leader
/// epoch of the last consumed record (for KIP-320 truncation detection) and free-form metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    /// The next offset to consume.
    pub offset: i64,
    /// The leader epoch of the last consumed record, if known.
    pub leader_epoch: Option<i32>,
    /// Application metadata stored with the commit.
    pub metadata: String,
}

impl OffsetAndMetadata {
    /// An offset without epoch or metadata.
    pub fn new(offset: i64) -> Self {
        Self {
            offset,
            leader_epoch: None,
            metadata: String::new(),
        }
    }

    /// An offset with the leader epoch of the last consumed record.
    pub fn with_leader_epoch(offset: i64, leader_epoch: Option<i32>) -> Self {
        Self {
            offset,
            leader_epoch,
            metadata: String::new(),
        }
    }
}

/// The answer of `offsets_for_times`: the earliest offset whose timestamp is at least the one
/// asked for, with that record's timestamp and leader epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAndTimestamp {
    /// The offset.
    pub offset: i64,
    /// The record's timestamp in ms since the epoch.
    pub timestamp_ms: i64,
    /// The leader epoch of that record, if the broker returned one.
    pub leader_epoch: Option<i32>,
}

/// A partition as topic metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// The topic and partition.
    pub partition: TopicPartition,
    /// The leader's node id, `None` while there is none.
    pub leader: Option<i32>,
    /// All replicas.
    pub replicas: Vec<i32>,
    /// In-sync replicas.
    pub in_sync_replicas: Vec<i32>,
    /// Replicas that are offline.
    pub offline_replicas: Vec<i32>,
}

/// One record header. Keys are bytes on the wire (UTF-8 by convention); duplicates and order are
/// kept (KIP-82).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// The header key.
    pub key: Bytes,
    /// The header value, `None` for null.
    pub value: Option<Bytes>,
}

/// A record handed to the application. Key, value and header values are zero-copy slices of the
/// fetch response (or of the batch's decompressed buffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    /// The topic name.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: i32,
    /// The record's offset.
    pub offset: i64,
    /// Timestamp in ms since the epoch.
    pub timestamp_ms: i64,
    /// Whether the producer or the broker set the timestamp.
    pub timestamp_type: TimestampType,
    /// The leader epoch of the batch, when the broker recorded one.
    pub leader_epoch: Option<i32>,
    /// The key, `None` for a null key.
    pub key: Option<Bytes>,
    /// The value, `None` for a null value (a tombstone).
    pub value: Option<Bytes>,
    /// The headers, in order, duplicates kept.
    pub headers: Vec<RecordHeader>,
}

impl ConsumerRecord {
    /// The record's partition as a [`TopicPartition`].
    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition {
            topic: Arc::clone(&self.topic),
            partition: self.partition,
        }
    }
}

/// The records one `poll` returned, grouped by partition in fetch order within each partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerRecords {
    by_partition: BTreeMap<TopicPartition, Vec<ConsumerRecord>>,
    count: usize,
}

impl ConsumerRecords {
    pub(crate) fn push(&mut self, record: ConsumerRecord) {
        self.count += 1;
        self.by_partition
            .entry(record.topic_partition())
            .or_default()
            .push(record);
    }

    /// Adds `records`, all of `partition` and after any it already has: one map lookup per
    /// completed fetch instead of one per record, and the `Vec` moves in without a copy when
    /// the partition is new.
    pub(crate) fn append(&mut self, partition: &TopicPartition, mut records: Vec<ConsumerRecord>) {
        if records.is_empty() {
            return;
        }
        self.count += records.len();
        match self.by_partition.get_mut(partition) {
            Some(existing) => existing.append(&mut records),
            None => {
                self.by_partition.insert(partition.clone(), records);
            }
        }
    }

    /// How many records there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The partitions with records.
    pub fn partitions(&self) -> impl Iterator<Item = &TopicPartition> {
        self.by_partition.keys()
    }

    /// One partition's records, in offset order.
    pub fn records(&self, partition: &TopicPartition) -> &[ConsumerRecord] {
        self.by_partition
            .get(partition)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// All records, partition by partition.
    pub fn iter(&self) -> impl Iterator<Item = &ConsumerRecord> {
        self.by_partition.values().flatten()
    }
}

impl IntoIterator for ConsumerRecords {
    type Item = ConsumerRecord;
    type IntoIter = std::iter::Flatten<
        std::collections::btree_map::IntoValues<TopicPartition, Vec<ConsumerRecord>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.by_partition.into_values().flatten()
    }
}

impl<'a> IntoIterator for &'a ConsumerRecords {
    type Item = &'a ConsumerRecord;
    type IntoIter = std::iter::Flatten<
        std::collections::btree_map::Values<'a, TopicPartition, Vec<ConsumerRecord>>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.by_partition.values().flatten()
    }
}

/// This member's place in its group (Java's `ConsumerGroupMetadata`), e.g. for sending
/// offsets to a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupMetadata {
    /// `group.id`.
    pub group_id: String,
    /// The generation (classic) the member is in, -1 outside one.
    pub generation_id: i32,
    /// The member id the coordinator gave, empty before joining.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
}
