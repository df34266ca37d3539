//! Records of one batch: a lazy, O(1)-per-step cursor over the (possibly decompressed) records
//! section.
//!
//! Each step validates one record completely (lengths, varints, header section) and hands out a
//! [`Record`] that owns one reference-counted slice of the buffer plus ranges into it, so the
//! per-record cost is a few varint reads and one refcount increment: no heap allocation, no copy.
//! Wire counts are never trusted for sizing: `size_hint` reports a lower bound of zero, so even
//! `collect()` cannot be made to reserve `recordCount` slots by a lying batch.

use std::ops::Range;

use bytes::Bytes;

use super::error::{PartitionContext, RecordsError, RecordsErrorKind};
use super::header::{read_header, HeaderError, Headers};
use super::varint::{read_varint, read_varlong, varint_len, VarintError};

/// Smallest possible encoded record: length, attributes, timestamp delta, offset delta, key
/// length, value length and header count, one byte each.
const MIN_RECORD_BYTES: usize = 7;

/// One record. Cheap to hold: one refcounted buffer slice plus ranges.
#[derive(Debug, Clone)]
pub struct Record {
    /// The record's body (after its length prefix); ranges below index into it.
    body: Bytes,
    offset: i64,
    timestamp_ms: i64,
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
    headers_start: usize,
    header_count: u32,
}

impl Record {
    /// Absolute offset: batch base offset + offset delta.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Timestamp in ms since the epoch: the batch's max timestamp under LogAppendTime, else
    /// base timestamp + delta.
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp_ms
    }

    /// The key, `None` for a null key.
    pub fn key(&self) -> Option<&[u8]> {
        self.key.clone().map(|range| &self.body[range])
    }

    /// The key as a zero-copy slice of the fetch response (or of the batch's decompressed
    /// buffer), `None` for a null key.
    pub fn key_bytes(&self) -> Option<Bytes> {
        self.key.clone().map(|range| self.body.slice(range))
    }

    /// The value, `None` for a null value (a tombstone).
    pub fn value(&self) -> Option<&[u8]> {
        self.value.clone().map(|range| &self.body[range])
    }

    /// The value as a zero-copy slice, `None` for a null value.
    pub fn value_bytes(&self) -> Option<Bytes> {
        self.value.clone().map(|range| self.body.slice(range))
    }

    /// Length of the key in bytes, `None` for a null key; no slicing involved.
    pub fn key_len(&self) -> Option<usize> {
        self.key.as_ref().map(ExactSizeIterator::len)
    }

    /// Length of the value in bytes, `None` for a null value; no slicing involved.
    pub fn value_len(&self) -> Option<usize> {
        self.value.as_ref().map(ExactSizeIterator::len)
    }

    /// The headers in wire order, duplicates kept.
    pub fn headers(&self) -> Headers<'_> {
        Headers::new(&self.body, self.headers_start, self.header_count)
    }

    /// The record's encoded size: its length prefix and body (Java's `Record.sizeInBytes`,
    /// which `bytes-consumed-total` sums).
    pub fn size_in_bytes(&self) -> usize {
        let body = self.body.len();
        body + varint_len(i32::try_from(body).unwrap_or(i32::MAX))
    }
}

/// Batch-level facts every record needs, copied once per batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordDefaults {
    pub(crate) base_offset: i64,
    pub(crate) base_timestamp_ms: i64,
    /// `Some(max timestamp)` when the batch uses LogAppendTime.
    pub(crate) log_append_time_ms: Option<i64>,
    pub(crate) declared_count: i32,
}

/// Iterator over the records of one batch; yields an error at most once, then ends.
#[derive(Debug, Clone)]
pub struct Records {
    data: Bytes,
    pos: usize,
    read: i32,
    defaults: RecordDefaults,
    context: PartitionContext,
    done: bool,
}

impl Records {
    pub(crate) fn new(data: Bytes, defaults: RecordDefaults, context: PartitionContext) -> Self {
        Self {
            data,
            pos: 0,
            read: 0,
            defaults,
            context,
            done: false,
        }
    }

    fn fail(&mut self, kind: RecordsErrorKind) -> Option<Result<Record, RecordsError>> {
        self.done = true;
        Some(Err(self.context.error(self.defaults.base_offset, kind)))
    }

    /// Parses the record at `self.pos`, advancing past it on success.
    #[inline]
    fn parse_next(&mut self) -> Result<Record, RecordsErrorKind> {
        let record_index = self.read;
        let data: &[u8] = &self.data;
        let mut pos = self.pos;
        let length = read_varint(data, &mut pos)
            .map_err(|e| varint_error(record_index, "record length", e))?;
        let available_bytes = data.len() - pos;
        let body_len = match usize::try_from(length) {
            Ok(len) if len <= available_bytes => len,
            _ => {
                return Err(RecordsErrorKind::InvalidLength {
                    record_index,
                    field: "record length",
                    length: i64::from(length),
                    available_bytes,
                })
            }
        };
        let body_start = pos;
        let body = &data[body_start..body_start + body_len];
        // Skip the attributes byte (unused in v2); an empty body then fails on the next field.
        let mut at = 1;
        let timestamp_delta = read_varlong(body, &mut at)
            .map_err(|e| varint_error(record_index, "timestamp delta", e))?;
        let offset_delta = read_varint(body, &mut at)
            .map_err(|e| varint_error(record_index, "offset delta", e))?;
        let key = read_nullable(body, &mut at, record_index, "key length")?;
        let value = read_nullable(body, &mut at, record_index, "value length")?;
        let header_count = read_varint(body, &mut at)
            .map_err(|e| varint_error(record_index, "header count", e))?;
        let headers_start = at;
        let header_count = scan_headers(body, &mut at, header_count, record_index)?;
        if at != body_len {
            return Err(RecordsErrorKind::RecordSizeMismatch {
                record_index,
                declared_bytes: body_len,
                read_bytes: at,
            });
        }
        self.pos = body_start + body_len;
        let defaults = &self.defaults;
        Ok(Record {
            body: self.data.slice(body_start..body_start + body_len),
            offset: defaults.base_offset.wrapping_add(i64::from(offset_delta)),
            timestamp_ms: defaults
                .log_append_time_ms
                .unwrap_or_else(|| defaults.base_timestamp_ms.wrapping_add(timestamp_delta)),
            key,
            value,
            headers_start,
            header_count,
        })
    }
}

impl Iterator for Records {
    type Item = Result<Record, RecordsError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.read == self.defaults.declared_count {
            self.done = true;
            let remaining_bytes = self.data.len() - self.pos;
            if remaining_bytes != 0 {
                return self.fail(RecordsErrorKind::TrailingBytes {
                    declared: self.defaults.declared_count,
                    remaining_bytes,
                });
            }
            return None;
        }
        if self.pos == self.data.len() {
            return self.fail(RecordsErrorKind::MissingRecords {
                declared: self.defaults.declared_count,
                read: self.read,
            });
        }
        match self.parse_next() {
            Ok(record) => {
                self.read += 1;
                Some(Ok(record))
            }
            Err(kind) => self.fail(kind),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let left_declared = usize::try_from(self.defaults.declared_count - self.read).unwrap_or(0);
        // +1: the step that reports leftover or missing bytes.
        let left_possible = (self.data.len() - self.pos) / MIN_RECORD_BYTES + 1;
        (0, Some(left_declared.min(left_possible) + 1))
    }
}

/// Reads a nullable length (-1 = null) and returns the range it covers within `body`.
#[inline]
fn read_nullable(
    body: &[u8],
    at: &mut usize,
    record_index: i32,
    field: &'static str,
) -> Result<Option<Range<usize>>, RecordsErrorKind> {
    let length = read_varint(body, at).map_err(|e| varint_error(record_index, field, e))?;
    if length == -1 {
        return Ok(None);
    }
    let available_bytes = body.len() - *at;
    match usize::try_from(length) {
        Ok(len) if len <= available_bytes => {
            let start = *at;
            *at += len;
            Ok(Some(start..start + len))
        }
        _ => Err(RecordsErrorKind::InvalidLength {
            record_index,
            field,
            length: i64::from(length),
            available_bytes,
        }),
    }
}

/// Walks `count` headers to validate them, so that iterating [`Headers`] later cannot fail.
/// Each header takes at least two bytes, so a huge bogus count fails fast on the bytes instead
/// of looping.
#[inline]
fn scan_headers(
    body: &[u8],
    at: &mut usize,
    count: i32,
    record_index: i32,
) -> Result<u32, RecordsErrorKind> {
    let count = u32::try_from(count).map_err(|_| RecordsErrorKind::InvalidLength {
        record_index,
        field: "header count",
        length: i64::from(count),
        available_bytes: body.len() - *at,
    })?;
    for _ in 0..count {
        read_header(body, at).map_err(|error| match error {
            HeaderError::Varint { field, error } => varint_error(record_index, field, error),
            HeaderError::Length {
                field,
                length,
                available_bytes,
            } => RecordsErrorKind::InvalidLength {
                record_index,
                field,
                length: i64::from(length),
                available_bytes,
            },
        })?;
    }
    Ok(count)
}

#[cold]
fn varint_error(record_index: i32, field: &'static str, error: VarintError) -> RecordsErrorKind {
    RecordsErrorKind::InvalidVarint {
        record_index,
        field,
        problem: match error {
            VarintError::Truncated => "truncated",
            VarintError::Overflow => "too long (varint overflow)",
        },
    }
}
