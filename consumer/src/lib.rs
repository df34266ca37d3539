//! `kafka-consumer`: an Apache Kafka consumer built on Kafka's consumer threading refactor.
//!
//! The application side never touches the network; one background task alone talks to the
//! brokers. This crate is written against `tokio` paths only, where `tokio` is `madsim-tokio`:
//! the same code runs on real tokio in production and, built with `--cfg madsim`, inside the
//! madsim deterministic simulator.
//!
//! Layers, bottom up:
//! - [`rt`]: the runtime seam — virtual-time-safe clocks and the one seeded randomness source.
//! - [`records`]: zero-copy record-batch reading (magic v2, every codec) and a batch writer.
//! - [`protocol`]: framing, request/response encoding, API version negotiation.
//! - [`network`]: broker connections (one task each), the network client, metadata.
//! - [`assignor`]: classic-protocol partition assignors (range, roundrobin, sticky,
//!   cooperative-sticky) and the ConsumerProtocol subscription/assignment format.
//! - [`config`]: Java-compatible consumer configuration: keys, defaults, validation.
//! - [`internals`]: the background task, request managers, events and the fetch buffer.
//! - [`consumer`]: the application-facing [`Consumer`].

pub mod assignor;
pub mod background_runtime;
#[cfg(not(madsim))]
pub mod blocking;
pub mod close_options;
pub mod config;
pub mod consumer;
pub mod error;
pub mod internals;
pub mod network;
pub mod protocol;
pub mod rebalance;
pub mod records;
pub mod rt;
pub mod types;

pub use background_runtime::BackgroundRuntime;
pub use close_options::{CloseOptions, GroupMembershipOperation};
pub use config::{AutoOffsetReset, ConsumerConfig, IsolationLevel};
pub use consumer::{Consumer, WakeupHandle};
pub use error::{Error, Result};
pub use rebalance::ConsumerRebalanceListener;
pub use types::{
    ConsumerGroupMetadata, ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition,
};
