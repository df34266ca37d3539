//! A shard's durable storage: its `__consumer_offsets` partition, written and replayed as
//! ordinary record batches, as Kafka's coordinator runtime does.

use std::sync::Arc;

use bytes::Bytes;
use kafka_consumer::records::{FetchedRecords, NewRecord, ReadOptions, RecordBatchBuilder};

use crate::controller::{Controller, OFFSETS_TOPIC};

/// One record of an offsets partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorRecord {
    /// Its offset in the partition.
    pub offset: i64,
    /// When it was appended (the record timestamp: virtual milliseconds).
    pub timestamp_ms: i64,
    /// The record key (the shard's own encoding).
    pub key: Option<Bytes>,
    /// The record value; `None` is a tombstone.
    pub value: Option<Bytes>,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorLogError {
    /// Leadership of the partition moved on since the shard was loaded (Kafka answers the
    /// request with `NOT_COORDINATOR`).
    NotLeader,
    /// The records could not be encoded or appended.
    Append(String),
}

/// Write and replay access to one offsets partition, fenced by the leader epoch the shard was
/// loaded at: once leadership moves, appends fail, so a deposed shard cannot write.
#[derive(Debug, Clone)]
pub struct CoordinatorLog {
    controller: Controller,
    partition: i32,
    leader_epoch: i32,
}

impl CoordinatorLog {
    pub(crate) fn new(controller: Controller, partition: i32, leader_epoch: i32) -> Self {
        Self {
            controller,
            partition,
            leader_epoch,
        }
    }

    /// The offsets partition this log is.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// Appends `records` as one batch (committed at once: replication is instantaneous) and
    /// returns the offset of the last one.
    pub fn append(
        &self,
        now_ms: i64,
        records: &[(Option<Bytes>, Option<Bytes>)],
    ) -> Result<i64, CoordinatorLogError> {
        let mut builder = RecordBatchBuilder::new(0);
        for (key, value) in records {
            builder
                .append(&NewRecord {
                    timestamp_ms: now_ms,
                    key: key.as_deref(),
                    value: value.as_deref(),
                    headers: &[],
                })
                .map_err(|e| CoordinatorLogError::Append(e.to_string()))?;
        }
        let batch = builder
            .build()
            .map_err(|e| CoordinatorLogError::Append(e.to_string()))?;
        let (partition, epoch) = (self.partition, self.leader_epoch);
        self.controller.update(|state| {
            let max_message_bytes = state.config.max_message_bytes;
            let part = state
                .partition_mut(OFFSETS_TOPIC, partition)
                .ok_or(CoordinatorLogError::NotLeader)?;
            if part.leader_epoch != epoch {
                return Err(CoordinatorLogError::NotLeader);
            }
            let info = part
                .log
                .append(batch, epoch, None, max_message_bytes.max(usize::MAX / 2))
                .map_err(|e| CoordinatorLogError::Append(format!("{e:?}")))?;
            part.log.advance_high_watermark(info.last_offset + 1);
            Ok(info.last_offset)
        })
    }

    /// [`crate::config::ClusterConfig::coordinator_high_watermark_lag_ms`]: how far behind its
    /// predecessor a new leader of this partition starts out on the high watermark.
    pub fn high_watermark_lag_ms(&self) -> u64 {
        self.controller
            .read()
            .config
            .coordinator_high_watermark_lag_ms
    }

    /// The cluster's non-internal topics as (name, id, partition count): the metadata image a
    /// KIP-848 coordinator assigns from.
    pub fn topics(&self) -> Vec<(String, uuid::Uuid, i32)> {
        let state = self.controller.read();
        state
            .topics
            .values()
            .filter(|t| !t.internal)
            .map(|t| (t.name.clone(), t.topic_id, t.partitions.len() as i32))
            .collect()
    }

    /// Every committed record of the partition, in offset order.
    pub fn read_all(&self) -> Vec<CoordinatorRecord> {
        let records = {
            let state = self.controller.read();
            let Some(part) = state.partition(OFFSETS_TOPIC, self.partition) else {
                return Vec::new();
            };
            let log = &part.log;
            log.read(
                log.log_start_offset(),
                log.high_watermark(),
                usize::MAX,
                true,
                false,
            )
            .records
        };
        FetchedRecords::new(
            Arc::from(OFFSETS_TOPIC),
            self.partition,
            records,
            ReadOptions::default(),
        )
        .flatten()
        .filter_map(|batch| batch.records().ok())
        .flat_map(|records| records.flatten())
        .map(|r| CoordinatorRecord {
            offset: r.offset(),
            timestamp_ms: r.timestamp_ms(),
            key: r.key_bytes(),
            value: r.value_bytes(),
        })
        .collect()
    }
}
