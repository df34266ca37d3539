//! Zero-copy reading of Kafka record batches (message format v2) and a batch writer.
//!
//! We do not use `kafka-protocol`'s records decoder (see the reference notes, §1.4–1.6): it
//! fails on the partial trailing batch brokers send, drops `lastOffsetDelta`, collapses
//! duplicate headers, reserves `recordCount` slots on trust and allocates per record.
//!
//! Reading, bottom up:
//! - [`FetchedRecords`] walks one partition's `records` bytes batch by batch (O(1) cursor),
//!   skips a partial trailing batch and reports it as a [`TruncatedTail`].
//! - [`RecordBatch`] exposes the header (including [`RecordBatch::next_offset`]) and, on demand,
//!   its [`Records`]: for uncompressed batches slices of the response, for compressed ones
//!   slices of the decompressed output ([`RecordBatch::records_in`] writes it into a reused
//!   [`DecompressionBuffer`]).
//! - [`Record`] gives key, value and a [`Headers`] view without allocating.
//!
//! Every failure is a [`RecordsError`] naming topic, partition and batch base offset.
//!
//! ```
//! use std::sync::Arc;
//! use kafka_consumer::records::{FetchedRecords, NewRecord, ReadOptions, RecordBatchBuilder};
//!
//! let mut builder = RecordBatchBuilder::new(42);
//! builder.append(&NewRecord { timestamp_ms: 1, key: Some(b"k"), value: Some(b"v"), headers: &[] })?;
//! let response = builder.build()?;
//!
//! let mut batches = FetchedRecords::new(Arc::from("orders"), 0, response, ReadOptions::default());
//! for batch in &mut batches {
//!     let batch = batch?;
//!     for record in batch.records()? {
//!         let record = record?;
//!         assert_eq!((record.offset(), record.value()), (42, Some(&b"v"[..])));
//!     }
//!     assert_eq!(batch.next_offset(), 43);
//! }
//! assert!(batches.truncated_tail().is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
pub(crate) mod compression;
mod control;
mod decompression_buffer;
mod error;
mod header;
pub(crate) mod lz4_frame;
mod record;
pub(crate) mod varint;
mod writer;
mod xxhash32;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod test_support;

pub(crate) use batch::count_declared_records;
pub use batch::{
    FetchedRecords, ReadOptions, RecordBatch, TimestampType, TruncatedTail, BATCH_HEADER_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES, LOG_OVERHEAD_BYTES,
};
pub use compression::{Compression, SnappyFraming};
pub use control::ControlRecord;
pub use decompression_buffer::DecompressionBuffer;
pub use error::{RecordsError, RecordsErrorKind};
pub use header::{Header, HeaderIter, Headers};
pub use record::{Record, Records};
pub use writer::{end_txn_marker_batch, BuildError, NewRecord, RecordBatchBuilder};
