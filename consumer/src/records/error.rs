//! The one error type of the records layer.
//!
//! Every error names the topic, partition and batch base offset it happened at: a consumer that
//! hits corrupt data must be able to log where, and an operator must be able to find the segment.
//! The context lives on the outer struct so that no variant can forget it; [`RecordsErrorKind`]
//! says exactly what was wrong.

use std::sync::Arc;

use super::compression::Compression;

/// A batch in a fetch response could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} (topic {topic}, partition {partition}, batch base offset {base_offset})")]
pub struct RecordsError {
    /// Topic the fetch response belongs to.
    pub topic: Arc<str>,
    /// Partition the fetch response belongs to.
    pub partition: i32,
    /// Base offset of the batch that failed (the first 8 bytes of its header).
    pub base_offset: i64,
    /// What was wrong.
    pub kind: RecordsErrorKind,
}

/// What was wrong with a batch. Record-level variants carry the record's index in its batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordsErrorKind {
    /// The stored CRC-32C does not match the batch bytes (`check.crcs`).
    #[error(
        "record batch is corrupt: stored CRC-32C {expected:#010x} but computed {computed:#010x}"
    )]
    CorruptCrc {
        /// CRC in the batch header.
        expected: u32,
        /// CRC of the bytes from the attributes field to the end of the batch.
        computed: u32,
    },
    /// The batch is not message format v2.
    #[error(
        "unsupported record batch magic {magic}: only magic v2 is supported \
         (message formats v0 and v1 were removed in Kafka 4.0)"
    )]
    UnsupportedMagic {
        /// The magic byte found.
        magic: i8,
    },
    /// The batch length field cannot describe a v2 batch.
    #[error("invalid batch length {length_bytes}: a v2 batch needs at least {minimum_bytes} bytes after the log overhead")]
    InvalidBatchLength {
        /// The batchLength field.
        length_bytes: i32,
        /// The v2 header size after baseOffset and batchLength.
        minimum_bytes: usize,
    },
    /// Attribute bits 0-2 name no known codec.
    #[error("unknown compression codec id {code}")]
    UnknownCompression {
        /// The codec id from the attributes.
        code: u8,
    },
    /// The codec rejected the batch payload.
    #[error("cannot decompress {codec:?} batch: {message}")]
    Decompression {
        /// The batch's codec.
        codec: Compression,
        /// The codec library's message.
        message: String,
    },
    /// Decompression would exceed [`ReadOptions::max_decompressed_bytes`](super::ReadOptions).
    #[error("{codec:?} batch decompresses to more than the limit of {limit_bytes} bytes")]
    DecompressedTooLarge {
        /// The batch's codec.
        codec: Compression,
        /// The configured limit.
        limit_bytes: usize,
    },
    /// The recordCount field is negative.
    #[error("invalid record count {count}")]
    InvalidRecordCount {
        /// The recordCount field.
        count: i32,
    },
    /// The batch data ended before all declared records were read.
    #[error("batch declares {declared} records but its data ends after {read}")]
    MissingRecords {
        /// The recordCount field.
        declared: i32,
        /// Records read before the data ran out.
        read: i32,
    },
    /// Bytes are left over after the declared number of records (Java: "Incorrect declared
    /// batch size").
    #[error("incorrect declared batch size: {remaining_bytes} bytes remain after the declared {declared} records")]
    TrailingBytes {
        /// The recordCount field.
        declared: i32,
        /// Unread bytes after the last declared record.
        remaining_bytes: usize,
    },
    /// A length field is negative (below -1 where null is allowed) or runs past its container.
    #[error("record {record_index}: invalid {field} {length} ({available_bytes} bytes available)")]
    InvalidLength {
        /// Index of the record in its batch.
        record_index: i32,
        /// Which length field.
        field: &'static str,
        /// The value read.
        length: i64,
        /// Bytes left in the record (or batch, for the record length) at that point.
        available_bytes: usize,
    },
    /// A varint field ended early or used more than 5 (10 for varlongs) bytes.
    #[error("record {record_index}: {field} varint is {problem}")]
    InvalidVarint {
        /// Index of the record in its batch.
        record_index: i32,
        /// Which field.
        field: &'static str,
        /// `truncated` or `too long`.
        problem: &'static str,
    },
    /// The record's fields do not add up to its declared length.
    #[error(
        "record {record_index}: declared {declared_bytes} bytes but its fields take {read_bytes}"
    )]
    RecordSizeMismatch {
        /// Index of the record in its batch.
        record_index: i32,
        /// The record's length prefix.
        declared_bytes: usize,
        /// Bytes its fields actually used.
        read_bytes: usize,
    },
    /// A control batch's record is not a valid control record.
    #[error("invalid control record: {reason}")]
    InvalidControlRecord {
        /// What was wrong.
        reason: String,
    },
}

/// Topic and partition of a fetch response, shared by every batch so errors can name them.
#[derive(Debug, Clone)]
pub(crate) struct PartitionContext {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: i32,
}

impl PartitionContext {
    /// The error `kind` located at the batch with `base_offset`.
    #[cold]
    pub(crate) fn error(&self, base_offset: i64, kind: RecordsErrorKind) -> RecordsError {
        RecordsError {
            topic: self.topic.clone(),
            partition: self.partition,
            base_offset,
            kind,
        }
    }
}
