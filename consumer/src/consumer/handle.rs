//! [`ConsumerHandle`]: what other tasks may do while one task polls or streams.
//!
//! The common shape of an async service: one task streams records and hands them to workers;
//! the workers commit what they finished. A [`Consumer`](super::Consumer) is driven by one
//! task at a time (`&mut self`), so the workers need something else to commit through. The
//! handle talks to the same background task over the same event channel as the consumer does,
//! so its requests are ordered with the consumer's, and it never runs a rebalance callback:
//! those stay on the polling task, as Java's single-threaded contract has them.
//!
//! What keeps a handle honest against the rebalances the polling task runs:
//! - a commit is refused by the background side if a partition is no longer assigned when the
//!   commit is taken up. Both travel the one channel, so a commit made while
//!   `on_partitions_revoked` runs is accepted (it is ahead of the callback's completion), and
//!   one made after the revocation completed cannot overwrite the new owner's progress;
//! - seek, pause and resume check the assignment on the background side, which moves the
//!   position, drops the records `recv` holds for a partition and sets its pause mark in the
//!   fetch buffer under one lock, so the polling task never hands out a record fetched for a
//!   position the handle has left.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::watch;
use tracing::Instrument;

use super::{check_commit_offsets, check_seek_offset, Consumer, ConsumerMetrics, Offsets};
use crate::error::{Error, Result};
use crate::internals::background_failure::BackgroundFailure;
use crate::internals::completion::{Completion, CompletionReceiver};
use crate::internals::event_queue::WeakEventSender;
use crate::internals::events::{ApplicationEvent, SeekTarget};
use crate::internals::fetch_buffer::FetchBuffer;
use crate::internals::metrics::SharedMetrics;
use crate::internals::network_thread::GroupSnapshot;
use crate::rt::Duration;
use crate::types::{ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition};

/// What a handle shares with its consumer.
pub(super) struct Shared {
    /// Weak, so handles do not keep the background task alive after the consumer is dropped
    /// (dropping the consumer's sender is how the background side learns it is gone).
    pub app_events: WeakEventSender<ApplicationEvent>,
    pub buffer: Arc<FetchBuffer>,
    pub metrics: Arc<SharedMetrics>,
    pub failure: BackgroundFailure,
    /// Set once the consumer's `close` has begun its final step.
    pub closed: Arc<AtomicBool>,
    pub group: watch::Receiver<GroupSnapshot>,
    pub group_id: Option<String>,
    pub default_api_timeout_ms: u64,
    /// The consumer's span: the handle's calls log inside it.
    pub span: tracing::Span,
}

/// A cloneable, `Send + Sync` handle to a [`Consumer`](super::Consumer), from
/// [`Consumer::handle`](super::Consumer::handle): while one task polls or streams, others
/// commit, seek, pause, resume, read positions and committed offsets, and take metrics.
///
/// The rebalance listener still runs on the polling task only. A handle outlives its consumer
/// harmlessly: once the consumer is closed or dropped its calls fail with
/// [`Error::IllegalState`] or [`Error::Closed`].
///
/// Unlike the consumer's, the handle's calls take explicit offsets and partitions and refuse
/// partitions the consumer does not hold *when the background task takes the call up* (see
/// [`commit_sync`](Self::commit_sync)). Every call is cancellation-safe in the sense that
/// dropping its future never leaves the consumer half-changed: a request already sent is
/// carried out (or refused) as a whole, whether or not anyone waits for its answer.
///
/// ```no_run
/// # async fn run(mut consumer: kafka_consumer::Consumer) -> kafka_consumer::Result<()> {
/// use std::time::Duration;
/// use futures_util::StreamExt;
/// use kafka_consumer::{OffsetAndMetadata, TopicPartition};
///
/// let handle = consumer.handle();
/// let stream = consumer.stream();
/// let mut stream = std::pin::pin!(stream);
/// while let Some(record) = stream.next().await {
///     let record = record?;
///     let handle = handle.clone();
///     tokio::spawn(async move {
///         // ... process the record, then commit the offset after it ...
///         let next = [(
///             TopicPartition::new(&*record.topic, record.partition),
///             OffsetAndMetadata::new(record.offset + 1),
///         )];
///         handle.commit_async(next.into_iter().collect()).await
///     });
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ConsumerHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ConsumerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerHandle")
            .field("group_id", &self.shared.group_id)
            .field("closed", &self.shared.closed.load(Ordering::SeqCst))
            .finish()
    }
}

impl ConsumerHandle {
    pub(super) fn new(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }

    fn send(&self, event: ApplicationEvent) -> Result<()> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(Error::IllegalState("the consumer is closed".to_owned()));
        }
        let sender = self
            .shared
            .app_events
            .upgrade()
            .ok_or_else(|| self.shared.failure.stopped_error())?;
        sender
            .send(event)
            .map_err(|_| self.shared.failure.stopped_error())
    }

    /// Waits for the answer inside a span naming the call (under the consumer's span).
    async fn wait<T: Clone>(
        &self,
        operation: &'static str,
        mut receiver: CompletionReceiver<T>,
    ) -> Result<T> {
        let span = tracing::debug_span!(parent: &self.shared.span, "handle", operation);
        self.shared
            .failure
            .wait(&mut receiver)
            .instrument(span)
            .await
    }

    fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.shared.default_api_timeout_ms)
    }

    // ----- commits -----

    /// Commits `offsets`, retrying retriable errors until `timeout`. Refused with
    /// [`Error::IllegalState`] if one of the partitions is not assigned to the consumer when
    /// the background task takes the commit up: made while the polling task runs
    /// `on_partitions_revoked` it is accepted, made after that callback returned it is not (the
    /// partition may already be consumed by its new owner).
    pub async fn commit_sync(&self, offsets: Offsets, timeout: Duration) -> Result<()> {
        let receiver = self.start_commit(offsets, true, timeout)?;
        self.wait("commit_sync", receiver).await
    }

    /// Commits `offsets` without retrying (checked as [`commit_sync`](Self::commit_sync) is);
    /// the returned future resolves with the outcome. It need not be awaited: the commit goes
    /// out either way.
    pub fn commit_async(&self, offsets: Offsets) -> impl Future<Output = Result<()>> + Send {
        let started = self.start_commit(offsets, false, self.default_timeout());
        let failure = self.shared.failure.clone();
        async move {
            let mut receiver = started?;
            failure.wait(&mut receiver).await
        }
    }

    fn start_commit(
        &self,
        offsets: Offsets,
        retry: bool,
        timeout: Duration,
    ) -> Result<CompletionReceiver<()>> {
        check_commit_offsets(self.shared.group_id.as_deref(), &offsets)?;
        let (completion, receiver) = if retry {
            Consumer::completion("commit_sync", timeout)
        } else {
            Completion::new("commit_async", None, 0)
        };
        if offsets.is_empty() {
            completion.complete(Ok(()));
            return Ok(receiver);
        }
        self.send(ApplicationEvent::Commit {
            offsets,
            retry,
            assigned_only: true,
            completion,
        })?;
        Ok(receiver)
    }

    /// The committed offsets of `partitions` (`None` where nothing is committed).
    pub async fn committed(
        &self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndMetadata>>> {
        if self.shared.group_id.is_none() {
            return Err(Error::IllegalState(
                "committed offsets need a group.id".to_owned(),
            ));
        }
        let (completion, receiver) = Consumer::completion("committed", timeout);
        self.send(ApplicationEvent::FetchCommittedOffsets {
            partitions: partitions.into_iter().collect(),
            completion,
        })?;
        self.wait("committed", receiver).await
    }

    // ----- positions -----

    async fn seek_to(&self, partitions: Vec<TopicPartition>, target: SeekTarget) -> Result<()> {
        let (completion, receiver) = Consumer::completion("seek", self.default_timeout());
        self.send(ApplicationEvent::Seek {
            partitions,
            target,
            completion,
        })?;
        self.wait("seek", receiver).await
    }

    /// Makes `offset` the next offset the polling task hands out for `partition`; records of
    /// the old position it still holds are dropped. [`Error::IllegalState`] if the partition
    /// is not assigned.
    pub async fn seek(&self, partition: &TopicPartition, offset: i64) -> Result<()> {
        self.seek_with_metadata(partition, OffsetAndMetadata::new(offset))
            .await
    }

    /// Like [`seek`](Self::seek), with the leader epoch of the record before `offset` so the
    /// position is validated against log truncation (KIP-320).
    pub async fn seek_with_metadata(
        &self,
        partition: &TopicPartition,
        offset: OffsetAndMetadata,
    ) -> Result<()> {
        check_seek_offset(&offset)?;
        self.seek_to(vec![partition.clone()], SeekTarget::Offset(offset))
            .await
    }

    /// Resets the partitions to their log start offsets (lazily, before the next fetch).
    pub async fn seek_to_beginning(
        &self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.seek_to(partitions.into_iter().collect(), SeekTarget::Beginning)
            .await
    }

    /// Resets the partitions to their log end offsets (lazily, before the next fetch).
    pub async fn seek_to_end(
        &self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.seek_to(partitions.into_iter().collect(), SeekTarget::End)
            .await
    }

    /// The offset of the next record the polling task will hand out for `partition`, waiting
    /// up to `timeout` for the position to be established. [`Error::IllegalState`] if the
    /// partition is not assigned.
    pub async fn position(&self, partition: &TopicPartition, timeout: Duration) -> Result<i64> {
        let (completion, receiver) = Consumer::completion("position", timeout);
        self.send(ApplicationEvent::Position {
            partition: partition.clone(),
            completion,
        })?;
        let position = self.wait("position", receiver).await?.offset;
        // Records the polling task holds for `recv` come first; read after the background
        // answered, so a record taken meanwhile is counted either way.
        Ok(self
            .shared
            .buffer
            .first_held_offset(partition)
            .map_or(position, |held| held.min(position)))
    }

    /// Stops fetching from the partitions; the polling task hands out none of their records
    /// until they are resumed (those it already took wait for the resume).
    /// [`Error::IllegalState`] if one is not assigned (then none is paused).
    pub async fn pause(&self, partitions: impl IntoIterator<Item = TopicPartition>) -> Result<()> {
        self.set_paused(partitions.into_iter().collect(), true)
            .await
    }

    /// Resumes fetching from the partitions.
    pub async fn resume(&self, partitions: impl IntoIterator<Item = TopicPartition>) -> Result<()> {
        self.set_paused(partitions.into_iter().collect(), false)
            .await
    }

    async fn set_paused(&self, partitions: Vec<TopicPartition>, paused: bool) -> Result<()> {
        let (completion, receiver) = Consumer::completion("pause", self.default_timeout());
        self.send(ApplicationEvent::SetPaused {
            partitions,
            paused,
            completion,
        })?;
        self.wait(if paused { "pause" } else { "resume" }, receiver)
            .await
    }

    /// The paused partitions (paused by the consumer or any of its handles).
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.shared.buffer.paused()
    }

    // ----- group and metrics -----

    /// The member's group, generation and member id as of now: what a transactional producer
    /// on a worker task needs to commit offsets in a transaction.
    pub fn group_metadata(&self) -> Result<ConsumerGroupMetadata> {
        if self.shared.group_id.is_none() {
            return Err(Error::InvalidArgument(
                "group_metadata needs a group.id".to_owned(),
            ));
        }
        Ok(self.shared.group.borrow().metadata.clone())
    }

    /// A snapshot of per-partition lag and counters, as [`Consumer::metrics`] gives.
    pub fn metrics(&self) -> ConsumerMetrics {
        ConsumerMetrics::snapshot(&self.shared.buffer, &self.shared.metrics)
    }
}
