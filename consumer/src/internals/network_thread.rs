//! The background task (Java's `ConsumerNetworkThread`): the only owner of the network client,
//! the request managers and `SubscriptionState`.
//!
//! Each iteration (`run_once`): process application events; poll every manager in a fixed
//! order (coordinator, commit, offsets, metadata, fetch), send what they return; reap overdue
//! events; then wait for the first of an application event, a response, or the earliest
//! deadline any manager or the reaper asked for. Nothing else wakes it, so an idle consumer
//! (e.g. assign mode with a group and nothing to do) sleeps instead of spinning (KAFKA-20426).
//!
//! Responses: every request's `'static` response future is awaited by a small spawned task that
//! forwards the result, tagged with the owning manager and its token, into one channel the loop
//! selects on. Dropping such a future never touches a socket (the connection tasks own I/O), so
//! nothing here can cancel a request mid-frame.
//!
//! Where the task runs is [`BackgroundRuntime`]'s concern: by default, in real mode, an OS
//! thread of its own with a current-thread runtime, so the application's runtime (or none)
//! never matters; under madsim a spawned task on the consumer's node.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::Instrument;

use super::auth_failures::AuthFailures;
use super::background_failure::{supervise, BackgroundFailure};
use super::commit_request_manager::CommitRequestManager;
use super::completion::{CompletableEventReaper, Completion, CompletionReceiver};
use super::context::{Effects, ManagerContext};
use super::coordinator_request_manager::CoordinatorRequestManager;
use super::event_queue::{EventReceiver, EventSender};
use super::events::{ApplicationEvent, BackgroundEvent, SeekTarget, SubscriptionRequest};
use super::fetch_buffer::FetchBuffer;
use super::fetch_request_manager::FetchRequestManager;
use super::membership::{MemberIdentity, Membership};
use super::metrics::{EventQueue, SharedMetrics};
use super::metrics_snapshot::measure_all;
use super::node_versions::NodeVersions;
use super::offsets_request_manager::{no_offset_error, OffsetsRequestManager};
use super::requests::{
    earliest, ManagerId, PollResult, RequestBody, ResponseBody, ResponseEnvelope, UnsentRequest,
};
use super::seek::seek_partition;
use super::settings::ConsumerSettings;
use super::subscription_state::{FetchState, SubscriptionState, SubscriptionType};
use super::telemetry::{Sample, TelemetryManager};
use super::topic_metadata_request_manager::TopicMetadataRequestManager;
use crate::background_runtime::{BackgroundRuntime, RuntimeLease};
use crate::config::{AutoOffsetReset, GroupProtocol};
use crate::error::{panic_message, Error, Result};
use crate::network::{
    NetworkClient, NetworkObserver, NodeEvent, ObserverHandle, RequestOptions, Target,
};
use crate::rt::{wall_clock_ms, Duration, Instant, SeededRng};
use crate::types::{ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition};

mod leave_on_drop;

/// The longest the loop sleeps with nothing scheduled (Java's `MAX_POLL_TIMEOUT_MS`).
const MAX_POLL_TIMEOUT: Duration = Duration::from_millis(5_000);

/// What the application side hands the background task at start.
pub(crate) struct Channels {
    /// Application events in.
    pub app_events: EventReceiver<ApplicationEvent>,
    /// Background events out.
    pub background_events: EventSender<BackgroundEvent>,
    /// The shared fetch buffer.
    pub buffer: Arc<FetchBuffer>,
    /// Counters for `metrics()`.
    pub metrics: Arc<SharedMetrics>,
    /// The member's place in its group, as the application side reads it.
    pub group: tokio::sync::watch::Sender<GroupSnapshot>,
    /// Where a panic of the task is recorded for the application side.
    pub failure: BackgroundFailure,
}

/// What the application side knows of the member's place in its group.
#[derive(Debug, Clone)]
pub struct GroupSnapshot {
    /// What `group_metadata()` returns.
    pub metadata: ConsumerGroupMetadata,
    /// Classic: the coordinator has not answered for a whole session, so it has most likely
    /// moved the member's partitions on; `close` then gives them up as lost, not revoked.
    pub session_lapsed: bool,
}

struct Closing {
    completion: Option<Completion<()>>,
    deadline: Instant,
    session_close_tokens: BTreeSet<u64>,
    /// The consumer was dropped without `close`: the task also waits (until the deadline)
    /// for the leave it started on its own. Held here because a completion nobody waits for
    /// counts as done, which would abandon the leave.
    leave_on_drop: Option<CompletionReceiver<()>>,
}

/// What woke the background loop up.
enum Woke {
    Application(Option<ApplicationEvent>),
    Response(ResponseEnvelope),
    Node(NodeEvent),
    Timer,
}

/// The background task's state.
pub(crate) struct ConsumerNetworkThread {
    settings: ConsumerSettings,
    client: NetworkClient,
    subscriptions: SubscriptionState,
    coordinator: CoordinatorRequestManager,
    membership: Option<Membership>,
    commit: CommitRequestManager,
    offsets: OffsetsRequestManager,
    metadata: TopicMetadataRequestManager,
    fetch: FetchRequestManager,
    telemetry: TelemetryManager,
    reaper: CompletableEventReaper,
    position_waiters: Vec<(TopicPartition, Completion<OffsetAndMetadata>)>,
    /// `client_instance_id` calls waiting for the first telemetry subscription.
    instance_id_waiters: Vec<Completion<uuid::Uuid>>,
    /// Acknowledged polls to answer after this round of the managers.
    poll_acks: Vec<Completion<()>>,
    channels: Channels,
    responses_tx: mpsc::UnboundedSender<ResponseEnvelope>,
    responses_rx: mpsc::UnboundedReceiver<ResponseEnvelope>,
    rng: SeededRng,
    registered_coordinator: Option<i32>,
    closing: Option<Closing>,
    metadata_version: u64,
    /// Listener calls handed to the application side and not answered yet.
    outstanding_callbacks: BTreeSet<u64>,
    /// The application side is gone (the consumer was dropped): nothing reads background
    /// events any more and listener calls are answered here.
    application_gone: bool,
    auth_failures: AuthFailures,
    /// Nodes a manager waits for a connection to before it builds its request (the request's
    /// version comes from the node's own ApiVersions).
    awaiting_connection: BTreeSet<i32>,
    /// Sets the `metrics` facade's gauges.
    #[cfg(feature = "metrics")]
    publisher: crate::internals::metrics::Publisher,
}

/// Starts the background task on `runtime`; real mode, dedicated runtime: returns its lease.
pub(crate) fn start(
    settings: ConsumerSettings,
    channels: Channels,
    runtime: &BackgroundRuntime,
) -> Result<Option<RuntimeLease>> {
    let mut network_config = settings.network_config();
    let observer: Arc<dyn NetworkObserver> = channels.metrics.clone();
    network_config.observer = Some(ObserverHandle(observer));
    let client = NetworkClient::new(network_config)?;
    let membership = Membership::new(&settings, Instant::now())?;
    // Every line the background task logs names its consumer, as Java's `[Consumer
    // clientId=…, groupId=…]` prefix does: one process often runs several.
    let span = tracing::info_span!(
        "consumer",
        client_id = %settings.client_id,
        group_id = settings.group_id.as_deref().unwrap_or_default()
    );
    let failure = channels.failure.clone();
    let thread = ConsumerNetworkThread::new(settings, client, channels, membership);
    runtime.spawn(supervise(thread.run(), failure).instrument(span))
}

impl ConsumerNetworkThread {
    fn new(
        settings: ConsumerSettings,
        client: NetworkClient,
        channels: Channels,
        membership: Option<Membership>,
    ) -> Self {
        let (responses_tx, responses_rx) = mpsc::unbounded_channel();
        let auth_failures = AuthFailures::new(settings.reconnect_backoff_max_ms);
        Self {
            auth_failures,
            coordinator: CoordinatorRequestManager::new(
                settings.group_id.clone(),
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            membership,
            commit: CommitRequestManager::new(&settings),
            offsets: OffsetsRequestManager::new(
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            metadata: TopicMetadataRequestManager::new(
                settings.metadata_max_age_ms,
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
                settings.allow_auto_create_topics,
            ),
            fetch: FetchRequestManager::new(
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            telemetry: TelemetryManager::new(settings.enable_metrics_push),
            settings,
            client,
            subscriptions: SubscriptionState::default(),
            reaper: CompletableEventReaper::default(),
            position_waiters: Vec::new(),
            instance_id_waiters: Vec::new(),
            poll_acks: Vec::new(),
            channels,
            responses_tx,
            responses_rx,
            rng: SeededRng::from_runtime(),
            registered_coordinator: None,
            closing: None,
            metadata_version: 0,
            outstanding_callbacks: BTreeSet::new(),
            application_gone: false,
            awaiting_connection: BTreeSet::new(),
            #[cfg(feature = "metrics")]
            publisher: crate::internals::metrics::Publisher::default(),
        }
    }

    async fn run(mut self) {
        tracing::debug!(client_id = %self.settings.client_id, "background task started");
        // Every step that runs our code is guarded: a panic (a bug) is recorded for the
        // application side and stops the loop, with the task's state still whole.
        while let Some(Some(wake_at)) = self.guarded(Self::step) {
            let woke = tokio::select! {
                // A closed channel answers at once, every time: read it until it closes only.
                event = self.channels.app_events.recv(), if !self.application_gone => {
                    Woke::Application(event)
                }
                Some(envelope) = self.responses_rx.recv() => Woke::Response(envelope),
                event = self.client.next_node_event() => Woke::Node(event),
                () = tokio::time::sleep_until(wake_at) => Woke::Timer,
            };
            if self.guarded(|task| task.on_woke(woke)).is_none() {
                break;
            }
        }
        #[cfg(feature = "metrics")]
        self.publish_metrics(Instant::now(), true);
        self.telemetry.close();
        let stopped = self.channels.failure.stopped_error();
        let failed = self.reaper.reap_all(&stopped);
        for (_, waiter) in self.position_waiters.drain(..) {
            waiter.complete(Err(stopped.clone()));
        }
        for waiter in self.instance_id_waiters.drain(..) {
            waiter.complete(Err(stopped.clone()));
        }
        tracing::debug!(failed, "background task stopped");
        if let Some(completion) = self.closing.and_then(|c| c.completion) {
            completion.complete(Ok(()));
        }
    }

    /// One round of the loop: queued events and responses, then the managers. Returns when to
    /// wake up at the latest, or `None` once the task is done.
    fn step(&mut self) -> Option<Instant> {
        self.channels.metrics.record_iteration();
        let now = Instant::now();
        self.channels
            .metrics
            .client()
            .record_network_thread_poll(now);
        let mut processed = false;
        while let Ok(event) = self.channels.app_events.try_recv() {
            self.process(event, now);
            processed = true;
        }
        if processed {
            let done = Instant::now();
            self.channels.metrics.client().record_queue_processing(
                EventQueue::Application,
                done.saturating_duration_since(now),
                done,
            );
        }
        while let Ok(envelope) = self.responses_rx.try_recv() {
            self.dispatch(envelope);
        }
        let now = Instant::now();
        let next = self.poll_managers(now);
        #[cfg(feature = "metrics")]
        self.publish_metrics(now, false);
        for ack in self.poll_acks.drain(..) {
            ack.complete(Ok(()));
        }
        self.reaper.reap(now);
        if self.finished(now) {
            return None;
        }
        let wake_at = earliest(next, self.reaper.next_deadline())
            .map_or(now + MAX_POLL_TIMEOUT, |at| at.min(now + MAX_POLL_TIMEOUT));
        let closing_deadline = self.closing.as_ref().map(|c| c.deadline);
        Some(earliest(Some(wake_at), closing_deadline).unwrap_or(wake_at))
    }

    /// Sets the metrics facade's gauges, once a second at most (`force`: now, the last time).
    #[cfg(feature = "metrics")]
    fn publish_metrics(&mut self, now: Instant, force: bool) {
        if force || self.publisher.due(now) {
            let metrics = crate::internals::metrics_snapshot::measure_all(
                &self.channels.buffer,
                &self.channels.metrics,
                now,
            );
            self.publisher.publish(&metrics, now);
        }
    }

    /// Handles what woke the loop up.
    fn on_woke(&mut self, woke: Woke) {
        match woke {
            Woke::Application(Some(event)) => self.process(event, Instant::now()),
            // The consumer was dropped: leave the group (best effort), then stop.
            Woke::Application(None) => self.on_application_dropped(Instant::now()),
            Woke::Response(envelope) => self.dispatch(envelope),
            Woke::Node(event) => self.on_node_event(event, Instant::now()),
            Woke::Timer => {}
        }
    }

    /// Runs `f`; a panic in it is recorded as the task's failure (`None`: stop).
    fn guarded<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> Option<R> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(self))) {
            Ok(result) => Some(result),
            Err(payload) => {
                self.channels
                    .failure
                    .record(&panic_message(payload.as_ref()));
                None
            }
        }
    }

    fn begin_close(&mut self, completion: Option<Completion<()>>, now: Instant) {
        let deadline = completion
            .as_ref()
            .and_then(Completion::deadline)
            .unwrap_or(now);
        self.begin_close_by(completion, deadline, None);
    }

    /// Starts closing: pending commits fail once the coordinator is unknown, fetch sessions
    /// are closed; the loop ends when that is done or at `deadline`.
    fn begin_close_by(
        &mut self,
        completion: Option<Completion<()>>,
        deadline: Instant,
        leave_on_drop: Option<CompletionReceiver<()>>,
    ) {
        if self.closing.is_some() {
            if let Some(c) = completion {
                c.complete(Ok(()));
            }
            return;
        }
        let now = Instant::now();
        tracing::debug!("closing");
        self.commit.signal_close();
        // KIP-714: one last push, which close waits for until its deadline.
        self.telemetry.initiate_close();
        let mut tokens = BTreeSet::new();
        let result = {
            let mut effects = Effects::default();
            let metadata = self.client.metadata();
            let versions = NodeVersions::from_connected(self.client.connected_nodes());
            let mut ctx = ManagerContext {
                now,
                settings: &self.settings,
                subscriptions: &mut self.subscriptions,
                buffer: &self.channels.buffer,
                metadata,
                versions: &versions,
                coordinator: None,
                member: None,
                metadata_version: self.metadata_version,
                rng: &mut self.rng,
                effects: &mut effects,
            };
            self.fetch.poll_on_close(&mut ctx)
        };
        for request in result.requests {
            tokens.insert(request.token);
            self.send(ManagerId::Fetch, request);
        }
        self.closing = Some(Closing {
            completion,
            deadline,
            session_close_tokens: tokens,
            leave_on_drop,
        });
    }

    /// Whether close is done: pending commits drained and fetch sessions closed, or out of time.
    fn finished(&self, now: Instant) -> bool {
        let Some(closing) = &self.closing else {
            return false;
        };
        let leaving = closing.leave_on_drop.is_some()
            && self.membership.as_ref().is_some_and(Membership::is_leaving);
        now >= closing.deadline
            || (!self.commit.has_pending_commits()
                && closing.session_close_tokens.is_empty()
                && !leaving
                && !self.telemetry.terminating_push_pending())
    }

    fn process(&mut self, event: ApplicationEvent, now: Instant) {
        tracing::trace!(?event, "application event");
        match event {
            ApplicationEvent::Poll {
                offsets_to_commit,
                ack,
            } => {
                self.commit.on_poll(now, offsets_to_commit);
                let acknowledged = ack.is_some();
                let mut effects = Effects::default();
                self.with_ctx(now, &mut effects, |ctx, m| {
                    m.offsets.on_poll(ctx);
                    m.fetch.on_poll();
                    if let Some(membership) = m.membership.as_deref_mut() {
                        membership.on_poll(ctx, acknowledged);
                    }
                });
                self.apply(effects, now);
                // Answered after the managers' next round, where a waiting rebalance starts.
                self.poll_acks.extend(ack);
            }
            ApplicationEvent::Subscribe {
                subscription,
                completion,
            } => {
                let result = self.subscribe(subscription);
                completion.complete(result);
            }
            ApplicationEvent::Unsubscribe {
                completion,
                operation,
            } => {
                self.reaper.add(&completion);
                if self.membership.is_some() && self.subscriptions.has_auto_assigned_partitions() {
                    let mut effects = Effects::default();
                    self.with_ctx(now, &mut effects, |ctx, m| {
                        if let Some(membership) = m.membership.as_deref_mut() {
                            membership.leave(ctx, Some(completion), operation);
                        }
                    });
                    self.apply(effects, now);
                } else {
                    self.subscriptions.unsubscribe();
                    self.channels.buffer.set_assignment(&BTreeSet::new());
                    completion.complete(Ok(()));
                }
            }
            ApplicationEvent::RebalanceCallbackCompleted { id } => {
                self.outstanding_callbacks.remove(&id);
                let mut effects = Effects::default();
                self.with_ctx(now, &mut effects, |ctx, m| {
                    if let Some(membership) = m.membership.as_deref_mut() {
                        membership.on_callback_completed(ctx, id);
                    }
                });
                self.apply(effects, now);
            }
            ApplicationEvent::EnforceRebalance { reason } => {
                if let Some(membership) = self.membership.as_mut() {
                    membership.enforce_rebalance(reason);
                }
            }
            ApplicationEvent::Assign {
                partitions,
                offsets_to_commit,
                completion,
            } => {
                if self.subscriptions.has_auto_assigned_partitions() {
                    completion.complete(Err(Error::IllegalState(
                        "subscription to topics, partitions and pattern are mutually exclusive"
                            .to_owned(),
                    )));
                    return;
                }
                self.commit.auto_commit_now(offsets_to_commit);
                self.subscriptions.assign_from_user(&partitions);
                self.channels.buffer.set_assignment(&partitions);
                self.position_waiters
                    .retain(|(tp, _)| partitions.contains(tp));
                completion.complete(Ok(()));
            }
            ApplicationEvent::Commit {
                offsets,
                retry,
                assigned_only,
                completion,
            } => {
                if assigned_only {
                    if let Some(tp) = offsets
                        .keys()
                        .find(|tp| !self.subscriptions.is_assigned(tp))
                    {
                        completion.complete(Err(Error::IllegalState(format!(
                            "cannot commit partition {tp}: it is not assigned to this \
                             consumer (any more)"
                        ))));
                        return;
                    }
                }
                self.reaper.add(&completion);
                self.commit.commit(offsets, retry, completion);
            }
            ApplicationEvent::FetchCommittedOffsets {
                partitions,
                completion,
            } => {
                self.reaper.add(&completion);
                self.commit.fetch_committed(partitions, completion);
            }
            ApplicationEvent::Seek {
                partitions,
                target,
                completion,
            } => {
                let result = self.seek(&partitions, &target);
                completion.complete(result);
            }
            ApplicationEvent::SetPaused {
                partitions,
                paused,
                completion,
            } => {
                // All or nothing, as Java's `pause` checks every partition's assignment first.
                if let Some(tp) = partitions
                    .iter()
                    .find(|tp| !self.subscriptions.is_assigned(tp))
                {
                    let verb = if paused { "pause" } else { "resume" };
                    completion.complete(Err(Error::IllegalState(format!(
                        "cannot {verb} partition {tp}: it is not assigned"
                    ))));
                    return;
                }
                for tp in &partitions {
                    self.subscriptions.set_paused(tp, paused);
                    // A paused partition's buffered and in-flight data is not delivered; the
                    // records `recv` holds wait for the resume.
                    self.channels.buffer.set_paused(tp, paused);
                }
                completion.complete(Ok(()));
            }
            ApplicationEvent::ClientInstanceId { completion } => {
                match self.telemetry.client_instance_id() {
                    Some(id) => {
                        completion.complete(Ok(id));
                    }
                    None => {
                        // As Java's `clientInstanceId(timeout)`: wait for the subscription
                        // until the caller's deadline.
                        self.reaper.add(&completion);
                        self.instance_id_waiters.push(completion);
                    }
                }
            }
            ApplicationEvent::Position {
                partition,
                completion,
            } => {
                if !self.subscriptions.is_assigned(&partition) {
                    completion.complete(Err(Error::IllegalState(format!(
                        "cannot read the position of partition {partition}: it is not assigned"
                    ))));
                    return;
                }
                self.reaper.add(&completion);
                self.offsets.on_position_request(&partition);
                self.position_waiters.push((partition, completion));
            }
            ApplicationEvent::ListOffsets {
                timestamps,
                completion,
            } => {
                self.reaper.add(&completion);
                self.offsets.list_offsets(timestamps, completion);
            }
            ApplicationEvent::TopicMetadata { topics, completion } => {
                self.reaper.add(&completion);
                self.metadata.topic_metadata(topics, completion);
            }
            // The round this event wakes polls the fetch manager: nothing else to do.
            ApplicationEvent::CreateFetchRequests => {}
            ApplicationEvent::CommitOnClose => self.commit.signal_close(),
            ApplicationEvent::Close { completion } => self.begin_close(Some(completion), now),
            #[cfg(all(test, not(madsim)))]
            ApplicationEvent::PanicForTest(message) => panic!("{message}"),
        }
    }

    /// `subscribe` / `subscribe_pattern` / `subscribe_regex`: the modes exclude each other, as
    /// in Java; a member
    /// in the group rejoins with the new subscription.
    fn subscribe(&mut self, subscription: SubscriptionRequest) -> Result<()> {
        let Some(membership) = self.membership.as_mut() else {
            return Err(Error::InvalidArgument(
                "subscribing needs a group.id (group management)".to_owned(),
            ));
        };
        let exclusive = || {
            Err(Error::IllegalState(
                "subscription to topics, partitions and pattern are mutually exclusive".to_owned(),
            ))
        };
        // Java's `setSubscriptionType`: a new subscription may only replace one of its kind.
        let same_kind = matches!(
            (self.subscriptions.subscription_type(), &subscription),
            (SubscriptionType::None, _)
                | (SubscriptionType::AutoTopics, SubscriptionRequest::Topics(_))
                | (
                    SubscriptionType::AutoPattern(_),
                    SubscriptionRequest::Pattern(_)
                )
                | (
                    SubscriptionType::AutoPatternRe2j(_),
                    SubscriptionRequest::Regex(_)
                )
        );
        if !same_kind {
            return exclusive();
        }
        if matches!(subscription, SubscriptionRequest::Regex(_))
            && self.settings.group_protocol != GroupProtocol::Consumer
        {
            return Err(Error::InvalidArgument(
                "subscribing to a broker-side regex needs group.protocol=consumer; with the \
                 classic protocol use subscribe_pattern"
                    .to_owned(),
            ));
        }
        if membership.is_leaving() {
            return Err(Error::IllegalState(
                "the consumer is leaving the group; subscribe again once unsubscribe returns"
                    .to_owned(),
            ));
        }
        match subscription {
            SubscriptionRequest::Topics(topics) => {
                tracing::info!(?topics, "subscribed");
                self.subscriptions.subscribe(topics);
            }
            SubscriptionRequest::Pattern(pattern) => {
                self.subscriptions.subscribe_pattern(pattern);
                let exclude_internal = self.settings.exclude_internal_topics;
                let topics: Vec<&str> = self
                    .client
                    .metadata()
                    .topics()
                    .filter(|t| !(t.is_internal && exclude_internal))
                    .map(|t| t.name.as_str())
                    .collect();
                self.subscriptions.match_pattern(topics);
            }
            SubscriptionRequest::Regex(regex) => self.subscriptions.subscribe_regex(regex),
        }
        membership.on_subscription_changed();
        self.metadata.request_refresh();
        Ok(())
    }

    fn seek(&mut self, partitions: &[TopicPartition], target: &SeekTarget) -> Result<()> {
        for tp in partitions {
            if !self.subscriptions.is_assigned(tp) {
                return Err(Error::IllegalState(format!(
                    "cannot seek partition {tp}: it is not assigned"
                )));
            }
        }
        for tp in partitions {
            let leader_epoch = self
                .client
                .metadata()
                .partition(&tp.topic, tp.partition)
                .map(|p| p.leader_epoch);
            seek_partition(
                &mut self.subscriptions,
                &self.channels.buffer,
                tp,
                target,
                leader_epoch,
            );
        }
        Ok(())
    }

    /// Runs `f` with a manager context over this task's state.
    fn with_ctx<R>(
        &mut self,
        now: Instant,
        effects: &mut Effects,
        f: impl FnOnce(&mut ManagerContext<'_>, &mut Managers<'_>) -> R,
    ) -> R {
        let versions = NodeVersions::from_connected(self.client.connected_nodes());
        let member: Option<MemberIdentity> = self
            .membership
            .as_ref()
            .filter(|_| self.subscriptions.has_auto_assigned_partitions())
            .map(Membership::identity);
        let mut ctx = ManagerContext {
            now,
            settings: &self.settings,
            subscriptions: &mut self.subscriptions,
            buffer: &self.channels.buffer,
            metadata: self.client.metadata(),
            versions: &versions,
            coordinator: self.coordinator.coordinator().map(|c| c.connection_id),
            member: member.as_ref(),
            metadata_version: self.metadata_version,
            rng: &mut self.rng,
            effects,
        };
        let mut managers = Managers {
            coordinator: &mut self.coordinator,
            membership: self.membership.as_mut(),
            commit: &mut self.commit,
            offsets: &mut self.offsets,
            metadata: &mut self.metadata,
            fetch: &mut self.fetch,
            telemetry: &mut self.telemetry,
        };
        f(&mut ctx, &mut managers)
    }

    fn poll_managers(&mut self, now: Instant) -> Option<Instant> {
        if self.client.poll_metadata_recovery() {
            // KIP-1102: the brokers are forgotten; ask a bootstrap server for all of them.
            self.metadata.request_refresh();
        }
        let mut effects = Effects::default();
        let closing = self.closing.is_some();
        let shared_metrics = self.channels.metrics.clone();
        let results: Vec<(ManagerId, PollResult)> = self.with_ctx(now, &mut effects, |ctx, m| {
            let mut results = vec![(ManagerId::Coordinator, m.coordinator.poll(ctx))];
            // Membership polls before commits: a rebalance's auto-commit goes out in this
            // round.
            let membership = m
                .membership
                .as_deref_mut()
                .map(|membership| (ManagerId::Membership, membership.poll(ctx, m.commit)));
            // But commits go on the wire first. A commit the application made while the member
            // was stable must reach the coordinator before a JoinGroup sent in the same round:
            // the broker serves a connection's requests one at a time and parks the JoinGroup
            // until the group has rejoined, so a commit behind it waits out its request timeout
            // and takes the JoinGroup down with the connection. Java's `commitAsync` sends at
            // once; the JoinGroup follows on a later `poll`.
            results.push((ManagerId::Commit, m.commit.poll(ctx)));
            results.extend(membership);
            if !closing {
                results.push((ManagerId::Offsets, m.offsets.poll(ctx)));
                results.push((ManagerId::Metadata, m.metadata.poll(ctx)));
                results.push((ManagerId::Fetch, m.fetch.poll(ctx)));
            }
            // Telemetry polls while closing too: the terminating push goes out then.
            let buffer = ctx.buffer;
            let sample = || Sample {
                metrics: measure_all(buffer, &shared_metrics, now),
                now_unix_ms: wall_clock_ms(),
            };
            results.push((ManagerId::Telemetry, m.telemetry.poll(ctx, sample)));
            results
        });
        self.fail_commits_on_membership_fatal();
        self.apply(effects, now);
        self.register_coordinator();
        self.publish_group_snapshot();
        let mut next = None;
        for (manager, result) in results {
            next = earliest(next, result.next_poll_at);
            for request in result.requests {
                self.send(manager, request);
            }
        }
        self.complete_position_waiters(now);
        if let Some(id) = self.telemetry.client_instance_id() {
            for waiter in self.instance_id_waiters.drain(..) {
                waiter.complete(Ok(id));
            }
        } else {
            self.instance_id_waiters.retain(|waiter| !waiter.is_done());
        }
        if let Some(membership) = &self.membership {
            let stats = membership.rebalance_stats();
            self.channels
                .metrics
                .record_rebalances(stats.completed, stats.last_ms);
            self.channels.metrics.client().record_rebalances(
                stats.completed,
                stats.last_ms,
                stats.failed,
                now,
            );
        }
        self.channels
            .metrics
            .client()
            .set_preferred_read_replicas(self.fetch.preferred_read_replicas());
        self.channels.metrics.record(
            self.fetch.responses_received,
            self.commit
                .last_commit_latency
                .map(|d| d.as_micros().try_into().unwrap_or(u64::MAX)),
        );
        next
    }

    fn complete_position_waiters(&mut self, now: Instant) {
        let mut effects = Effects::default();
        let waiters = std::mem::take(&mut self.position_waiters);
        let remaining = self.with_ctx(now, &mut effects, |ctx, m| {
            waiters
                .into_iter()
                .filter(|(tp, completion)| {
                    if completion.is_done() {
                        return false;
                    }
                    match ctx.subscriptions.fetch_state(tp) {
                        None => {
                            completion.complete(Err(Error::IllegalState(format!(
                                "partition {tp} is not assigned"
                            ))));
                            false
                        }
                        Some(FetchState::Fetching) => {
                            let position = ctx.buffer.position(tp).map(|(p, _)| p);
                            match position {
                                Some(p) => {
                                    completion.complete(Ok(OffsetAndMetadata::with_leader_epoch(
                                        p.offset,
                                        p.offset_epoch,
                                    )));
                                    false
                                }
                                None => true,
                            }
                        }
                        // Its truncation under `auto.offset.reset=none`, found again: the
                        // application must seek (Java's `position` throws it).
                        Some(FetchState::AwaitingValidation) => {
                            match m.offsets.truncation_error(tp) {
                                Some(error) => {
                                    completion.complete(Err(error));
                                    false
                                }
                                None => true,
                            }
                        }
                        Some(FetchState::AwaitingReset(AutoOffsetReset::None)) => {
                            let error = no_offset_error(ctx).unwrap_or_else(|| {
                                Error::NoOffsetForPartition {
                                    partitions: vec![tp.clone()],
                                }
                            });
                            completion.complete(Err(error));
                            false
                        }
                        Some(_) => true,
                    }
                })
                .collect()
        });
        self.position_waiters = remaining;
    }

    fn register_coordinator(&mut self) {
        let Some(c) = self.coordinator.coordinator() else {
            return;
        };
        if self.registered_coordinator != Some(c.connection_id) {
            if let Some(old) = self.registered_coordinator.take() {
                self.client.unregister_node(old);
            }
            self.client.register_node(c.connection_id, &c.host, c.port);
            self.registered_coordinator = Some(c.connection_id);
        }
    }

    /// Publishes the group snapshot when it changed.
    fn publish_group_snapshot(&self) {
        let Some(membership) = &self.membership else {
            return;
        };
        let (generation_id, member_id) = membership.group_metadata();
        let session_lapsed = membership.session_lapsed();
        self.channels.group.send_if_modified(|current| {
            let metadata = &mut current.metadata;
            let changed = metadata.generation_id != generation_id
                || metadata.member_id != member_id
                || current.session_lapsed != session_lapsed;
            if changed {
                metadata.generation_id = generation_id;
                member_id.clone_into(&mut metadata.member_id);
                current.session_lapsed = session_lapsed;
            }
            changed
        });
    }

    fn apply(&mut self, mut effects: Effects, now: Instant) {
        let rejoin = effects.rejoin_requested.take();
        let reset = effects.generation_reset.take();
        if rejoin.is_some() || reset.is_some() {
            let mut nested = Effects::default();
            self.with_ctx(now, &mut nested, |ctx, m| {
                if let Some(membership) = m.membership.as_deref_mut() {
                    if let Some(reason) = rejoin {
                        membership.request_rejoin(reason);
                    }
                    if let Some(reset) = &reset {
                        membership.on_generation_reset(ctx, reset);
                    }
                }
            });
            effects.errors.append(&mut nested.errors);
            effects
                .background_events
                .append(&mut nested.background_events);
        }
        if !effects.leader_hints.is_empty() {
            let updated = self
                .client
                .update_partition_leadership(&effects.leader_hints, &effects.leader_endpoints);
            if !updated.is_empty() {
                // Java's `maybeValidatePositionForCurrentLeader` for each updated partition.
                let mut nested = Effects::default();
                self.with_ctx(now, &mut nested, |ctx, m| m.offsets.on_metadata_update(ctx));
                effects.errors.append(&mut nested.errors);
            }
        }
        for error in effects.errors {
            let _ = self
                .channels
                .background_events
                .send(BackgroundEvent::Error(error));
            self.channels.buffer.wake();
        }
        let mut unanswerable = Vec::new();
        for event in effects.background_events {
            let callback_id = match &event {
                BackgroundEvent::RebalanceCallbackNeeded { id, .. } => Some(*id),
                _ => None,
            };
            let delivered =
                !self.application_gone && self.channels.background_events.send(event).is_ok();
            match callback_id {
                Some(id) if delivered => {
                    self.outstanding_callbacks.insert(id);
                }
                Some(id) => unanswerable.push(id),
                None => {}
            }
            self.channels.buffer.wake();
        }
        if let Some(reason) = effects.coordinator_unknown {
            self.coordinator.mark_coordinator_unknown(now, &reason);
        }
        if std::mem::take(&mut effects.connect_least_loaded) {
            if let Some(node_id) = self.client.least_loaded_node() {
                effects.connect_nodes.insert(node_id);
            }
        }
        for node_id in std::mem::take(&mut effects.connect_nodes) {
            if self.client.connect(node_id) {
                self.awaiting_connection.insert(node_id);
            }
        }
        if effects.metadata_refresh {
            self.metadata.request_refresh();
        }
        if effects.poll_requested {
            let _ = self
                .channels
                .background_events
                .send(BackgroundEvent::PollRequested);
            self.channels.buffer.wake();
        }
        // No application side will run these listener calls: the rebalance or leave waiting
        // for them goes on as if they had returned.
        for id in unanswerable {
            self.process(ApplicationEvent::RebalanceCallbackCompleted { id }, now);
        }
    }

    fn dispatch(&mut self, envelope: ResponseEnvelope) {
        let now = Instant::now();
        let ResponseEnvelope {
            manager,
            token,
            result,
            sent_at,
            node,
        } = envelope;
        if let Some(closing) = self.closing.as_mut() {
            if manager == ManagerId::Fetch && closing.session_close_tokens.remove(&token) {
                return; // a fetch session's closing Fetch: no data, no metric (as in Java)
            }
        }
        if let Some(timed) = result.as_ref().ok().and_then(|(body, _)| body.timed()) {
            let latency_ms = u64::try_from(now.saturating_duration_since(sent_at).as_millis())
                .unwrap_or(u64::MAX);
            self.channels
                .metrics
                .client()
                .record_response(timed, node, latency_ms, now);
        }
        if let (ManagerId::Metadata, Ok((ResponseBody::Metadata(body), _))) = (manager, &result) {
            if let Some(scope) = self.metadata.scope_of(token) {
                self.client.update_metadata(body, scope);
                self.metadata_version += 1;
            }
        }
        let mut effects = Effects::default();
        if let Err(error) = &result {
            if let Some(error) = self.auth_failures.observe(error, now) {
                // Surfaces from the next poll, and fails pending commits at once.
                tracing::error!(%error, "authentication failed");
                self.commit.fail_all(&error);
                effects.errors.push(error);
            }
        }
        self.with_ctx(now, &mut effects, |ctx, m| match manager {
            ManagerId::Coordinator => m.coordinator.on_response(ctx, token, result),
            ManagerId::Commit => m.commit.on_response(ctx, token, result),
            ManagerId::Offsets => m.offsets.on_response(ctx, token, result),
            ManagerId::Metadata => {
                if m.metadata.on_response(ctx, token, result) {
                    m.offsets.on_metadata_update(ctx);
                }
            }
            ManagerId::Fetch => m.fetch.on_response(ctx, token, result),
            ManagerId::Telemetry => m.telemetry.on_response(ctx, token, result),
            ManagerId::Membership => {
                if let Some(membership) = m.membership.as_deref_mut() {
                    membership.on_response(ctx, token, result);
                }
            }
        });
        if let Some(error) = self.coordinator.take_fatal_error() {
            self.commit.fail_all(&error);
        }
        self.fail_commits_on_membership_fatal();
        self.apply(effects, now);
    }

    /// A node connected or failed to. The managers are polled again after this (the loop
    /// goes round), so one waiting to build a request for a node that just connected sends it
    /// now. A failed attempt to a node a manager waits for is handled as a failed request to
    /// it would be (Java's `NetworkClient` fails such requests with a disconnect): the
    /// coordinator's connection marks the coordinator unknown, another's asks for metadata
    /// (its leadership may have moved). The manager asks again, and the node's reconnect
    /// backoff paces the attempts.
    fn on_node_event(&mut self, event: NodeEvent, now: Instant) {
        match event {
            NodeEvent::Connected(node_id) => {
                self.awaiting_connection.remove(&node_id);
            }
            NodeEvent::ConnectFailed(node_id) => {
                if !self.awaiting_connection.remove(&node_id) {
                    return;
                }
                if self.registered_coordinator == Some(node_id) {
                    self.coordinator.mark_coordinator_unknown(
                        now,
                        &format!("the connection to the coordinator (node {node_id}) failed"),
                    );
                } else {
                    self.metadata.request_refresh();
                }
            }
        }
    }

    /// A fatal membership error fails every pending commit at once instead of letting it
    /// hang until its deadline.
    fn fail_commits_on_membership_fatal(&mut self) {
        if let Some(error) = self
            .membership
            .as_mut()
            .and_then(Membership::take_new_fatal)
        {
            self.commit.fail_all(&error);
        }
    }

    fn send(&mut self, manager: ManagerId, request: UnsentRequest) {
        let UnsentRequest {
            target,
            version,
            body,
            token,
            timeout_ms,
        } = request;
        tracing::trace!(?manager, api = %body.api(), ?target, ?version, token, "sending request");
        self.channels.metrics.record_request(body.kind());
        let sent_at = Instant::now();
        if matches!(
            body,
            RequestBody::Heartbeat(_) | RequestBody::ConsumerGroupHeartbeat(_)
        ) {
            self.channels
                .metrics
                .client()
                .record_heartbeat_sent(sent_at);
        }
        if matches!(body, RequestBody::Metadata(_)) && target == Target::LeastLoaded {
            // KIP-899: every broker Metadata named is backing off: this request goes to a
            // bootstrap server instead.
            self.client.prepare_metadata_request();
        }
        let options = RequestOptions {
            version,
            timeout_ms,
        };
        let tx = self.responses_tx.clone();
        let node = match target {
            Target::Node(node_id) => Some(node_id),
            _ => None,
        };
        // One span per request, from sending to the answer (its duration is the latency a
        // trace viewer shows), under the consumer's span; a failure is recorded on it.
        let span = tracing::info_span!(
            "request",
            api = %body.api(),
            target = ?target,
            version,
            error = tracing::field::Empty,
        );
        macro_rules! forward {
            ($request:expr, $variant:ident) => {{
                let future = self.client.send_with(target, $request, options);
                tokio::spawn(
                    async move {
                        let result = future
                            .await
                            .map(|r| (ResponseBody::$variant(r.body), r.version));
                        if let Err(error) = &result {
                            tracing::Span::current()
                                .record("error", tracing::field::display(error));
                        }
                        let _ = tx.send(ResponseEnvelope {
                            manager,
                            token,
                            result,
                            sent_at,
                            node,
                        });
                    }
                    .instrument(span),
                );
            }};
        }
        match body {
            RequestBody::FindCoordinator(r) => forward!(r, FindCoordinator),
            RequestBody::OffsetCommit(r) => forward!(r, OffsetCommit),
            RequestBody::OffsetFetch(r) => forward!(r, OffsetFetch),
            RequestBody::ListOffsets(r) => forward!(r, ListOffsets),
            RequestBody::OffsetForLeaderEpoch(r) => forward!(r, OffsetForLeaderEpoch),
            RequestBody::Fetch(r) => forward!(r, Fetch),
            RequestBody::Metadata(r) => forward!(r, Metadata),
            RequestBody::JoinGroup(r) => forward!(r, JoinGroup),
            RequestBody::SyncGroup(r) => forward!(r, SyncGroup),
            RequestBody::Heartbeat(r) => forward!(r, Heartbeat),
            RequestBody::LeaveGroup(r) => forward!(r, LeaveGroup),
            RequestBody::ConsumerGroupHeartbeat(r) => forward!(r, ConsumerGroupHeartbeat),
            RequestBody::GetTelemetrySubscriptions(r) => forward!(r, GetTelemetrySubscriptions),
            RequestBody::PushTelemetry(r) => forward!(r, PushTelemetry),
        }
    }
}

/// The managers, borrowed together next to a context.
pub(crate) struct Managers<'a> {
    coordinator: &'a mut CoordinatorRequestManager,
    membership: Option<&'a mut Membership>,
    commit: &'a mut CommitRequestManager,
    offsets: &'a mut OffsetsRequestManager,
    metadata: &'a mut TopicMetadataRequestManager,
    fetch: &'a mut FetchRequestManager,
    telemetry: &'a mut TelemetryManager,
}
