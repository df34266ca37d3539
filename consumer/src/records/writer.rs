//! Writing v2 batches, for the simulated broker and tests (and any future producer).
//!
//! Mirrors Java's `MemoryRecordsBuilder`: the base timestamp is the first record's, deltas are
//! relative to it, LogAppendTime stamps every record with the append time, and snappy output
//! uses the xerial framing Java consumers require unless raw is asked for. Records are encoded
//! into one buffer and compressed on [`RecordBatchBuilder::build`]; correctness over speed.

use std::io;

use bytes::Bytes;

use super::batch::{
    BATCH_HEADER_BYTES, CONTROL_BIT, LOG_OVERHEAD_BYTES, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT,
};
use super::compression::{compress, Compression, SnappyFraming};
use super::control::ControlRecord;
use super::varint::{varint_len, write_varint, write_varlong};

/// Java's `RecordBatch.NO_TIMESTAMP`, used for the timestamps of a batch without records.
const NO_TIMESTAMP: i64 = -1;

/// One record to append. Header keys are strings, as Kafka requires; duplicates are kept in
/// the given order.
#[derive(Debug, Clone, Copy, Default)]
pub struct NewRecord<'a> {
    /// CreateTime timestamp (ignored under LogAppendTime).
    pub timestamp_ms: i64,
    /// `None` writes a null key.
    pub key: Option<&'a [u8]>,
    /// `None` writes a null value (a tombstone).
    pub value: Option<&'a [u8]>,
    /// `(key, value)` pairs; a `None` value is written as null.
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
}

/// Why a batch could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Offsets within a batch must strictly increase and stay within i32 of the base offset.
    #[error(
        "offset {offset} cannot follow {previous:?} in a batch with base offset {base_offset}"
    )]
    InvalidOffset {
        /// The offset asked for.
        offset: i64,
        /// The previous record's offset, if any.
        previous: Option<i64>,
        /// The batch's base offset.
        base_offset: i64,
    },
    /// A length or count does not fit the format's i32.
    #[error("{what} of {value} does not fit in an i32")]
    TooLarge {
        /// Which field.
        what: &'static str,
        /// Its value.
        value: usize,
    },
    /// The codec failed.
    #[error("compression failed: {0}")]
    Compression(#[from] io::Error),
}

/// Builds one v2 record batch.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    compression: Compression,
    snappy_framing: SnappyFraming,
    log_append_time_ms: Option<i64>,
    transactional: bool,
    control: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    last_offset_delta: Option<i32>,
    /// Encoded records, uncompressed.
    records: Vec<u8>,
    /// Scratch space for one record body, reused so appends do not allocate.
    scratch: Vec<u8>,
    record_count: i32,
    last_offset: Option<i64>,
    base_timestamp_ms: Option<i64>,
    max_timestamp_ms: i64,
}

impl RecordBatchBuilder {
    /// An uncompressed CreateTime batch starting at `base_offset`, with no producer (-1 ids),
    /// unknown leader epoch (-1), neither transactional nor control.
    pub fn new(base_offset: i64) -> Self {
        Self {
            base_offset,
            partition_leader_epoch: -1,
            compression: Compression::None,
            snappy_framing: SnappyFraming::Xerial,
            log_append_time_ms: None,
            transactional: false,
            control: false,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            last_offset_delta: None,
            records: Vec::new(),
            scratch: Vec::new(),
            record_count: 0,
            last_offset: None,
            base_timestamp_ms: None,
            max_timestamp_ms: NO_TIMESTAMP,
        }
    }

    /// The codec for the records section.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Snappy framing (xerial by default, as Java writes).
    pub fn snappy_framing(mut self, framing: SnappyFraming) -> Self {
        self.snappy_framing = framing;
        self
    }

    /// The partition leader epoch stamped by the broker.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Idempotent/transactional producer identity and the first record's sequence.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Marks the batch transactional.
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Marks the batch as a control batch; append its record with
    /// [`append_control`](Self::append_control).
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// LogAppendTime at `append_time_ms`: every record gets that timestamp, as the broker does.
    /// Set it before appending.
    pub fn log_append_time(mut self, append_time_ms: i64) -> Self {
        self.log_append_time_ms = Some(append_time_ms);
        self
    }

    /// Overrides lastOffsetDelta, as the log cleaner leaves it after removing trailing records
    /// (or for an empty batch that still advances the offset).
    pub fn last_offset_delta(mut self, delta: i32) -> Self {
        self.last_offset_delta = Some(delta);
        self
    }

    /// Appends `record` at the next offset and returns that offset.
    pub fn append(&mut self, record: &NewRecord<'_>) -> Result<i64, BuildError> {
        let offset = self
            .last_offset
            .map_or(self.base_offset, |last| last.wrapping_add(1));
        self.append_at(offset, record)?;
        Ok(offset)
    }

    /// Appends `record` at `offset`, which must exceed the previous record's: gaps are allowed,
    /// as in compacted batches.
    pub fn append_at(&mut self, offset: i64, record: &NewRecord<'_>) -> Result<(), BuildError> {
        let invalid = || BuildError::InvalidOffset {
            offset,
            previous: self.last_offset,
            base_offset: self.base_offset,
        };
        if self.last_offset.is_some_and(|last| offset <= last) {
            return Err(invalid());
        }
        let offset_delta = offset
            .checked_sub(self.base_offset)
            .and_then(|delta| i32::try_from(delta).ok())
            .filter(|delta| *delta >= 0)
            .ok_or_else(invalid)?;
        let record_count = self
            .record_count
            .checked_add(1)
            .ok_or(BuildError::TooLarge {
                what: "record count",
                value: self.record_count as usize + 1,
            })?;
        let timestamp_ms = self.log_append_time_ms.unwrap_or(record.timestamp_ms);
        let base_timestamp_ms = *self.base_timestamp_ms.get_or_insert(timestamp_ms);

        let body = &mut self.scratch;
        body.clear();
        body.push(0); // attributes: unused in v2
        write_varlong(body, timestamp_ms.wrapping_sub(base_timestamp_ms));
        write_varint(body, offset_delta);
        write_nullable(body, "key length", record.key)?;
        write_nullable(body, "value length", record.value)?;
        write_varint(body, to_i32("header count", record.headers.len())?);
        for (key, value) in record.headers {
            write_nullable(body, "header key length", Some(key.as_bytes()))?;
            write_nullable(body, "header value length", *value)?;
        }
        let body_len = to_i32("record length", body.len())?;
        self.records.reserve(varint_len(body_len) + body.len());
        write_varint(&mut self.records, body_len);
        self.records.extend_from_slice(body);

        self.record_count = record_count;
        self.last_offset = Some(offset);
        self.max_timestamp_ms = if self.record_count == 1 {
            timestamp_ms
        } else {
            self.max_timestamp_ms.max(timestamp_ms)
        };
        Ok(())
    }

    /// Appends a control record (set [`control`](Self::control) on the builder too).
    pub fn append_control(
        &mut self,
        timestamp_ms: i64,
        control: &ControlRecord,
    ) -> Result<i64, BuildError> {
        let key = control.encode_key();
        let value = control.encode_value();
        self.append(&NewRecord {
            timestamp_ms,
            key: Some(&key),
            value: value.as_ref().map(|v| &v[..]),
            headers: &[],
        })
    }

    /// Encodes the batch: header, (compressed) records, CRC-32C.
    pub fn build(self) -> Result<Bytes, BuildError> {
        let payload = compress(self.compression, self.snappy_framing, &self.records)?;
        let batch_length = to_i32(
            "batch length",
            BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES + payload.len(),
        )?;
        let last_offset_delta = self.last_offset_delta.unwrap_or_else(|| {
            // In range: append_at checked every delta fits an i32.
            self.last_offset
                .map_or(0, |last| (last - self.base_offset) as i32)
        });
        let mut attributes = i16::from(self.compression.id());
        if self.log_append_time_ms.is_some() {
            attributes |= TIMESTAMP_TYPE_BIT;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        if self.control {
            attributes |= CONTROL_BIT;
        }
        let (base_timestamp_ms, max_timestamp_ms) =
            match (self.base_timestamp_ms, self.log_append_time_ms) {
                (None, _) => (NO_TIMESTAMP, NO_TIMESTAMP),
                (Some(base), Some(append_time)) => (base, append_time),
                (Some(base), None) => (base, self.max_timestamp_ms),
            };

        let mut out = Vec::with_capacity(BATCH_HEADER_BYTES + payload.len());
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(2); // magic
        let crc_at = out.len();
        out.extend_from_slice(&[0; 4]); // CRC, filled in below
        let crc_from = out.len();
        out.extend_from_slice(&attributes.to_be_bytes());
        out.extend_from_slice(&last_offset_delta.to_be_bytes());
        out.extend_from_slice(&base_timestamp_ms.to_be_bytes());
        out.extend_from_slice(&max_timestamp_ms.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.record_count.to_be_bytes());
        debug_assert_eq!(out.len(), BATCH_HEADER_BYTES);
        out.extend_from_slice(&payload);
        let crc = crc32c::crc32c(&out[crc_from..]);
        out[crc_at..crc_from].copy_from_slice(&crc.to_be_bytes());
        Ok(Bytes::from(out))
    }
}

/// A transaction marker batch as the transaction coordinator has the leader write it:
/// transactional, control, no base sequence, one control record.
pub fn end_txn_marker_batch(
    base_offset: i64,
    producer_id: i64,
    producer_epoch: i16,
    timestamp_ms: i64,
    marker: &ControlRecord,
) -> Result<Bytes, BuildError> {
    let mut builder = RecordBatchBuilder::new(base_offset)
        .producer(producer_id, producer_epoch, -1)
        .transactional(true)
        .control(true);
    builder.append_control(timestamp_ms, marker)?;
    builder.build()
}

fn to_i32(what: &'static str, value: usize) -> Result<i32, BuildError> {
    i32::try_from(value).map_err(|_| BuildError::TooLarge { what, value })
}

fn write_nullable(
    out: &mut Vec<u8>,
    what: &'static str,
    bytes: Option<&[u8]>,
) -> Result<(), BuildError> {
    match bytes {
        None => write_varint(out, -1),
        Some(bytes) => {
            write_varint(out, to_i32(what, bytes.len())?);
            out.extend_from_slice(bytes);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_support::{fetched, read_all, OwnedRecord};
    use crate::records::{ReadOptions, TimestampType};

    const ALL: [(Compression, SnappyFraming); 6] = [
        (Compression::None, SnappyFraming::Xerial),
        (Compression::Gzip, SnappyFraming::Xerial),
        (Compression::Snappy, SnappyFraming::Xerial),
        (Compression::Snappy, SnappyFraming::Raw),
        (Compression::Lz4, SnappyFraming::Xerial),
        (Compression::Zstd, SnappyFraming::Xerial),
    ];

    /// Records covering the edge cases: nulls, empties, duplicate and null-valued headers,
    /// a large value, negative timestamp deltas.
    fn edge_case_records(large: &[u8]) -> Vec<NewRecord<'_>> {
        vec![
            NewRecord {
                timestamp_ms: 1_000,
                key: Some(b"k0"),
                value: Some(b"v0"),
                headers: &[],
            },
            NewRecord {
                timestamp_ms: 999,
                key: None,
                value: None,
                headers: &[],
            },
            NewRecord {
                timestamp_ms: 5_000,
                key: Some(b""),
                value: Some(b""),
                headers: &[],
            },
            NewRecord {
                timestamp_ms: 1_001,
                key: Some(b"dup"),
                value: Some(b"h"),
                headers: &[
                    ("a", Some(b"1")),
                    ("b", None),
                    ("a", Some(b"2")),
                    ("", Some(b"")),
                ],
            },
            NewRecord {
                timestamp_ms: 1_002,
                key: Some(b"big"),
                value: Some(large),
                headers: &[("x", None)],
            },
        ]
    }

    fn expected(records: &[NewRecord<'_>], base_offset: i64) -> Vec<OwnedRecord> {
        records
            .iter()
            .zip(base_offset..)
            .map(|(r, offset)| OwnedRecord {
                offset,
                timestamp_ms: r.timestamp_ms,
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.map(<[u8]>::to_vec),
                headers: r
                    .headers
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.map(<[u8]>::to_vec)))
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn round_trips_every_codec() {
        let large: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
        let records = edge_case_records(&large);
        for (codec, framing) in ALL {
            let mut builder = RecordBatchBuilder::new(100)
                .compression(codec)
                .snappy_framing(framing);
            for record in &records {
                builder.append(record).unwrap();
            }
            let blob = builder.build().unwrap();
            let batch = fetched(blob.clone(), ReadOptions::default())
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(batch.compression(), codec);
            assert_eq!(batch.record_count(), 5);
            assert_eq!(batch.base_timestamp_ms(), 1_000);
            assert_eq!(batch.max_timestamp_ms(), 5_000);
            assert_eq!(batch.next_offset(), 105);
            assert_eq!(
                read_all(blob, ReadOptions::default()).unwrap(),
                expected(&records, 100),
                "{codec:?} {framing:?}"
            );
        }
    }

    #[test]
    fn many_records_in_many_batches_round_trip() {
        let mut blob = Vec::new();
        let mut all = Vec::new();
        let values: Vec<Vec<u8>> = (0..3000)
            .map(|i| format!("value-{i}").into_bytes())
            .collect();
        for (batch_index, (codec, framing)) in ALL.iter().enumerate() {
            let base_offset = batch_index as i64 * 500;
            let mut builder = RecordBatchBuilder::new(base_offset)
                .compression(*codec)
                .snappy_framing(*framing);
            let records: Vec<_> = values[batch_index * 500..(batch_index + 1) * 500]
                .iter()
                .map(|v| NewRecord {
                    timestamp_ms: 7,
                    key: None,
                    value: Some(v),
                    headers: &[],
                })
                .collect();
            for record in &records {
                builder.append(record).unwrap();
            }
            blob.extend_from_slice(&builder.build().unwrap());
            all.extend(expected(&records, base_offset));
        }
        assert_eq!(
            read_all(Bytes::from(blob), ReadOptions::default()).unwrap(),
            all
        );
    }

    #[test]
    fn producer_fields_flags_and_log_append_time_round_trip() {
        let mut builder = RecordBatchBuilder::new(7)
            .producer(1234, 5, 42)
            .transactional(true)
            .partition_leader_epoch(9)
            .log_append_time(77_000);
        builder
            .append(&NewRecord {
                timestamp_ms: 1,
                ..NewRecord::default()
            })
            .unwrap();
        builder
            .append(&NewRecord {
                timestamp_ms: 2,
                ..NewRecord::default()
            })
            .unwrap();
        let blob = builder.build().unwrap();
        let batch = fetched(blob, ReadOptions::default())
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(batch.producer_id(), 1234);
        assert_eq!(batch.producer_epoch(), 5);
        assert_eq!(batch.base_sequence(), 42);
        assert_eq!(batch.partition_leader_epoch(), 9);
        assert!(batch.is_transactional());
        assert!(!batch.is_control());
        assert_eq!(batch.delete_horizon_ms(), None);
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batch.max_timestamp_ms(), 77_000);
        let timestamps: Vec<_> = batch
            .records()
            .unwrap()
            .map(|r| r.unwrap().timestamp_ms())
            .collect();
        assert_eq!(timestamps, [77_000, 77_000]);
        assert_eq!(batch.control_record().unwrap(), None);
    }

    #[test]
    fn compacted_batch_next_offset_covers_removed_records() {
        // Offsets 10, 13, 14 survive of 10..=19; the cleaner keeps lastOffsetDelta 9.
        let mut builder = RecordBatchBuilder::new(10).last_offset_delta(9);
        for offset in [10, 13, 14] {
            builder
                .append_at(
                    offset,
                    &NewRecord {
                        value: Some(b"v"),
                        ..NewRecord::default()
                    },
                )
                .unwrap();
        }
        let blob = builder.build().unwrap();
        let batch = fetched(blob.clone(), ReadOptions::default())
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                batch.last_offset_delta(),
                batch.last_offset(),
                batch.next_offset()
            ),
            (9, 19, 20)
        );
        let offsets: Vec<_> = read_all(blob, ReadOptions::default())
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, [10, 13, 14]);
    }

    #[test]
    fn empty_batch_still_advances() {
        let blob = RecordBatchBuilder::new(50)
            .last_offset_delta(4)
            .build()
            .unwrap();
        let batch = fetched(blob, ReadOptions::default())
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                batch.record_count(),
                batch.next_offset(),
                batch.base_timestamp_ms()
            ),
            (0, 55, -1)
        );
        assert_eq!(batch.records().unwrap().count(), 0);
    }

    #[test]
    fn control_batch_round_trips_and_advances() {
        for marker in [
            ControlRecord::Commit {
                coordinator_epoch: 3,
            },
            ControlRecord::Abort {
                coordinator_epoch: 0,
            },
        ] {
            let blob = end_txn_marker_batch(200, 77, 2, 5_000, &marker).unwrap();
            let batch = fetched(blob, ReadOptions::default())
                .next()
                .unwrap()
                .unwrap();
            assert!(batch.is_control() && batch.is_transactional());
            assert_eq!(
                (
                    batch.producer_id(),
                    batch.producer_epoch(),
                    batch.base_sequence()
                ),
                (77, 2, -1)
            );
            assert_eq!(batch.next_offset(), 201);
            assert_eq!(batch.control_record().unwrap(), Some(marker));
        }
    }

    #[test]
    fn rejects_offsets_that_do_not_increase_or_fit() {
        let mut builder = RecordBatchBuilder::new(10);
        builder.append(&NewRecord::default()).unwrap();
        assert!(matches!(
            builder.append_at(10, &NewRecord::default()),
            Err(BuildError::InvalidOffset { .. })
        ));
        assert!(matches!(
            builder.append_at(9, &NewRecord::default()),
            Err(BuildError::InvalidOffset { .. })
        ));
        let far = 10 + i64::from(i32::MAX) + 1;
        assert!(matches!(
            builder.append_at(far, &NewRecord::default()),
            Err(BuildError::InvalidOffset { .. })
        ));
        let mut fresh = RecordBatchBuilder::new(10);
        assert!(matches!(
            fresh.append_at(9, &NewRecord::default()),
            Err(BuildError::InvalidOffset { .. })
        ));
    }
}
