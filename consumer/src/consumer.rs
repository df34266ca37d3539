//! The application side (Java's `AsyncKafkaConsumer`): validates calls, sends application
//! events, drains background events, runs rebalance listener and commit callbacks in order, and
//! hands out records from the shared fetch buffer. It never does network I/O.

mod handle;

#[cfg(all(test, not(madsim)))]
mod background_panic_tests;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Notify};
use tracing::Instrument;

use crate::background_runtime::{BackgroundRuntime, RuntimeLease};
use crate::close_options::{CloseOptions, GroupMembershipOperation};
use crate::config::ConsumerConfig;
use crate::config::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};
use crate::error::{Error, Result};
use crate::internals::background_failure::BackgroundFailure;
use crate::internals::completion::{Completion, CompletionReceiver};
use crate::internals::event_queue::{self, EventReceiver, EventSender};
use crate::internals::events::{
    ApplicationEvent, BackgroundEvent, RebalanceCallback, SeekTarget, SubscriptionRequest,
};
use crate::internals::fetch_buffer::FetchBuffer;
use crate::internals::metrics::{EventQueue, SharedMetrics};
use crate::internals::metrics_snapshot::measure_all;
use crate::internals::network_thread::{self, Channels, GroupSnapshot};
use crate::internals::settings::ConsumerSettings;
use crate::internals::subscription_state::TopicPattern;
use crate::internals::PartitionProgress;
use crate::metric::Metric;
use crate::rebalance::{
    callback_error, BorrowedListener, CallbackCompletion, CatchUnwind, ConsumerRebalanceListener,
    ListenerSlot,
};
use crate::rt::{Duration, Instant};
use crate::topic_name::validate_topic_name;
use crate::types::{
    ConsumerGroupMetadata, ConsumerRecord, ConsumerRecords, OffsetAndMetadata, OffsetAndTimestamp,
    PartitionInfo, TopicPartition,
};
pub use handle::ConsumerHandle;

/// Offsets to commit, by partition.
pub type Offsets = BTreeMap<TopicPartition, OffsetAndMetadata>;

/// A commit callback: the offsets and how their commit went.
pub type CommitCallback = Box<dyn FnOnce(&Offsets, Result<()>) + Send>;

/// Interrupts a blocking consumer call from anywhere (Java's `wakeup()`): the call in progress,
/// or else the next one, fails with [`Error::Wakeup`] once.
#[derive(Debug, Clone, Default)]
pub struct WakeupHandle {
    inner: Arc<WakeupState>,
}

#[derive(Debug, Default)]
struct WakeupState {
    pending: AtomicBool,
    notify: Notify,
}

impl WakeupHandle {
    /// Requests a wakeup.
    pub fn wakeup(&self) {
        self.inner.pending.store(true, Ordering::SeqCst);
        self.inner.notify.notify_one();
    }

    /// Consumes a pending wakeup.
    fn take(&self) -> bool {
        self.inner.pending.swap(false, Ordering::SeqCst)
    }

    fn check(&self) -> Result<()> {
        if self.take() {
            Err(Error::Wakeup)
        } else {
            Ok(())
        }
    }

    /// Resolves when a wakeup is requested (and consumes it).
    async fn woken(&self) {
        loop {
            if self.take() {
                return;
            }
            self.inner.notify.notified().await;
        }
    }
}

/// Per-partition consumption numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionMetrics {
    /// The consumed position.
    pub position: Option<i64>,
    /// The latest high watermark a fetch reported.
    pub high_watermark: Option<i64>,
    /// `high_watermark - position`, when both are known.
    pub lag: Option<i64>,
}

/// A snapshot of the consumer's metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerMetrics {
    /// Apache Kafka's metrics under Java's groups, names and tags (`records-lag-max`,
    /// `fetch-latency-avg`, `commit-rate`, `rebalance-latency-avg`, `assigned-partitions`,
    /// …), computed as Java computes them; see [`crate::metric`].
    /// [`kafka_metric`](Self::kafka_metric) looks one up.
    pub kafka: Vec<Metric>,
    /// Per assigned partition.
    pub partitions: BTreeMap<TopicPartition, PartitionMetrics>,
    /// Records handed out since the consumer started.
    pub records_consumed: u64,
    /// Fetch responses received since the consumer started.
    pub fetch_responses: u64,
    /// Latency of the last successful commit, in µs (0 before the first).
    pub last_commit_latency_us: u64,
    /// Iterations of the background loop so far (it wakes only for events, responses and
    /// deadlines; an idle consumer barely moves this).
    pub background_loop_iterations: u64,
    /// Turns of `poll`'s wait loop so far (it turns on data, background events, deadlines
    /// and wakeups; a `poll` on an idle assignment barely moves this).
    pub poll_wakeups: u64,
    /// Group rebalances this member completed.
    pub rebalances: u64,
    /// How long the last rebalance took, in ms (start to the end of `on_partitions_assigned`).
    pub last_rebalance_ms: u64,
    /// Group membership and coordinator discovery requests sent so far (FindCoordinator,
    /// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat): under persistent
    /// errors these must back off, not storm.
    pub group_requests_sent: u64,
    /// Metadata and offset lookup requests sent so far (Metadata, ListOffsets,
    /// OffsetForLeaderEpoch, OffsetFetch).
    pub lookup_requests_sent: u64,
}

impl ConsumerMetrics {
    /// The value of the client-level Kafka metric `name` in `group` (one tagged only with
    /// `client-id`), e.g. `kafka_metric(FETCH_MANAGER_GROUP, "records-lag-max")`.
    pub fn kafka_metric(&self, group: &str, name: &str) -> Option<f64> {
        self.kafka
            .iter()
            .find(|m| m.name.group == group && m.name.name == name && m.name.tags.len() == 1)
            .map(|m| m.value)
    }

    /// The numbers as of now.
    fn snapshot(buffer: &FetchBuffer, metrics: &SharedMetrics) -> Self {
        let (progress, records_consumed) = buffer.progress();
        let partitions = progress
            .into_iter()
            .map(
                |(
                    tp,
                    PartitionProgress {
                        position,
                        high_watermark,
                    },
                )| {
                    let lag = position.zip(high_watermark).map(|(p, hw)| (hw - p).max(0));
                    (
                        tp,
                        PartitionMetrics {
                            position,
                            high_watermark,
                            lag,
                        },
                    )
                },
            )
            .collect();
        ConsumerMetrics {
            kafka: measure_all(buffer, metrics, Instant::now()),
            partitions,
            records_consumed,
            fetch_responses: metrics.fetch_responses(),
            last_commit_latency_us: metrics.last_commit_latency_us(),
            background_loop_iterations: metrics.loop_iterations(),
            poll_wakeups: metrics.poll_wakeups(),
            rebalances: metrics.rebalances(),
            last_rebalance_ms: metrics.last_rebalance_ms(),
            group_requests_sent: metrics.group_requests(),
            lookup_requests_sent: metrics.lookup_requests(),
        }
    }
}

/// How partitions are chosen, as the application side tracks it (the modes exclude each
/// other, as in Java).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Neither subscribed nor assigned.
    Idle,
    /// `subscribe(topics)`.
    Topics(BTreeSet<String>),
    /// `subscribe_pattern`.
    Pattern(String),
    /// `subscribe_regex`.
    Regex(String),
    /// `assign`.
    Assigned,
}

impl Mode {
    /// Whether the group assigns the partitions.
    fn is_subscribed(&self) -> bool {
        matches!(self, Mode::Topics(_) | Mode::Pattern(_) | Mode::Regex(_))
    }
}

/// The span every line the application side logs is inside: the consumer, named as Java's
/// `[Consumer clientId=…, groupId=…]` log prefix names it.
fn consumer_span(settings: &ConsumerSettings) -> tracing::Span {
    tracing::info_span!(
        "consumer",
        client_id = %settings.client_id,
        group_id = settings.group_id.as_deref().unwrap_or_default()
    )
}

/// A seek's offset must not be negative, wherever the seek comes from.
fn check_seek_offset(offset: &OffsetAndMetadata) -> Result<()> {
    if offset.offset < 0 {
        return Err(Error::InvalidArgument(format!(
            "seek offset must not be negative, got {}",
            offset.offset
        )));
    }
    Ok(())
}

/// What every commit needs, wherever it comes from: a group, and no negative offset.
fn check_commit_offsets(group_id: Option<&str>, offsets: &Offsets) -> Result<()> {
    if group_id.is_none() {
        return Err(Error::IllegalState(
            "committing offsets needs a group.id".to_owned(),
        ));
    }
    if let Some((tp, o)) = offsets.iter().find(|(_, o)| o.offset < 0) {
        return Err(Error::InvalidArgument(format!(
            "negative offset {} for {tp}",
            o.offset
        )));
    }
    Ok(())
}

/// What a poll does with the records it collects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// Returns them (`poll`).
    Return,
    /// Holds them in the fetch buffer for `recv`, which hands them out one at a time.
    Hold,
}

struct AsyncCommit {
    offsets: Offsets,
    receiver: CompletionReceiver<()>,
    callback: Option<CommitCallback>,
}

/// A Kafka consumer. `Send` but not `Sync`: one task drives it at a time; use a
/// [`WakeupHandle`] to interrupt it from elsewhere.
///
/// # Dropping without `close`
///
/// Call [`close`](Self::close) when done: it commits (with auto-commit), runs the rebalance
/// listener and leaves the group in order. A consumer dropped unclosed logs a warning and its
/// drop returns at once (it never blocks the dropping task); its background task then leaves
/// the group on its own, as `close` would (a static member keeps its place, as with Java's
/// close), within 5 s, and stops. Its partitions move to the other members promptly instead
/// of after `session.timeout.ms`, but nothing is committed (the next owner starts from the
/// last commit) and no listener runs. Java's consumer does not leave at all when it is
/// garbage-collected unclosed.
///
/// # Cancellation
///
/// Every async method may be dropped at any await point (a `timeout`, a `select!` that took
/// another branch, an aborted task) and called again:
/// - `poll`, `recv` and `stream` take records from the buffer only when they return them, so
///   a dropped call loses none. A rebalance listener method running inside the dropped call
///   is dropped with it (abandoned, as an interrupted Java callback is): the background task
///   is told it finished, the new assignment applies at the next call, and the listener is
///   back in place for the next rebalance.
/// - A request the call already handed to the background task (a commit, a seek, a pause,
///   an offset lookup, `unsubscribe`, `close`) is carried out or refused as a whole whether
///   or not anyone waits for its answer; one not yet handed over never happens. A commit
///   whose `commit_sync` was dropped may thus have been made: read
///   [`committed`](Self::committed) when it matters.
///
/// `sim/tests/sim_cancellation.rs` drops each method at several points under both group
/// protocols and checks the calls made afterwards.
pub struct Consumer {
    settings: ConsumerSettings,
    app_events: EventSender<ApplicationEvent>,
    background_events: EventReceiver<BackgroundEvent>,
    buffer: Arc<FetchBuffer>,
    metrics: Arc<SharedMetrics>,
    wakeup: WakeupHandle,
    mode: Mode,
    assignment: BTreeSet<TopicPartition>,
    /// The assignment once the rebalance callback in progress is over: applied when the
    /// callback returns, or at the next call if the caller's future was dropped meanwhile.
    pending_assignment: Option<BTreeSet<TopicPartition>>,
    listener: ListenerSlot,
    in_callback: Arc<AtomicBool>,
    group: watch::Receiver<GroupSnapshot>,
    async_commits: VecDeque<AsyncCommit>,
    closed: bool,
    /// Tells this consumer's handles that it is closed.
    closed_flag: Arc<AtomicBool>,
    /// The parent of the application side's spans (`poll`, `commit_sync`, rebalance
    /// callbacks, `close`): names the consumer as the background task's span does.
    span: tracing::Span,
    /// The background side asked for an acknowledged poll ([`BackgroundEvent::PollRequested`]);
    /// kept until a `poll` sends it, wherever the request was read.
    poll_requested: bool,
    /// The acknowledged poll sent for that request, until its answer is seen: kept across
    /// calls, so a `poll` whose own timeout ends first (or whose future is dropped) returns
    /// without collecting, and a later one finds the answer.
    pending_ack: Option<CompletionReceiver<()>>,
    /// Why the background task stopped, if it panicked: calls that find it gone report that
    /// ([`Error::Internal`]) rather than [`Error::Closed`].
    failure: BackgroundFailure,
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("client_id", &self.settings.client_id)
            .field("group_id", &self.settings.group_id)
            .field("assignment", self.assignment_view())
            .field("closed", &self.closed)
            .finish()
    }
}

impl Consumer {
    /// Starts a consumer from a checked configuration: starts the background task (in real
    /// mode on its own thread; under madsim on the current simulated node). Connects lazily.
    /// An empty `client.id` is generated as Java does (`consumer-<group.id>-<n>`).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
    ///
    /// let config = ConsumerConfig::builder()
    ///     .bootstrap_servers(["localhost:9092"])
    ///     .group_id("orders")
    ///     .auto_offset_reset(AutoOffsetReset::Earliest)
    ///     .build()?;
    /// let consumer = Consumer::new(config)?;
    /// # drop(consumer);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(config: ConsumerConfig) -> Result<Self> {
        Self::with_runtime(config, BackgroundRuntime::Dedicated)
    }

    /// Starts a consumer whose background task runs where `runtime` says: a thread of its own
    /// ([`BackgroundRuntime::Dedicated`], what [`new`](Self::new) does) or a runtime shared
    /// with other consumers and the application ([`BackgroundRuntime::Shared`]), which saves
    /// a thread and a runtime per consumer in processes that run many.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use kafka_consumer::{BackgroundRuntime, Consumer, ConsumerConfig};
    ///
    /// let shared = BackgroundRuntime::Shared(tokio::runtime::Handle::current());
    /// let mut consumers = Vec::new();
    /// for tenant in ["a", "b", "c"] {
    ///     let config = ConsumerConfig::builder()
    ///         .bootstrap_servers(["localhost:9092"])
    ///         .group_id(format!("billing-{tenant}"))
    ///         .build()?;
    ///     consumers.push(Consumer::with_runtime(config, shared.clone())?);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_runtime(config: ConsumerConfig, runtime: BackgroundRuntime) -> Result<Self> {
        Self::start(ConsumerSettings::from_config(&config), &runtime).map(|(consumer, _)| consumer)
    }

    /// Starts a consumer from resolved settings, checking what the internals rely on; real
    /// mode with a dedicated runtime also returns the lease the blocking facade waits through.
    pub(crate) fn start(
        settings: ConsumerSettings,
        runtime: &BackgroundRuntime,
    ) -> Result<(Self, Option<RuntimeLease>)> {
        if settings.bootstrap_servers.is_empty() {
            return Err(Error::InvalidArgument(
                "bootstrap.servers is empty".to_owned(),
            ));
        }
        if settings.max_poll_records == 0 {
            return Err(Error::InvalidArgument(
                "max.poll.records must be at least 1".to_owned(),
            ));
        }
        if settings.group_id.as_deref() == Some("") {
            return Err(Error::InvalidArgument(
                "group.id must not be empty".to_owned(),
            ));
        }
        // Java logs in when it builds the client's channels: a token provider fetches its
        // first token now, so bad credentials fail construction rather than every connection.
        if let Some(crate::network::sasl::SaslConfig {
            mechanism,
            credentials: crate::network::sasl::SaslCredentials::Token(provider),
        }) = &settings.security.sasl
        {
            provider.login().map_err(|message| Error::Authentication {
                broker: "the token provider".to_owned(),
                mechanism: format!("SASL/{mechanism}"),
                code: None,
                message,
            })?;
        }
        let buffer = Arc::new(FetchBuffer::new(
            settings.metric_config,
            &settings.client_id,
        ));
        let metrics = Arc::new(SharedMetrics::new(
            settings.metric_config,
            &settings.client_id,
        ));
        let (app_tx, app_rx) = event_queue::unbounded(EventQueue::Application, &metrics);
        let (bg_tx, bg_rx) = event_queue::unbounded(EventQueue::Background, &metrics);
        let (group_tx, group_rx) = watch::channel(GroupSnapshot {
            metadata: ConsumerGroupMetadata {
                group_id: settings.group_id.clone().unwrap_or_default(),
                generation_id: -1,
                member_id: String::new(),
                group_instance_id: settings.group_instance_id.clone(),
            },
            session_lapsed: false,
        });
        let failure = BackgroundFailure::default();
        let lease = network_thread::start(
            settings.clone(),
            Channels {
                app_events: app_rx,
                background_events: bg_tx,
                buffer: Arc::clone(&buffer),
                metrics: Arc::clone(&metrics),
                group: group_tx,
                failure: failure.clone(),
            },
            runtime,
        )?;
        let span = consumer_span(&settings);
        let consumer = Self {
            settings,
            app_events: app_tx,
            background_events: bg_rx,
            buffer,
            metrics,
            wakeup: WakeupHandle::default(),
            mode: Mode::Idle,
            assignment: BTreeSet::new(),
            pending_assignment: None,
            listener: Arc::new(Mutex::new(None)),
            in_callback: Arc::new(AtomicBool::new(false)),
            group: group_rx,
            async_commits: VecDeque::new(),
            closed: false,
            closed_flag: Arc::new(AtomicBool::new(false)),
            span,
            poll_requested: false,
            pending_ack: None,
            failure,
            _not_sync: PhantomData,
        };
        Ok((consumer, lease))
    }

    /// A handle that interrupts this consumer's blocking calls from any thread or task.
    pub fn wakeup_handle(&self) -> WakeupHandle {
        self.wakeup.clone()
    }

    /// A handle other tasks use to commit, seek, pause, resume and read positions while this
    /// consumer polls or streams (see [`ConsumerHandle`]). Cloneable, `Send` and `Sync`.
    pub fn handle(&self) -> ConsumerHandle {
        ConsumerHandle::new(handle::Shared {
            app_events: self.app_events.downgrade(),
            buffer: Arc::clone(&self.buffer),
            metrics: Arc::clone(&self.metrics),
            failure: self.failure.clone(),
            closed: Arc::clone(&self.closed_flag),
            group: self.group.clone(),
            group_id: self.settings.group_id.clone(),
            default_api_timeout_ms: self.settings.default_api_timeout_ms,
            span: self.span.clone(),
        })
    }

    // ----- plumbing -----

    fn ensure_open(&self) -> Result<()> {
        if self.closed {
            Err(Error::IllegalState("the consumer is closed".to_owned()))
        } else {
            Ok(())
        }
    }

    fn send(&self, event: ApplicationEvent) -> Result<()> {
        self.app_events
            .send(event)
            .map_err(|_| self.failure.stopped_error())
    }

    fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.settings.default_api_timeout_ms)
    }

    fn completion<T: Clone + Send + Sync + 'static>(
        operation: &'static str,
        timeout: Duration,
    ) -> (Completion<T>, CompletionReceiver<T>) {
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        Completion::new(operation, Some(Instant::now() + timeout), timeout_ms)
    }

    /// Waits for a completion; a wakeup interrupts the wait (the operation itself goes on).
    async fn wait<T: Clone>(&mut self, mut receiver: CompletionReceiver<T>) -> Result<T> {
        self.wakeup.check()?;
        let wakeup = self.wakeup.clone();
        tokio::select! {
            result = self.failure.wait(&mut receiver) => result,
            () = wakeup.woken() => Err(Error::Wakeup),
        }
    }

    /// Handles queued background events — errors, rebalance callbacks — and returns the first
    /// error (Java's `processBackgroundEvents`).
    async fn process_background_events(&mut self) -> Result<()> {
        let mut first = None;
        let started = Instant::now();
        let mut processed = false;
        while let Ok(event) = self.background_events.try_recv() {
            processed = true;
            if let Err(error) = self.handle_background_event(event).await {
                first.get_or_insert(error);
            }
        }
        if processed {
            self.record_background_processing(started);
        }
        first.map_or(Ok(()), Err)
    }

    /// Handles one background event that woke a waiting `poll` or operation, and records the
    /// time it took as the background queue's processing time: Java's `processBackgroundEvents`
    /// records it however it is reached (from `poll`, or from the loop that waits on an
    /// operation while running its callbacks), and here those waits take events one at a time.
    async fn handle_background_event_timed(&mut self, event: BackgroundEvent) -> Result<()> {
        let started = Instant::now();
        let result = self.handle_background_event(event).await;
        self.record_background_processing(started);
        result
    }

    /// Records the time since `started` spent handling background events.
    fn record_background_processing(&self, started: Instant) {
        let done = Instant::now();
        self.metrics.client().record_queue_processing(
            EventQueue::Background,
            done.saturating_duration_since(started),
            done,
        );
    }

    async fn handle_background_event(&mut self, event: BackgroundEvent) -> Result<()> {
        match event {
            BackgroundEvent::Error(error) => {
                tracing::debug!(%error, "background error");
                Err(error)
            }
            BackgroundEvent::PollRequested => {
                self.poll_requested = true;
                Ok(())
            }
            BackgroundEvent::RebalanceCallbackNeeded {
                id,
                callback,
                partitions,
                assignment_after,
                became_lost,
            } => {
                let callback = if callback == RebalanceCallback::Revoked
                    && became_lost.load(Ordering::SeqCst)
                {
                    tracing::info!(
                        ?partitions,
                        "the member lost its generation before the revocation ran: the \
                         partitions are lost, not revoked"
                    );
                    RebalanceCallback::Lost
                } else {
                    callback
                };
                self.run_rebalance_callback(id, callback, partitions, assignment_after)
                    .await
            }
        }
    }

    /// Runs one listener method and answers the background side, exactly once.
    async fn run_rebalance_callback(
        &mut self,
        id: u64,
        callback: RebalanceCallback,
        partitions: BTreeSet<TopicPartition>,
        assignment_after: BTreeSet<TopicPartition>,
    ) -> Result<()> {
        self.settle_assignment();
        if callback == RebalanceCallback::Assigned {
            // The new partitions are ours during the callback (it may seek them).
            self.set_assignment_view(assignment_after);
        } else {
            self.pending_assignment = Some(assignment_after);
        }
        let result = self.invoke_listener(Some(id), callback, &partitions).await;
        self.settle_assignment();
        result
    }

    /// Calls the listener's method for `callback`, a panic turned into an error; `id` answers
    /// the background side when it asked for the call.
    async fn invoke_listener(
        &mut self,
        id: Option<u64>,
        callback: RebalanceCallback,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Result<()> {
        let span = {
            let group = self.group.borrow();
            tracing::info_span!(
                parent: &self.span,
                "rebalance_callback",
                callback = callback.method_name(),
                partitions = partitions.len(),
                member_id = %group.metadata.member_id,
                generation = group.metadata.generation_id,
            )
        };
        let completion = CallbackCompletion::start(&self.app_events, &self.in_callback, id);
        let started = Instant::now();
        let mut borrowed = BorrowedListener::take(&self.listener);
        let (name, result) = match borrowed.get() {
            None => ("", Ok(())),
            Some(listener) => {
                let name = callback.method_name();
                let future = match callback {
                    RebalanceCallback::Revoked => listener.on_partitions_revoked(self, partitions),
                    RebalanceCallback::Assigned => {
                        listener.on_partitions_assigned(self, partitions)
                    }
                    RebalanceCallback::Lost => listener.on_partitions_lost(self, partitions),
                };
                let result = CatchUnwind::new(future).instrument(span).await;
                (name, callback_error(name, result))
            }
        };
        drop(borrowed);
        drop(completion);
        // Java records the call's time with or without a listener of the application's (its
        // default listener does nothing), failed calls included.
        let now = Instant::now();
        self.metrics.client().record_listener_call(
            callback,
            now.saturating_duration_since(started),
            now,
        );
        if let Err(error) = &result {
            tracing::warn!(%error, callback = name, "rebalance listener failed");
        }
        result
    }

    /// Applies the assignment a finished (or abandoned) rebalance callback left pending.
    fn settle_assignment(&mut self) {
        if self.in_callback.load(Ordering::SeqCst) {
            return;
        }
        if let Some(assignment) = self.pending_assignment.take() {
            self.set_assignment_view(assignment);
        }
    }

    /// The application's view of the assignment changes: records held for `recv` and pause
    /// marks of partitions that went away are dropped.
    fn set_assignment_view(&mut self, assignment: BTreeSet<TopicPartition>) {
        self.buffer.retain_application_view(&assignment);
        self.assignment = assignment;
    }

    /// Waits for `receiver` while running the rebalance callbacks the background side asks
    /// for meanwhile (`unsubscribe` and `close` revoke through the listener).
    async fn wait_running_callbacks<T: Clone>(
        &mut self,
        mut receiver: CompletionReceiver<T>,
    ) -> Result<T> {
        let mut first_error = None;
        // A listener's failure is reported ahead of the operation's own outcome, as Java's
        // `processBackgroundEvents` throws it before looking at the operation's future.
        let finish = |result: Result<T>, first_error: Option<Error>| match first_error {
            Some(error) => Err(error),
            None => result,
        };
        loop {
            let event = tokio::select! {
                // Callbacks queued before the operation completed run first. Left to chance,
                // the completion could win while a lost callback is still queued (a member
                // whose poll timer expired, then closed), and the application would never be
                // told it lost its partitions.
                biased;
                event = self.background_events.recv() => event,
                result = self.failure.wait(&mut receiver) => return finish(result, first_error),
            };
            let Some(event) = event else {
                let done = receiver.borrow().clone();
                return done.map_or(Err(self.failure.stopped_error()), |result| {
                    finish(result, first_error)
                });
            };
            if let Err(error) = self.handle_background_event_timed(event).await {
                first_error.get_or_insert(error);
            }
        }
    }

    /// Runs the callbacks of completed async commits, in the order they were made.
    fn run_commit_callbacks(&mut self) {
        while let Some(front) = self.async_commits.front() {
            let Some(result) = front.receiver.borrow().clone() else {
                break;
            };
            if let Some(commit) = self.async_commits.pop_front() {
                if let Some(callback) = commit.callback {
                    callback(&commit.offsets, result);
                }
            }
        }
    }

    /// Waits for every earlier async commit and runs their callbacks (KAFKA-10337, KAFKA-16103).
    async fn await_async_commits(&mut self, deadline: Instant, timeout: Duration) -> Result<()> {
        for commit in &mut self.async_commits {
            let wait = self.failure.wait(&mut commit.receiver);
            if tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), wait)
                .await
                .is_err()
            {
                return Err(Error::Timeout {
                    operation: "awaiting pending async commits",
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
        }
        self.run_commit_callbacks();
        Ok(())
    }

    /// The positions of records handed out so far, for the assigned partitions: the buffer's
    /// positions, moved back to the first record still held for `recv`.
    fn consumed_positions(&self) -> Offsets {
        let mut positions = self.buffer.consumed_positions();
        let assignment = self.assignment_view();
        positions.retain(|tp, _| assignment.contains(tp));
        positions
    }

    fn check_assigned<'a>(
        &self,
        partitions: impl IntoIterator<Item = &'a TopicPartition>,
    ) -> Result<()> {
        let assignment = self.assignment_view();
        for tp in partitions {
            if !assignment.contains(tp) {
                return Err(Error::IllegalState(format!(
                    "partition {tp} is not assigned"
                )));
            }
        }
        Ok(())
    }

    // ----- assignment and subscription -----

    /// Manually assigns exactly these partitions (an empty set unassigns everything); a topic
    /// name Kafka does not allow is refused with [`Error::InvalidTopic`]. With
    /// auto-commit, the positions consumed so far are committed first. Not allowed while
    /// subscribed (the modes exclude each other, as in Java).
    pub async fn assign(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.ensure_open()?;
        self.settle_assignment();
        if self.mode.is_subscribed() {
            return Err(Error::IllegalState(
                "subscription to topics, partitions and pattern are mutually exclusive".to_owned(),
            ));
        }
        let partitions: BTreeSet<TopicPartition> = partitions.into_iter().collect();
        for tp in &partitions {
            validate_topic_name(&tp.topic)?;
        }
        if let Some(tp) = partitions.iter().find(|tp| tp.partition < 0) {
            return Err(Error::InvalidArgument(format!("invalid partition {tp:?}")));
        }
        self.run_commit_callbacks();
        let offsets_to_commit = if self.settings.auto_commit() {
            self.consumed_positions()
        } else {
            BTreeMap::new()
        };
        let (completion, receiver) = Self::completion("assign", self.default_timeout());
        self.send(ApplicationEvent::Assign {
            partitions: partitions.clone(),
            offsets_to_commit,
            completion,
        })?;
        self.mode = if partitions.is_empty() {
            Mode::Idle
        } else {
            Mode::Assigned
        };
        self.set_assignment_view(partitions);
        self.failure.wait(&mut receiver.clone()).await
    }

    /// Subscribes to `topics`: the group (`group.id`) assigns their partitions, joining on the
    /// next `poll`. Replaces an earlier topic subscription; an empty list unsubscribes. A name
    /// Kafka does not allow is refused with [`Error::InvalidTopic`]; a topic the broker refuses
    /// later (INVALID_TOPIC_EXCEPTION, TOPIC_AUTHORIZATION_FAILED) fails `poll`, once per
    /// metadata refresh that reports it.
    pub async fn subscribe<S: Into<String>>(
        &mut self,
        topics: impl IntoIterator<Item = S>,
    ) -> Result<()> {
        let topics: BTreeSet<String> = topics.into_iter().map(Into::into).collect();
        if topics.is_empty() {
            return self.unsubscribe().await;
        }
        // A name no broker can serve fails here, naming it, instead of polling forever.
        for topic in &topics {
            validate_topic_name(topic)?;
        }
        self.start_subscription(SubscriptionRequest::Topics(topics.clone()))
            .await?;
        self.mode = Mode::Topics(topics);
        Ok(())
    }

    /// Like [`subscribe`](Self::subscribe), with a listener told about every partition the
    /// group assigns, revokes or loses. It replaces any earlier listener.
    pub async fn subscribe_with_listener<S: Into<String>>(
        &mut self,
        topics: impl IntoIterator<Item = S>,
        listener: impl ConsumerRebalanceListener + 'static,
    ) -> Result<()> {
        self.set_listener(listener);
        self.subscribe(topics).await
    }

    /// Subscribes to every topic whose whole name matches `pattern` (Java's `Pattern`
    /// semantics: `orders-.*` matches `orders-eu`, not `old-orders-eu`), re-evaluated on every
    /// metadata refresh; internal topics only with `exclude.internal.topics=false`.
    pub async fn subscribe_pattern(&mut self, pattern: &str) -> Result<()> {
        let compiled = TopicPattern::new(pattern).map_err(Error::InvalidArgument)?;
        self.start_subscription(SubscriptionRequest::Pattern(compiled))
            .await?;
        self.mode = Mode::Pattern(pattern.to_owned());
        Ok(())
    }

    /// Like [`subscribe_pattern`](Self::subscribe_pattern), with a rebalance listener.
    pub async fn subscribe_pattern_with_listener(
        &mut self,
        pattern: &str,
        listener: impl ConsumerRebalanceListener + 'static,
    ) -> Result<()> {
        self.set_listener(listener);
        self.subscribe_pattern(pattern).await
    }

    /// Subscribes to every topic whose name the broker finds matching `regex` (RE2J syntax,
    /// whole-name match; Java's `subscribe(SubscriptionPattern)`). The broker evaluates it — on
    /// topics created or deleted later too — so every member of the group sees the same topics;
    /// a regex the broker cannot compile fails a later `poll` with INVALID_REGULAR_EXPRESSION.
    /// Needs `group.protocol=consumer` (the classic protocol has no broker-side regex; use
    /// [`subscribe_pattern`](Self::subscribe_pattern) there).
    pub async fn subscribe_regex(&mut self, regex: &str) -> Result<()> {
        if regex.is_empty() {
            return Err(Error::InvalidArgument(
                "the topic regex to subscribe to must not be empty".to_owned(),
            ));
        }
        self.start_subscription(SubscriptionRequest::Regex(regex.to_owned()))
            .await?;
        self.mode = Mode::Regex(regex.to_owned());
        Ok(())
    }

    /// Like [`subscribe_regex`](Self::subscribe_regex), with a rebalance listener.
    pub async fn subscribe_regex_with_listener(
        &mut self,
        regex: &str,
        listener: impl ConsumerRebalanceListener + 'static,
    ) -> Result<()> {
        self.set_listener(listener);
        self.subscribe_regex(regex).await
    }

    fn set_listener(&mut self, listener: impl ConsumerRebalanceListener + 'static) {
        *self.listener.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(listener));
    }

    async fn start_subscription(&mut self, subscription: SubscriptionRequest) -> Result<()> {
        self.ensure_open()?;
        self.settle_assignment();
        if self.settings.group_id.is_none() {
            return Err(Error::InvalidArgument(
                "subscribing needs a group.id: set group.id to use group management, or use \
                 assign()"
                    .to_owned(),
            ));
        }
        let (completion, receiver) = Self::completion("subscribe", self.default_timeout());
        self.send(ApplicationEvent::Subscribe {
            subscription,
            completion,
        })?;
        self.failure.wait(&mut receiver.clone()).await
    }

    /// Leaves the group (revoking the partitions through the listener first) or drops the
    /// manual assignment. Waits up to `default.api.timeout.ms`.
    pub async fn unsubscribe(&mut self) -> Result<()> {
        self.ensure_open()?;
        self.settle_assignment();
        match self.mode {
            Mode::Topics(_) | Mode::Pattern(_) | Mode::Regex(_) => {
                self.run_commit_callbacks();
                let (completion, receiver) =
                    Self::completion("unsubscribe", self.default_timeout());
                self.send(ApplicationEvent::Unsubscribe {
                    completion,
                    operation: GroupMembershipOperation::Default,
                })?;
                let result = self.wait_running_callbacks(receiver).await;
                self.mode = Mode::Idle;
                self.set_assignment_view(BTreeSet::new());
                result
            }
            Mode::Assigned | Mode::Idle => self.assign([]).await,
        }
    }

    /// The partitions this consumer holds now.
    pub fn assignment(&self) -> &BTreeSet<TopicPartition> {
        self.assignment_view()
    }

    /// The assignment as the caller sees it: inside a revoke callback the partitions are
    /// still held; once it is over (or was abandoned) they are gone.
    fn assignment_view(&self) -> &BTreeSet<TopicPartition> {
        match &self.pending_assignment {
            Some(after) if !self.in_callback.load(Ordering::SeqCst) => after,
            _ => &self.assignment,
        }
    }

    /// The subscribed topics (`subscribe`), or the pattern's source (`subscribe_pattern`,
    /// `subscribe_regex`).
    pub fn subscription(&self) -> BTreeSet<String> {
        match &self.mode {
            Mode::Topics(topics) => topics.clone(),
            Mode::Pattern(pattern) | Mode::Regex(pattern) => {
                [pattern.clone()].into_iter().collect()
            }
            Mode::Assigned | Mode::Idle => BTreeSet::new(),
        }
    }

    /// Asks the group for a rebalance (Java's `enforceRebalance`); it happens in a later
    /// `poll`. Ignored outside a group generation.
    pub fn enforce_rebalance(&mut self, reason: &str) -> Result<()> {
        self.ensure_open()?;
        if !self.mode.is_subscribed() {
            return Err(Error::IllegalState(
                "enforce_rebalance needs a subscription".to_owned(),
            ));
        }
        self.send(ApplicationEvent::EnforceRebalance {
            reason: reason.to_owned(),
        })
    }

    /// This member's group, generation and member id as of now.
    pub fn group_metadata(&self) -> Result<ConsumerGroupMetadata> {
        self.ensure_open()?;
        if self.settings.group_id.is_none() {
            return Err(Error::InvalidArgument(
                "group_metadata needs a group.id".to_owned(),
            ));
        }
        Ok(self.group.borrow().metadata.clone())
    }

    // ----- consuming -----

    /// Returns the records available now, or waits up to `timeout` for some. Errors from the
    /// background side (e.g. no offset with `auto.offset.reset=none`) are returned here.
    ///
    /// Cancellation-safe: records are taken from the buffer only when the call returns them.
    pub async fn poll(&mut self, timeout: Duration) -> Result<ConsumerRecords> {
        let span = self.poll_span(timeout);
        self.poll_for(timeout, Delivery::Return)
            .instrument(span)
            .await
    }

    fn poll_span(&self, timeout: Duration) -> tracing::Span {
        tracing::debug_span!(parent: &self.span, "poll", timeout_ms = timeout.as_millis() as u64)
    }

    /// `poll`, handing the records to the caller or holding them for `recv`; timed for
    /// `time-between-poll-*` and `poll-idle-ratio-avg` as Java times its `poll`.
    async fn poll_for(&mut self, timeout: Duration, delivery: Delivery) -> Result<ConsumerRecords> {
        self.metrics.client().record_poll_start(Instant::now());
        let result = self.poll_timed(timeout, delivery).await;
        self.metrics.client().record_poll_end(Instant::now());
        result
    }

    async fn poll_timed(
        &mut self,
        timeout: Duration,
        delivery: Delivery,
    ) -> Result<ConsumerRecords> {
        self.ensure_open()?;
        if self.in_callback.load(Ordering::SeqCst) {
            return Err(Error::IllegalState(
                "poll cannot be called from a rebalance listener".to_owned(),
            ));
        }
        self.settle_assignment();
        if self.mode == Mode::Idle {
            return Err(Error::IllegalState(
                "not subscribed to any topics or assigned any partitions".to_owned(),
            ));
        }
        let deadline = Instant::now() + timeout;
        self.run_commit_callbacks();
        self.wakeup.check()?;
        // The snapshot of what earlier polls returned: all auto-commit may ever commit.
        self.send(ApplicationEvent::Poll {
            offsets_to_commit: self.consumed_positions(),
            ack: None,
        })?;
        if delivery == Delivery::Return {
            let held = self.buffer.take_held(self.settings.max_poll_records);
            if !held.is_empty() {
                return Ok(held);
            }
        }
        let buffer = Arc::clone(&self.buffer);
        let wakeup = self.wakeup.clone();
        // While waiting inside poll the application is not "away from poll": the poll event is
        // repeated well within max.poll.interval.ms so the member never leaves the group.
        let keepalive = Duration::from_millis(self.settings.max_poll_interval_ms / 2);
        let mut keepalive_at = Instant::now() + keepalive;
        loop {
            self.metrics.record_poll_wakeup();
            self.process_background_events().await?;
            if self.pending_ack.is_none() && std::mem::take(&mut self.poll_requested) {
                self.pending_ack = Some(self.send_acknowledged_poll()?);
            }
            if !self.acknowledged_poll_answered(deadline).await? {
                // The poll's own timeout ended first: nothing is collected before the answer.
                return Ok(ConsumerRecords::default());
            }
            let notified = buffer.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match delivery {
                Delivery::Return => {
                    let records = buffer.collect(self.settings.max_poll_records, Instant::now())?;
                    if !records.is_empty() {
                        tracing::trace!(count = records.count(), "poll returns records");
                        self.send_prefetches();
                        return Ok(records);
                    }
                }
                Delivery::Hold => {
                    if buffer.collect_and_hold(self.settings.max_poll_records, Instant::now())? > 0
                    {
                        self.send_prefetches();
                        return Ok(ConsumerRecords::default());
                    }
                }
            }
            if Instant::now() >= deadline {
                return Ok(ConsumerRecords::default());
            }
            enum Woke {
                Data,
                Event(Option<BackgroundEvent>),
                Deadline,
                Wakeup,
            }
            let woke = tokio::select! {
                () = &mut notified => Woke::Data,
                event = self.background_events.recv() => Woke::Event(event),
                () = tokio::time::sleep_until(deadline.min(keepalive_at)) => Woke::Deadline,
                () = wakeup.woken() => Woke::Wakeup,
            };
            match woke {
                Woke::Data => {}
                Woke::Event(Some(event)) => self.handle_background_event_timed(event).await?,
                Woke::Event(None) => return Err(self.failure.stopped_error()),
                Woke::Deadline if Instant::now() < deadline => {
                    keepalive_at = Instant::now() + keepalive;
                    self.send(ApplicationEvent::Poll {
                        offsets_to_commit: self.consumed_positions(),
                        ack: None,
                    })?;
                }
                Woke::Deadline => return Ok(ConsumerRecords::default()),
                Woke::Wakeup => return Err(Error::Wakeup),
            }
        }
    }

    /// Java's `sendPrefetches`: records are about to be handed out; if reading them emptied
    /// some partition's buffered data, the background side builds the next fetches now, so
    /// they overlap the application's processing instead of waiting for its next `poll`. Best
    /// effort, as in Java: the records go out whatever happens to this nudge (a background
    /// side that has stopped reports that on the next call).
    fn send_prefetches(&self) {
        if self.buffer.take_drained() {
            let _ = self.send(ApplicationEvent::CreateFetchRequests);
        }
    }

    /// A rebalance waits for this poll: tell the background side the application has
    /// processed what it was given; nothing is collected until the rebalance has started (its
    /// partitions to revoke are then no longer handed out).
    fn send_acknowledged_poll(&self) -> Result<CompletionReceiver<()>> {
        let (completion, receiver) = Self::completion("poll", self.default_timeout());
        self.send(ApplicationEvent::Poll {
            offsets_to_commit: self.consumed_positions(),
            ack: Some(completion),
        })?;
        Ok(receiver)
    }

    /// Waits for the answer to the acknowledged poll in flight, if any, but not past the
    /// poll's own `deadline`: `false` if the deadline came first (the answer is looked for
    /// again by the next call). The background answers within one round of its loop;
    /// `default.api.timeout.ms` bounds the wait for a background task that has stopped.
    async fn acknowledged_poll_answered(&mut self, deadline: Instant) -> Result<bool> {
        let Some(receiver) = self.pending_ack.as_mut() else {
            return Ok(true);
        };
        // `timeout` polls the answer before its timer (tokio and madsim alike): one already
        // there is seen even by a zero-timeout poll.
        let left = deadline.saturating_duration_since(Instant::now());
        let answer = tokio::time::timeout(left, self.failure.wait(receiver)).await;
        let Ok(answer) = answer else {
            return Ok(false);
        };
        self.pending_ack = None;
        match answer {
            Err(Error::Timeout { .. }) => {
                tracing::warn!("the background task did not answer an acknowledged poll");
                Ok(true)
            }
            result => result.map(|()| true),
        }
    }

    /// The next record, waiting as long as it takes. Cancellation-safe: a record is consumed
    /// only when returned.
    pub async fn recv(&mut self) -> Result<ConsumerRecord> {
        loop {
            if let Some(record) = self.buffer.next_held() {
                return Ok(record);
            }
            // Taken and held under the buffer's lock, so a seek from a handle on another task
            // cannot slip between the two and leave records of the old position held.
            let timeout = Duration::from_secs(3_600);
            let span = self.poll_span(timeout);
            self.poll_for(timeout, Delivery::Hold)
                .instrument(span)
                .await?;
        }
    }

    /// The records as a [`Stream`](futures_core::Stream): each item is what
    /// [`recv`](Self::recv) returns; it ends once the consumer is closed, or after the error
    /// that says its background task has stopped ([`Error::Closed`], or [`Error::Internal`]
    /// for a panic): nothing can come after that. Dropping the stream between items loses
    /// nothing.
    pub fn stream(
        &mut self,
    ) -> impl futures_core::Stream<Item = Result<ConsumerRecord>> + Send + '_ {
        futures_util::stream::unfold((self, false), |(consumer, ended)| async move {
            if consumer.closed || ended {
                return None;
            }
            let item = consumer.recv().await;
            let ended = matches!(item, Err(Error::Closed)) || consumer.failure.has_failed();
            Some((item, (consumer, ended)))
        })
    }

    // ----- commits -----

    fn check_commit(&self, offsets: &Offsets) -> Result<()> {
        check_commit_offsets(self.settings.group_id.as_deref(), offsets)?;
        self.check_assigned(offsets.keys())
    }

    /// Commits `offsets` (or, with `None`, the positions of every record handed out so far),
    /// retrying retriable errors until `timeout`. Earlier async commits complete, and their
    /// callbacks run, first.
    pub async fn commit_sync(&mut self, offsets: Option<Offsets>, timeout: Duration) -> Result<()> {
        let span = tracing::debug_span!(parent: &self.span, "commit_sync", timeout_ms = timeout.as_millis() as u64);
        let started = Instant::now();
        let result = self
            .commit_sync_inner(offsets, timeout)
            .instrument(span)
            .await;
        let now = Instant::now();
        self.metrics
            .client()
            .record_commit_sync(now.saturating_duration_since(started), now);
        result
    }

    async fn commit_sync_inner(
        &mut self,
        offsets: Option<Offsets>,
        timeout: Duration,
    ) -> Result<()> {
        self.ensure_open()?;
        let deadline = Instant::now() + timeout;
        let offsets = offsets.unwrap_or_else(|| self.consumed_positions());
        self.check_commit(&offsets)?;
        self.await_async_commits(deadline, timeout).await?;
        if offsets.is_empty() {
            return Ok(());
        }
        let (completion, receiver) = Self::completion("commit_sync", timeout);
        self.send(ApplicationEvent::Commit {
            offsets,
            retry: true,
            assigned_only: false,
            completion,
        })?;
        self.wait(receiver).await
    }

    fn start_async_commit(
        &mut self,
        offsets: Option<Offsets>,
        callback: Option<CommitCallback>,
    ) -> Result<CompletionReceiver<()>> {
        self.ensure_open()?;
        self.run_commit_callbacks();
        let offsets = offsets.unwrap_or_else(|| self.consumed_positions());
        self.check_commit(&offsets)?;
        let (completion, receiver) = Completion::new("commit_async", None, 0);
        self.send(ApplicationEvent::Commit {
            offsets: offsets.clone(),
            retry: false,
            assigned_only: false,
            completion,
        })?;
        self.async_commits.push_back(AsyncCommit {
            offsets,
            receiver: receiver.clone(),
            callback,
        });
        Ok(receiver)
    }

    /// Commits without retrying; the returned future resolves with the outcome (it need not be
    /// awaited: the commit goes out either way).
    pub fn commit_async(
        &mut self,
        offsets: Option<Offsets>,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let started = self.start_async_commit(offsets, None);
        let failure = self.failure.clone();
        async move {
            let mut receiver = started?;
            failure.wait(&mut receiver).await
        }
    }

    /// Commits without retrying; `callback` runs on this consumer's calling task, in commit
    /// order, during a later `poll`, `commit_*` or `close`.
    pub fn commit_async_with_callback(
        &mut self,
        offsets: Option<Offsets>,
        callback: impl FnOnce(&Offsets, Result<()>) + Send + 'static,
    ) -> Result<()> {
        self.start_async_commit(offsets, Some(Box::new(callback)))
            .map(|_| ())
    }

    /// The committed offsets of `partitions` (`None` where nothing is committed).
    pub async fn committed(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndMetadata>>> {
        self.ensure_open()?;
        if self.settings.group_id.is_none() {
            return Err(Error::IllegalState(
                "committed offsets need a group.id".to_owned(),
            ));
        }
        self.run_commit_callbacks();
        let started = Instant::now();
        let (completion, receiver) = Self::completion("committed", timeout);
        self.send(ApplicationEvent::FetchCommittedOffsets {
            partitions: partitions.into_iter().collect(),
            completion,
        })?;
        let result = self.wait(receiver).await;
        let now = Instant::now();
        self.metrics
            .client()
            .record_committed(now.saturating_duration_since(started), now);
        result
    }

    // ----- positions -----

    async fn seek_to(&mut self, partitions: Vec<TopicPartition>, target: SeekTarget) -> Result<()> {
        self.ensure_open()?;
        self.check_assigned(&partitions)?;
        // The background side drops the records `recv` holds for them as it seeks.
        let (completion, receiver) = Self::completion("seek", self.default_timeout());
        self.send(ApplicationEvent::Seek {
            partitions,
            target,
            completion,
        })?;
        self.failure.wait(&mut receiver.clone()).await
    }

    /// Makes `offset` the next offset to consume from `partition`.
    pub async fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<()> {
        self.seek_with_metadata(partition, OffsetAndMetadata::new(offset))
            .await
    }

    /// Like [`seek`](Self::seek), with the leader epoch of the record before `offset` so the
    /// position is validated against log truncation (KIP-320).
    pub async fn seek_with_metadata(
        &mut self,
        partition: &TopicPartition,
        offset: OffsetAndMetadata,
    ) -> Result<()> {
        check_seek_offset(&offset)?;
        self.seek_to(vec![partition.clone()], SeekTarget::Offset(offset))
            .await
    }

    /// Resets the partitions to their log start offsets (lazily, before the next fetch).
    pub async fn seek_to_beginning(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.seek_to(partitions.into_iter().collect(), SeekTarget::Beginning)
            .await
    }

    /// Resets the partitions to their log end offsets (lazily, before the next fetch).
    pub async fn seek_to_end(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.seek_to(partitions.into_iter().collect(), SeekTarget::End)
            .await
    }

    /// The offset of the next record `poll` would return for `partition`, waiting up to
    /// `timeout` for the position to be established (committed offset or reset).
    pub async fn position(&mut self, partition: &TopicPartition, timeout: Duration) -> Result<i64> {
        self.ensure_open()?;
        self.check_assigned([partition])?;
        if let Some(offset) = self.buffer.first_held_offset(partition) {
            return Ok(offset);
        }
        let (completion, receiver) = Self::completion("position", timeout);
        self.send(ApplicationEvent::Position {
            partition: partition.clone(),
            completion,
        })?;
        self.wait(receiver).await.map(|p| p.offset)
    }

    /// Stops fetching from the partitions. Records already fetched for them are not handed out
    /// until they are resumed: the buffer's are fetched again from the position, those
    /// `recv` already holds are kept and returned after the resume.
    pub async fn pause(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.set_paused(partitions.into_iter().collect(), true)
            .await
    }

    /// Resumes fetching from the partitions.
    pub async fn resume(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<()> {
        self.set_paused(partitions.into_iter().collect(), false)
            .await
    }

    async fn set_paused(&mut self, partitions: Vec<TopicPartition>, paused: bool) -> Result<()> {
        self.ensure_open()?;
        self.check_assigned(&partitions)?;
        // Records `recv` holds for these partitions stay held (their position is past them):
        // `recv` and `poll` skip them while paused. The background side marks them paused in
        // the fetch buffer before it answers.
        let (completion, receiver) = Self::completion("pause", self.default_timeout());
        self.send(ApplicationEvent::SetPaused {
            partitions,
            paused,
            completion,
        })?;
        self.failure.wait(&mut receiver.clone()).await
    }

    /// The paused partitions (paused by this consumer or by one of its handles).
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.buffer.paused()
    }

    // ----- offsets and metadata lookups -----

    async fn list_offsets(
        &mut self,
        timestamps: BTreeMap<TopicPartition, i64>,
        timeout: Duration,
        operation: &'static str,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>> {
        self.ensure_open()?;
        let (completion, receiver) = Self::completion(operation, timeout);
        self.send(ApplicationEvent::ListOffsets {
            timestamps,
            completion,
        })?;
        self.wait(receiver).await
    }

    /// The log start offset of each partition.
    pub async fn beginning_offsets(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        let query = partitions
            .into_iter()
            .map(|tp| (tp, EARLIEST_TIMESTAMP))
            .collect();
        let found = self
            .list_offsets(query, timeout, "beginning_offsets")
            .await?;
        Ok(found
            .into_iter()
            .filter_map(|(tp, o)| Some((tp, o?.offset)))
            .collect())
    }

    /// The log end offset (high watermark; last stable offset in read_committed) of each
    /// partition.
    pub async fn end_offsets(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, i64>> {
        let query = partitions
            .into_iter()
            .map(|tp| (tp, LATEST_TIMESTAMP))
            .collect();
        let found = self.list_offsets(query, timeout, "end_offsets").await?;
        Ok(found
            .into_iter()
            .filter_map(|(tp, o)| Some((tp, o?.offset)))
            .collect())
    }

    /// The earliest offset whose timestamp is at least the given one, per partition (`None`
    /// when no record is that recent).
    pub async fn offsets_for_times(
        &mut self,
        timestamps_ms: BTreeMap<TopicPartition, i64>,
        timeout: Duration,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>> {
        if let Some((tp, ts)) = timestamps_ms.iter().find(|(_, ts)| **ts < 0) {
            return Err(Error::InvalidArgument(format!(
                "negative timestamp {ts} for {tp}"
            )));
        }
        self.list_offsets(timestamps_ms, timeout, "offsets_for_times")
            .await
    }

    /// The partitions of `topic` (empty if it does not exist).
    pub async fn partitions_for(
        &mut self,
        topic: &str,
        timeout: Duration,
    ) -> Result<Vec<PartitionInfo>> {
        self.ensure_open()?;
        let (completion, receiver) = Self::completion("partitions_for", timeout);
        self.send(ApplicationEvent::TopicMetadata {
            topics: Some(vec![topic.to_owned()]),
            completion,
        })?;
        let mut topics = self.wait(receiver).await?;
        Ok(topics.remove(topic).unwrap_or_default())
    }

    /// Every non-internal topic and its partitions.
    pub async fn list_topics(
        &mut self,
        timeout: Duration,
    ) -> Result<BTreeMap<String, Vec<PartitionInfo>>> {
        self.ensure_open()?;
        let (completion, receiver) = Self::completion("list_topics", timeout);
        self.send(ApplicationEvent::TopicMetadata {
            topics: None,
            completion,
        })?;
        self.wait(receiver).await
    }

    /// A snapshot of per-partition lag and counters.
    pub fn metrics(&self) -> ConsumerMetrics {
        ConsumerMetrics::snapshot(&self.buffer, &self.metrics)
    }

    /// The client instance id a broker assigned this consumer for KIP-714 client metrics
    /// (Java's `KafkaConsumer.clientInstanceId(Duration)`): the id under which the broker's
    /// metrics plugin files what this consumer pushes. Waits up to `timeout` for the first
    /// telemetry subscription to be fetched.
    ///
    /// Fails with [`Error::IllegalState`] when `enable.metrics.push` is `false` (Java's
    /// `IllegalStateException`), and with [`Error::Timeout`] when no subscription came within
    /// `timeout` (Java returns `null`): for instance on a cluster without a client-metrics
    /// plugin, whose brokers do not offer the telemetry APIs.
    pub async fn client_instance_id(&mut self, timeout: Duration) -> Result<crate::Uuid> {
        self.ensure_open()?;
        if !self.settings.enable_metrics_push {
            return Err(Error::IllegalState(
                "telemetry is not enabled; set `enable.metrics.push` to `true`".to_owned(),
            ));
        }
        let (completion, receiver) = Self::completion("client_instance_id", timeout);
        self.send(ApplicationEvent::ClientInstanceId { completion })?;
        self.wait(receiver).await
    }

    // ----- close -----

    /// Closes within `timeout`: a final auto-commit (errors are logged, not returned), the
    /// partitions revoked through the listener and the group left (a static member keeps its
    /// place until its session times out), earlier async commits and their callbacks, then the
    /// background task drains pending commits (failing them if the coordinator is unknown),
    /// closes fetch sessions and stops. [`close_with`](Self::close_with) chooses whether to
    /// leave the group.
    ///
    /// The consumer is closed however this returns. Like Java's `close`, it goes through every
    /// step and then returns the first failure among them: a rebalance listener that failed
    /// ([`Error::RebalanceCallback`]), a leave the coordinator refused, earlier async commits
    /// still unanswered at the deadline ([`Error::Timeout`]), or a failed background task
    /// ([`Error::Internal`], reported ahead of the others). A leave that merely runs out of time
    /// is logged and not returned, as in Java.
    pub async fn close(&mut self, timeout: Duration) -> Result<()> {
        self.close_with(CloseOptions::new().timeout(timeout)).await
    }

    /// [`close`](Self::close) with Java's `CloseOptions`: the timeout, and whether the member
    /// leaves its group ([`GroupMembershipOperation`]).
    pub async fn close_with(&mut self, options: CloseOptions) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let span = tracing::info_span!(parent: &self.span, "close", timeout_ms = options.timeout.as_millis() as u64);
        self.close_inner(options).instrument(span).await
    }

    async fn close_inner(&mut self, options: CloseOptions) -> Result<()> {
        let deadline = Instant::now() + options.timeout;
        // Java's `firstException`: every step runs; the first failure is returned at the end.
        let mut first_error: Option<Error> = None;
        if self.settings.auto_commit() && !self.assignment.is_empty() {
            let offsets = self.consumed_positions();
            let remaining = deadline.saturating_duration_since(Instant::now());
            if let Err(error) = self.commit_sync(Some(offsets), remaining).await {
                // Java: "consistent with async auto-commit failures, we do not propagate".
                tracing::warn!(%error, "auto-commit on close failed");
            }
        }
        if self.mode.is_subscribed() {
            // Revoke through the listener and leave the group (or remain in it, as the options
            // say), within what is left of the timeout.
            let remaining = deadline.saturating_duration_since(Instant::now());
            let (completion, receiver) = Self::completion::<()>("leave group on close", remaining);
            if self
                .send(ApplicationEvent::Unsubscribe {
                    completion,
                    operation: options.group_membership_operation,
                })
                .is_ok()
            {
                match self.wait_running_callbacks(receiver).await {
                    Ok(()) => {}
                    Err(error @ Error::Timeout { .. }) => {
                        tracing::warn!(%error, "leave on close timed out; closing anyway");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "leaving the group on close failed");
                        first_error.get_or_insert(error);
                    }
                }
            }
            self.settle_assignment();
            if let Err(error) = self.release_assignment_on_close().await {
                first_error.get_or_insert(error);
            }
            self.mode = Mode::Idle;
        }
        // From here on, commits waiting for an unknown coordinator fail rather than hang close.
        let _ = self.send(ApplicationEvent::CommitOnClose);
        if let Err(error) = self.await_async_commits(deadline, options.timeout).await {
            tracing::warn!(%error, "pending async commits did not complete before close");
            first_error.get_or_insert(error);
        }
        self.closed = true;
        self.closed_flag.store(true, Ordering::SeqCst);
        let remaining = deadline.saturating_duration_since(Instant::now());
        let (completion, mut receiver) = Self::completion::<()>("close", remaining);
        if self.send(ApplicationEvent::Close { completion }).is_ok() {
            let _ = tokio::time::timeout(remaining, self.failure.wait(&mut receiver)).await;
        }
        self.run_commit_callbacks();
        tracing::debug!("consumer closed");
        // A background task that panicked is reported here too, not hidden behind a clean
        // close (the consumer is closed either way).
        if self.failure.has_failed() {
            return Err(self.failure.stopped_error());
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Consumer {
    /// Java's `runRebalanceCallbacksOnClose`: partitions the application still holds when the
    /// leave could not finish within the timeout (a reconciliation stuck behind an outage)
    /// are given up through the listener anyway — revoked while the member has a generation,
    /// lost when it has none or (classic) its coordinator has not answered for a whole
    /// session, so no partition is closed over without the application being told. Java
    /// revokes in that last case too, though the coordinator has most likely handed the
    /// partitions to another member by then. The listener's failure is returned for `close`
    /// to report.
    async fn release_assignment_on_close(&mut self) -> Result<()> {
        if self.assignment.is_empty() || self.in_callback.load(Ordering::SeqCst) {
            return Ok(());
        }
        let partitions = self.assignment.clone();
        let in_session = {
            let group = self.group.borrow();
            group.metadata.generation_id > 0 && !group.session_lapsed
        };
        let callback = if in_session {
            RebalanceCallback::Revoked
        } else {
            RebalanceCallback::Lost
        };
        tracing::info!(
            ?partitions,
            ?callback,
            "closing with partitions still assigned: the listener gives them up"
        );
        let result = self.invoke_listener(None, callback, &partitions).await;
        if let Err(error) = &result {
            tracing::warn!(%error, "rebalance listener failed on close");
        }
        self.set_assignment_view(BTreeSet::new());
        result
    }
}

impl Drop for Consumer {
    /// Never blocks: dropping the event sender tells the background task, which leaves the
    /// group on its own (best effort, bounded) and stops. See the type's documentation.
    fn drop(&mut self) {
        if !self.closed {
            tracing::warn!(
                client_id = %self.settings.client_id,
                group_id = self.settings.group_id.as_deref().unwrap_or_default(),
                "consumer dropped without close(): nothing is committed and no rebalance \
                 listener runs; the background task leaves the group (best effort) and stops. \
                 Call close() to commit and revoke in order."
            );
        }
    }
}
