//! Helpers shared by the records unit tests: read a blob into owned values for comparison.

use std::sync::Arc;

use bytes::Bytes;

use super::{FetchedRecords, ReadOptions, Record, RecordsError};

pub(crate) const TOPIC: &str = "orders";
pub(crate) const PARTITION: i32 = 3;

/// A record as owned values, for `assert_eq!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnedRecord {
    pub(crate) offset: i64,
    pub(crate) timestamp_ms: i64,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) value: Option<Vec<u8>>,
    pub(crate) headers: Vec<(String, Option<Vec<u8>>)>,
}

impl From<&Record> for OwnedRecord {
    fn from(record: &Record) -> Self {
        Self {
            offset: record.offset(),
            timestamp_ms: record.timestamp_ms(),
            key: record.key().map(<[u8]>::to_vec),
            value: record.value().map(<[u8]>::to_vec),
            headers: record
                .headers()
                .iter()
                .map(|h| {
                    (
                        h.key_str().unwrap().to_owned(),
                        h.value().map(<[u8]>::to_vec),
                    )
                })
                .collect(),
        }
    }
}

pub(crate) fn fetched(bytes: Bytes, options: ReadOptions) -> FetchedRecords {
    FetchedRecords::new(Arc::from(TOPIC), PARTITION, bytes, options)
}

/// Every record of every batch, or the first error.
pub(crate) fn read_all(
    bytes: Bytes,
    options: ReadOptions,
) -> Result<Vec<OwnedRecord>, RecordsError> {
    let mut out = Vec::new();
    for batch in fetched(bytes, options) {
        for record in batch?.records()? {
            out.push(OwnedRecord::from(&record?));
        }
    }
    Ok(out)
}

/// Recomputes the CRC of the single batch in `blob` after a test edited it.
pub(crate) fn fix_crc(blob: &mut [u8]) {
    let crc = crc32c::crc32c(&blob[21..]);
    blob[17..21].copy_from_slice(&crc.to_be_bytes());
}
