//! `KafkaConsumer` of Kafka 3.1.0: the state behind the lock the application thread and the
//! heartbeat thread share, and the operations that run *holding* it — manual-assignment `poll`,
//! `commitAsync`, `close`, `ensureCoordinatorReady` (a `synchronized` method in Java) and single
//! network polls. The subscribe-mode loops that release the lock between steps
//! (`ensureActiveGroup`, `joinGroupIfNeeded`, `commitOffsetsSync`, the rebalance callbacks) are
//! in `super::app`.

use kafka_consumer::network::NetworkClient;
use kafka_consumer::rt::SeededRng;
use sim::history::Tp;
use tokio::time::{Duration, Instant};

use super::coordinator::{ConsumerCoordinator, Lookup, OffsetFetchState};
use super::fetcher::Fetcher;
use super::network::{Completion, ConsumerNetworkClient, Handler};
use super::version::LegacyVersion;
use crate::subject::{CommitCompletion, Delivered, SubjectContext, SubjectError};

/// The consumer's state: network client, coordinator, fetcher.
pub(super) struct KafkaConsumer {
    pub client: ConsumerNetworkClient,
    pub coordinator: ConsumerCoordinator,
    pub fetcher: Fetcher,
    pub retry_backoff: Duration,
    /// `enable.auto.commit`: the interval and `nextAutoCommitTimer`'s deadline.
    pub auto_commit: Option<(Duration, Instant)>,
    /// Ids of commits the consumer makes on its own (auto-commit), above the application's.
    pub next_internal_commit: u64,
    /// The release whose code paths the model follows where releases differ.
    pub version: LegacyVersion,
    /// Draws thread scheduling where a release's correctness depends on it (2.6.1's
    /// heartbeat-thread lookup, `super::heartbeat`); seeded from the runtime on first use, so
    /// runs that never draw keep the runtime's random sequence as it was.
    pub scheduler: Option<SeededRng>,
}

/// Where the consumer's own commit ids start, clear of the application's.
pub(super) const INTERNAL_COMMIT_IDS: u64 = 1 << 32;

impl KafkaConsumer {
    pub fn new(
        client: NetworkClient,
        ctx: SubjectContext,
        group_id: String,
        retry_backoff: Duration,
        fetch_max_wait_ms: i32,
        max_poll_records: usize,
        version: LegacyVersion,
    ) -> Self {
        Self {
            client: ConsumerNetworkClient::new(client, ctx),
            coordinator: ConsumerCoordinator::new(group_id, version),
            fetcher: Fetcher::new(fetch_max_wait_ms, max_poll_records),
            retry_backoff,
            auto_commit: None,
            next_internal_commit: INTERNAL_COMMIT_IDS,
            version,
            scheduler: None,
        }
    }

    pub fn ctx(&self) -> &SubjectContext {
        self.client.ctx()
    }

    pub fn assign(&mut self, partitions: Vec<Tp>) {
        self.fetcher.assign(partitions);
    }

    pub fn take_completed_commits(&mut self) -> Vec<CommitCompletion> {
        self.coordinator.take_invoked()
    }

    /// Runs the handlers of finished requests, as `ConsumerNetworkClient.poll` fires the
    /// listeners of completed futures on the polling thread.
    pub fn dispatch(&mut self, completions: Vec<Completion>) {
        for c in completions {
            match c.handler {
                Handler::Fetch { node } => self.fetcher.handle_fetch(node, c.result),
                Handler::Metadata => self.fetcher.handle_metadata(&mut self.client, c.result),
                handler => self.coordinator.handle(&mut self.client, handler, c.result),
            }
        }
    }

    /// `client.poll(timer, pollCondition)`: polls until `done` holds or `deadline` passes.
    pub async fn poll_until(&mut self, deadline: Instant, done: impl Fn(&Self) -> bool) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            let completions = self.client.poll(deadline).await;
            self.dispatch(completions);
        }
    }

    /// One `client.poll(timer)`: waits for a completion until `deadline`, runs the handlers.
    pub async fn poll_once(&mut self, deadline: Instant) {
        let completions = self.client.poll(deadline).await;
        self.dispatch(completions);
    }

    /// `client.pollNoWakeup()`.
    pub async fn poll_no_wakeup(&mut self) {
        let completions = self.client.poll_no_wakeup().await;
        self.dispatch(completions);
    }

    /// The client poll after pipelining the next fetches, with the records about to be
    /// returned already counted as consumed. Since 0.9.0.1 (`quickPoll()`, then
    /// `transmitSends()`) it runs no delayed task and the model has nothing to do; in 0.9.0.0 it
    /// was `client.poll(0)`, which ran the auto-commit task when due — committing positions
    /// past records the application has not seen yet (KAFKA-2942).
    pub async fn pipelining_poll(&mut self) {
        if self.version != LegacyVersion::V0_9_0_0 {
            return;
        }
        if self.auto_commit.is_some() {
            self.maybe_auto_commit_offsets_async();
        }
        self.poll_no_wakeup().await;
    }

    /// `client.awaitMetadataUpdate(timer)`.
    pub async fn await_metadata_update(&mut self, deadline: Instant) {
        let before = self.fetcher.metadata_updates;
        self.fetcher.request_metadata_update();
        self.fetcher.maybe_update_metadata(&mut self.client);
        self.poll_until(deadline, |s| s.fetcher.metadata_updates > before)
            .await;
    }

    /// `ensureCoordinatorReady(timer)` (AbstractCoordinator.java:235) — since 2.8.0 the only
    /// place the application thread clears `findCoordinatorFuture`; before, it never does, and
    /// the future it polls is the stored one whatever state it is in (2.6.1: a stored future
    /// that already failed fails every pass at once, and every pass only refreshes metadata).
    pub async fn ensure_coordinator_ready(&mut self, deadline: Instant) -> bool {
        if !self.coordinator.coordinator_unknown() {
            return true;
        }
        loop {
            let outcome = match self.coordinator.lookup_coordinator(&mut self.client) {
                Lookup::NoBrokersAvailable => Some(Err(())),
                Lookup::Future(id) => {
                    self.poll_until(deadline, |s| s.coordinator.lookup_outcome(id).is_some())
                        .await;
                    self.coordinator
                        .lookup_outcome(id)
                        .map(|o| o.map_err(|_| ()))
                }
            };
            let Some(outcome) = outcome else {
                // Ran out of time: the future stays set for the next call.
                break;
            };
            if outcome.is_err() {
                // Retriable: refresh metadata, which Kafka throttles to one per retry.backoff.ms.
                tokio::time::sleep_until(deadline.min(Instant::now() + self.retry_backoff)).await;
                self.await_metadata_update(deadline).await;
            }
            if !self.coordinator.clears_lookup_in_handler() {
                self.coordinator.clear_find_coordinator_future();
            }
            if !(self.coordinator.coordinator_unknown() && Instant::now() < deadline) {
                break;
            }
        }
        !self.coordinator.coordinator_unknown()
    }

    /// `fetchCommittedOffsets(partitions, timer)` (ConsumerCoordinator.java:860).
    pub async fn fetch_committed_offsets(
        &mut self,
        partitions: &[Tp],
        deadline: Instant,
    ) -> Result<Option<Vec<(Tp, i64)>>, SubjectError> {
        loop {
            if !self.ensure_coordinator_ready(deadline).await {
                return Ok(None);
            }
            if self.coordinator.offset_fetch == OffsetFetchState::Idle {
                self.coordinator
                    .send_offset_fetch(&mut self.client, partitions);
            }
            self.poll_until(deadline, |s| {
                matches!(s.coordinator.offset_fetch, OffsetFetchState::Done(_))
            })
            .await;
            match std::mem::replace(&mut self.coordinator.offset_fetch, OffsetFetchState::Idle) {
                OffsetFetchState::Done(Ok(offsets)) => return Ok(Some(offsets)),
                OffsetFetchState::Done(Err(e)) if !e.retriable => {
                    return Err(SubjectError(e.error));
                }
                OffsetFetchState::Done(Err(_)) => {
                    tokio::time::sleep_until(deadline.min(Instant::now() + self.retry_backoff))
                        .await;
                }
                in_flight => {
                    self.coordinator.offset_fetch = in_flight;
                    return Ok(None);
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// `updateAssignmentMetadataIfNeeded(timer)`: `coordinator.poll(timer)` in its manual
    /// assignment branch (ConsumerCoordinator.java:470 — callbacks, metadata while no node is
    /// ready, no coordinator work, then `maybeAutoCommitOffsetsAsync`), then
    /// `updateFetchPositions`, which fetches committed offsets only while some position is
    /// missing: after the first poll it never again reaches `ensureCoordinatorReady`.
    async fn update_assignment_metadata(&mut self, deadline: Instant) -> Result<(), SubjectError> {
        self.coordinator.invoke_completed_offset_commit_callbacks();
        self.apply_auto_commit_callbacks();
        // "For manually assigned partitions, if there are no ready nodes, await metadata."
        if self.fetcher.metadata_update_requested() && !self.client.has_ready_nodes() {
            self.await_metadata_update(deadline).await;
        }
        if self.auto_commit.is_some() {
            self.maybe_auto_commit_offsets_async();
            self.poll_no_wakeup().await;
        }
        let missing = self.fetcher.missing_positions();
        if missing.is_empty() {
            return Ok(());
        }
        if let Some(offsets) = self.fetch_committed_offsets(&missing, deadline).await? {
            for (tp, offset) in offsets {
                self.fetcher.set_position(tp, offset);
            }
        }
        Ok(())
    }

    /// `KafkaConsumer.poll(timeout)`.
    pub async fn poll(&mut self, timeout: Duration) -> Result<Vec<Delivered>, SubjectError> {
        let deadline = Instant::now() + timeout;
        loop {
            // An exception a client poll threw propagates out of poll().
            if let Some(e) = self.client.take_thrown() {
                return Err(SubjectError(e));
            }
            self.update_assignment_metadata(deadline).await?;
            let records = self.poll_for_fetches(deadline).await;
            if !records.is_empty() {
                // Pipelining: send the next fetches before handing the records out.
                self.fetcher.send_fetches(&mut self.client);
                self.pipelining_poll().await;
                return Ok(records);
            }
            if Instant::now() >= deadline {
                return Ok(Vec::new());
            }
        }
    }

    /// `coordinator.timeToNextPoll(now)` (ConsumerCoordinator.java:541): the next auto-commit
    /// or heartbeat; unbounded without either.
    pub fn time_to_next_poll(&self, now: Instant) -> Option<Duration> {
        let heartbeat = self.coordinator.group.as_ref().and_then(|g| {
            (!g.state.has_not_joined_group()).then(|| g.heartbeat.time_to_next_heartbeat(now))
        });
        let auto = self
            .auto_commit
            .map(|(_, next)| next.saturating_duration_since(now));
        match (heartbeat, auto) {
            (Some(h), Some(a)) => Some(h.min(a)),
            (h, a) => h.or(a),
        }
    }

    /// `pollForFetches(timer)`.
    pub async fn poll_for_fetches(&mut self, deadline: Instant) -> Vec<Delivered> {
        let now = Instant::now();
        let deadline = match self.time_to_next_poll(now) {
            Some(d) => deadline.min(now + d),
            None => deadline,
        };
        if self.fetcher.has_available_fetches() {
            return self.fetcher.collect_fetch();
        }
        self.fetcher.send_fetches(&mut self.client);
        let deadline = if self.fetcher.missing_positions().is_empty() {
            deadline
        } else {
            deadline.min(Instant::now() + self.retry_backoff)
        };
        self.poll_until(deadline, |s| s.fetcher.has_available_fetches())
            .await;
        self.fetcher.collect_fetch()
    }

    /// `KafkaConsumer.commitAsync(offsets, callback)` → `commitOffsetsAsync`, ending with
    /// `client.pollNoWakeup()`.
    pub async fn commit_async(&mut self, id: u64, offsets: Vec<(Tp, i64)>) {
        self.coordinator
            .commit_offsets_async(&mut self.client, id, offsets);
        self.poll_no_wakeup().await;
    }

    /// `ConsumerCoordinator.close(timer)` (ConsumerCoordinator.java:914): waits for commits
    /// chained on a lookup, rediscovering the coordinator for them.
    pub async fn close(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.coordinator.pending_async_commits > 0 && Instant::now() < deadline {
            self.ensure_coordinator_ready(deadline).await;
            let completions = self.client.poll(deadline).await;
            self.dispatch(completions);
            self.coordinator.invoke_completed_offset_commit_callbacks();
        }
    }
}
