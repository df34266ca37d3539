//! A blocking facade for programs without async (real runtime only): the same consumer, each
//! call run to completion on the calling thread. The background network task runs on its own
//! thread, so heartbeats flow while the program is busy between polls.
//!
//! It works from any thread, whatever its runtime context: no runtime at all, inside
//! `Runtime::block_on`, under `#[tokio::test]`, on a `spawn_blocking` thread. It never starts
//! or drops a runtime on the caller's thread (tokio panics on both inside an async context):
//! a call parks the calling thread while the consumer's own background thread drives the
//! timers, and dropping it only signals that thread. Inside async code a blocking call still
//! blocks the worker thread it runs on, as any blocking call does: use [`Consumer`] there,
//! or `spawn_blocking`.
//!
//! Why not refuse construction inside an async context with an error instead: tokio offers no
//! way to ask whether the current thread may block (a `spawn_blocking` thread has a current
//! runtime too, and blocking there is right), and sync libraries called from async handlers
//! and tests under `#[tokio::test]` are common; refusing would break them for no gain.

use std::collections::{BTreeMap, BTreeSet};

use crate::background_runtime::{BackgroundRuntime, RuntimeLease};
use crate::close_options::CloseOptions;
use crate::config::ConsumerConfig;
use crate::consumer::{Consumer, ConsumerMetrics, Offsets, WakeupHandle};
use crate::error::{Error, Result};
use crate::internals::settings::ConsumerSettings;
use crate::rebalance::ConsumerRebalanceListener;
use crate::rt::Duration;
use crate::types::{
    ConsumerGroupMetadata, ConsumerRecord, ConsumerRecords, OffsetAndMetadata, OffsetAndTimestamp,
    PartitionInfo, TopicPartition,
};

/// A [`Consumer`] with blocking methods. (The example is not a doctest: doctests link against
/// the simulation build of the crate too, which has no blocking facade;
/// `consumer/tests/blocking_real_kafka.rs` runs the same calls against a real broker.)
///
/// ```ignore
/// use std::time::Duration;
/// use kafka_consumer::blocking::BlockingConsumer;
/// use kafka_consumer::{AutoOffsetReset, ConsumerConfig};
///
/// let config = ConsumerConfig::builder()
///     .bootstrap_servers(["localhost:9092"])
///     .group_id("orders")
///     .auto_offset_reset(AutoOffsetReset::Earliest)
///     .build()?;
/// let mut consumer = BlockingConsumer::new(config)?;
/// consumer.subscribe(["orders"])?;
/// loop {
///     for record in consumer.poll(Duration::from_millis(500))?.iter() {
///         println!("{}-{}@{}", record.topic, record.partition, record.offset);
///     }
/// }
/// ```
///
/// Dropping it without [`close`](Self::close) behaves as dropping a [`Consumer`] does: the
/// background task leaves the group on its own (best effort, bounded) and then stops.
pub struct BlockingConsumer {
    // Dropped first: the background task begins its leave and ends on its own.
    consumer: Consumer,
    // Then the lease: the background thread drops its runtime once the task is over.
    runtime: RuntimeLease,
}

impl std::fmt::Debug for BlockingConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BlockingConsumer")
            .field(&self.consumer)
            .finish()
    }
}

impl BlockingConsumer {
    /// Starts a consumer (see [`Consumer::new`]) with its background task on a thread of its
    /// own, whose runtime also drives the timers of this facade's calls.
    pub fn new(config: ConsumerConfig) -> Result<Self> {
        let (consumer, lease) = Consumer::start(
            ConsumerSettings::from_config(&config),
            &BackgroundRuntime::Dedicated,
        )?;
        let runtime = lease.ok_or_else(|| {
            Error::Internal("a dedicated background runtime gave no lease".into())
        })?;
        Ok(Self { consumer, runtime })
    }

    /// A handle that interrupts a blocking call from another thread.
    pub fn wakeup_handle(&self) -> WakeupHandle {
        self.consumer.wakeup_handle()
    }

    /// See [`Consumer::subscribe`].
    pub fn subscribe<S: Into<String>>(
        &mut self,
        topics: impl IntoIterator<Item = S>,
    ) -> Result<()> {
        self.runtime.block_on(self.consumer.subscribe(topics))
    }

    /// See [`Consumer::subscribe_with_listener`].
    pub fn subscribe_with_listener<S: Into<String>>(
        &mut self,
        topics: impl IntoIterator<Item = S>,
        listener: impl ConsumerRebalanceListener + 'static,
    ) -> Result<()> {
        self.runtime
            .block_on(self.consumer.subscribe_with_listener(topics, listener))
    }

    /// See [`Consumer::subscribe_pattern`].
    pub fn subscribe_pattern(&mut self, pattern: &str) -> Result<()> {
        self.runtime
            .block_on(self.consumer.subscribe_pattern(pattern))
    }

    /// See [`Consumer::subscribe_regex`].
    pub fn subscribe_regex(&mut self, regex: &str) -> Result<()> {
        self.runtime.block_on(self.consumer.subscribe_regex(regex))
    }

    /// See [`Consumer::assign`].
    pub fn assign(&mut self, partitions: impl IntoIterator<Item = TopicPartition>) -> Result<()> {
        self.runtime.block_on(self.consumer.assign(partitions))
    }

    /// See [`Consumer::unsubscribe`].
    pub fn unsubscribe(&mut self) -> Result<()> {
        self.runtime.block_on(self.consumer.unsubscribe())
    }

    /// See [`Consumer::assignment`].
    pub fn assignment(&self) -> &BTreeSet<TopicPartition> {
        self.consumer.assignment()
    }

    /// See [`Consumer::subscription`].
    pub fn subscription(&self) -> BTreeSet<String> {
        self.consumer.subscription()
    }

    /// See [`Consumer::poll`].
    pub fn poll(&mut self, timeout: Duration) -> Result<ConsumerRecords> {
        self.runtime.block_on(self.consumer.poll(timeout))
    }

    /// See [`Consumer::recv`].
    pub fn recv(&mut self) -> Result<ConsumerRecord> {
        self.runtime.block_on(self.consumer.recv())
    }

    /// See [`Consumer::commit_sync`].
    pub fn commit_sync(&mut self, offsets: Option<Offsets>, timeout: Duration) -> Result<()> {
        self.runtime
            .block_on(self.consumer.commit_sync(offsets, timeout))
    }

    /// See [`Consumer::commit_async_with_callback`].
    pub fn commit_async(
        &mut self,
        offsets: Option<Offsets>,
        callback: impl FnOnce(&Offsets, Result<()>) + Send + 'static,
    ) -> Result<()> {
        let _entered = self.runtime.enter();
        self.consumer.commit_async_with_callback(offsets, callback)
    }

    /// See [`Consumer::committed`].
    pub fn committed(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndMetadata>>> {
        self.runtime
            .block_on(self.consumer.committed(partitions, timeout))
    }

    /// See [`Consumer::seek`].
    pub fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<()> {
        self.runtime.block_on(self.consumer.seek(partition, offset))
    }

    /// See [`Consumer::seek_to_beginning`].
    pub fn seek_to_beginning(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.runtime
            .block_on(self.consumer.seek_to_beginning(partitions))
    }

    /// See [`Consumer::seek_to_end`].
    pub fn seek_to_end(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.runtime.block_on(self.consumer.seek_to_end(partitions))
    }

    /// See [`Consumer::position`].
    pub fn position(&mut self, partition: &TopicPartition, timeout: Duration) -> Result<i64> {
        self.runtime
            .block_on(self.consumer.position(partition, timeout))
    }

    /// See [`Consumer::pause`].
    pub fn pause(&mut self, partitions: impl IntoIterator<Item = TopicPartition>) -> Result<()> {
        self.runtime.block_on(self.consumer.pause(partitions))
    }

    /// See [`Consumer::resume`].
    pub fn resume(&mut self, partitions: impl IntoIterator<Item = TopicPartition>) -> Result<()> {
        self.runtime.block_on(self.consumer.resume(partitions))
    }

    /// See [`Consumer::paused`].
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.consumer.paused()
    }

    /// See [`Consumer::beginning_offsets`].
    pub fn beginning_offsets(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        self.runtime
            .block_on(self.consumer.beginning_offsets(partitions, timeout))
    }

    /// See [`Consumer::end_offsets`].
    pub fn end_offsets(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        self.runtime
            .block_on(self.consumer.end_offsets(partitions, timeout))
    }

    /// See [`Consumer::offsets_for_times`].
    pub fn offsets_for_times(
        &mut self,
        timestamps_ms: BTreeMap<TopicPartition, i64>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>> {
        self.runtime
            .block_on(self.consumer.offsets_for_times(timestamps_ms, timeout))
    }

    /// See [`Consumer::partitions_for`].
    pub fn partitions_for(&mut self, topic: &str, timeout: Duration) -> Result<Vec<PartitionInfo>> {
        self.runtime
            .block_on(self.consumer.partitions_for(topic, timeout))
    }

    /// See [`Consumer::list_topics`].
    pub fn list_topics(
        &mut self,
        timeout: Duration,
    ) -> Result<BTreeMap<String, Vec<PartitionInfo>>> {
        self.runtime.block_on(self.consumer.list_topics(timeout))
    }

    /// See [`Consumer::group_metadata`].
    pub fn group_metadata(&self) -> Result<ConsumerGroupMetadata> {
        self.consumer.group_metadata()
    }

    /// See [`Consumer::enforce_rebalance`].
    pub fn enforce_rebalance(&mut self, reason: &str) -> Result<()> {
        self.consumer.enforce_rebalance(reason)
    }

    /// See [`Consumer::metrics`].
    pub fn metrics(&self) -> ConsumerMetrics {
        self.consumer.metrics()
    }

    /// See [`Consumer::client_instance_id`].
    pub fn client_instance_id(&mut self, timeout: Duration) -> Result<crate::Uuid> {
        self.runtime
            .block_on(self.consumer.client_instance_id(timeout))
    }

    /// See [`Consumer::close`].
    pub fn close(&mut self, timeout: Duration) -> Result<()> {
        self.runtime.block_on(self.consumer.close(timeout))
    }

    /// See [`Consumer::close_with`].
    pub fn close_with(&mut self, options: CloseOptions) -> Result<()> {
        self.runtime.block_on(self.consumer.close_with(options))
    }
}
