//! The application thread of Kafka 3.1.0's classic consumer in subscribe mode: `poll` →
//! `ConsumerCoordinator.poll` → `ensureActiveGroup` → `joinGroupIfNeeded` (with
//! `onJoinPrepare`, `onJoinComplete` and the rebalance callbacks), auto-commit, `commitSync`
//! and `close`. Each step takes the lock the heartbeat thread shares and lets it go again where
//! Java does: around single network polls, and never while a rebalance callback or a
//! `timer.sleep` runs (KAFKA-4160's rule, in force since 0.10.1).

use std::sync::Arc;

use sim::history::{CallbackKind, CommitMode, Event, Tp};
use tokio::sync::{Mutex, Notify};
use tokio::time::{Duration, Instant};

use super::consumer::KafkaConsumer;
use super::coordinator::FutureError;
use super::group::{self, HeartbeatThreadFlags, MemberState};
use super::heartbeat;
use super::version::LegacyVersion;
use crate::subject::{
    CommitCompletion, Delivered, ListenerBehaviour, SubjectContext, SubjectError,
};

/// Virtual CPU time of one pass of `poll`'s loop that found nothing to wait for. A real
/// `client.poll(0)` returns at once but still takes time, during which the heartbeat thread
/// runs; without a cost the simulated application thread would spin without time advancing.
pub(super) const EMPTY_PASS_COST: Duration = Duration::from_micros(100);

/// The application thread's handle on the shared consumer.
pub(super) struct AppThread {
    pub shared: Arc<Mutex<KafkaConsumer>>,
    pub notify: Arc<Notify>,
    pub ctx: SubjectContext,
    pub listener: ListenerBehaviour,
}

/// Retriable commit errors, as `RetriableCommitFailedException` wraps them.
pub(super) fn retriable_commit_error(error: &str) -> bool {
    matches!(
        error,
        "COORDINATOR_LOAD_IN_PROGRESS"
            | "UNKNOWN_TOPIC_OR_PARTITION"
            | "COORDINATOR_NOT_AVAILABLE"
            | "NOT_COORDINATOR"
            | "REQUEST_TIMED_OUT"
            | "DISCONNECTED"
    )
}

impl AppThread {
    /// A rebalance callback: runs without any consumer lock for the listener's time (holding
    /// it on [`LegacyVersion::Kip62Trunk`]).
    async fn callback(&self, kind: CallbackKind, partitions: Vec<Tp>) {
        let ms = match kind {
            CallbackKind::Revoked | CallbackKind::Lost => self.listener.revoked_ms,
            CallbackKind::Assigned => self.listener.assigned_ms,
        };
        self.ctx.record(Event::CallbackStart {
            kind,
            partitions: partitions.clone(),
        });
        let version = self.shared.lock().await.version;
        // Before KAFKA-4160's fix the listener ran inside the synchronized ensureActiveGroup.
        let monitor = match version {
            LegacyVersion::Kip62Trunk => Some(self.shared.lock().await),
            _ => None,
        };
        tokio::time::sleep(Duration::from_millis(ms)).await;
        drop(monitor);
        self.ctx.record(Event::CallbackEnd {
            kind,
            partitions,
            error: None,
        });
    }

    async fn poll_until(&self, deadline: Instant, done: impl Fn(&KafkaConsumer) -> bool) -> bool {
        poll_until(&self.shared, deadline, done).await
    }

    async fn commit_offsets_sync(
        &self,
        id: u64,
        offsets: Vec<(Tp, i64)>,
        deadline: Instant,
    ) -> Result<bool, FutureError> {
        commit_offsets_sync(&self.shared, id, offsets, deadline).await
    }

    /// `maybeAutoCommitOffsetsSync(timer)` (ConsumerCoordinator.java:1080): errors are logged,
    /// not thrown.
    async fn maybe_auto_commit_offsets_sync(&self, deadline: Instant) {
        let (id, offsets) = {
            let mut s = self.shared.lock().await;
            if s.auto_commit.is_none() {
                return;
            }
            let id = s.next_internal_commit;
            s.next_internal_commit += 1;
            (id, s.fetcher.all_consumed())
        };
        if offsets.is_empty() {
            return;
        }
        self.ctx.record(Event::CommitRequested {
            id,
            mode: CommitMode::Auto,
            generation: self.stable_generation().await,
            offsets: offsets.clone(),
        });
        let error = match self.commit_offsets_sync(id, offsets, deadline).await {
            Ok(true) => None,
            Ok(false) => Some("TIMEOUT".to_owned()),
            Err(e) => Some(e.error),
        };
        // Reported with the async callbacks that ran inside it, in the order they ran.
        self.shared
            .lock()
            .await
            .coordinator
            .push_invoked(CommitCompletion { id, error });
    }

    async fn stable_generation(&self) -> Option<i32> {
        let s = self.shared.lock().await;
        s.coordinator
            .group
            .as_ref()
            .and_then(|g| g.generation_if_stable().map(|g| g.id))
    }

    /// `ConsumerCoordinator.onJoinPrepare`, eager protocol: the pre-rebalance auto-commit as
    /// the model's release has it, then `onPartitionsRevoked` — or `onPartitionsLost` if the
    /// generation was reset meanwhile. `false` (3.2 only): the commit is not done, call again
    /// on the next `poll` before joining.
    async fn on_join_prepare(&self, deadline: Instant, generation: i32, member_id: &str) -> bool {
        let version = self.shared.lock().await.version;
        let completed = match version {
            LegacyVersion::Kip62Trunk
            | LegacyVersion::V0_9_0_0
            | LegacyVersion::V1_0_0
            | LegacyVersion::V2_3_0
            | LegacyVersion::V2_5_0
            | LegacyVersion::V2_6_1
            | LegacyVersion::V3_1_0 => {
                self.commit_before_revocation_3_1_0().await;
                true
            }
            LegacyVersion::V3_2_0 => self.commit_before_revocation_3_2_0().await,
            LegacyVersion::V3_2_1 | LegacyVersion::V3_4_0 | LegacyVersion::V3_4_1 => {
                if !self.commit_before_revocation_3_2_1(deadline).await {
                    return false;
                }
                true
            }
        };
        self.revoke_before_join(generation, member_id).await;
        completed
    }

    /// 3.1.0 (ConsumerCoordinator.java:699): synchronous auto-commit bounded by the
    /// *rebalance* timeout, not the caller's.
    async fn commit_before_revocation_3_1_0(&self) {
        let rebalance_timeout = {
            let s = self.shared.lock().await;
            Duration::from_millis(
                s.coordinator
                    .group
                    .as_ref()
                    .map_or(0, |g| g.rebalance_timeout_ms.max(0) as u64),
            )
        };
        self.maybe_auto_commit_offsets_sync(Instant::now() + rebalance_timeout)
            .await;
    }

    /// 3.2.0 (ConsumerCoordinator.java:739): a new asynchronous auto-commit on every call,
    /// looked at once, right after sending. Done only if there was nothing to commit or it
    /// failed at once with a non-retriable error; the caller revokes either way.
    async fn commit_before_revocation_3_2_0(&self) -> bool {
        let mut s = self.shared.lock().await;
        if s.auto_commit.is_none() {
            return true;
        }
        let Some(id) = s.auto_commit_offsets_async(true) else {
            return true;
        };
        s.poll_no_wakeup().await;
        let outcome = s.coordinator.watched_outcome(id);
        s.coordinator.unwatch_commit(id);
        match outcome {
            Some(Ok(())) => true,
            Some(Err(e)) => !e.retriable,
            None => false,
        }
    }

    /// 3.2.1 (ConsumerCoordinator.java:748): one commit in flight (`autoCommitOffsetRequestFuture`),
    /// awaited until the caller's deadline or `joinPrepareTimer` (the rebalance timeout),
    /// whichever is first; a retriable failure is resent on a later call with the offsets
    /// consumed by then. `false` while it is not done: no revocation yet — and nothing stops the
    /// fetcher from returning these partitions' records meanwhile (KAFKA-14196). 3.4.0 takes
    /// the same path but an eager member first marks its partitions pending revocation
    /// (`maybeMarkPartitionsPendingRevocation`, ConsumerCoordinator.java:871 at 3.4.0).
    async fn commit_before_revocation_3_2_1(&self, deadline: Instant) -> bool {
        let (id, join_deadline) = {
            let mut s = self.shared.lock().await;
            if s.auto_commit.is_none() {
                return true;
            }
            let now = Instant::now();
            let group = s.coordinator.group.as_mut().expect("subscribe mode");
            let timeout = Duration::from_millis(group.rebalance_timeout_ms.max(0) as u64);
            let join_deadline = *group.join_prepare_deadline.get_or_insert(now + timeout);
            let in_flight = group.join_prepare_commit;
            let mark_pending = group.version.is_3_4() && !group.cooperative;
            let id = match in_flight {
                Some(id) => id,
                None => {
                    if mark_pending {
                        s.fetcher.mark_pending_revocation();
                    }
                    match s.auto_commit_offsets_async(true) {
                        Some(id) => {
                            s.coordinator
                                .group
                                .as_mut()
                                .expect("subscribe mode")
                                .join_prepare_commit = Some(id);
                            id
                        }
                        // `RequestFuture.voidSuccess()`: done at once.
                        None => return true,
                    }
                }
            };
            (id, join_deadline)
        };
        let poll_deadline = deadline.min(join_deadline);
        self.poll_until(poll_deadline, |s| {
            s.coordinator.watched_outcome(id).is_some()
        })
        .await;
        let mut s = self.shared.lock().await;
        let now = Instant::now();
        let outcome = s.coordinator.watched_outcome(id);
        let completed = match &outcome {
            _ if now >= join_deadline => {
                self.ctx.record(Event::Note {
                    text: "asynchronous auto-commit of offsets failed: joinPrepare timeout; \
                           will continue to join group"
                        .to_owned(),
                });
                true
            }
            None => false,
            Some(Err(e)) => !e.retriable,
            Some(Ok(())) => true,
        };
        if outcome.is_some() {
            s.coordinator.unwatch_commit(id);
            s.coordinator
                .group
                .as_mut()
                .expect("subscribe mode")
                .join_prepare_commit = None;
        }
        if completed {
            return true;
        }
        let backoff = s.retry_backoff;
        drop(s);
        tokio::time::sleep_until(poll_deadline.min(now + backoff).max(now)).await;
        false
    }

    /// The revocation half of `onJoinPrepare`: every owned partition is lost if the generation
    /// was reset, else revoked (eager) or, cooperative, only those of topics no longer
    /// subscribed; 3.2.1's join-prepare timer and future are cleared.
    async fn revoke_before_join(&self, generation: i32, member_id: &str) {
        let (owned, give_up, lost) = {
            let mut s = self.shared.lock().await;
            let pending = s.coordinator.group.as_mut().and_then(|g| {
                g.join_prepare_deadline = None;
                g.join_prepare_commit.take()
            });
            if let Some(id) = pending {
                s.coordinator.unwatch_commit(id);
            }
            let owned = s.fetcher.assigned().to_vec();
            let group = s.coordinator.group.as_ref().expect("subscribe mode");
            // 3.1.0 tests both halves of NO_GENERATION, 3.4 either (ConsumerCoordinator.java:819).
            let lost = if group.version.is_3_4() {
                generation == -1 || member_id.is_empty()
            } else {
                generation == -1 && member_id.is_empty()
            };
            let give_up: Vec<Tp> = if lost || !group.cooperative {
                owned.clone()
            } else {
                owned
                    .iter()
                    .filter(|tp| !group.subscription.contains(&tp.topic))
                    .cloned()
                    .collect()
            };
            (owned, give_up, lost)
        };
        if give_up.is_empty() {
            return;
        }
        let kind = if lost {
            CallbackKind::Lost
        } else {
            CallbackKind::Revoked
        };
        self.callback(kind, give_up.clone()).await;
        let mut s = self.shared.lock().await;
        s.fetcher.assign(without(&owned, &give_up));
        let (revoked, lost) = if lost {
            (Vec::new(), give_up)
        } else {
            (give_up, Vec::new())
        };
        self.ctx.record(Event::Assignment {
            generation,
            assigned: Vec::new(),
            revoked,
            lost,
        });
        if let Some(g) = s.coordinator.group.as_mut() {
            g.is_leader = false;
        }
    }

    /// `ConsumerCoordinator.onJoinComplete` (ConsumerCoordinator.java:406):
    /// `assignFromSubscribed`, then `onPartitionsAssigned`. Cooperative (3.4.0), the partitions
    /// owned but no longer assigned are revoked first — with the old assignment still in place,
    /// so the listener can commit them — and the member rejoins to let them move; only the
    /// newly added partitions reach `onPartitionsAssigned`.
    async fn on_join_complete(&self, generation: i32, assignment: Vec<Tp>) {
        let (cooperative, owned) = {
            let s = self.shared.lock().await;
            let group = s.coordinator.group.as_ref().expect("subscribe mode");
            (group.cooperative, s.fetcher.assigned().to_vec())
        };
        let (added, revoked) = if cooperative {
            (without(&assignment, &owned), without(&owned, &assignment))
        } else {
            (assignment.clone(), Vec::new())
        };
        if !revoked.is_empty() {
            self.callback(CallbackKind::Revoked, revoked.clone()).await;
            let mut s = self.shared.lock().await;
            let KafkaConsumer {
                client,
                coordinator,
                ..
            } = &mut *s;
            if let Some(group) = coordinator.group.as_mut() {
                group.request_rejoin(client, "need to revoke partitions and re-join");
            }
        }
        {
            let mut s = self.shared.lock().await;
            s.fetcher.assign(assignment);
            self.ctx.record(Event::Assignment {
                generation,
                assigned: added.clone(),
                revoked,
                lost: Vec::new(),
            });
            // "Update the auto-commit deadline" after a rebalance.
            if let Some((interval, next)) = s.auto_commit.as_mut() {
                *next = Instant::now() + *interval;
            }
        }
        self.callback(CallbackKind::Assigned, added).await;
    }

    /// `joinGroupIfNeeded(timer)` (AbstractCoordinator.java:408).
    async fn join_group_if_needed(&self, deadline: Instant) -> Result<bool, SubjectError> {
        loop {
            let prepare = {
                let mut s = self.shared.lock().await;
                let Some(group) = s.coordinator.group.as_ref() else {
                    return Ok(true);
                };
                if !group.rejoin_needed_or_pending() {
                    return Ok(true);
                }
                if !s.ensure_coordinator_ready(deadline).await {
                    return Ok(false);
                }
                let group = s.coordinator.group.as_mut().expect("subscribe mode");
                if group.needs_join_prepare {
                    // Set before calling, so a throwing callback does not run it twice.
                    group.needs_join_prepare = false;
                    Some((group.generation.id, group.generation.member_id.clone()))
                } else {
                    None
                }
            };
            if let Some((generation, member_id)) = prepare {
                if !self.on_join_prepare(deadline, generation, &member_id).await {
                    // "should not initiateJoinGroup if needsJoinPrepare still is true"
                    let mut s = self.shared.lock().await;
                    s.coordinator
                        .group
                        .as_mut()
                        .expect("subscribe mode")
                        .needs_join_prepare = true;
                    return Ok(false);
                }
            }
            {
                let mut s = self.shared.lock().await;
                let KafkaConsumer {
                    client,
                    coordinator,
                    fetcher,
                    ..
                } = &mut *s;
                let owned = fetcher.assigned().to_vec();
                coordinator.initiate_join_group(client, &owned);
            }
            let join_done = |s: &KafkaConsumer| {
                s.coordinator
                    .group
                    .as_ref()
                    .and_then(|g| g.join_future.as_ref())
                    .is_none_or(|f| f.outcome.is_some())
            };
            if !self.poll_until(deadline, join_done).await {
                return Ok(false);
            }
            let mut s = self.shared.lock().await;
            let version = s.version;
            let group = s.coordinator.group.as_mut().expect("subscribe mode");
            let outcome = group
                .join_future
                .as_ref()
                .and_then(|f| f.outcome.clone())
                .unwrap_or(Err(FutureError {
                    error: "UNJOINED_GROUP".to_owned(),
                    retriable: true,
                }));
            match outcome {
                Ok(bytes) if version == LegacyVersion::V2_3_0 => {
                    // 2.3.0 (AbstractCoordinator.java:421 at 2.3.0): `onJoinComplete(
                    // generation.generationId, generation.memberId, generation.protocol, ..)`
                    // with whatever the field holds now.
                    let generation = group.generation.clone();
                    drop(s);
                    if generation.protocol.is_none() {
                        // ConsumerCoordinator.onJoinComplete: `lookupAssignor(null)` finds no
                        // assignor. The join future stays set: the next poll gets it back.
                        // A poll that throws still takes CPU time.
                        tokio::time::sleep(EMPTY_PASS_COST).await;
                        return Err(SubjectError(
                            "IllegalStateException: Coordinator selected invalid assignment \
                             protocol: null"
                                .to_owned(),
                        ));
                    }
                    let assignment = group::decode_assignment(&bytes).map_err(SubjectError)?;
                    self.on_join_complete(generation.id, assignment).await;
                    let mut s = self.shared.lock().await;
                    let group = s.coordinator.group.as_mut().expect("subscribe mode");
                    group.join_future = None;
                    group.needs_join_prepare = true;
                }
                Ok(bytes) => {
                    // "Generation data maybe concurrently cleared by Heartbeat thread."
                    let generation = group.generation.clone();
                    let stable = group.state == MemberState::Stable;
                    if !generation.is_none() && stable {
                        drop(s);
                        let assignment = group::decode_assignment(&bytes).map_err(SubjectError)?;
                        self.on_join_complete(generation.id, assignment).await;
                        let mut s = self.shared.lock().await;
                        let group = s.coordinator.group.as_mut().expect("subscribe mode");
                        group.join_future = None;
                        group.needs_join_prepare = true;
                    } else {
                        let reason = format!(
                            "rebalance failed since the generation/state was modified by \
                             heartbeat thread to {}/{:?} before the rebalance callback",
                            generation.id, group.state
                        );
                        let KafkaConsumer {
                            client,
                            coordinator,
                            ..
                        } = &mut *s;
                        let group = coordinator.group.as_mut().expect("subscribe mode");
                        group.reset_state_and_rejoin(client, &reason);
                        group.join_future = None;
                    }
                }
                Err(e) => {
                    group.join_future = None;
                    group.rejoin_needed = true;
                    let backoff = s.retry_backoff;
                    drop(s);
                    if matches!(
                        e.error.as_str(),
                        "UNKNOWN_MEMBER_ID"
                            | "ILLEGAL_GENERATION"
                            | "REBALANCE_IN_PROGRESS"
                            | "MEMBER_ID_REQUIRED"
                    ) {
                        continue;
                    }
                    if !e.retriable {
                        return Err(SubjectError(e.error));
                    }
                    let now = Instant::now();
                    tokio::time::sleep_until(deadline.min(now + backoff).max(now)).await;
                }
            }
        }
    }

    /// `ensureActiveGroup(timer)` (AbstractCoordinator.java:370): coordinator, heartbeat
    /// thread, join.
    async fn ensure_active_group(&self, deadline: Instant) -> Result<bool, SubjectError> {
        {
            let mut s = self.shared.lock().await;
            if !s.ensure_coordinator_ready(deadline).await {
                return Ok(false);
            }
            let group = s.coordinator.group.as_mut().expect("subscribe mode");
            if group.heartbeat_thread.is_none() {
                group.heartbeat_thread = Some(HeartbeatThreadFlags::default());
                tokio::spawn(heartbeat::run(self.shared.clone(), self.notify.clone()));
            }
        }
        self.join_group_if_needed(deadline).await
    }

    /// `ConsumerCoordinator.poll(timer, waitForJoinGroup = false)` (ConsumerCoordinator.java:470).
    async fn coordinator_poll(&self, deadline: Instant) -> Result<bool, SubjectError> {
        let rejoin = {
            let mut s = self.shared.lock().await;
            s.coordinator.invoke_completed_offset_commit_callbacks();
            s.apply_auto_commit_callbacks();
            let now = Instant::now();
            // pollHeartbeat(now) (AbstractCoordinator.java:317).
            let group = s.coordinator.group.as_mut().expect("subscribe mode");
            if let Some(flags) = &group.heartbeat_thread {
                if let Some(cause) = flags.failed.clone() {
                    group.heartbeat_thread = None;
                    return Err(SubjectError(cause));
                }
                if group.heartbeat.should_heartbeat(now) {
                    self.notify.notify_one();
                }
                group.heartbeat.poll(now);
            }
            if s.coordinator.coordinator_unknown() && !s.ensure_coordinator_ready(deadline).await {
                return Ok(false);
            }
            let group = s.coordinator.group.as_ref().expect("subscribe mode");
            group.rejoin_needed_or_pending()
        };
        if rejoin {
            // Metadata for the subscription before the first join (the leader assigns from it).
            {
                let mut s = self.shared.lock().await;
                let missing = s
                    .fetcher
                    .subscribed_topics
                    .clone()
                    .iter()
                    .any(|t| s.client.inner().metadata().topic(t).is_none());
                if missing {
                    s.await_metadata_update(deadline).await;
                }
            }
            // "if not wait for join group, we would just use a timer of 0"
            if !self.ensure_active_group(Instant::now()).await? {
                return Ok(false);
            }
        }
        let mut s = self.shared.lock().await;
        s.maybe_auto_commit_offsets_async();
        Ok(true)
    }

    /// `KafkaConsumer.poll(timeout)` in subscribe mode.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<Delivered>, SubjectError> {
        let deadline = Instant::now() + timeout;
        loop {
            let pass_started = Instant::now();
            // An exception one of this thread's client polls threw propagates out of poll().
            if let Some(e) = self.shared.lock().await.client.take_thrown() {
                return Err(SubjectError(e));
            }
            // `updateAssignmentMetadataIfNeeded(timer)`: 2.5.0 gave it `time.timer(0L)` — not
            // only the join but coordinator discovery and committed offsets never wait.
            let metadata_deadline = match self.shared.lock().await.version {
                LegacyVersion::V2_5_0 => Instant::now(),
                _ => deadline,
            };
            if self.coordinator_poll(metadata_deadline).await? {
                // updateFetchPositions: committed offsets for partitions without a position.
                let mut s = self.shared.lock().await;
                let missing = s.fetcher.missing_positions();
                if !missing.is_empty() {
                    if let Some(offsets) = s
                        .fetch_committed_offsets(&missing, metadata_deadline)
                        .await?
                    {
                        for (tp, offset) in offsets {
                            s.fetcher.set_position(tp, offset);
                        }
                    }
                }
            }
            let records = {
                let mut guard = self.shared.lock().await;
                let mut records = guard.poll_for_fetches(deadline).await;
                if records.is_empty() {
                    // A `client.poll` whose timeout is already zero still runs the handlers
                    // of whatever has arrived (a select with timeout 0).
                    guard.poll_no_wakeup().await;
                    records = guard.fetcher.collect_fetch();
                }
                if !records.is_empty() {
                    let s = &mut *guard;
                    s.fetcher.send_fetches(&mut s.client);
                    s.pipelining_poll().await;
                }
                records
            };
            if !records.is_empty() {
                return Ok(records);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            if now == pass_started {
                tokio::time::sleep(EMPTY_PASS_COST).await;
            }
        }
    }

    /// `ConsumerCoordinator.close(timer)` + `AbstractCoordinator.close(timer)` in subscribe
    /// mode: auto-commit synchronously, wait for async commits, stop the heartbeat thread,
    /// revoke, leave, and wait for the coordinator's pending requests.
    pub async fn close(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        {
            let mut s = self.shared.lock().await;
            s.ensure_coordinator_ready(deadline).await;
        }
        self.maybe_auto_commit_offsets_sync(deadline).await;
        loop {
            let mut s = self.shared.lock().await;
            if s.coordinator.pending_async_commits == 0 || Instant::now() >= deadline {
                break;
            }
            s.ensure_coordinator_ready(deadline).await;
            s.poll_once(deadline).await;
            s.coordinator.invoke_completed_offset_commit_callbacks();
        }
        // closeHeartbeatThread().
        {
            let mut s = self.shared.lock().await;
            if let Some(group) = s.coordinator.group.as_mut() {
                if let Some(flags) = group.heartbeat_thread.as_mut() {
                    flags.closed = true;
                }
                group.heartbeat_thread = None;
            }
            self.notify.notify_one();
        }
        // onLeavePrepare(): eager members revoke everything.
        let (owned, generation) = {
            let s = self.shared.lock().await;
            let generation = s.coordinator.group.as_ref().map_or(-1, |g| g.generation.id);
            (s.fetcher.assigned().to_vec(), generation)
        };
        if !owned.is_empty() {
            let lost = generation == -1;
            let kind = if lost {
                CallbackKind::Lost
            } else {
                CallbackKind::Revoked
            };
            self.callback(kind, owned.clone()).await;
            let mut s = self.shared.lock().await;
            s.fetcher.assign(Vec::new());
            let (revoked, lost) = if lost {
                (Vec::new(), owned)
            } else {
                (owned, Vec::new())
            };
            self.ctx.record(Event::Assignment {
                generation,
                assigned: Vec::new(),
                revoked,
                lost,
            });
        }
        let mut s = self.shared.lock().await;
        {
            let KafkaConsumer {
                client,
                coordinator,
                ..
            } = &mut *s;
            if coordinator.group.is_some() {
                coordinator.maybe_leave_group(client, "the consumer is being closed");
            }
        }
        // awaitPendingRequests(coordinator, timer).
        while s.client.has_in_flight() && Instant::now() < deadline {
            s.poll_once(deadline).await;
        }
    }

    /// `subscribe(topics, listener)`: the subscription and the group state it needs.
    pub async fn subscribe(&self, topics: Vec<String>) {
        let mut s = self.shared.lock().await;
        s.fetcher.subscribed_topics = topics.clone();
        s.fetcher.request_metadata_update();
        if let Some(group) = s.coordinator.group.as_mut() {
            group.subscription = topics;
            group.rejoin_needed = true;
        }
    }
}

impl KafkaConsumer {
    /// `maybeAutoCommitOffsetsAsync(now)` (ConsumerCoordinator.java:1051).
    pub fn maybe_auto_commit_offsets_async(&mut self) {
        let Some((interval, next)) = self.auto_commit else {
            return;
        };
        let now = Instant::now();
        // 1.0.0 (ConsumerCoordinator.java:625 at 1.0.0): no commit, hence no coordinator
        // lookup, while the coordinator is unknown — only the deadline moves (KAFKA-6362).
        if self.version == LegacyVersion::V1_0_0 && self.coordinator.coordinator_unknown() {
            self.auto_commit = Some((interval, now + self.retry_backoff));
            return;
        }
        if now < next {
            return;
        }
        self.auto_commit = Some((interval, now + interval));
        self.auto_commit_offsets_async(false);
    }

    /// `autoCommitOffsetsAsync()` (ConsumerCoordinator.java:1141 in 3.2.0): commits
    /// `allConsumed()` asynchronously and returns the commit's id, keeping its future when
    /// `watch`; `None` when there is nothing to commit (`sendOffsetCommitRequest` returns
    /// `RequestFuture.voidSuccess()` for no offsets).
    pub fn auto_commit_offsets_async(&mut self, watch: bool) -> Option<u64> {
        let offsets = self.fetcher.all_consumed();
        if offsets.is_empty() {
            return None;
        }
        let id = self.next_internal_commit;
        self.next_internal_commit += 1;
        let generation = self
            .coordinator
            .group
            .as_ref()
            .and_then(|g| g.generation_if_stable().map(|g| g.id));
        self.ctx().record(Event::CommitRequested {
            id,
            mode: CommitMode::Auto,
            generation,
            offsets: offsets.clone(),
        });
        self.coordinator.auto_commit_ids.insert(id);
        if watch {
            self.coordinator.watch_commit(id, None);
        }
        self.coordinator
            .commit_offsets_async(&mut self.client, id, offsets);
        Some(id)
    }

    /// The auto-commit callback (ConsumerCoordinator.java:1065): after a retriable failure,
    /// the next auto-commit is due after the retry backoff.
    pub fn apply_auto_commit_callbacks(&mut self) {
        let failed_retriably = self.coordinator.take_failed_auto_commits();
        if failed_retriably {
            if let Some((interval, _)) = self.auto_commit {
                self.auto_commit = Some((interval, Instant::now() + self.retry_backoff));
            }
        }
    }
}

/// The partitions of `from` not in `remove`, in order.
fn without(from: &[Tp], remove: &[Tp]) -> Vec<Tp> {
    from.iter()
        .filter(|tp| !remove.contains(tp))
        .cloned()
        .collect()
}

/// `client.poll(future, timer)` with the lock taken per network poll: polls until `done`
/// or `deadline`.
pub(super) async fn poll_until(
    shared: &Mutex<KafkaConsumer>,
    deadline: Instant,
    done: impl Fn(&KafkaConsumer) -> bool,
) -> bool {
    loop {
        let mut s = shared.lock().await;
        if done(&s) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        s.poll_once(deadline).await;
    }
}

/// `commitOffsetsSync(offsets, timer)` (ConsumerCoordinator.java:1005): send, wait, and on
/// a retriable error back off and send again until the timer expires.
pub(super) async fn commit_offsets_sync(
    shared: &Mutex<KafkaConsumer>,
    id: u64,
    offsets: Vec<(Tp, i64)>,
    deadline: Instant,
) -> Result<bool, FutureError> {
    {
        let mut s = shared.lock().await;
        s.coordinator.invoke_completed_offset_commit_callbacks();
    }
    if offsets.is_empty() {
        return Ok(true);
    }
    loop {
        {
            let mut s = shared.lock().await;
            if s.coordinator.coordinator_unknown() && !s.ensure_coordinator_ready(deadline).await {
                return Ok(false);
            }
            s.coordinator.sync_commits.insert(id, None);
            let sent = {
                let KafkaConsumer {
                    client,
                    coordinator,
                    ..
                } = &mut *s;
                coordinator.send_offset_commit_request(client, id, offsets.clone())
            };
            if let Err(e) = sent {
                s.coordinator.sync_commits.insert(id, Some(Err(e)));
            }
        }
        poll_until(shared, deadline, |s| {
            s.coordinator
                .sync_commits
                .get(&id)
                .is_some_and(Option::is_some)
        })
        .await;
        let outcome = {
            let mut s = shared.lock().await;
            s.coordinator.invoke_completed_offset_commit_callbacks();
            s.coordinator.sync_commits.remove(&id).flatten()
        };
        match outcome {
            Some(Ok(())) => return Ok(true),
            Some(Err(e)) if !e.retriable => return Err(e),
            _ => {}
        }
        // timer.sleep(retryBackoffMs): no lock held.
        let backoff = shared.lock().await.retry_backoff;
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        tokio::time::sleep_until(deadline.min(now + backoff)).await;
        if Instant::now() >= deadline {
            return Ok(false);
        }
    }
}
