//! One partition's log: v2 record batches with broker-assigned offsets, the log start offset,
//! the high watermark, the leader-epoch cache and the transaction index.
//!
//! Modelled on Kafka's `UnifiedLog` / `LocalLog` with one simplification: every replica of a
//! partition shares this single log (see `FIDELITY.md`). Replicas agree up to the high
//! watermark; what lies above it is the leader's unreplicated tail, cut off when leadership
//! moves ([`PartitionLog::become_leader`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_consumer::records::{
    ControlRecord, FetchedRecords, ReadOptions, RecordBatch, TimestampType,
};

// Field offsets within a v2 batch header (Kafka's DefaultRecordBatch).
const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const TIMESTAMP_TYPE_BIT: u8 = 0x08;

/// A batch as stored: its bytes carry the offsets and leader epoch the log assigned.
#[derive(Debug, Clone)]
struct StoredBatch {
    base_offset: i64,
    last_offset: i64,
    max_timestamp_ms: i64,
    bytes: Bytes,
}

/// A transaction the log saw aborted: fetched by `read_committed` consumers so they can drop
/// its records (Kafka's `AbortedTxn` from the transaction index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The transaction's producer.
    pub producer_id: i64,
    /// Its first offset in this partition.
    pub first_offset: i64,
    /// The offset of its abort marker.
    pub last_offset: i64,
}

/// What an append assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the first record appended.
    pub base_offset: i64,
    /// Offset of the last record appended.
    pub last_offset: i64,
    /// The broker's timestamp under LogAppendTime, else -1.
    pub log_append_time_ms: i64,
}

/// Why an append was refused (all batches of a request are refused together, as in Kafka).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendError {
    /// A batch failed CRC or structural validation (`CORRUPT_MESSAGE`).
    Corrupt(String),
    /// A batch's record count does not fit the offsets it spans (`INVALID_RECORD`, Kafka's
    /// `InvalidRecordException`).
    InvalidRecord(String),
    /// A batch is larger than `max.message.bytes` (`MESSAGE_TOO_LARGE`).
    TooLarge {
        /// The batch's size.
        size_bytes: usize,
    },
}

/// A read's result: bytes in fetch-response form, possibly ending in a partial batch.
#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    /// Whole batches, then possibly the front of one more (as Kafka's file slices do).
    pub records: Bytes,
    /// Transactions aborted within the range read (only for `read_committed`).
    pub aborted: Vec<AbortedTxn>,
}

/// One partition's log.
#[derive(Debug, Clone)]
pub struct PartitionLog {
    batches: Vec<StoredBatch>,
    log_start_offset: i64,
    log_end_offset: i64,
    high_watermark: i64,
    /// Leader-epoch cache: (epoch, start offset), ascending in both.
    epochs: Vec<(i32, i64)>,
    /// Open transactions: producer id → first offset.
    ongoing_txns: BTreeMap<i64, i64>,
    aborted: Vec<AbortedTxn>,
}

impl Default for PartitionLog {
    fn default() -> Self {
        Self {
            batches: Vec::new(),
            log_start_offset: 0,
            log_end_offset: 0,
            high_watermark: 0,
            epochs: vec![(0, 0)],
            ongoing_txns: BTreeMap::new(),
            aborted: Vec::new(),
        }
    }
}

impl PartitionLog {
    /// The first offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The offset the next appended record gets.
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// The offset below which every replica holds the log (consumers read below it).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The last stable offset: the high watermark, or the first offset of the earliest open
    /// transaction if that is lower (`read_committed` consumers stop here).
    pub fn last_stable_offset(&self) -> i64 {
        self.ongoing_txns
            .values()
            .copied()
            .min()
            .map_or(self.high_watermark, |first| first.min(self.high_watermark))
    }

    /// The latest leader epoch recorded in the log.
    pub fn latest_epoch(&self) -> i32 {
        self.epochs.last().map_or(0, |(epoch, _)| *epoch)
    }

    /// Validates `records` (a Produce partition's bytes) and appends every batch, assigning
    /// offsets from the log end and stamping `leader_epoch`; under LogAppendTime
    /// (`log_append_time_ms` set) rewrites the timestamp type and max timestamp and the CRC.
    pub fn append(
        &mut self,
        records: Bytes,
        leader_epoch: i32,
        log_append_time_ms: Option<i64>,
        max_message_bytes: usize,
    ) -> Result<AppendInfo, AppendError> {
        let batches = validate(records, max_message_bytes, Origin::Producer)?;
        Ok(self.append_batches(&batches, leader_epoch, log_append_time_ms))
    }

    /// Appends batches as Kafka's log cleaner leaves them (`MemoryRecords.filterTo`): the
    /// same checks as [`Self::append`], except that a batch may hold no record at all — the
    /// cleaner keeps an emptied batch's header (`writeEmptyHeader`) when it carries a
    /// producer's last sequence, so its offsets stay taken. A producer's batch must hold a
    /// record (Kafka's `LogValidator`). Offsets are assigned from the log end, as for a
    /// producer: the sim lays these shapes at the head of the log instead of cleaning old
    /// segments (see `FIDELITY.md`).
    pub fn append_cleaned(
        &mut self,
        records: Bytes,
        leader_epoch: i32,
        max_message_bytes: usize,
    ) -> Result<AppendInfo, AppendError> {
        let batches = validate(records, max_message_bytes, Origin::Cleaner)?;
        Ok(self.append_batches(&batches, leader_epoch, None))
    }

    fn append_batches(
        &mut self,
        batches: &[RecordBatch],
        leader_epoch: i32,
        log_append_time_ms: Option<i64>,
    ) -> AppendInfo {
        let base_offset = self.log_end_offset;
        for batch in batches {
            let count = i64::from(batch.last_offset_delta()) + 1;
            let base = self.log_end_offset;
            let mut bytes = BytesMut::from(batch.as_bytes().as_ref());
            bytes[..8].copy_from_slice(&base.to_be_bytes());
            bytes[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
                .copy_from_slice(&leader_epoch.to_be_bytes());
            let mut max_timestamp_ms = batch.max_timestamp_ms();
            if let Some(append_time_ms) = log_append_time_ms {
                bytes[ATTRIBUTES_OFFSET + 1] |= TIMESTAMP_TYPE_BIT;
                bytes[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
                    .copy_from_slice(&append_time_ms.to_be_bytes());
                let crc = crc32c::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
                bytes[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
                max_timestamp_ms = append_time_ms;
            }
            self.track_transaction(batch, base, base + count - 1);
            self.batches.push(StoredBatch {
                base_offset: base,
                last_offset: base + count - 1,
                max_timestamp_ms,
                bytes: bytes.freeze(),
            });
            self.log_end_offset = base + count;
        }
        self.ensure_epoch(leader_epoch, base_offset);
        AppendInfo {
            base_offset,
            last_offset: self.log_end_offset - 1,
            log_append_time_ms: log_append_time_ms.unwrap_or(-1),
        }
    }

    fn track_transaction(&mut self, batch: &RecordBatch, first: i64, last: i64) {
        if !batch.is_transactional() {
            return;
        }
        let producer_id = batch.producer_id();
        if !batch.is_control() {
            self.ongoing_txns.entry(producer_id).or_insert(first);
            return;
        }
        // validate() decoded every control record already, so this cannot fail here.
        let marker = batch.control_record().ok().flatten();
        let Some(first_offset) = self.ongoing_txns.remove(&producer_id) else {
            return;
        };
        if let Some(ControlRecord::Abort { .. }) = marker {
            self.aborted.push(AbortedTxn {
                producer_id,
                first_offset,
                last_offset: last,
            });
        }
    }

    /// Moves the high watermark up to `offset` (clamped to the log end); never down.
    pub fn advance_high_watermark(&mut self, offset: i64) {
        self.high_watermark = self.high_watermark.max(offset.min(self.log_end_offset));
    }

    /// A new leader takes over at `epoch`: the unreplicated tail above the high watermark is
    /// truncated (the new leader never had it) and the epoch starts at the new log end, as
    /// Kafka's `maybeAssignEpochStartOffset` does.
    pub fn become_leader(&mut self, epoch: i32) {
        self.truncate_to(self.high_watermark);
        self.ensure_epoch(epoch, self.log_end_offset);
    }

    /// An unclean leader election: the new leader is a replica that was out of sync and holds
    /// the log only up to `end_offset` (the next batch boundary at or above it, never below
    /// the log start); everything above — acknowledged records included — is gone, the high
    /// watermark moves down to the new log end, and `epoch` starts there. Returns the new log
    /// end. Kafka's followers then truncate to the new leader's log through
    /// OffsetForLeaderEpoch; this single shared log takes that state at once.
    pub fn become_unclean_leader(&mut self, epoch: i32, end_offset: i64) -> i64 {
        self.truncate_to(end_offset.max(self.log_start_offset));
        self.high_watermark = self.log_end_offset;
        self.ensure_epoch(epoch, self.log_end_offset);
        self.log_end_offset
    }

    fn ensure_epoch(&mut self, epoch: i32, start_offset: i64) {
        if epoch > self.latest_epoch() {
            self.epochs.push((epoch, start_offset));
        }
    }

    /// Drops every batch at or above `offset` (batch boundaries: the high watermark only ever
    /// sits on one).
    fn truncate_to(&mut self, offset: i64) {
        self.batches.retain(|b| b.base_offset < offset);
        self.log_end_offset = self.batches.last().map_or(
            self.log_start_offset.max(offset.min(self.log_end_offset)),
            |b| b.last_offset + 1,
        );
        self.high_watermark = self.high_watermark.min(self.log_end_offset);
        self.epochs
            .retain(|(_, start)| *start <= self.log_end_offset);
        if self.epochs.is_empty() {
            self.epochs.push((0, self.log_start_offset));
        }
        self.ongoing_txns.retain(|_, first| *first < offset);
        self.aborted.retain(|a| a.last_offset < offset);
    }

    /// Retention / DeleteRecords: moves the log start offset up to `offset` (at most the high
    /// watermark) and drops the batches wholly below it.
    pub fn delete_before(&mut self, offset: i64) -> i64 {
        let new_start = offset.min(self.high_watermark).max(self.log_start_offset);
        self.log_start_offset = new_start;
        self.batches.retain(|b| b.last_offset >= new_start);
        self.aborted.retain(|a| a.last_offset >= new_start);
        new_start
    }

    /// Kafka's `endOffsetForEpoch`: the largest epoch ≤ `epoch` and the offset where the
    /// next epoch starts (the log end for the latest epoch); `(-1, -1)` below the first epoch.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let Some(index) = self.epochs.iter().rposition(|(e, _)| *e <= epoch) else {
            return (-1, -1);
        };
        let found = self.epochs[index].0;
        let end = self
            .epochs
            .get(index + 1)
            .map_or(self.log_end_offset, |(_, start)| *start);
        (found, end)
    }

    /// Reads from `fetch_offset`: whole batches below `max_offset` (the high watermark or the
    /// last stable offset), cut at `max_bytes` — the cut may end inside a batch, as Kafka's file
    /// slices do — except that with `min_one_batch` the first batch is returned whole however
    /// large (KIP-74).
    pub fn read(
        &self,
        fetch_offset: i64,
        max_offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        with_aborted: bool,
    ) -> ReadResult {
        let start = self
            .batches
            .partition_point(|b| b.last_offset < fetch_offset);
        let mut out = BytesMut::new();
        for (i, batch) in self.batches[start..].iter().enumerate() {
            if batch.base_offset >= max_offset {
                break;
            }
            let room = max_bytes.saturating_sub(out.len());
            if batch.bytes.len() <= room || (i == 0 && min_one_batch) {
                out.extend_from_slice(&batch.bytes);
            } else {
                out.extend_from_slice(&batch.bytes[..room]);
                break;
            }
        }
        let aborted = if with_aborted && !out.is_empty() {
            let upper = fetch_offset + out.len() as i64; // generous: any txn overlapping the read
            self.aborted
                .iter()
                .filter(|a| a.last_offset >= fetch_offset && a.first_offset < upper.max(max_offset))
                .copied()
                .collect()
        } else {
            Vec::new()
        };
        ReadResult {
            records: out.freeze(),
            aborted,
        }
    }

    /// ListOffsets by timestamp: the first record below `max_offset` with a timestamp at or
    /// after `timestamp_ms`, as (offset, timestamp).
    pub fn offset_for_timestamp(&self, timestamp_ms: i64, max_offset: i64) -> Option<(i64, i64)> {
        self.batches
            .iter()
            .filter(|b| b.base_offset < max_offset && b.max_timestamp_ms >= timestamp_ms)
            .find_map(|b| {
                records_of(b)
                    .into_iter()
                    .find(|(offset, ts)| *ts >= timestamp_ms && *offset < max_offset)
            })
    }

    /// ListOffsets -3 (KIP-734): the offset and timestamp of the record with the largest
    /// timestamp below `max_offset` (the earliest such record on ties).
    pub fn max_timestamp(&self, max_offset: i64) -> Option<(i64, i64)> {
        let mut best: Option<(i64, i64)> = None;
        for batch in self.batches.iter().filter(|b| b.base_offset < max_offset) {
            for (offset, ts) in records_of(batch) {
                if offset < max_offset && best.is_none_or(|(_, b)| ts > b) {
                    best = Some((offset, ts));
                }
            }
        }
        best
    }
}

/// (offset, timestamp) of each record of a stored batch; control batches yield nothing.
fn records_of(batch: &StoredBatch) -> Vec<(i64, i64)> {
    let reader = FetchedRecords::new(
        Arc::from(""),
        0,
        batch.bytes.clone(),
        ReadOptions::default(),
    );
    let mut out = Vec::new();
    for stored in reader.flatten() {
        if stored.is_control() {
            continue;
        }
        let log_append = stored.timestamp_type() == TimestampType::LogAppendTime;
        if let Ok(records) = stored.records() {
            for record in records.flatten() {
                let ts = if log_append {
                    stored.max_timestamp_ms()
                } else {
                    record.timestamp_ms()
                };
                out.push((record.offset(), ts));
            }
        }
    }
    out
}

/// Who wrote the batches being appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A producer: every batch holds at least one record.
    Producer,
    /// The log cleaner: a batch may be empty.
    Cleaner,
}

/// Kafka's produce-side validation (`LogValidator`, simplified): whole v2 batches only, CRC
/// and record framing intact, a record at every offset a producer's batch spans (the cleaner's
/// may have gaps and be empty), control records decodable, each batch within the size limit.
fn validate(
    records: Bytes,
    max_message_bytes: usize,
    origin: Origin,
) -> Result<Vec<RecordBatch>, AppendError> {
    if records.is_empty() {
        return Err(AppendError::Corrupt("no record batches".to_owned()));
    }
    let mut reader = FetchedRecords::new(Arc::from(""), 0, records, ReadOptions::default());
    let mut batches = Vec::new();
    for batch in &mut reader {
        let batch = batch.map_err(|e| AppendError::Corrupt(e.to_string()))?;
        if batch.size_bytes() > max_message_bytes {
            return Err(AppendError::TooLarge {
                size_bytes: batch.size_bytes(),
            });
        }
        let mut count = 0i64;
        for record in batch
            .records()
            .map_err(|e| AppendError::Corrupt(e.to_string()))?
        {
            record.map_err(|e| AppendError::Corrupt(e.to_string()))?;
            count += 1;
        }
        let span = i64::from(batch.last_offset_delta()) + 1;
        let refused = match origin {
            // Kafka's `LogValidator.validateBatch`: a producer's batch holds a record at
            // every offset it spans.
            Origin::Producer => count != span,
            Origin::Cleaner => count > span || (count == 0 && batch.is_control()),
        };
        if refused {
            return Err(AppendError::InvalidRecord(format!(
                "inconsistent batch offset range of {span} offsets and count of records {count}"
            )));
        }
        if batch.is_control() {
            batch
                .control_record()
                .map_err(|e| AppendError::Corrupt(e.to_string()))?;
        }
        batches.push(batch);
    }
    if reader.truncated_tail().is_some() {
        return Err(AppendError::Corrupt("partial record batch".to_owned()));
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use kafka_consumer::records::{NewRecord, RecordBatchBuilder};

    use super::*;

    fn batch(n: usize, ts: i64) -> Bytes {
        let mut b = RecordBatchBuilder::new(0);
        for i in 0..n {
            b.append(&NewRecord {
                timestamp_ms: ts + i as i64,
                key: None,
                value: Some(b"v"),
                headers: &[],
            })
            .unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn append_assigns_offsets_and_read_returns_them() {
        let mut log = PartitionLog::default();
        assert_eq!(
            log.append(batch(3, 10), 0, None, 1 << 20)
                .unwrap()
                .base_offset,
            0
        );
        assert_eq!(
            log.append(batch(2, 20), 0, None, 1 << 20)
                .unwrap()
                .base_offset,
            3
        );
        log.advance_high_watermark(5);
        let read = log.read(4, 5, 1 << 20, true, false);
        let offsets: Vec<i64> =
            FetchedRecords::new(Arc::from("t"), 0, read.records, ReadOptions::default())
                .flat_map(|b| b.unwrap().records().unwrap())
                .map(|r| r.unwrap().offset())
                .collect();
        assert_eq!(offsets, [3, 4]);
        assert_eq!(log.offset_for_timestamp(21, 5), Some((4, 21)));
        assert_eq!(log.max_timestamp(5), Some((4, 21)));
    }

    #[test]
    fn corrupt_batch_is_refused() {
        let mut log = PartitionLog::default();
        let mut bytes = BytesMut::from(batch(1, 0).as_ref());
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert!(matches!(
            log.append(bytes.freeze(), 0, None, 1 << 20),
            Err(AppendError::Corrupt(_))
        ));
        assert_eq!(log.log_end_offset(), 0);
    }

    /// Kept records at deltas `kept` of a batch spanning `span` offsets (an idempotent
    /// producer's, as the cleaner keeps emptied batches only for producer state).
    fn cleaned(kept: &[i64], span: i32) -> Bytes {
        let mut b = RecordBatchBuilder::new(0)
            .producer(7, 0, 0)
            .last_offset_delta(span - 1);
        for delta in kept {
            b.append_at(
                *delta,
                &NewRecord {
                    timestamp_ms: 1,
                    key: None,
                    value: Some(b"v"),
                    headers: &[],
                },
            )
            .unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn cleaner_shaped_batches_keep_their_offsets_and_a_producer_may_not_write_them() {
        let mut log = PartitionLog::default();
        for (kept, span) in [(&[1, 3][..], 5), (&[][..], 2)] {
            assert!(matches!(
                log.append(cleaned(kept, span), 0, None, 1 << 20),
                Err(AppendError::InvalidRecord(_))
            ));
        }
        log.append(cleaned(&[0], 1), 0, None, 1 << 20).unwrap();
        assert_eq!(log.log_end_offset(), 1, "only the whole batch went in");
        let info = log.append_cleaned(cleaned(&[1, 3], 5), 0, 1 << 20).unwrap();
        assert_eq!((info.base_offset, info.last_offset), (1, 5));
        let info = log.append_cleaned(cleaned(&[], 2), 0, 1 << 20).unwrap();
        assert_eq!((info.base_offset, info.last_offset), (6, 7));
        assert_eq!(log.log_end_offset(), 8);
        log.advance_high_watermark(8);
        let read = log.read(1, 8, 1 << 20, true, false);
        let batches: Vec<(i64, i64, Vec<i64>)> =
            FetchedRecords::new(Arc::from("t"), 0, read.records, ReadOptions::default())
                .map(|b| {
                    let b = b.unwrap();
                    let offsets = b.records().unwrap().map(|r| r.unwrap().offset()).collect();
                    (b.base_offset(), b.last_offset(), offsets)
                })
                .collect();
        assert_eq!(batches, [(1, 5, vec![2, 4]), (6, 7, vec![])]);
        // More records than offsets is refused from the cleaner too.
        let mut log = PartitionLog::default();
        assert!(log.append_cleaned(cleaned(&[0, 1], 1), 0, 1 << 20).is_err());
    }

    #[test]
    fn leader_change_truncates_the_unreplicated_tail_and_records_the_epoch() {
        let mut log = PartitionLog::default();
        log.append(batch(2, 0), 0, None, 1 << 20).unwrap();
        log.advance_high_watermark(2);
        log.append(batch(2, 0), 0, None, 1 << 20).unwrap();
        log.become_leader(1);
        assert_eq!(log.log_end_offset(), 2);
        assert_eq!(log.end_offset_for_epoch(0), (0, 2));
        log.append(batch(1, 0), 1, None, 1 << 20).unwrap();
        assert_eq!(log.end_offset_for_epoch(1), (1, 3));
        assert_eq!(log.end_offset_for_epoch(5), (1, 3));
    }

    #[test]
    fn an_unclean_election_loses_acknowledged_records_and_reuses_their_offsets() {
        let mut log = PartitionLog::default();
        for _ in 0..5 {
            log.append(batch(1, 0), 0, None, 1 << 20).unwrap();
        }
        log.advance_high_watermark(5);
        assert_eq!(log.become_unclean_leader(1, 3), 3);
        assert_eq!(log.high_watermark(), 3);
        // A consumer that read up to 5 in epoch 0 learns the epoch ended at 3.
        assert_eq!(log.end_offset_for_epoch(0), (0, 3));
        let info = log.append(batch(1, 0), 1, None, 1 << 20).unwrap();
        assert_eq!(info.base_offset, 3);
        assert_eq!(log.end_offset_for_epoch(1), (1, 4));
        // Never below the log start.
        log.delete_before(3);
        log.advance_high_watermark(4);
        assert_eq!(log.become_unclean_leader(2, 0), 3);
    }

    #[test]
    fn min_one_batch_returns_an_oversized_first_batch_whole() {
        let mut log = PartitionLog::default();
        log.append(batch(10, 0), 0, None, 1 << 20).unwrap();
        log.advance_high_watermark(10);
        let whole = log.read(0, 10, 10, true, false).records.len();
        assert!(whole > 10);
        assert_eq!(log.read(0, 10, 10, false, false).records.len(), 10);
    }
}
