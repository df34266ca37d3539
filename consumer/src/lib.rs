//! `kafka-consumer`: an Apache Kafka consumer built on Kafka's consumer threading refactor.
//!
//! The application side never touches the network; one background task alone talks to the
//! brokers. This crate is written against `tokio` paths only, where `tokio` is `madsim-tokio`:
//! the same code runs on real tokio in production and, built with `--cfg madsim`, inside the
//! madsim deterministic simulator.
//!
//! The public modules:
//! - [`consumer`]: the application-facing [`Consumer`] and its shareable [`ConsumerHandle`].
//! - [`config`]: Java-compatible consumer configuration: keys, defaults, validation.
//! - [`security`]: the types a secured connection is configured with (SASL, token
//!   providers, TLS), for code that builds them.
//! - [`rebalance`]: the rebalance listener.
//! - [`metric`]: the consumer's metrics under Apache Kafka's names.
//! - [`types`]: records, partitions, offsets; [`error`]: the error type.
//! - [`assignor`]: classic-protocol partition assignors (range, roundrobin, sticky,
//!   cooperative-sticky) and the ConsumerProtocol subscription/assignment format.
//! - [`records`]: zero-copy record-batch reading (magic v2, every codec) and a batch writer.
//! - [`rt`]: the runtime seam — virtual-time-safe clocks and the one seeded randomness source.
//! - [`background_runtime`]: where each consumer's background task runs.
//! - [`topic_name`]: Kafka's topic-name rules (`Topic.validate`).
//!
//! The wire protocol, the network client and the background task's request managers are
//! private. The repository's testbed (the simulated cluster, scenarios, benchmarks, fuzzing)
//! reaches them through the `__internal` feature, which is not part of the API: nothing
//! behind it follows semantic versioning.
//!
//! # Using it from sync and async code
//!
//! - Async code uses [`Consumer`]. Its background task runs on a thread of its own by
//!   default, so the application's runtime (busy, single-threaded) never delays a heartbeat;
//!   [`Consumer::with_runtime`] with [`BackgroundRuntime::Shared`] puts the background tasks
//!   of many consumers on one runtime instead (one task per consumer, no thread each).
//! - Sync code uses `blocking::BlockingConsumer` (real mode only). It works from any thread,
//!   inside or outside a runtime, and never panics on construction, use or drop: it never
//!   starts or drops a runtime on the caller's thread. Its calls block the calling thread, so
//!   inside async code prefer [`Consumer`] or `spawn_blocking`.
//! - Call [`Consumer::close`] when done. A consumer dropped unclosed warns, returns at once,
//!   and its background task leaves the group on its own (bounded), without committing or
//!   running the listener (see [`Consumer`]).

// Every public item is documented; the testbed's `__internal` modules are not the API.
#![cfg_attr(not(feature = "__internal"), deny(missing_docs))]

pub mod assignor;
pub mod background_runtime;
#[cfg(not(madsim))]
pub mod blocking;
pub mod close_options;
pub mod config;
pub mod consumer;
pub mod error;
mod error_code;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "__internal")]
#[doc(hidden)]
pub mod internals;
#[cfg(not(feature = "__internal"))]
pub(crate) mod internals;
pub mod metric;
#[cfg(feature = "__internal")]
#[doc(hidden)]
pub mod network;
#[cfg(not(feature = "__internal"))]
pub(crate) mod network;
#[cfg(feature = "__internal")]
#[doc(hidden)]
pub mod protocol;
#[cfg(not(feature = "__internal"))]
pub(crate) mod protocol;
pub mod rebalance;
pub mod records;
pub mod rt;
#[cfg(feature = "__internal")]
#[doc(hidden)]
pub mod sabotage;
#[cfg(not(feature = "__internal"))]
pub(crate) mod sabotage;
pub mod security;
pub mod topic_name;
pub mod types;

pub use background_runtime::BackgroundRuntime;
pub use close_options::{CloseOptions, GroupMembershipOperation};
pub use config::{AutoOffsetReset, ConsumerConfig, IsolationLevel, MetadataRecoveryStrategy};
pub use consumer::{Consumer, ConsumerHandle, WakeupHandle};
pub use error::{Error, Result};
pub use rebalance::ConsumerRebalanceListener;
pub use types::{
    ConsumerGroupMetadata, ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition,
};
/// The client instance id type of [`Consumer::client_instance_id`] (KIP-714).
pub use uuid::Uuid;

/// The README's examples, compiled as doctests so they stay true to the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

/// The examples of `docs/consumer.md`, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/consumer.md")]
pub struct ConsumerDocExamples;
