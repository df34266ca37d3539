//! One partition's data from one Fetch response, turned into records on the application side
//! (Java's `CompletedFetch`).
//!
//! Parsing is lazy and zero-copy: batches are walked with the records layer's cursor, and each
//! call takes at most `max_records`. In `read_committed`, records of aborted transactions are
//! skipped using the response's aborted-transaction list and the abort markers (control batches)
//! in the log, exactly as Java does: an aborted transaction's producer id becomes "aborted" once
//! the fetch reaches its first offset, batches of that producer are skipped, and its abort marker
//! ends it.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::Arc;

use bytes::Bytes;

use crate::config::IsolationLevel;
use crate::error::Error;
use crate::records::{
    ControlRecord, DecompressionBuffer, FetchedRecords, ReadOptions, Record, RecordBatch, Records,
    TimestampType,
};
use crate::sabotage::{self, Sabotage};
use crate::types::{ConsumerRecord, RecordHeader, TopicPartition};

/// An aborted transaction as the Fetch response lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AbortedTransaction {
    /// The producer whose transaction was aborted.
    pub producer_id: i64,
    /// The first offset of that transaction.
    pub first_offset: i64,
}

/// What the fetch response said about the partition besides its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartitionFetchInfo {
    /// The high watermark.
    pub high_watermark: i64,
    /// The last stable offset (-1 if unknown).
    pub last_stable_offset: i64,
    /// The log start offset (-1 if unknown).
    pub log_start_offset: i64,
}

/// The batch being read.
struct CurrentBatch {
    records: Records,
    timestamp_type: TimestampType,
    leader_epoch: Option<i32>,
    is_control: bool,
}

/// One partition's fetched data, consumed a few records at a time.
pub(crate) struct CompletedFetch {
    /// The partition.
    pub partition: TopicPartition,
    /// The fetch-buffer generation of the position this was fetched at: data for a partition
    /// that was since seeked, reset, paused or unassigned has a stale generation and is dropped.
    pub generation: u64,
    /// The offset the fetch asked for.
    pub fetch_offset: i64,
    /// High watermark and friends.
    pub info: PartitionFetchInfo,
    batches: FetchedRecords,
    current: Option<CurrentBatch>,
    last_batch_next_offset: Option<i64>,
    next_fetch_offset: i64,
    last_epoch: Option<i32>,
    isolation_level: IsolationLevel,
    aborted_transactions: BinaryHeap<Reverse<(i64, i64)>>,
    aborted_producer_ids: BTreeSet<i64>,
    pending_error: Option<Error>,
    exhausted: bool,
    /// Encoded size of the records handed out since the last `take_bytes_read`.
    bytes_read: usize,
}

impl CompletedFetch {
    /// Wraps a partition's `records` bytes fetched at `fetch_offset`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        partition: TopicPartition,
        generation: u64,
        fetch_offset: i64,
        info: PartitionFetchInfo,
        records: Bytes,
        aborted: &[AbortedTransaction],
        isolation_level: IsolationLevel,
        check_crcs: bool,
    ) -> Self {
        let options = ReadOptions {
            check_crcs,
            ..ReadOptions::default()
        };
        let batches = FetchedRecords::new(
            Arc::clone(&partition.topic),
            partition.partition,
            records,
            options,
        );
        Self {
            partition,
            generation,
            fetch_offset,
            info,
            batches,
            current: None,
            last_batch_next_offset: None,
            next_fetch_offset: fetch_offset,
            last_epoch: None,
            isolation_level,
            aborted_transactions: aborted
                .iter()
                .map(|a| Reverse((a.first_offset, a.producer_id)))
                .collect(),
            aborted_producer_ids: BTreeSet::new(),
            pending_error: None,
            exhausted: false,
            bytes_read: 0,
        }
    }

    /// The offset of the next record to return (the position after what was returned).
    pub fn next_fetch_offset(&self) -> i64 {
        self.next_fetch_offset
    }

    /// The leader epoch of the last batch read.
    pub fn last_epoch(&self) -> Option<i32> {
        self.last_epoch
    }

    /// Whether everything has been returned.
    pub fn is_exhausted(&self) -> bool {
        self.exhausted && self.pending_error.is_none()
    }

    /// Up to `max_records` records, compressed batches decompressed into `decompression`. An
    /// error stops the batch: the records before it are returned now and the error on the next
    /// call, leaving the position at the bad record.
    pub fn fetch_records(
        &mut self,
        max_records: usize,
        decompression: &mut DecompressionBuffer,
    ) -> Result<Vec<ConsumerRecord>, Error> {
        if let Some(error) = self.pending_error.take() {
            self.exhausted = true;
            return Err(error);
        }
        let mut out = Vec::new();
        while out.len() < max_records {
            match self.next_record(decompression) {
                Ok(Some(record)) => out.push(record),
                Ok(None) => break,
                Err(error) => {
                    if out.is_empty() {
                        self.exhausted = true;
                        return Err(error);
                    }
                    self.pending_error = Some(error);
                    break;
                }
            }
        }
        Ok(out)
    }

    /// How far `position` is behind the end a consumer of this isolation level can read (the
    /// high watermark, or the last stable offset under read_committed), as Java's
    /// `SubscriptionState.partitionLag` computes it; `None` when the broker did not say.
    pub fn lag_at(&self, position: i64) -> Option<i64> {
        let end = match self.isolation_level {
            IsolationLevel::ReadCommitted => self.info.last_stable_offset,
            IsolationLevel::ReadUncommitted => self.info.high_watermark,
        };
        (end >= 0).then(|| end - position)
    }

    /// How far `position` is past the log start offset (Java's `partitionLead`).
    pub fn lead_at(&self, position: i64) -> Option<i64> {
        (self.info.log_start_offset >= 0).then(|| position - self.info.log_start_offset)
    }

    /// The encoded size of the records handed out since the last call (for
    /// `bytes-consumed-*`).
    pub fn take_bytes_read(&mut self) -> usize {
        std::mem::take(&mut self.bytes_read)
    }

    /// Keeps an error to report on the next call.
    pub fn defer_error(&mut self, error: Error) {
        self.pending_error = Some(error);
    }

    fn next_record(
        &mut self,
        decompression: &mut DecompressionBuffer,
    ) -> Result<Option<ConsumerRecord>, Error> {
        loop {
            if self.exhausted {
                return Ok(None);
            }
            let Some(current) = self.current.as_mut() else {
                if !self.next_batch(decompression)? {
                    return Ok(None);
                }
                continue;
            };
            let Some(record) = current.records.next() else {
                self.current = None;
                continue;
            };
            let record = record?;
            if record.offset() < self.next_fetch_offset {
                continue; // before the fetch position: the batch started earlier
            }
            if current.is_control && !sabotage::active(Sabotage::ControlRecordsDelivered) {
                self.next_fetch_offset = record.offset() + 1;
                continue;
            }
            self.next_fetch_offset = record.offset() + 1;
            self.bytes_read += record.size_in_bytes();
            return Ok(Some(self.to_consumer_record(&record)));
        }
    }

    /// Moves to the next batch to read; `false` when there is none.
    fn next_batch(&mut self, decompression: &mut DecompressionBuffer) -> Result<bool, Error> {
        loop {
            let Some(batch) = self.batches.next() else {
                // v2 keeps a batch's last offset even when compaction removed its last record:
                // moving past the whole batch avoids fetching it again forever.
                if let Some(next) = self
                    .last_batch_next_offset
                    .filter(|_| !sabotage::active(Sabotage::EmptiedBatchRefetched))
                {
                    self.next_fetch_offset = self.next_fetch_offset.max(next);
                }
                self.exhausted = true;
                return Ok(false);
            };
            let batch = batch?;
            self.last_batch_next_offset = Some(batch.next_offset());
            if batch.partition_leader_epoch() >= 0 {
                self.last_epoch = Some(batch.partition_leader_epoch());
            }
            if self.isolation_level == IsolationLevel::ReadCommitted && batch.producer_id() >= 0 {
                self.consume_aborted_transactions_up_to(batch.last_offset());
                if is_abort_marker(&batch)? {
                    self.aborted_producer_ids.remove(&batch.producer_id());
                } else if batch.is_transactional()
                    && self.aborted_producer_ids.contains(&batch.producer_id())
                    && !sabotage::active(Sabotage::AbortedRecordsDelivered)
                {
                    tracing::trace!(
                        partition = %self.partition,
                        base_offset = batch.base_offset(),
                        producer_id = batch.producer_id(),
                        "skipping batch of an aborted transaction"
                    );
                    self.next_fetch_offset = self.next_fetch_offset.max(batch.next_offset());
                    continue;
                }
            }
            let leader_epoch =
                (batch.partition_leader_epoch() >= 0).then_some(batch.partition_leader_epoch());
            self.current = Some(CurrentBatch {
                records: batch.records_in(decompression)?,
                timestamp_type: batch.timestamp_type(),
                leader_epoch,
                is_control: batch.is_control(),
            });
            return Ok(true);
        }
    }

    fn consume_aborted_transactions_up_to(&mut self, offset: i64) {
        while let Some(Reverse((first_offset, producer_id))) = self.aborted_transactions.peek() {
            if *first_offset > offset {
                break;
            }
            self.aborted_producer_ids.insert(*producer_id);
            self.aborted_transactions.pop();
        }
    }

    fn to_consumer_record(&self, record: &Record) -> ConsumerRecord {
        let (timestamp_type, leader_epoch) = self
            .current
            .as_ref()
            .map(|c| (c.timestamp_type, c.leader_epoch))
            .unwrap_or((TimestampType::CreateTime, None));
        ConsumerRecord {
            topic: Arc::clone(&self.partition.topic),
            partition: self.partition.partition,
            offset: record.offset(),
            timestamp_ms: record.timestamp_ms(),
            timestamp_type,
            leader_epoch,
            key: record.key_bytes(),
            value: record.value_bytes(),
            headers: record
                .headers()
                .iter()
                .map(|h| RecordHeader {
                    key: Bytes::copy_from_slice(h.key()),
                    value: h.value_bytes(),
                })
                .collect(),
        }
    }
}

fn is_abort_marker(batch: &RecordBatch) -> Result<bool, Error> {
    Ok(matches!(
        batch.control_record()?,
        Some(ControlRecord::Abort { .. })
    ))
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::records::{end_txn_marker_batch, NewRecord, RecordBatchBuilder};

    fn batch(base: i64, values: &[&str], producer: Option<(i64, bool)>) -> Bytes {
        let mut b = RecordBatchBuilder::new(base).partition_leader_epoch(3);
        if let Some((pid, transactional)) = producer {
            b = b.producer(pid, 0, 0).transactional(transactional);
        }
        for v in values {
            b.append(&NewRecord {
                timestamp_ms: 1_000,
                key: None,
                value: Some(v.as_bytes()),
                headers: &[],
            })
            .unwrap();
        }
        b.build().unwrap()
    }

    fn marker(offset: i64, pid: i64, commit: bool) -> Bytes {
        let record = if commit {
            ControlRecord::Commit {
                coordinator_epoch: 0,
            }
        } else {
            ControlRecord::Abort {
                coordinator_epoch: 0,
            }
        };
        end_txn_marker_batch(offset, pid, 0, 2_000, &record).unwrap()
    }

    fn concat(parts: &[Bytes]) -> Bytes {
        let mut out = BytesMut::new();
        for p in parts {
            out.extend_from_slice(p);
        }
        out.freeze()
    }

    fn fetch(
        bytes: Bytes,
        fetch_offset: i64,
        aborted: &[AbortedTransaction],
        level: IsolationLevel,
    ) -> CompletedFetch {
        CompletedFetch::new(
            TopicPartition::new("t", 0),
            1,
            fetch_offset,
            PartitionFetchInfo {
                high_watermark: 100,
                last_stable_offset: 100,
                log_start_offset: 0,
            },
            bytes,
            aborted,
            level,
            true,
        )
    }

    fn values(records: &[ConsumerRecord]) -> Vec<String> {
        records
            .iter()
            .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
            .collect()
    }

    /// Log: committed txn of producer 7 at 0-1 + commit marker at 2; aborted txn of producer 8
    /// at 3-4 + abort marker at 5; plain records at 6-7.
    fn transactional_log() -> Bytes {
        concat(&[
            batch(0, &["c0", "c1"], Some((7, true))),
            marker(2, 7, true),
            batch(3, &["a3", "a4"], Some((8, true))),
            marker(5, 8, false),
            batch(6, &["p6", "p7"], None),
        ])
    }

    #[test]
    fn read_committed_skips_aborted_transactions_and_markers() {
        let aborted = [AbortedTransaction {
            producer_id: 8,
            first_offset: 3,
        }];
        let mut f = fetch(
            transactional_log(),
            0,
            &aborted,
            IsolationLevel::ReadCommitted,
        );
        let records = f
            .fetch_records(100, &mut DecompressionBuffer::new())
            .unwrap();
        assert_eq!(values(&records), ["c0", "c1", "p6", "p7"]);
        assert_eq!(records[2].offset, 6);
        assert_eq!(f.next_fetch_offset(), 8);
        assert!(f.is_exhausted());
    }

    #[test]
    fn read_uncommitted_returns_aborted_records_but_never_markers() {
        let aborted = [AbortedTransaction {
            producer_id: 8,
            first_offset: 3,
        }];
        let mut f = fetch(
            transactional_log(),
            0,
            &aborted,
            IsolationLevel::ReadUncommitted,
        );
        let records = f
            .fetch_records(100, &mut DecompressionBuffer::new())
            .unwrap();
        assert_eq!(values(&records), ["c0", "c1", "a3", "a4", "p6", "p7"]);
        assert_eq!(f.next_fetch_offset(), 8);
    }

    #[test]
    fn max_records_and_fetch_offset_inside_a_batch() {
        let mut f = fetch(
            batch(10, &["a", "b", "c", "d"], None),
            11,
            &[],
            IsolationLevel::ReadUncommitted,
        );
        let first = f.fetch_records(2, &mut DecompressionBuffer::new()).unwrap();
        assert_eq!(values(&first), ["b", "c"]);
        assert_eq!(f.next_fetch_offset(), 13);
        assert_eq!(first[0].leader_epoch, Some(3));
        assert_eq!(f.last_epoch(), Some(3));
        let rest = f.fetch_records(2, &mut DecompressionBuffer::new()).unwrap();
        assert_eq!(values(&rest), ["d"]);
        assert!(f
            .fetch_records(2, &mut DecompressionBuffer::new())
            .unwrap()
            .is_empty());
        assert!(f.is_exhausted());
    }

    #[test]
    fn corrupt_batch_returns_records_before_it_then_the_error() {
        let good = batch(0, &["x"], None);
        let mut bad = BytesMut::from(&batch(1, &["y"], None)[..]);
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let mut f = fetch(
            concat(&[good, bad.freeze()]),
            0,
            &[],
            IsolationLevel::ReadUncommitted,
        );
        assert_eq!(
            values(
                &f.fetch_records(10, &mut DecompressionBuffer::new())
                    .unwrap()
            ),
            ["x"]
        );
        assert_eq!(f.next_fetch_offset(), 1);
        assert!(matches!(
            f.fetch_records(10, &mut DecompressionBuffer::new()),
            Err(Error::Records(_))
        ));
        assert_eq!(f.next_fetch_offset(), 1, "position stays at the bad record");
        assert!(f.is_exhausted());
    }
}
