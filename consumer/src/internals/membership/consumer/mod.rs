//! The KIP-848 consumer group protocol on the background side (Java's
//! `ConsumerMembershipManager`, `AbstractMembershipManager` and
//! `ConsumerHeartbeatRequestManager`): one request, ConsumerGroupHeartbeat, carries the
//! member's subscription and owned partitions; the coordinator answers with the member's epoch
//! and its target assignment, which the member reconciles on its own:
//!
//! 1. resolve the assignment's topic ids to names (metadata refresh when unknown);
//! 2. auto-commit what earlier polls returned (before anything is revoked);
//! 3. stop fetching revoked partitions, drop their buffered and in-flight data;
//! 4. `on_partitions_revoked` (only when something is revoked);
//! 5. assign the new partitions, not fetchable yet; `on_partitions_assigned` (always);
//! 6. enable them; acknowledge with the next heartbeat.
//!
//! Each wait is followed by a check that the reconciliation is still current: a member fenced,
//! rejoining or leaving meanwhile abandons it. Fencing loses the partitions
//! (`on_partitions_lost`) and rejoins with epoch 0; staying away from `poll` past
//! `max.poll.interval.ms` leaves the group (epoch -1) until the next poll; `unsubscribe` and
//! `close` revoke through the listener, then send the leave heartbeat (epoch -1, or -2 for a
//! static member).

mod reconcile;
mod requests;
pub(crate) mod state;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{MemberIdentity, RebalanceStats};
use crate::close_options::GroupMembershipOperation;
use crate::error::Error;
use crate::error::ErrorCode;
use crate::internals::commit_request_manager::CommitRequestManager;
use crate::internals::completion::{Completion, CompletionReceiver};
use crate::internals::context::{GenerationReset, ManagerContext};
use crate::internals::events::RebalanceCallback;
use crate::internals::membership::repeated_failures::RepeatedFailures;
use crate::internals::membership::{set_assignment, stop_fetching, ListenerCalls, PollGate};
use crate::internals::node_versions::VersionChoice;
use crate::internals::request_state::RequestState;
use crate::internals::requests::{PollResult, ResponseBody, UnsentRequest};
use crate::internals::settings::ConsumerSettings;
use crate::network::NetworkError;
use crate::protocol::ResponseError;
use crate::rt::{Duration, Instant};
use crate::sabotage::{self, Sabotage};
use crate::types::TopicPartition;
use state::MemberState;

/// The epoch a joining member sends.
const JOIN_EPOCH: i32 = 0;
/// The epoch of a dynamic member's leave heartbeat.
const LEAVE_EPOCH: i32 = -1;
/// The epoch of a static member's leave heartbeat (it keeps its place for the session).
const LEAVE_STATIC_EPOCH: i32 = -2;
/// The heartbeat interval until the coordinator gives one.
const DEFAULT_HEARTBEAT_INTERVAL_MS: u64 = 5_000;

/// An assignment by topic id with a local epoch (Java's `LocalAssignment`): the epoch moves
/// whenever the target changes, so two equal partition sets from different targets still
/// differ, and an equal set received again is still acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalAssignment {
    /// -1: no assignment at all (before the first one, after it was released).
    pub local_epoch: i64,
    /// Partitions by topic id.
    pub partitions: BTreeMap<Uuid, BTreeSet<i32>>,
}

impl LocalAssignment {
    fn none() -> Self {
        Self {
            local_epoch: -1,
            partitions: BTreeMap::new(),
        }
    }

    fn is_none(&self) -> bool {
        self.local_epoch == -1
    }

    /// The target after receiving `partitions`: unchanged if equal (and not none), else the
    /// next local epoch.
    fn updated_with(&self, partitions: BTreeMap<Uuid, BTreeSet<i32>>) -> Option<Self> {
        if !self.is_none() && self.partitions == partitions {
            return None;
        }
        Some(Self {
            local_epoch: self.local_epoch + 1,
            partitions,
        })
    }
}

/// What the last heartbeats sent, for the "only when changed" rule.
#[derive(Debug, Default)]
pub(super) struct SentFields {
    rebalance_timeout_ms: Option<i32>,
    subscribed_topic_names: Option<BTreeSet<String>>,
    subscribed_topic_regex: Option<String>,
    server_assignor: Option<String>,
    /// The owned partitions last sent, and whether they were a reconciliation's in progress
    /// (so the acknowledgement of the same set still goes out).
    assignment: Option<(LocalAssignment, bool)>,
}

/// What the reconciliation under way waits for.
#[derive(Debug)]
pub(super) enum ReconcileStep {
    /// The auto-commit before revocation.
    Commit {
        completion: Completion<()>,
        receiver: CompletionReceiver<()>,
        deadline: Instant,
    },
    /// `on_partitions_revoked`.
    Revoke { id: u64 },
    /// `on_partitions_assigned`.
    Assign { id: u64 },
}

/// One reconciliation (Java's `maybeReconcile` chain).
#[derive(Debug)]
pub(super) struct Reconciliation {
    /// The member incarnation it started in: fenced, rejoined or left since → abandoned.
    incarnation: u64,
    /// The assignment it installs (target's local epoch, resolved partitions).
    resolved: LocalAssignment,
    /// The resolved partitions by name.
    assigned: BTreeSet<TopicPartition>,
    /// Owned, not assigned any more.
    revoked: BTreeSet<TopicPartition>,
    /// Assigned, not owned before.
    added: BTreeSet<TopicPartition>,
    step: ReconcileStep,
}

/// Why a lost callback is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LostReason {
    /// Fenced: rejoin once it is over.
    Fenced,
    /// Poll timer expired: rejoin at the next poll once it is over.
    Stale,
    /// A fatal error: stay out.
    Fatal,
}

#[derive(Debug)]
struct Leave {
    completion: Option<Completion<()>>,
    /// Which leave heartbeat, if any (`close_with`).
    operation: GroupMembershipOperation,
    stage: LeaveStage,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaveStage {
    /// Waiting to revoke (a reconciliation callback may still be out).
    Start,
    /// `on_partitions_revoked` / `on_partitions_lost` is out.
    Callback { id: u64 },
    /// The leave heartbeat is in flight.
    Request { token: u64 },
}

/// The KIP-848 membership manager.
pub(crate) struct ConsumerMembershipManager {
    group_id: String,
    group_instance_id: Option<String>,
    rack_id: Option<String>,
    rebalance_timeout_ms: u64,
    server_assignor: Option<String>,
    auto_commit: bool,
    state: MemberState,
    /// KIP-1082: generated by the client (a v4 UUID from the seeded generator) on first join.
    member_id: String,
    member_epoch: i32,
    /// What the member owns and acknowledged (or is about to).
    current: LocalAssignment,
    /// What the coordinator wants the member to own.
    target: LocalAssignment,
    /// Names of topics the member owned or was assigned, for topics metadata no longer has.
    topic_names: BTreeMap<Uuid, String>,
    reconciliation: Option<Reconciliation>,
    /// Moves on every fence, rejoin, leave and fatal error: work started before is stale.
    incarnation: u64,
    /// When the reconciliation under way started (for metrics).
    reconciliation_started_at: Option<Instant>,
    /// Reconciliations completed and failed (for metrics).
    rebalances: RebalanceStats,
    heartbeat_interval: Duration,
    next_heartbeat_at: Instant,
    heartbeat_state: RequestState,
    /// Fences in a row with no successful heartbeat between them, and when the rejoin after
    /// the last may go out (see [`Self::transition_to_fenced`]).
    fences: RepeatedFailures,
    /// The regular heartbeat in flight: token and the incarnation it was sent in.
    heartbeat_in_flight: Option<(u64, u64)>,
    sent: SentFields,
    poll_deadline: Instant,
    max_poll_interval: Duration,
    /// The poll timer expired: the member is stale until the application polls again.
    poll_timer_expired: bool,
    /// A lost callback (fenced, stale, fatal) is out, with this id.
    lost_callback: Option<(u64, LostReason)>,
    leave: Option<Leave>,
    fatal: Option<Error>,
    /// A fatal error not yet handed to the loop (which fails pending commits with it).
    new_fatal: Option<Error>,
    /// Requests made outside `poll` (after a callback completed), sent at the next poll.
    outbox: Vec<UnsentRequest>,
    next_token: u64,
    listener_calls: ListenerCalls,
    /// Reconciliations that commit or revoke wait for the application's poll.
    poll_gate: PollGate,
}

impl std::fmt::Debug for ConsumerMembershipManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerMembershipManager")
            .field("state", &self.state)
            .field("member_id", &self.member_id)
            .field("member_epoch", &self.member_epoch)
            .field("current", &self.current)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl ConsumerMembershipManager {
    /// A manager for the settings' group; `None` without a `group.id`.
    pub fn new(settings: &ConsumerSettings, now: Instant) -> Option<Self> {
        let group_id = settings.group_id.clone()?;
        let max_poll_interval = Duration::from_millis(settings.max_poll_interval_ms);
        Some(Self {
            group_id,
            group_instance_id: settings.group_instance_id.clone(),
            rack_id: Some(settings.client_rack.clone()).filter(|r| !r.is_empty()),
            rebalance_timeout_ms: settings.max_poll_interval_ms,
            server_assignor: settings.group_remote_assignor.clone(),
            auto_commit: settings.auto_commit(),
            state: MemberState::Unsubscribed,
            member_id: String::new(),
            member_epoch: JOIN_EPOCH,
            current: LocalAssignment::none(),
            target: LocalAssignment::none(),
            topic_names: BTreeMap::new(),
            reconciliation: None,
            incarnation: 0,
            reconciliation_started_at: None,
            rebalances: RebalanceStats::default(),
            heartbeat_interval: Duration::from_millis(DEFAULT_HEARTBEAT_INTERVAL_MS),
            next_heartbeat_at: now,
            heartbeat_state: RequestState::new(
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            heartbeat_in_flight: None,
            fences: RepeatedFailures::new(
                1,
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            sent: SentFields::default(),
            poll_deadline: now + max_poll_interval,
            max_poll_interval,
            poll_timer_expired: false,
            lost_callback: None,
            leave: None,
            fatal: None,
            new_fatal: None,
            outbox: Vec::new(),
            next_token: 0,
            listener_calls: ListenerCalls::default(),
            poll_gate: PollGate::default(),
        })
    }

    /// The member's state.
    #[cfg(test)]
    pub fn state(&self) -> MemberState {
        self.state
    }

    /// The member id (empty before the first join) and epoch, for `group_metadata()`.
    pub fn group_metadata(&self) -> (i32, &str) {
        let epoch = if self.in_group() {
            self.member_epoch
        } else {
            -1
        };
        (epoch, &self.member_id)
    }

    /// Whether the member has an epoch the coordinator accepts commits with.
    fn in_group(&self) -> bool {
        self.member_epoch > 0
            && matches!(
                self.state,
                MemberState::Stable
                    | MemberState::Reconciling
                    | MemberState::Acknowledging
                    | MemberState::PrepareLeaving
            )
    }

    /// What commits must carry: the member epoch in place of a generation.
    /// Reconciliations completed and the last one's duration in ms.
    pub fn rebalance_stats(&self) -> RebalanceStats {
        self.rebalances
    }

    pub fn identity(&self) -> MemberIdentity {
        let (epoch, member_id) = self.group_metadata();
        MemberIdentity {
            generation_id: epoch,
            member_id: member_id.to_owned(),
            group_instance_id: self.group_instance_id.clone(),
            stable: self.in_group(),
            rebalancing: false,
        }
    }

    /// Whether a leave is under way.
    pub fn is_leaving(&self) -> bool {
        self.leave.is_some()
    }

    /// A fatal error that happened since the last call (the loop fails pending commits).
    pub fn take_new_fatal(&mut self) -> Option<Error> {
        self.new_fatal.take()
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// The epoch of a leave heartbeat (Java's `leaveGroupEpoch`): -2 says a static member is
    /// gone for now and keeps its place; -1 removes the member, which is how a static member
    /// leaves for good.
    fn leave_epoch(&self, operation: GroupMembershipOperation) -> i32 {
        if self.group_instance_id.is_some() && operation != GroupMembershipOperation::LeaveGroup {
            LEAVE_STATIC_EPOCH
        } else {
            LEAVE_EPOCH
        }
    }

    fn transition(&mut self, ctx: &mut ManagerContext<'_>, next: MemberState) {
        if let Err(error) = self.state.transition_to(next) {
            tracing::error!(%error, "membership bug");
            self.fail(ctx, Error::Internal(error.to_string().into()));
        }
    }

    /// Java's `clearAssignment`: the member owns nothing.
    fn clear_assignment(&mut self, ctx: &mut ManagerContext<'_>) {
        self.current = LocalAssignment::none();
        set_assignment(ctx, &BTreeSet::new(), &BTreeSet::new());
    }

    /// A new member incarnation: anything in progress belongs to the old one.
    fn new_incarnation(&mut self) {
        self.incarnation += 1;
        self.sent = SentFields::default();
    }

    /// Java's `transitionToJoining`: epoch 0, no target, every field re-sent, at once.
    fn transition_to_joining(&mut self, ctx: &mut ManagerContext<'_>) {
        if self.state == MemberState::Fatal {
            return;
        }
        if self.member_id.is_empty() {
            let mut bytes = [0u8; 16];
            rand::RngCore::fill_bytes(ctx.rng, &mut bytes);
            self.member_id = uuid::Builder::from_random_bytes(bytes)
                .into_uuid()
                .to_string();
        }
        self.transition(ctx, MemberState::Joining);
        self.member_epoch = JOIN_EPOCH;
        self.target = LocalAssignment::none();
        self.new_incarnation();
        self.heartbeat_state.on_success();
        self.next_heartbeat_at = ctx.now;
        tracing::info!(member_id = self.member_id, "joining the consumer group");
    }

    /// Runs the lost callback for what the member owns, or (nothing owned) finishes at once.
    /// Partitions of a revocation still out are not in it: that call's completion removes
    /// them, and it runs as a loss itself if the application has not started it yet.
    fn lose_partitions(&mut self, ctx: &mut ManagerContext<'_>, reason: LostReason) {
        let mut owned = ctx.subscriptions.assigned();
        let revoking = match &self.reconciliation {
            Some(Reconciliation {
                step: ReconcileStep::Revoke { .. },
                revoked,
                ..
            }) => Some(revoked),
            _ => None,
        };
        if let Some(revoked) = revoking {
            owned.retain(|tp| !revoked.contains(tp));
            self.listener_calls.revocation_lost();
        }
        if owned.is_empty() {
            self.after_lost(ctx, reason);
            return;
        }
        stop_fetching(ctx, &owned);
        let id = self
            .listener_calls
            .request(ctx, RebalanceCallback::Lost, owned, BTreeSet::new());
        self.lost_callback = Some((id, reason));
    }

    fn after_lost(&mut self, ctx: &mut ManagerContext<'_>, reason: LostReason) {
        self.clear_assignment(ctx);
        match reason {
            LostReason::Fenced if self.state == MemberState::Fenced => {
                self.transition_to_joining(ctx);
            }
            LostReason::Stale if self.state == MemberState::Stale && !self.poll_timer_expired => {
                // The application polled while the callback was out.
                self.transition_to_joining(ctx);
            }
            _ => {}
        }
    }

    /// The partitions the member holds or is about to take, for the heartbeat's
    /// `ownedTopicPartitions`, and whether they belong to a reconciliation still under way.
    /// Java reports the acknowledged set until a reconciliation completes. But a newer target
    /// may take back a partition the reconciliation under way is adding (its auto-commit or a
    /// slow listener holds it up): the coordinator, seeing the partition not owned, hands it
    /// to another member at once, and this one assigns it anyway — two owners until the next
    /// reconciliation revokes it, and the first one's commits of it accepted
    /// (family-lost-commits seed 179). Reported as owned from the moment the member knows its
    /// target (the coordinator sends a member only partitions already released to it), it
    /// stays pending revocation until this member has given it up (or abandoned the
    /// reconciliation before assigning it, `start_assign`). Until the revocation is done, the
    /// partitions being revoked are still held too. Topics whose ids metadata cannot name yet
    /// are left out, as the reconciliation leaves them out (KAFKA-16198).
    pub(super) fn owned_for_heartbeat(&self, ctx: &ManagerContext<'_>) -> (LocalAssignment, bool) {
        if sabotage::active(Sabotage::OwnedReportsAcknowledgedOnly) {
            return (self.current.clone(), false);
        }
        if sabotage::active(Sabotage::ReleaseBeforeRevokeCallback) {
            if let Some(r) = &self.reconciliation {
                return (r.resolved.clone(), true);
            }
        }
        let (mut holding, revocation_done) = match &self.reconciliation {
            Some(r) => (
                r.resolved.clone(),
                matches!(r.step, ReconcileStep::Assign { .. }),
            ),
            None if !self.target.is_none() && self.target != self.current => {
                let mut target = self.target.clone();
                target.partitions.retain(|id, _| {
                    self.topic_names.contains_key(id) || ctx.metadata.topic_name(*id).is_some()
                });
                (target, false)
            }
            None => return (self.current.clone(), false),
        };
        if !revocation_done {
            for (id, partitions) in &self.current.partitions {
                holding
                    .partitions
                    .entry(*id)
                    .or_default()
                    .extend(partitions.iter().copied());
            }
        }
        (holding, true)
    }

    /// An OffsetCommit carrying the current epoch was answered UNKNOWN_MEMBER_ID: the
    /// coordinator no longer has this member, so its partitions are already someone else's.
    /// Java's `CommitRequestManager` only fails the commit and leaves the news to the next
    /// heartbeat answer; but a heartbeat can wait behind slow commits on the coordinator
    /// connection (the broker answers a connection's requests in order), and a member that
    /// closes meanwhile would give up as *revoked* partitions that were moved when it was
    /// fenced. An answer for an older epoch (a late one, from before a rejoin) is ignored.
    pub fn on_commit_unknown_member(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        reset: &GenerationReset,
    ) {
        if self.member_epoch > 0 && reset.generation_id == self.member_epoch {
            self.transition_to_fenced(ctx, &reset.reason);
        } else {
            tracing::debug!(
                ?reset,
                epoch = self.member_epoch,
                "ignoring UNKNOWN_MEMBER_ID for an older epoch"
            );
        }
    }

    /// A reconciliation under way ends without completing (Java's
    /// `maybeRecordRebalanceFailed`: only a rebalance that started and did not end counts);
    /// the next one is timed from its own start.
    fn record_rebalance_failed(&mut self) {
        if self.reconciliation_started_at.take().is_some() {
            self.rebalances.failed += 1;
        }
    }

    /// Java's `transitionToFenced` (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID). The rejoin goes
    /// out at once after a first fence (Java skips the backoff so the member is back quickly),
    /// but after a fence with no successful heartbeat since the previous one only after a
    /// backoff ([`RepeatedFailures`]): a coordinator that keeps fencing would otherwise get a
    /// rejoin per round trip until the session expires.
    fn transition_to_fenced(&mut self, ctx: &mut ManagerContext<'_>, reason: &str) {
        tracing::info!(
            reason,
            member_id = self.member_id,
            epoch = self.member_epoch,
            state = ?self.state,
            "fenced by the group coordinator"
        );
        match self.state {
            MemberState::PrepareLeaving | MemberState::Leaving => {
                if self.state == MemberState::PrepareLeaving {
                    self.transition(ctx, MemberState::Leaving);
                }
                self.transition(ctx, MemberState::Unsubscribed);
                self.finish_leave(ctx);
            }
            MemberState::Unsubscribed
            | MemberState::Fenced
            | MemberState::Fatal
            | MemberState::Stale => {}
            _ => {
                self.record_rebalance_failed();
                self.fences
                    .on_failure(ctx.coordinator, ctx.now, ctx.rng, reason);
                self.transition(ctx, MemberState::Fenced);
                self.member_epoch = JOIN_EPOCH;
                self.new_incarnation();
                self.lose_partitions(ctx, LostReason::Fenced);
            }
        }
    }

    /// A fatal error: reported now and on every later poll; the member stops taking part.
    fn fail(&mut self, ctx: &mut ManagerContext<'_>, error: Error) {
        if self.state == MemberState::Fatal {
            return;
        }
        tracing::error!(%error, group_id = self.group_id, "fatal consumer group error");
        self.record_rebalance_failed();
        ctx.report(error.clone());
        self.fatal = Some(error.clone());
        self.new_fatal = Some(error);
        let previous = self.state;
        if let Err(refused) = self.state.transition_to(MemberState::Fatal) {
            // Fenced / stale members send nothing, so nothing fails them; stop anyway.
            tracing::warn!(%refused, "forcing the fatal state");
            self.state = MemberState::Fatal;
        }
        self.member_epoch = LEAVE_EPOCH;
        self.new_incarnation();
        self.reconciliation = None;
        if previous.is_leaving() {
            self.finish_leave(ctx);
        } else if previous != MemberState::Unsubscribed && self.lost_callback.is_none() {
            self.lose_partitions(ctx, LostReason::Fatal);
        }
    }

    /// The application polled: the poll timer restarts; joining (or rejoining after a poll
    /// timeout) happens here, as rebalances happen because of `poll` (KAFKA-17154).
    pub fn on_poll(&mut self, ctx: &mut ManagerContext<'_>, acknowledged: bool) {
        self.poll_gate.on_poll(acknowledged);
        self.poll_deadline = ctx.now + self.max_poll_interval;
        if let Some(error) = &self.fatal {
            ctx.report(error.clone());
            return;
        }
        if !ctx.subscriptions.has_auto_assigned_partitions() || self.leave.is_some() {
            return;
        }
        match self.state {
            MemberState::Unsubscribed => self.transition_to_joining(ctx),
            MemberState::Stale => {
                self.poll_timer_expired = false;
                if self.lost_callback.is_none() {
                    self.transition_to_joining(ctx);
                }
            }
            _ => {}
        }
    }

    /// Polls the manager: reconciliation, heartbeats, the poll timer, leaving.
    pub fn poll(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
    ) -> PollResult {
        let mut result = PollResult::default();
        if self.leave.is_some() {
            self.poll_leave(ctx, &mut result);
        }
        if self.fatal.is_none() {
            super::match_pattern_subscription(ctx);
            self.maybe_reconcile(ctx, commit, &mut result);
            self.poll_heartbeat(ctx, &mut result);
        }
        result.requests.append(&mut self.outbox);
        self.poll_gate.end_round();
        result
    }

    /// Routes a ConsumerGroupHeartbeat response (regular or leave).
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        if self.heartbeat_in_flight.is_some_and(|(t, _)| t == token) {
            self.on_heartbeat_response(ctx, result);
            return;
        }
        if let Some(Leave {
            stage: LeaveStage::Request { token: t },
            ..
        }) = &self.leave
        {
            if *t == token {
                match result {
                    Ok((ResponseBody::ConsumerGroupHeartbeat(body), _)) => {
                        match ResponseError::try_from_code(body.error_code) {
                            None => tracing::info!("left the consumer group"),
                            Some(code) => {
                                tracing::info!(%code, "leave heartbeat answered with an error")
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(error) => tracing::info!(%error, "leave heartbeat failed"),
                }
                self.finish_leave(ctx);
                return;
            }
        }
        tracing::debug!(
            token,
            "ignoring a response nobody waits for (a poll-timeout leave)"
        );
    }

    /// A listener callback is over.
    pub fn on_callback_completed(&mut self, ctx: &mut ManagerContext<'_>, id: u64) {
        if let Some((waiting, reason)) = self.lost_callback {
            if waiting == id {
                self.lost_callback = None;
                self.after_lost(ctx, reason);
                return;
            }
        }
        if let Some(Leave {
            stage: LeaveStage::Callback { id: waiting },
            ..
        }) = &self.leave
        {
            if *waiting == id {
                self.after_leave_callback(ctx);
                return;
            }
        }
        self.on_reconcile_callback_completed(ctx, id);
    }

    /// `unsubscribe` / `close`: revoke (or lose) through the listener, then the leave
    /// heartbeat; done when it is answered or cannot be sent.
    pub fn leave(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        completion: Option<Completion<()>>,
        operation: GroupMembershipOperation,
    ) {
        if self.leave.is_some() {
            if let Some(c) = completion {
                c.complete(Ok(()));
            }
            return;
        }
        if self.state.is_not_in_group() {
            if self.state == MemberState::Fenced {
                self.transition(ctx, MemberState::Unsubscribed);
            }
            if self.lost_callback.is_none() {
                self.clear_assignment(ctx);
            }
            ctx.subscriptions.unsubscribe();
            ctx.buffer.set_assignment(&BTreeSet::new());
            if let Some(c) = completion {
                c.complete(Ok(()));
            }
            return;
        }
        self.transition(ctx, MemberState::PrepareLeaving);
        self.leave = Some(Leave {
            completion,
            operation,
            stage: LeaveStage::Start,
        });
    }

    fn poll_leave(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        let Some(leave) = &self.leave else {
            return;
        };
        if leave.completion.as_ref().is_some_and(Completion::is_done) {
            // The caller gave up (deadline): finish without waiting any longer.
            if self.state == MemberState::PrepareLeaving {
                self.transition(ctx, MemberState::Leaving);
            }
            if self.state == MemberState::Leaving {
                self.transition(ctx, MemberState::Unsubscribed);
            }
            return self.finish_leave(ctx);
        }
        if leave.stage != LeaveStage::Start {
            return;
        }
        // A listener call of the reconciliation finishes first: the application never sees
        // a partition revoked twice.
        if let Some(r) = &self.reconciliation {
            if !matches!(r.step, ReconcileStep::Commit { .. }) {
                return;
            }
            self.reconciliation = None;
        }
        if self.lost_callback.is_some() {
            return;
        }
        let owned = ctx.subscriptions.assigned();
        if owned.is_empty() || sabotage::active(Sabotage::LeaveWithoutCallback) {
            return self.send_leave(ctx, result);
        }
        let callback = if self.member_epoch > 0 {
            RebalanceCallback::Revoked
        } else {
            RebalanceCallback::Lost
        };
        stop_fetching(ctx, &owned);
        let id = self
            .listener_calls
            .request(ctx, callback, owned, BTreeSet::new());
        if let Some(leave) = &mut self.leave {
            leave.stage = LeaveStage::Callback { id };
        }
    }

    fn after_leave_callback(&mut self, ctx: &mut ManagerContext<'_>) {
        let mut result = PollResult::default();
        self.send_leave(ctx, &mut result);
        self.outbox.extend(result.requests);
    }

    /// Java's `transitionToSendingLeaveGroup(false)` and the leave heartbeat.
    fn send_leave(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        self.clear_assignment(ctx);
        ctx.subscriptions.unsubscribe();
        if self.state != MemberState::PrepareLeaving {
            return self.finish_leave(ctx);
        }
        let operation = self
            .leave
            .as_ref()
            .map_or(GroupMembershipOperation::Default, |l| l.operation);
        self.member_epoch = self.leave_epoch(operation);
        self.transition(ctx, MemberState::Leaving);
        self.new_incarnation();
        // A dynamic member told to remain sends nothing: the coordinator removes it when its
        // session times out (Java's `shouldSendLeaveHeartbeatNow`).
        let remains = self.group_instance_id.is_none()
            && operation == GroupMembershipOperation::RemainInGroup;
        let request = if remains {
            tracing::info!(
                member_id = self.member_id,
                "closing without a leave heartbeat: the member remains until its session times out"
            );
            None
        } else {
            self.leave_request(ctx, "the consumer is unsubscribing or closing")
        };
        // LEAVING ends when the leave heartbeat is generated (or cannot be).
        self.transition(ctx, MemberState::Unsubscribed);
        match request {
            Some(request) => {
                let token = request.token;
                result.requests.push(request);
                if let Some(leave) = &mut self.leave {
                    leave.stage = LeaveStage::Request { token };
                }
            }
            None => self.finish_leave(ctx),
        }
    }

    fn finish_leave(&mut self, ctx: &mut ManagerContext<'_>) {
        let Some(leave) = self.leave.take() else {
            return;
        };
        self.clear_assignment(ctx);
        ctx.subscriptions.unsubscribe();
        self.reconciliation = None;
        if let Some(completion) = leave.completion {
            completion.complete(Ok(()));
        }
    }

    /// Java's `AbstractHeartbeatRequestManager.poll`: the poll timer, then a heartbeat when
    /// one is due (at once when joining or acknowledging), at most one in flight.
    fn poll_heartbeat(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        if self.state.skips_heartbeat() || self.state == MemberState::Leaving {
            return;
        }
        let Some(coordinator) = ctx.coordinator else {
            return;
        };
        if !self.state.is_leaving() {
            if ctx.now >= self.poll_deadline && !sabotage::active(Sabotage::PollTimeoutNoLeave) {
                return self.leave_on_poll_timeout(ctx, result);
            }
            // Never a wake-up in the past: the loop would spin (a leaving member's poll timer
            // may expire while the application runs its callbacks).
            result.wake_at(self.poll_deadline);
        }
        if self.heartbeat_in_flight.is_some() {
            return;
        }
        if sabotage::active(Sabotage::HeartbeatPausedDuringCallback) && self.callback_out() {
            return;
        }
        if self.state == MemberState::Joining {
            if let Some(at) = self.fences.not_before(ctx.now) {
                result.wake_at(at);
                return;
            }
        }
        if !self.heartbeat_state.can_send(ctx.now) {
            if let Some(at) = self.heartbeat_state.backoff_until(ctx.now) {
                result.wake_at(at);
            }
            return;
        }
        if !self.state.heartbeats_now() && ctx.now < self.next_heartbeat_at {
            result.wake_at(self.next_heartbeat_at);
            return;
        }
        let Some(version) = self.heartbeat_version(ctx, coordinator) else {
            return;
        };
        let request = requests::heartbeat(self, ctx);
        let token = self.token();
        self.heartbeat_in_flight = Some((token, self.incarnation));
        self.heartbeat_state.on_send();
        self.next_heartbeat_at = ctx.now + self.heartbeat_interval;
        tracing::trace!(epoch = self.member_epoch, state = ?self.state, "sending ConsumerGroupHeartbeat");
        result.requests.push(requests::unsent(
            coordinator,
            version,
            request.into(),
            token,
        ));
        self.on_heartbeat_generated(ctx);
    }

    /// Whether a rebalance callback the member waits for is out (for
    /// [`Sabotage::HeartbeatPausedDuringCallback`]).
    fn callback_out(&self) -> bool {
        self.lost_callback.is_some()
            || matches!(
                self.leave,
                Some(Leave {
                    stage: LeaveStage::Callback { .. },
                    ..
                })
            )
            || self.reconciliation.as_ref().is_some_and(|r| {
                matches!(
                    r.step,
                    ReconcileStep::Revoke { .. } | ReconcileStep::Assign { .. }
                )
            })
    }

    /// The ConsumerGroupHeartbeat version the coordinator's own connection negotiated; a
    /// coordinator without it is fatal (Java: UnsupportedVersionException naming the
    /// protocol). While its connection is not up, the loop connects it and polls again.
    fn heartbeat_version(&mut self, ctx: &mut ManagerContext<'_>, coordinator: i32) -> Option<i16> {
        match requests::heartbeat_version(ctx.versions, coordinator) {
            VersionChoice::Version(version) => Some(version),
            VersionChoice::Unsupported(source) => {
                let cause = NetworkError::UnsupportedApi {
                    broker: format!("the group coordinator (connection {coordinator})"),
                    source,
                };
                self.fail(ctx, requests::unsupported_version_error(Some(&cause)));
                None
            }
            VersionChoice::NotConnected => {
                ctx.effects.connect_nodes.insert(coordinator);
                None
            }
        }
    }

    /// Java's `onHeartbeatRequestGenerated`: ACKNOWLEDGING ends when the ack is sent.
    fn on_heartbeat_generated(&mut self, ctx: &mut ManagerContext<'_>) {
        if self.state == MemberState::Acknowledging {
            if self.current == self.target {
                self.transition(ctx, MemberState::Stable);
            } else {
                self.transition(ctx, MemberState::Reconciling);
            }
        }
    }

    /// The application stayed away from `poll` for `max.poll.interval.ms`: leave (the
    /// response is not awaited), go STALE, lose the partitions; rejoin at the next poll.
    fn leave_on_poll_timeout(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        tracing::warn!(
            max_poll_interval_ms = self.rebalance_timeout_ms,
            "consumer poll timeout has expired: the time between calls to poll() was longer \
             than max.poll.interval.ms; leaving the group. Increase max.poll.interval.ms or \
             reduce max.poll.records."
        );
        self.poll_timer_expired = true;
        self.transition(ctx, MemberState::PrepareLeaving);
        self.member_epoch = self.leave_epoch(GroupMembershipOperation::Default);
        self.current = LocalAssignment::none();
        self.transition(ctx, MemberState::Leaving);
        self.new_incarnation();
        if let Some(request) = self.leave_request(ctx, "consumer poll timeout has expired") {
            result.requests.push(request);
        }
        self.heartbeat_state.on_success();
        self.transition(ctx, MemberState::Stale);
        self.lose_partitions(ctx, LostReason::Stale);
    }

    /// The leave heartbeat, when the coordinator is known and the version negotiated.
    fn leave_request(&mut self, ctx: &ManagerContext<'_>, reason: &str) -> Option<UnsentRequest> {
        let coordinator = ctx.coordinator?;
        let version = requests::heartbeat_version(ctx.versions, coordinator).version()?;
        tracing::info!(
            member_id = self.member_id,
            epoch = self.member_epoch,
            reason,
            "sending the leave heartbeat"
        );
        let request = requests::leave_heartbeat(self);
        let token = self.token();
        Some(requests::unsent(
            coordinator,
            version,
            request.into(),
            token,
        ))
    }

    fn on_heartbeat_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let Some((_, incarnation)) = self.heartbeat_in_flight.take() else {
            return;
        };
        let body = match result {
            Ok((ResponseBody::ConsumerGroupHeartbeat(body), _)) => body,
            Ok(_) => {
                self.heartbeat_state.on_failure(ctx.now, ctx.rng);
                return;
            }
            Err(error) => return self.on_heartbeat_failure(ctx, &error),
        };
        if body.heartbeat_interval_ms > 0 {
            self.heartbeat_interval =
                Duration::from_millis(u64::try_from(body.heartbeat_interval_ms).unwrap_or(0));
        }
        if incarnation != self.incarnation {
            // Sent before a fence, rejoin or leave: it says nothing about the member now.
            tracing::debug!("ignoring the response to a heartbeat of an earlier incarnation");
            self.heartbeat_state.on_success();
            return;
        }
        match ResponseError::try_from_code(body.error_code) {
            None => {
                self.heartbeat_state.on_success();
                self.fences.on_success();
                self.on_heartbeat_success(ctx, body);
            }
            Some(code) => {
                let message = body
                    .error_message
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                self.on_heartbeat_error(ctx, code, &message);
            }
        }
    }

    fn on_heartbeat_failure(&mut self, ctx: &mut ManagerContext<'_>, error: &NetworkError) {
        self.sent = SentFields::default();
        if matches!(error, NetworkError::UnsupportedApi { .. }) {
            return self.fail(ctx, requests::unsupported_version_error(Some(error)));
        }
        tracing::debug!(%error, "heartbeat failed");
        if error.is_retriable() {
            ctx.mark_coordinator_unknown(format!("heartbeat failed: {error}"));
        }
        self.heartbeat_state.on_failure(ctx.now, ctx.rng);
    }

    /// Java's `onErrorResponse`.
    fn on_heartbeat_error(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        code: ResponseError,
        message: &str,
    ) {
        self.sent = SentFields::default();
        let detail = if message.is_empty() {
            code.to_string()
        } else {
            format!("{code}: {message}")
        };
        match code {
            ResponseError::NotCoordinator | ResponseError::CoordinatorNotAvailable => {
                tracing::info!(%code, "heartbeat: coordinator moved");
                ctx.mark_coordinator_unknown(format!("heartbeat: {code}"));
                // Heartbeat as soon as the coordinator is found again.
                self.heartbeat_state.on_success();
                self.next_heartbeat_at = ctx.now;
            }
            ResponseError::CoordinatorLoadInProgress => {
                tracing::debug!("heartbeat: coordinator loading, retrying after backoff");
                self.heartbeat_state.on_failure(ctx.now, ctx.rng);
            }
            ResponseError::FencedMemberEpoch | ResponseError::UnknownMemberId => {
                self.heartbeat_state.on_success();
                self.transition_to_fenced(ctx, &format!("heartbeat: {detail}"));
            }
            ResponseError::UnsupportedVersion => {
                self.heartbeat_state.on_success();
                self.fail(ctx, requests::unsupported_version_error(None));
            }
            ResponseError::UnreleasedInstanceId => {
                self.heartbeat_state.on_success();
                let error = Error::Fatal {
                    code: Some(ErrorCode::of(code)),
                    message: format!(
                        "heartbeat: group.instance.id {:?} is still used by another member of \
                         group {:?}; that member must leave (or its session time out) first",
                        self.group_instance_id.as_deref().unwrap_or_default(),
                        self.group_id
                    ),
                };
                self.fail(ctx, error);
            }
            ResponseError::FencedInstanceId => {
                self.heartbeat_state.on_success();
                let error = Error::Fenced {
                    code: Some(ErrorCode::of(code)),
                    message: format!(
                        "heartbeat: another consumer with group.instance.id {:?} took this \
                         member's place in group {:?}",
                        self.group_instance_id.as_deref().unwrap_or_default(),
                        self.group_id
                    ),
                };
                self.fail(ctx, error);
            }
            code => {
                // GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED,
                // UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, anything unexpected.
                self.heartbeat_state.on_success();
                self.fail(ctx, Error::from_code(code, format!("heartbeat: {detail}")));
            }
        }
    }

    /// Java's `onHeartbeatSuccess`.
    fn on_heartbeat_success(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        body: kafka_protocol::messages::ConsumerGroupHeartbeatResponse,
    ) {
        if self.state.is_not_in_group() || self.state == MemberState::Leaving {
            return;
        }
        if let Some(member_id) = body.member_id.as_ref().filter(|m| !m.is_empty()) {
            if member_id.as_str() != self.member_id {
                tracing::debug!(%member_id, "member id from the coordinator");
                self.member_id = member_id.to_string();
            }
        }
        if body.member_epoch != self.member_epoch {
            tracing::debug!(
                from = self.member_epoch,
                to = body.member_epoch,
                "member epoch"
            );
        }
        self.member_epoch = body.member_epoch;
        let Some(assignment) = body.assignment else {
            return;
        };
        if !self.state.can_handle_new_assignment() {
            return;
        }
        let mut partitions: BTreeMap<Uuid, BTreeSet<i32>> = BTreeMap::new();
        for topic in assignment.topic_partitions {
            partitions
                .entry(topic.topic_id)
                .or_default()
                .extend(topic.partitions);
        }
        partitions.retain(|_, p| !p.is_empty());
        if let Some(updated) = self.target.updated_with(partitions) {
            tracing::debug!(target = ?updated, "new target assignment");
            self.target = updated;
        }
        if self.current != self.target {
            self.transition(ctx, MemberState::Reconciling);
        } else if matches!(self.state, MemberState::Reconciling | MemberState::Joining) {
            self.transition(ctx, MemberState::Stable);
        }
    }
}
