//! Batches of a Fetch response's `records` bytes: an O(1) cursor that slices each v2 batch out
//! of the response without copying.
//!
//! A broker may cut the last batch of a response short (it fills up to the fetch size), so a
//! partial trailing batch ends iteration quietly and is reported through
//! [`FetchedRecords::truncated_tail`]; the fetcher uses it to tell "the first batch is larger
//! than `max.partition.fetch.bytes`" from an ordinary cut.

use std::sync::Arc;

use bytes::Bytes;

use super::compression::{decompress, Compression, DecompressError};
use super::control::ControlRecord;
use super::decompression_buffer::DecompressionBuffer;
use super::error::{PartitionContext, RecordsError, RecordsErrorKind};
use super::record::{RecordDefaults, Records};

/// baseOffset i64 + batchLength i32: the part every message format shares.
pub const LOG_OVERHEAD_BYTES: usize = 12;
/// The full v2 batch header; records start here.
pub const BATCH_HEADER_BYTES: usize = 61;
/// Bytes up to and including the magic byte, the least needed to know the format.
const HEADER_BYTES_UP_TO_MAGIC: usize = 17;
/// The only supported message format.
const MAGIC_V2: i8 = 2;

// Field offsets within a v2 batch (DefaultRecordBatch.java).
const BATCH_LENGTH_OFFSET: usize = 8;
const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
/// The CRC covers everything from the attributes to the end of the batch.
const ATTRIBUTES_OFFSET: usize = 21;
const LAST_OFFSET_DELTA_OFFSET: usize = 23;
const BASE_TIMESTAMP_OFFSET: usize = 27;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const PRODUCER_ID_OFFSET: usize = 43;
const PRODUCER_EPOCH_OFFSET: usize = 51;
const BASE_SEQUENCE_OFFSET: usize = 53;
const RECORD_COUNT_OFFSET: usize = 57;

// Attribute bits.
const COMPRESSION_MASK: i16 = 0x07;
pub(crate) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(crate) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(crate) const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

/// Default cap on one batch's decompressed size: far above any sane `max.message.bytes`, far
/// below what would hurt the process.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 64 * 1024 * 1024;

/// How batches are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Verify each batch's CRC-32C (`check.crcs`, default true).
    pub check_crcs: bool,
    /// Largest decompressed records section accepted per batch; beyond it the batch fails with
    /// [`RecordsErrorKind::DecompressedTooLarge`].
    pub max_decompressed_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            check_crcs: true,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
        }
    }
}

/// Which timestamp the records carry (attributes bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    /// Set by the producer.
    CreateTime,
    /// Set by the broker on append; every record's timestamp is the batch's max timestamp.
    LogAppendTime,
}

/// The batch a fetch response ended in the middle of; it was skipped, not failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncatedTail {
    /// Where the partial batch starts in the response's `records` bytes.
    pub position_bytes: usize,
    /// Bytes of it present in the response.
    pub available_bytes: usize,
    /// Its base offset, when at least the 12-byte log overhead arrived.
    pub base_offset: Option<i64>,
    /// Its full size including the log overhead, when known (same condition).
    pub batch_size_bytes: Option<usize>,
}

impl TruncatedTail {
    /// Whether the response held no complete batch at all: the fetcher cannot make progress and
    /// should report that the batch exceeds the fetch size (Java's `RecordTooLargeException` /
    /// "no complete records were found").
    pub fn is_whole_response(&self) -> bool {
        self.position_bytes == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    Finished,
    Truncated(TruncatedTail),
    Failed,
}

/// The batches of one partition's `records` bytes in a Fetch response.
///
/// Yields `Ok(batch)` per complete batch; a corrupt batch yields one `Err` and ends the
/// iteration (the data after it cannot be framed reliably). A partial last batch just ends it.
#[derive(Debug, Clone)]
pub struct FetchedRecords {
    bytes: Bytes,
    pos: usize,
    context: PartitionContext,
    options: ReadOptions,
    state: State,
}

impl FetchedRecords {
    /// Reads `bytes` (a FetchResponse partition's `records`) of `topic`-`partition`.
    pub fn new(topic: Arc<str>, partition: i32, bytes: Bytes, options: ReadOptions) -> Self {
        Self {
            bytes,
            pos: 0,
            context: PartitionContext { topic, partition },
            options,
            state: State::Reading,
        }
    }

    /// Bytes consumed so far (the start of the next batch).
    pub fn position_bytes(&self) -> usize {
        self.pos
    }

    /// The partial batch the response ended with, once iteration has reached it; `None` while
    /// iterating, after a clean end, or after an error.
    pub fn truncated_tail(&self) -> Option<&TruncatedTail> {
        match &self.state {
            State::Truncated(tail) => Some(tail),
            _ => None,
        }
    }

    fn fail(
        &mut self,
        base_offset: i64,
        kind: RecordsErrorKind,
    ) -> Option<Result<RecordBatch, RecordsError>> {
        self.state = State::Failed;
        Some(Err(self.context.error(base_offset, kind)))
    }

    fn truncate(
        &mut self,
        base_offset: Option<i64>,
        batch_size_bytes: Option<usize>,
    ) -> Option<Result<RecordBatch, RecordsError>> {
        self.state = State::Truncated(TruncatedTail {
            position_bytes: self.pos,
            available_bytes: self.bytes.len() - self.pos,
            base_offset,
            batch_size_bytes,
        });
        None
    }
}

impl Iterator for FetchedRecords {
    type Item = Result<RecordBatch, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.state != State::Reading {
            return None;
        }
        let rest = &self.bytes[self.pos..];
        if rest.is_empty() {
            self.state = State::Finished;
            return None;
        }
        if rest.len() < LOG_OVERHEAD_BYTES {
            return self.truncate(None, None);
        }
        let base_offset = read_i64(rest, 0);
        let batch_length = read_i32(rest, BATCH_LENGTH_OFFSET);
        // Check the magic before the length: a v0/v1 batch must say so, not "too short".
        if rest.len() >= HEADER_BYTES_UP_TO_MAGIC {
            let magic = rest[MAGIC_OFFSET] as i8;
            if magic != MAGIC_V2 {
                return self.fail(base_offset, RecordsErrorKind::UnsupportedMagic { magic });
            }
        }
        let minimum_bytes = BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES;
        let batch_size_bytes = match usize::try_from(batch_length) {
            Ok(len) if len >= minimum_bytes => LOG_OVERHEAD_BYTES + len,
            _ => {
                return self.fail(
                    base_offset,
                    RecordsErrorKind::InvalidBatchLength {
                        length_bytes: batch_length,
                        minimum_bytes,
                    },
                )
            }
        };
        if rest.len() < batch_size_bytes {
            return self.truncate(Some(base_offset), Some(batch_size_bytes));
        }
        let header = &rest[..BATCH_HEADER_BYTES];
        let attributes = read_i16(header, ATTRIBUTES_OFFSET);
        let code = (attributes & COMPRESSION_MASK) as u8;
        let Some(compression) = Compression::from_id(code) else {
            return self.fail(base_offset, RecordsErrorKind::UnknownCompression { code });
        };
        let record_count = read_i32(header, RECORD_COUNT_OFFSET);
        if record_count < 0 {
            return self.fail(
                base_offset,
                RecordsErrorKind::InvalidRecordCount {
                    count: record_count,
                },
            );
        }
        if self.options.check_crcs {
            let expected = read_i32(header, CRC_OFFSET) as u32;
            let computed = crc32c::crc32c(&rest[ATTRIBUTES_OFFSET..batch_size_bytes]);
            if expected != computed {
                return self.fail(
                    base_offset,
                    RecordsErrorKind::CorruptCrc { expected, computed },
                );
            }
        }
        let batch = RecordBatch {
            base_offset,
            partition_leader_epoch: read_i32(header, PARTITION_LEADER_EPOCH_OFFSET),
            crc: read_i32(header, CRC_OFFSET) as u32,
            attributes,
            compression,
            last_offset_delta: read_i32(header, LAST_OFFSET_DELTA_OFFSET),
            base_timestamp_ms: read_i64(header, BASE_TIMESTAMP_OFFSET),
            max_timestamp_ms: read_i64(header, MAX_TIMESTAMP_OFFSET),
            producer_id: read_i64(header, PRODUCER_ID_OFFSET),
            producer_epoch: read_i16(header, PRODUCER_EPOCH_OFFSET),
            base_sequence: read_i32(header, BASE_SEQUENCE_OFFSET),
            record_count,
            bytes: self.bytes.slice(self.pos..self.pos + batch_size_bytes),
            context: self.context.clone(),
            max_decompressed_bytes: self.options.max_decompressed_bytes,
        };
        self.pos += batch_size_bytes;
        Some(Ok(batch))
    }
}

/// One complete v2 batch: header fields, plus lazy access to its records.
#[derive(Debug, Clone)]
pub struct RecordBatch {
    base_offset: i64,
    partition_leader_epoch: i32,
    crc: u32,
    attributes: i16,
    compression: Compression,
    last_offset_delta: i32,
    base_timestamp_ms: i64,
    max_timestamp_ms: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    record_count: i32,
    /// The whole batch, log overhead included.
    bytes: Bytes,
    context: PartitionContext,
    max_decompressed_bytes: usize,
}

impl RecordBatch {
    /// Offset of the first record the batch was written with.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// lastOffsetDelta: survives compaction, so it may exceed the deltas of the records left.
    pub fn last_offset_delta(&self) -> i32 {
        self.last_offset_delta
    }

    /// Offset of the last record the batch was written with.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// Where the consumer's position goes after this batch, whatever records remain in it:
    /// `baseOffset + lastOffsetDelta + 1`. Compacted-away tails and control batches advance it.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Leader epoch of the partition when the batch was appended (-1 if unknown).
    pub fn partition_leader_epoch(&self) -> i32 {
        self.partition_leader_epoch
    }

    /// The CRC-32C stored in the header.
    pub fn crc(&self) -> u32 {
        self.crc
    }

    /// The codec of the records section.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Which timestamp the records carry.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch is part of a transaction (`read_committed` must check its fate).
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    /// Whether the batch holds a control record (a transaction marker) rather than data.
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }

    /// When the log cleaner set a delete horizon, the time after which tombstones and markers
    /// in this batch may be removed; it is stored in the base timestamp field.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_BIT != 0).then_some(self.base_timestamp_ms)
    }

    /// Base timestamp (the first record's, unless a delete horizon replaced it).
    pub fn base_timestamp_ms(&self) -> i64 {
        self.base_timestamp_ms
    }

    /// Largest record timestamp (the append time under LogAppendTime).
    pub fn max_timestamp_ms(&self) -> i64 {
        self.max_timestamp_ms
    }

    /// Producer id (-1 for non-idempotent producers).
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// Producer epoch (-1 for non-idempotent producers).
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// Sequence number of the first record (-1 for non-idempotent producers).
    pub fn base_sequence(&self) -> i32 {
        self.base_sequence
    }

    /// The recordCount field, as declared (not a promise: the record iterator checks it).
    pub fn record_count(&self) -> i32 {
        self.record_count
    }

    /// Size of the whole batch in bytes, log overhead included.
    pub fn size_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The batch's bytes as received, for forwarding or storage.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The records, decompressing the batch first if it is compressed. Decompression happens
    /// on every call (into one buffer the records then slice), so call it once per batch.
    /// Reading many batches, [`records_in`](Self::records_in) with one reused buffer avoids an
    /// allocation per batch.
    pub fn records(&self) -> Result<Records, RecordsError> {
        self.records_in(&mut DecompressionBuffer::one_shot())
    }

    /// [`records`](Self::records), decompressing into `buffer`'s reused space: the records
    /// slice their own part of it, which later batches never overwrite.
    pub fn records_in(&self, buffer: &mut DecompressionBuffer) -> Result<Records, RecordsError> {
        let payload = &self.bytes[BATCH_HEADER_BYTES..];
        let data = if self.compression == Compression::None {
            self.bytes.slice(BATCH_HEADER_BYTES..)
        } else {
            decompress(
                self.compression,
                payload,
                self.max_decompressed_bytes,
                buffer,
            )
            .map_err(|error| {
                let kind = match error {
                    DecompressError::Codec(message) => RecordsErrorKind::Decompression {
                        codec: self.compression,
                        message,
                    },
                    DecompressError::TooLarge => RecordsErrorKind::DecompressedTooLarge {
                        codec: self.compression,
                        limit_bytes: self.max_decompressed_bytes,
                    },
                };
                self.context.error(self.base_offset, kind)
            })?
        };
        let log_append_time_ms = (self.timestamp_type() == TimestampType::LogAppendTime)
            .then_some(self.max_timestamp_ms);
        let defaults = RecordDefaults {
            base_offset: self.base_offset,
            base_timestamp_ms: self.base_timestamp_ms,
            log_append_time_ms,
            declared_count: self.record_count,
        };
        Ok(Records::new(data, defaults, self.context.clone()))
    }

    /// For a control batch, its control record (a control batch carries exactly one); `None`
    /// for a data batch.
    pub fn control_record(&self) -> Result<Option<ControlRecord>, RecordsError> {
        if !self.is_control() {
            return Ok(None);
        }
        let invalid = |reason: String| {
            self.context.error(
                self.base_offset,
                RecordsErrorKind::InvalidControlRecord { reason },
            )
        };
        let record = match self.records()?.next() {
            Some(record) => record?,
            None => return Err(invalid("control batch has no records".to_owned())),
        };
        ControlRecord::decode(record.key(), record.value())
            .map(Some)
            .map_err(invalid)
    }
}

/// Records the complete v2 batches of `bytes` declare in their headers, read without
/// decompressing or checking anything (for `records-per-request-avg`): a cut-off last batch
/// and batches of other formats count nothing, and the walk stops at the first header that
/// does not fit.
pub(crate) fn count_declared_records(bytes: &[u8]) -> usize {
    let mut at = 0;
    let mut records = 0;
    while bytes.len() - at >= BATCH_HEADER_BYTES {
        let length = read_i32(bytes, at + BATCH_LENGTH_OFFSET);
        let Some(end) = usize::try_from(length)
            .ok()
            .and_then(|l| (at + LOG_OVERHEAD_BYTES).checked_add(l))
            .filter(|&end| end <= bytes.len())
        else {
            break;
        };
        if bytes[at + MAGIC_OFFSET] as i8 == MAGIC_V2 {
            records += usize::try_from(read_i32(bytes, at + RECORD_COUNT_OFFSET)).unwrap_or(0);
        }
        at = end;
    }
    records
}

fn read_i16(buf: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([buf[at], buf[at + 1]])
}

fn read_i32(buf: &[u8], at: usize) -> i32 {
    let mut raw = [0; 4];
    raw.copy_from_slice(&buf[at..at + 4]);
    i32::from_be_bytes(raw)
}

fn read_i64(buf: &[u8], at: usize) -> i64 {
    let mut raw = [0; 8];
    raw.copy_from_slice(&buf[at..at + 8]);
    i64::from_be_bytes(raw)
}

#[cfg(test)]
mod tests {
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    use super::*;
    use crate::records::test_support::{fetched, fix_crc, read_all, PARTITION, TOPIC};
    use crate::records::varint::write_varint;
    use crate::records::{end_txn_marker_batch, NewRecord, RecordBatchBuilder, SnappyFraming};

    fn batch(base_offset: i64, codec: Compression, values: &[&[u8]]) -> Vec<u8> {
        let mut builder = RecordBatchBuilder::new(base_offset).compression(codec);
        for value in values {
            builder
                .append(&NewRecord {
                    timestamp_ms: 5,
                    key: Some(b"key"),
                    value: Some(value),
                    headers: &[("h", Some(b"x"))],
                })
                .unwrap();
        }
        builder.build().unwrap().to_vec()
    }

    #[test]
    fn declared_records_count_complete_batches_only() {
        let mut blob = batch(0, Compression::None, &[b"a", b"b", b"c"]);
        blob.extend(batch(3, Compression::Zstd, &[b"d", b"e"]));
        assert_eq!(count_declared_records(&blob), 5);
        let whole = blob.len();
        // A response cut inside the second batch counts the first only.
        assert_eq!(count_declared_records(&blob[..whole - 1]), 3);
        assert_eq!(count_declared_records(&blob[..BATCH_HEADER_BYTES - 1]), 0);
        assert_eq!(count_declared_records(&[]), 0);
        // A negative length stops the walk rather than wrapping.
        blob[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(count_declared_records(&blob), 0);
    }

    #[test]
    fn a_records_size_is_its_length_prefix_and_body() {
        let blob = batch(0, Compression::None, &[b"value"]);
        let batch = fetched(Bytes::from(blob.clone()), ReadOptions::default())
            .next()
            .unwrap()
            .unwrap();
        let record = batch.records().unwrap().next().unwrap().unwrap();
        // One record: the batch minus its header is the record, length prefix included.
        assert_eq!(record.size_in_bytes(), blob.len() - BATCH_HEADER_BYTES);
    }

    fn error_of(blob: Vec<u8>, options: ReadOptions) -> RecordsError {
        read_all(Bytes::from(blob), options).unwrap_err()
    }

    const NO_CRC: ReadOptions = ReadOptions {
        check_crcs: false,
        max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
    };

    /// A one-batch blob whose records section is `section`, declaring `count` records.
    fn with_records_section(section: &[u8], count: i32) -> Vec<u8> {
        let mut blob = batch(0, Compression::None, &[b"v"]);
        blob.truncate(BATCH_HEADER_BYTES);
        blob.extend_from_slice(section);
        let batch_length = (blob.len() - LOG_OVERHEAD_BYTES) as i32;
        blob[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4]
            .copy_from_slice(&batch_length.to_be_bytes());
        blob[RECORD_COUNT_OFFSET..RECORD_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
        fix_crc(&mut blob);
        blob
    }

    /// A record body from its varint fields and raw tails, prefixed with its length.
    fn record(fields: &[i32], tail: &[u8]) -> Vec<u8> {
        let mut body = vec![0u8]; // attributes
        for field in fields {
            write_varint(&mut body, *field);
        }
        body.extend_from_slice(tail);
        let mut out = Vec::new();
        write_varint(&mut out, body.len() as i32);
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn partial_trailing_batch_is_skipped_at_every_cut() {
        for codec in [Compression::None, Compression::Zstd] {
            let first = batch(0, Compression::None, &[b"a", b"b"]);
            let second = batch(2, codec, &[&[7u8; 300], b"c"]);
            let whole = [first.clone(), second.clone()].concat();
            for cut in first.len()..whole.len() {
                let mut batches = fetched(
                    Bytes::copy_from_slice(&whole[..cut]),
                    ReadOptions::default(),
                );
                let complete: Vec<_> = (&mut batches).map(|b| b.unwrap().base_offset()).collect();
                assert_eq!(complete, [0], "cut at {cut}");
                let available_bytes = cut - first.len();
                let tail = batches.truncated_tail().copied();
                if available_bytes == 0 {
                    assert_eq!(tail, None);
                    continue;
                }
                let header_known = available_bytes >= LOG_OVERHEAD_BYTES;
                assert_eq!(
                    tail,
                    Some(TruncatedTail {
                        position_bytes: first.len(),
                        available_bytes,
                        base_offset: header_known.then_some(2),
                        batch_size_bytes: header_known.then_some(second.len()),
                    }),
                    "cut at {cut}"
                );
                assert!(!tail.unwrap().is_whole_response());
                assert_eq!(batches.position_bytes(), first.len());
            }
        }
    }

    #[test]
    fn response_without_a_complete_batch_reports_it() {
        let only = batch(9, Compression::None, &[&[1u8; 100]]);
        let mut batches = fetched(Bytes::copy_from_slice(&only[..70]), ReadOptions::default());
        assert!(batches.next().is_none());
        let tail = batches.truncated_tail().unwrap();
        assert!(tail.is_whole_response());
        assert_eq!(
            (tail.base_offset, tail.batch_size_bytes),
            (Some(9), Some(only.len()))
        );
    }

    #[test]
    fn corrupt_crc_names_topic_partition_offset_unless_disabled() {
        let mut blob = batch(1234, Compression::None, &[b"hello"]);
        let stored = u32::from_be_bytes(blob[CRC_OFFSET..CRC_OFFSET + 4].try_into().unwrap());
        let last = blob.len() - 1;
        blob[last] ^= 0xff; // inside the last header value
        let error = error_of(blob.clone(), ReadOptions::default());
        assert_eq!(&*error.topic, TOPIC);
        assert_eq!(error.partition, PARTITION);
        assert_eq!(error.base_offset, 1234);
        let RecordsErrorKind::CorruptCrc { expected, computed } = error.kind else {
            panic!("{error}")
        };
        assert_eq!(expected, stored);
        assert_eq!(computed, crc32c::crc32c(&blob[ATTRIBUTES_OFFSET..]));
        let message = error.to_string();
        assert!(
            message.contains(TOPIC) && message.contains("partition 3") && message.contains("1234"),
            "{message}"
        );
        // check.crcs=false reads the (altered) data.
        let records = read_all(Bytes::from(blob), NO_CRC).unwrap();
        assert_eq!(records[0].headers[0].1.as_deref(), Some(&[b'x' ^ 0xff][..]));
    }

    #[test]
    fn magic_v0_and_v1_are_unsupported() {
        for magic in [0i8, 1] {
            let mut blob = batch(5, Compression::None, &[b"v"]);
            blob[MAGIC_OFFSET] = magic as u8;
            let error = error_of(blob.clone(), ReadOptions::default());
            assert_eq!(error.kind, RecordsErrorKind::UnsupportedMagic { magic });
            assert!(
                error.to_string().contains(&format!("magic {magic}")),
                "{error}"
            );
            assert!(error.to_string().contains("v0 and v1"), "{error}");
            // Also when the v0/v1 batch is the partial tail.
            let partial =
                fetched(Bytes::copy_from_slice(&blob[..20]), ReadOptions::default()).next();
            assert!(matches!(
                partial,
                Some(Err(RecordsError {
                    kind: RecordsErrorKind::UnsupportedMagic { .. },
                    ..
                }))
            ));
        }
    }

    #[test]
    fn invalid_batch_lengths_unknown_codecs_and_counts_are_errors() {
        for length in [-1, 0, 48] {
            let mut blob = batch(5, Compression::None, &[b"v"]);
            blob[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4]
                .copy_from_slice(&i32::to_be_bytes(length));
            let kind = error_of(blob, ReadOptions::default()).kind;
            assert_eq!(
                kind,
                RecordsErrorKind::InvalidBatchLength {
                    length_bytes: length,
                    minimum_bytes: 49
                }
            );
        }
        let mut blob = batch(5, Compression::None, &[b"v"]);
        blob[ATTRIBUTES_OFFSET + 1] |= 0x05;
        fix_crc(&mut blob);
        assert_eq!(
            error_of(blob, ReadOptions::default()).kind,
            RecordsErrorKind::UnknownCompression { code: 5 }
        );
        let section = record(&[0, 0, 0, 0, 0], &[]);
        let kind = error_of(with_records_section(&section, -1), ReadOptions::default()).kind;
        assert_eq!(kind, RecordsErrorKind::InvalidRecordCount { count: -1 });
    }

    #[test]
    fn huge_record_count_errors_without_allocating() {
        let blob = with_records_section(&record(&[0, 0, -1, -1, 0], &[]), i32::MAX);
        let batch = fetched(Bytes::from(blob), ReadOptions::default())
            .next()
            .unwrap()
            .unwrap();
        let records = batch.records().unwrap();
        assert!(
            records.size_hint().1.unwrap() <= 3,
            "{:?}",
            records.size_hint()
        );
        // collect() may only reserve by size_hint, which is bounded by the bytes present.
        let error = records.collect::<Result<Vec<_>, _>>().unwrap_err();
        assert_eq!(
            error.kind,
            RecordsErrorKind::MissingRecords {
                declared: i32::MAX,
                read: 1
            }
        );
    }

    #[test]
    fn bytes_after_declared_records_are_an_error() {
        let two = [
            record(&[0, 0, -1, -1, 0], &[]),
            record(&[0, 1, -1, -1, 0], &[]),
        ]
        .concat();
        let mut records = fetched(
            Bytes::from(with_records_section(&two, 1)),
            ReadOptions::default(),
        )
        .next()
        .unwrap()
        .unwrap()
        .records()
        .unwrap();
        assert!(records.next().unwrap().is_ok());
        let error = records.next().unwrap().unwrap_err();
        assert_eq!(
            error.kind,
            RecordsErrorKind::TrailingBytes {
                declared: 1,
                remaining_bytes: two.len() / 2
            }
        );
        assert!(records.next().is_none(), "an error ends the iteration");
    }

    type KindCheck = Box<dyn Fn(&RecordsErrorKind) -> bool>;

    #[test]
    fn bad_lengths_and_varints_are_typed_errors() {
        let invalid = |field: &'static str, length: i64| move |kind: &RecordsErrorKind| matches!(kind, RecordsErrorKind::InvalidLength { field: f, length: l, .. } if *f == field && *l == length);
        let mut overlong_varint = vec![0x0c, 0]; // length 6, attributes
        overlong_varint.extend_from_slice(&[0xff; 5]);
        let mut too_long_record = Vec::new();
        write_varint(&mut too_long_record, 100);
        too_long_record.extend_from_slice(&[0; 10]);
        let mut negative_record = Vec::new();
        write_varint(&mut negative_record, -5);
        let cases: Vec<(&str, Vec<u8>, KindCheck)> = vec![
            (
                "negative record length",
                negative_record,
                Box::new(invalid("record length", -5)),
            ),
            (
                "record past batch end",
                too_long_record,
                Box::new(invalid("record length", 100)),
            ),
            (
                "key length -2",
                record(&[0, 0, -2], &[]),
                Box::new(invalid("key length", -2)),
            ),
            (
                "key past record",
                record(&[0, 0, 50], b"abc"),
                Box::new(invalid("key length", 50)),
            ),
            (
                "value past record",
                record(&[0, 0, -1, 9], b"abc"),
                Box::new(invalid("value length", 9)),
            ),
            (
                "negative header count",
                record(&[0, 0, -1, -1, -1], &[]),
                Box::new(invalid("header count", -1)),
            ),
            (
                "negative header key",
                record(&[0, 0, -1, -1, 1, -3], &[]),
                Box::new(invalid("header key length", -3)),
            ),
            (
                "huge header count",
                record(&[0, 0, -1, -1, 1 << 30], &[]),
                Box::new(|k: &RecordsErrorKind| {
                    matches!(
                        k,
                        RecordsErrorKind::InvalidVarint {
                            field: "header key length",
                            problem: "truncated",
                            ..
                        }
                    )
                }),
            ),
            (
                "varint overflow",
                overlong_varint,
                Box::new(|k: &RecordsErrorKind| {
                    matches!(
                        k,
                        RecordsErrorKind::InvalidVarint {
                            field: "timestamp delta",
                            ..
                        }
                    )
                }),
            ),
            (
                "offset delta overflow",
                record(&[0], &[0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0]),
                Box::new(|k: &RecordsErrorKind| {
                    matches!(
                        k,
                        RecordsErrorKind::InvalidVarint {
                            field: "offset delta",
                            problem: "too long (varint overflow)",
                            ..
                        }
                    )
                }),
            ),
            (
                "record longer than its fields",
                record(&[0, 0, -1, -1, 0], &[0, 0]),
                Box::new(|k: &RecordsErrorKind| {
                    matches!(
                        k,
                        RecordsErrorKind::RecordSizeMismatch {
                            declared_bytes: 8,
                            read_bytes: 6,
                            ..
                        }
                    )
                }),
            ),
            (
                "empty record body",
                vec![0],
                Box::new(|k: &RecordsErrorKind| {
                    matches!(
                        k,
                        RecordsErrorKind::InvalidVarint {
                            field: "timestamp delta",
                            ..
                        }
                    )
                }),
            ),
        ];
        for (name, section, check) in cases {
            let error = error_of(with_records_section(&section, 1), ReadOptions::default());
            assert!(check(&error.kind), "{name}: {error}");
            assert_eq!(
                (&*error.topic, error.partition, error.base_offset),
                (TOPIC, PARTITION, 0),
                "{name}"
            );
        }
    }

    #[test]
    fn decompression_bomb_is_capped_and_garbage_is_an_error() {
        let zeros = vec![0u8; 2 << 20];
        let options = ReadOptions {
            check_crcs: true,
            max_decompressed_bytes: 1 << 20,
        };
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let blob = batch(0, codec, &[&zeros]);
            assert!(blob.len() < 200 << 10, "{codec:?} compresses zeros");
            let error = error_of(blob.clone(), options);
            assert_eq!(
                error.kind,
                RecordsErrorKind::DecompressedTooLarge {
                    codec,
                    limit_bytes: 1 << 20
                }
            );
            let mut garbage = blob;
            garbage[BATCH_HEADER_BYTES..].fill(0x5a);
            fix_crc(&mut garbage);
            let error = error_of(garbage, options);
            assert!(
                matches!(error.kind, RecordsErrorKind::Decompression { codec: c, .. } if c == codec),
                "{error}"
            );
        }
    }

    #[test]
    fn invalid_control_record_is_an_error() {
        let mut blob = end_txn_marker_batch(
            0,
            1,
            1,
            0,
            &ControlRecord::Commit {
                coordinator_epoch: 1,
            },
        )
        .unwrap()
        .to_vec();
        // The key is the 4 bytes after length, attributes, timestamp delta, offset delta, key length.
        let key_at = BATCH_HEADER_BYTES + 5;
        blob[key_at] = 0x80; // negative key version
        fix_crc(&mut blob);
        let batch = fetched(Bytes::from(blob), ReadOptions::default())
            .next()
            .unwrap()
            .unwrap();
        let error = batch.control_record().unwrap_err();
        assert!(
            matches!(error.kind, RecordsErrorKind::InvalidControlRecord { .. }),
            "{error}"
        );
    }

    /// Random byte flips, truncations and splices of a valid multi-codec blob never panic, and
    /// reading always ends.
    #[test]
    fn random_mutations_never_panic() {
        let mut valid = Vec::new();
        for (i, codec) in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ]
        .into_iter()
        .enumerate()
        {
            valid.extend(batch(i as i64 * 10, codec, &[b"one", &[3u8; 200], b""]));
        }
        let mut raw_snappy = RecordBatchBuilder::new(100)
            .compression(Compression::Snappy)
            .snappy_framing(SnappyFraming::Raw);
        raw_snappy
            .append(&NewRecord {
                value: Some(b"raw"),
                ..NewRecord::default()
            })
            .unwrap();
        valid.extend_from_slice(&raw_snappy.build().unwrap());
        valid.extend(
            end_txn_marker_batch(
                101,
                1,
                1,
                0,
                &ControlRecord::Abort {
                    coordinator_epoch: 2,
                },
            )
            .unwrap(),
        );
        assert_eq!(
            read_all(Bytes::from(valid.clone()), ReadOptions::default())
                .unwrap()
                .len(),
            17
        );

        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let options = ReadOptions {
            check_crcs: false,
            max_decompressed_bytes: 1 << 20,
        };
        for _ in 0..3000 {
            let mut blob = valid.clone();
            for _ in 0..rng.gen_range(1..=4) {
                let at = rng.gen_range(0..blob.len());
                match rng.gen_range(0..4) {
                    0 => blob[at] = rng.gen(),
                    1 => blob[at] ^= 1 << rng.gen_range(0..8),
                    2 => blob.truncate(at.max(1)),
                    _ => blob.insert(at, rng.gen()),
                }
            }
            let blob = Bytes::from(blob);
            for options in [options, ReadOptions::default()] {
                for batch in fetched(blob.clone(), options).flatten() {
                    let _ = batch.control_record();
                    if let Ok(records) = batch.records() {
                        for record in records.flatten() {
                            for header in record.headers() {
                                let _ = (header.key_str(), header.value_bytes());
                            }
                            let _ = (record.key_bytes(), record.value_bytes());
                        }
                    }
                }
            }
        }
    }
}
