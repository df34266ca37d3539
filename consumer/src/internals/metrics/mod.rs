//! What the consumer measures: Kafka's named metrics (windowed statistics under Java's names)
//! and this client's own counters, which the background task updates and `Consumer::metrics`
//! reads.

mod client;
mod consumed;
mod names;
mod network;
#[cfg(feature = "metrics")]
mod publish;
mod sensor;
mod stats;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::metric::Metric;
use crate::network::NetworkObserver;
use crate::rt::Instant;
use crate::types::TopicPartition;

pub(crate) use client::{ClientMetrics, FetchResponseSize, TimedResponse};
pub(crate) use consumed::{Consumed, ConsumedMetrics};
pub(crate) use network::NetworkEvent;
#[cfg(feature = "metrics")]
pub(crate) use publish::Publisher;
pub(crate) use stats::MetricConfig;

/// Background-side counters and metrics, shared with the application side.
#[derive(Debug, Default)]
pub(crate) struct SharedMetrics {
    /// Kafka's named metrics measured from requests, responses and `poll`. Both sides lock it
    /// briefly to record; nothing else is locked while it is held.
    client: Mutex<ClientMetrics>,
    fetch_responses: AtomicU64,
    last_commit_latency_us: AtomicU64,
    loop_iterations: AtomicU64,
    poll_wakeups: AtomicU64,
    rebalances: AtomicU64,
    last_rebalance_ms: AtomicU64,
    group_requests: AtomicU64,
    lookup_requests: AtomicU64,
    /// Events queued and not yet taken, per queue (`*-event-queue-size`).
    application_events_queued: AtomicU64,
    background_events_queued: AtomicU64,
}

/// Which of the two event queues (KIP-1068's names: application events go to the background
/// task, background events to the application side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventQueue {
    Application,
    Background,
}

/// What a request is for, as the request counters sort them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestKind {
    /// Group membership and coordinator discovery: FindCoordinator, JoinGroup, SyncGroup,
    /// Heartbeat, LeaveGroup, ConsumerGroupHeartbeat.
    Group,
    /// Cluster and offset lookups: Metadata, ListOffsets, OffsetForLeaderEpoch, OffsetFetch.
    Lookup,
    /// Anything else (Fetch, OffsetCommit): paced by the data and the application.
    Other,
}

impl SharedMetrics {
    pub fn new(config: MetricConfig, client_id: &str) -> Self {
        Self {
            client: Mutex::new(ClientMetrics::new(config, client_id.to_owned())),
            ..Self::default()
        }
    }

    fn queued(&self, queue: EventQueue) -> &AtomicU64 {
        match queue {
            EventQueue::Application => &self.application_events_queued,
            EventQueue::Background => &self.background_events_queued,
        }
    }

    /// An event went into `queue`.
    pub fn event_queued(&self, queue: EventQueue) {
        self.queued(queue).fetch_add(1, Ordering::Relaxed);
    }

    /// An event left `queue` unread (it could not be queued after all).
    pub fn event_taken(&self, queue: EventQueue) {
        // Never below zero: a decrement racing ahead of its increment is not possible (the
        // sender counts before it queues), but a wrapped count would be a huge gauge.
        let _ = self
            .queued(queue)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
    }

    /// An event queued at `queued_at` was taken from `queue` at `now`.
    pub fn event_dequeued(&self, queue: EventQueue, queued_at: Instant, now: Instant) {
        self.event_taken(queue);
        self.client()
            .record_queue_time(queue, now.saturating_duration_since(queued_at), now);
    }

    /// Every metric's value; `assigned` is the current assignment.
    pub fn measure_into(
        &self,
        now: Instant,
        assigned: &BTreeSet<TopicPartition>,
        out: &mut Vec<Metric>,
    ) {
        let mut client = self.client();
        client.measure_into(now, assigned, out);
        let tags = [("client-id", client.client_id().to_owned())];
        for (spec, queue) in [
            (
                &names::APPLICATION_EVENT_QUEUE_SIZE,
                EventQueue::Application,
            ),
            (&names::BACKGROUND_EVENT_QUEUE_SIZE, EventQueue::Background),
        ] {
            let queued = self.queued(queue).load(Ordering::Relaxed);
            out.push(sensor::metric(spec, &tags, queued as f64));
        }
    }

    /// The named metrics, to record into or measure.
    pub fn client(&self) -> MutexGuard<'_, ClientMetrics> {
        // Recording is a few arithmetic steps: a panic mid-way leaves numbers, not invariants.
        self.client.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the manager totals after a loop iteration.
    pub fn record(&self, fetch_responses: u64, commit_latency_us: Option<u64>) {
        self.fetch_responses
            .store(fetch_responses, Ordering::Relaxed);
        if let Some(latency) = commit_latency_us {
            self.last_commit_latency_us
                .store(latency, Ordering::Relaxed);
        }
    }

    /// Records the rebalances completed so far and how long the last one took.
    pub fn record_rebalances(&self, completed: u64, last_ms: u64) {
        self.rebalances.store(completed, Ordering::Relaxed);
        self.last_rebalance_ms.store(last_ms, Ordering::Relaxed);
    }

    /// Rebalances this member completed (an assignment received and its callback run).
    pub fn rebalances(&self) -> u64 {
        self.rebalances.load(Ordering::Relaxed)
    }

    /// How long the last rebalance took, from its start to the assigned callback's end.
    pub fn last_rebalance_ms(&self) -> u64 {
        self.last_rebalance_ms.load(Ordering::Relaxed)
    }

    /// Counts one background loop iteration.
    pub fn record_iteration(&self) {
        self.loop_iterations.fetch_add(1, Ordering::Relaxed);
    }

    /// Background loop iterations so far: an idle consumer must not spin (KAFKA-20426).
    pub fn loop_iterations(&self) -> u64 {
        self.loop_iterations.load(Ordering::Relaxed)
    }

    /// Counts one wakeup of the application side inside `poll` (a turn of its wait loop).
    pub fn record_poll_wakeup(&self) {
        self.poll_wakeups.fetch_add(1, Ordering::Relaxed);
    }

    /// Wakeups of the application side inside `poll` so far: a `poll` on an idle assignment
    /// must block, not spin (KAFKA-20426).
    pub fn poll_wakeups(&self) -> u64 {
        self.poll_wakeups.load(Ordering::Relaxed)
    }

    /// Counts one request sent.
    pub fn record_request(&self, kind: RequestKind) {
        let counter = match kind {
            RequestKind::Group => &self.group_requests,
            RequestKind::Lookup => &self.lookup_requests,
            RequestKind::Other => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Group membership and coordinator discovery requests sent so far.
    pub fn group_requests(&self) -> u64 {
        self.group_requests.load(Ordering::Relaxed)
    }

    /// Metadata and offset lookup requests sent so far.
    pub fn lookup_requests(&self) -> u64 {
        self.lookup_requests.load(Ordering::Relaxed)
    }

    /// Fetch responses received so far.
    pub fn fetch_responses(&self) -> u64 {
        self.fetch_responses.load(Ordering::Relaxed)
    }

    /// Latency of the last successful commit, in µs (0 before the first).
    pub fn last_commit_latency_us(&self) -> u64 {
        self.last_commit_latency_us.load(Ordering::Relaxed)
    }
}

/// The network layer's reports become `consumer-metrics` and `consumer-node-metrics`.
impl NetworkObserver for SharedMetrics {
    fn connection_created(&self, node_id: i32) {
        self.client()
            .record_network(node_id, NetworkEvent::ConnectionCreated, Instant::now());
    }

    fn connection_closed(&self, node_id: i32) {
        self.client()
            .record_network(node_id, NetworkEvent::ConnectionClosed, Instant::now());
    }

    fn request_sent(&self, node_id: i32, bytes: usize) {
        self.client()
            .record_network(node_id, NetworkEvent::RequestSent(bytes), Instant::now());
    }

    fn response_received(&self, node_id: i32, bytes: usize) {
        self.client().record_network(
            node_id,
            NetworkEvent::ResponseReceived(bytes),
            Instant::now(),
        );
    }
}
