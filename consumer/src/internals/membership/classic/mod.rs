//! The classic group protocol on the background side (Java's `AbstractCoordinator` and
//! `ConsumerCoordinator`, minus their threads): JoinGroup → SyncGroup → Heartbeat, LeaveGroup,
//! with the rebalance listener run on the application side through callback-needed events.
//!
//! One rebalance is a chain of [`Step`]s, each waiting for one thing — a commit, a callback, a
//! response, fresh metadata — so the loop never blocks and the manager is a plain state machine
//! driven by `poll`, `on_response` and `on_callback_completed` on the loop's clock:
//!
//! 1. join prepare (once per rebalance): auto-commit what earlier polls returned, then
//!    `on_partitions_revoked` (eager: everything; cooperative: partitions of topics no longer
//!    subscribed) or `on_partitions_lost` (the generation was reset), revoked partitions
//!    stop fetching and lose buffered and in-flight data before the callback runs;
//! 2. JoinGroup (MEMBER_ID_REQUIRED answered by rejoining with the given id);
//! 3. the leader runs the assignor on fresh metadata of every member's topics;
//! 4. SyncGroup;
//! 5. join complete: cooperative revocations (`on_partitions_revoked`, then rejoin), new
//!    partitions assigned but not fetchable until `on_partitions_assigned` has run.
//!
//! Heartbeats flow in CompletingRebalance and Stable whatever the application does; joining
//! starts only once the application has polled (rebalances happen because of `poll`, as in
//! Java), and staying away from `poll` past `max.poll.interval.ms` leaves the group.

mod join;
mod leader;
mod liveness;
mod requests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use super::heartbeat::HeartbeatTimers;
use super::repeated_failures::RepeatedFailures;
use super::state::MemberState;
use super::{MemberIdentity, RebalanceStats};
use crate::assignor::{assignor_by_name, ConsumerPartitionAssignor, RebalanceProtocol};
use crate::close_options::GroupMembershipOperation;
use crate::config::Assignor;
use crate::error::Error;
use crate::internals::commit_request_manager::CommitRequestManager;
use crate::internals::completion::{Completion, CompletionReceiver};
use crate::internals::context::{GenerationReset, ManagerContext};
use crate::internals::membership::{set_assignment, ListenerCalls, PollGate};
use crate::internals::request_state::RequestState;
use crate::internals::requests::{PollResult, ResponseBody, UnsentRequest};
use crate::internals::settings::ConsumerSettings;
use crate::network::NetworkError;
use crate::rt::Instant;
use crate::types::TopicPartition;

/// Refusals of a run that rejoin at once: a normal join may take a MEMBER_ID_REQUIRED, then a
/// REBALANCE_IN_PROGRESS when another member joins meanwhile, and one more for luck.
const FREE_REJOINS: u32 = 3;

/// Java's `Generation`: what the coordinator last said this member is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Generation {
    /// The generation id, -1 when none.
    pub generation_id: i32,
    /// The member id, empty before the coordinator gave one.
    pub member_id: String,
    /// The protocol (assignor) the group chose.
    pub protocol_name: Option<String>,
}

impl Generation {
    /// No generation, no member id.
    pub fn none() -> Self {
        Self {
            generation_id: -1,
            member_id: String::new(),
            protocol_name: None,
        }
    }

    /// Whether this is a real generation (an assignment from it is owned, not lost).
    pub fn is_valid(&self) -> bool {
        self.generation_id >= 0 && !self.member_id.is_empty()
    }
}

/// What the current rebalance waits for.
#[derive(Debug)]
pub(super) enum Step {
    /// Nothing: stable, or ready to start a rebalance.
    Idle,
    /// Join prepare: the auto-commit before revocation.
    PrepareCommit {
        completion: Completion<()>,
        receiver: CompletionReceiver<()>,
        deadline: Instant,
    },
    /// Join prepare: `on_partitions_revoked` / `on_partitions_lost`; then the assignment is
    /// `remaining`.
    PrepareCallback {
        id: u64,
        remaining: BTreeSet<TopicPartition>,
    },
    /// JoinGroup in flight.
    Joining { token: u64 },
    /// The leader waits for metadata of the group's topics (a refresh newer than
    /// `metadata_version`, or `deadline`).
    LeaderMetadata {
        members: Vec<leader::MemberSubscription>,
        metadata_version: u64,
        deadline: Instant,
    },
    /// SyncGroup in flight.
    Syncing { token: u64 },
    /// Join complete: cooperative `on_partitions_revoked` (leaving `remaining`), then assign
    /// `assigned` — unless the generation was reset meanwhile.
    RevokeCallback {
        id: u64,
        remaining: BTreeSet<TopicPartition>,
        assigned: BTreeSet<TopicPartition>,
        added: BTreeSet<TopicPartition>,
    },
    /// Join complete: `on_partitions_assigned(added)`.
    AssignCallback {
        id: u64,
        added: BTreeSet<TopicPartition>,
    },
}

/// Leaving the group (`unsubscribe`, `close`).
#[derive(Debug)]
pub(super) struct Leave {
    completion: Option<Completion<()>>,
    /// Whether the LeaveGroup is sent (`close_with`).
    operation: GroupMembershipOperation,
    stage: LeaveStage,
}

#[derive(Debug)]
enum LeaveStage {
    /// Ready to revoke / lose the partitions.
    Start,
    /// `on_partitions_revoked` / `on_partitions_lost` is out.
    Callback { id: u64 },
    /// LeaveGroup in flight.
    Request { token: u64 },
}

/// The classic membership manager.
pub(crate) struct ClassicMembershipManager {
    group_id: String,
    group_instance_id: Option<String>,
    client_rack: Option<String>,
    session_timeout_ms: u64,
    rebalance_timeout_ms: u64,
    request_timeout_ms: u64,
    auto_commit: bool,
    assignors: Vec<Box<dyn ConsumerPartitionAssignor>>,
    protocol: RebalanceProtocol,
    state: MemberState,
    generation: Generation,
    /// Some: a rejoin is needed, for this reason.
    rejoin_reason: Option<String>,
    /// Join prepare (commit + revoke callbacks) runs once per rebalance.
    needs_join_prepare: bool,
    /// The application has polled since subscribing (or since a poll-timeout leave).
    join_requested: bool,
    timers: HeartbeatTimers,
    step: Step,
    join_backoff: RequestState,
    /// Refusals that rejoin at once (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
    /// REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED) by the current coordinator since the last
    /// completed join: past the first few, rejoins back off.
    refusals: RepeatedFailures,
    /// The heartbeat in flight: its token and the generation it carries.
    heartbeat_in_flight: Option<(u64, i32)>,
    leave: Option<Leave>,
    fatal: Option<Error>,
    /// The subscription the member joined with.
    joined_subscription: BTreeSet<String>,
    /// The leader's view of the group's topics' partition counts at assignment time.
    assignment_snapshot: Option<BTreeMap<String, usize>>,
    /// Whether the coordinator was known at the last poll (its rediscovery restarts the
    /// session timer).
    coordinator_known: bool,
    /// No answer from the coordinator for `session.timeout.ms` while in a generation: the
    /// coordinator has most likely removed this member and moved its partitions on. Sticky
    /// until the coordinator answers again, because rediscovering the coordinator restarts
    /// the session timer but says nothing about the session itself. A member closing in this
    /// state gives its partitions up as lost, not revoked.
    session_lapsed: bool,
    /// Requests made while handling a response (SyncGroup after JoinGroup), sent at the next
    /// poll, which the loop runs right after every response.
    outbox: Vec<UnsentRequest>,
    /// When the rebalance under way started.
    rebalance_started_at: Option<Instant>,
    /// Rebalances completed and failed (for metrics).
    rebalances: RebalanceStats,
    next_token: u64,
    listener_calls: ListenerCalls,
    /// The join prepare's auto-commit waits for the application's poll.
    poll_gate: PollGate,
}

impl std::fmt::Debug for ClassicMembershipManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassicMembershipManager")
            .field("state", &self.state)
            .field("generation", &self.generation)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl ClassicMembershipManager {
    /// A manager for the settings' group; `None` without a `group.id`. The assignors come from
    /// `partition.assignment.strategy`; the rebalance protocol is the one they all support,
    /// preferring cooperative (Java's `ConsumerCoordinator` constructor).
    pub fn new(settings: &ConsumerSettings, now: Instant) -> Result<Option<Self>, Error> {
        let Some(group_id) = settings.group_id.clone() else {
            return Ok(None);
        };
        let mut assignors = Vec::new();
        for assignor in &settings.partition_assignment_strategy {
            let registered = settings
                .custom_assignors
                .iter()
                .find(|a| matches!(assignor, Assignor::Custom(name) if *name == a.name()));
            assignors.push(match registered {
                Some(registered) => registered.instance(),
                None => assignor_by_name(assignor.name())
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?,
            });
        }
        if assignors.is_empty() {
            return Err(Error::InvalidArgument(
                "partition.assignment.strategy is empty".to_owned(),
            ));
        }
        let protocol = [RebalanceProtocol::Cooperative, RebalanceProtocol::Eager]
            .into_iter()
            .find(|p| {
                assignors
                    .iter()
                    .all(|a| a.supported_protocols().contains(p))
            })
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "the assignors of partition.assignment.strategy share no rebalance protocol"
                        .to_owned(),
                )
            })?;
        Ok(Some(Self {
            group_id,
            group_instance_id: settings.group_instance_id.clone(),
            client_rack: Some(settings.client_rack.clone()).filter(|r| !r.is_empty()),
            session_timeout_ms: settings.session_timeout_ms,
            rebalance_timeout_ms: settings.max_poll_interval_ms,
            request_timeout_ms: settings.request_timeout_ms,
            auto_commit: settings.auto_commit(),
            assignors,
            protocol,
            state: MemberState::Unjoined,
            generation: Generation::none(),
            rejoin_reason: None,
            needs_join_prepare: true,
            join_requested: false,
            timers: HeartbeatTimers::new(
                now,
                settings.session_timeout_ms,
                settings.heartbeat_interval_ms,
                settings.max_poll_interval_ms,
                settings.retry_backoff_ms,
            ),
            step: Step::Idle,
            join_backoff: RequestState::new(
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            refusals: RepeatedFailures::new(
                FREE_REJOINS,
                settings.retry_backoff_ms,
                settings.retry_backoff_max_ms,
            ),
            heartbeat_in_flight: None,
            leave: None,
            fatal: None,
            joined_subscription: BTreeSet::new(),
            assignment_snapshot: None,
            coordinator_known: false,
            session_lapsed: false,
            outbox: Vec::new(),
            rebalance_started_at: None,
            rebalances: RebalanceStats::default(),
            next_token: 0,
            listener_calls: ListenerCalls::default(),
            poll_gate: PollGate::default(),
        }))
    }

    /// The member's state.
    #[cfg(test)]
    pub fn state(&self) -> MemberState {
        self.state
    }

    /// The member's generation.
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// The rebalance protocol in use.
    #[cfg(test)]
    pub fn protocol(&self) -> RebalanceProtocol {
        self.protocol
    }

    /// What commits must carry.
    pub fn identity(&self) -> MemberIdentity {
        MemberIdentity {
            generation_id: self.generation.generation_id,
            member_id: self.generation.member_id.clone(),
            group_instance_id: self.group_instance_id.clone(),
            stable: self.state == MemberState::Stable,
            rebalancing: matches!(
                self.state,
                MemberState::PreparingRebalance | MemberState::CompletingRebalance
            ),
        }
    }

    /// Rebalances completed and failed, and the last one's duration.
    pub fn rebalance_stats(&self) -> RebalanceStats {
        self.rebalances
    }

    /// Whether the current step waits for a listener call.
    fn awaiting_callback(&self) -> bool {
        matches!(
            self.step,
            Step::PrepareCallback { .. }
                | Step::RevokeCallback { .. }
                | Step::AssignCallback { .. }
        )
    }

    /// Whether a leave is under way.
    pub fn is_leaving(&self) -> bool {
        self.leave.is_some()
    }

    /// Whether the coordinator has not answered for a whole session since the member last
    /// heard from it in its generation (see the field).
    pub fn session_lapsed(&self) -> bool {
        self.session_lapsed
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    fn transition(&mut self, ctx: &mut ManagerContext<'_>, next: MemberState) {
        if let Err(error) = self.state.transition_to(next) {
            tracing::error!(%error, "membership bug");
            self.fail(ctx, Error::Internal(error.to_string().into()));
        }
    }

    /// A fatal error: reported now and on every later poll; the member stops taking part.
    fn fail(&mut self, ctx: &mut ManagerContext<'_>, error: Error) {
        tracing::error!(%error, group_id = self.group_id, "fatal group membership error");
        ctx.report(error.clone());
        self.fatal = Some(error);
        self.step = Step::Idle;
        self.state = MemberState::Unjoined;
    }

    /// Forgets the generation (Java's `resetStateAndGeneration`): the member is out of the
    /// group until it rejoins; what it owns is lost, not revoked, at the next join prepare.
    fn reset_generation(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        keep_member_id: bool,
        reason: &str,
    ) {
        tracing::info!(
            reason,
            keep_member_id,
            generation = self.generation.generation_id,
            "resetting generation"
        );
        let member_id = if keep_member_id {
            std::mem::take(&mut self.generation.member_id)
        } else {
            String::new()
        };
        self.generation = Generation {
            member_id,
            ..Generation::none()
        };
        self.transition(ctx, MemberState::Unjoined);
        self.needs_join_prepare = true;
        self.heartbeat_in_flight = None;
        // A listener call already out is waited for: its partitions change hands in the
        // application's view when it returns, and the next join prepare must start from there
        // (otherwise the application is told about a partition twice). A revocation the
        // application has not started yet runs as a loss: the generation is gone.
        if self.awaiting_callback() {
            self.listener_calls.revocation_lost();
        } else {
            self.step = Step::Idle;
        }
        self.assignment_snapshot = None;
        ctx.subscriptions.set_group_subscription(BTreeSet::new());
        self.rejoin_reason = Some(reason.to_owned());
    }

    /// Asks for a rejoin (Java's `requestRejoin`).
    pub fn request_rejoin(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        if self.rejoin_reason.is_none() {
            tracing::info!(reason, "rejoin requested");
        }
        self.rejoin_reason = Some(reason);
    }

    /// A commit saw the generation refused.
    pub fn on_generation_reset(&mut self, ctx: &mut ManagerContext<'_>, reset: &GenerationReset) {
        if reset.generation_id == self.generation.generation_id && self.generation.is_valid() {
            self.reset_generation(ctx, reset.keep_member_id, &reset.reason);
        } else {
            tracing::debug!(
                ?reset,
                current = self.generation.generation_id,
                "ignoring a reset for an older generation"
            );
        }
    }

    /// The application polled: the poll timer restarts, and joining may begin.
    pub fn on_poll(&mut self, ctx: &mut ManagerContext<'_>, acknowledged: bool) {
        self.poll_gate.on_poll(acknowledged);
        self.timers.poll(ctx.now);
        if let Some(error) = &self.fatal {
            ctx.report(error.clone());
            return;
        }
        if ctx.subscriptions.has_auto_assigned_partitions() {
            self.join_requested = true;
        }
    }

    /// The subscription changed: a member in the group rejoins with it.
    pub fn on_subscription_changed(&mut self) {
        if self.state != MemberState::Unjoined || !matches!(self.step, Step::Idle) {
            self.request_rejoin("the subscription changed");
        }
    }

    /// `enforce_rebalance`.
    pub fn enforce_rebalance(&mut self, reason: String) {
        if self.generation.is_valid() {
            self.request_rejoin(reason);
        }
    }

    /// Polls the manager: heartbeats, the poll timer, and the next rebalance step.
    pub fn poll(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
    ) -> PollResult {
        let mut result = self.poll_steps(ctx, commit);
        result.requests.append(&mut self.outbox);
        self.poll_gate.end_round();
        result
    }

    fn poll_steps(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
    ) -> PollResult {
        let mut result = PollResult::default();
        let coordinator_known = ctx.coordinator.is_some();
        if coordinator_known && !self.coordinator_known {
            self.timers.reset_session(ctx.now);
        }
        self.coordinator_known = coordinator_known;
        if let Some(leave) = &self.leave {
            // Java's heartbeat thread goes on while `close` revokes: the session stays alive
            // through a slow listener, and a lapse is noticed before the partitions are given
            // up.
            if !matches!(leave.stage, LeaveStage::Request { .. }) {
                self.poll_heartbeat(ctx, &mut result);
            }
            self.poll_leave(ctx, &mut result);
            return result;
        }
        if self.fatal.is_some() {
            return result;
        }
        if !ctx.subscriptions.has_auto_assigned_partitions() {
            return result;
        }
        self.check_rejoin_conditions(ctx);
        if self.maybe_leave_on_poll_timeout(ctx, &mut result) {
            return result;
        }
        self.poll_heartbeat(ctx, &mut result);
        self.poll_rebalance(ctx, commit, &mut result);
        result
    }

    /// Routes a JoinGroup, SyncGroup, Heartbeat or LeaveGroup response.
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
                self.on_leave_response(ctx, result);
                return;
            }
        }
        match self.step {
            Step::Joining { token: t } if t == token => self.on_join_response(ctx, result),
            Step::Syncing { token: t } if t == token => self.on_sync_response(ctx, result),
            _ => tracing::debug!(token, "ignoring a response for an abandoned request"),
        }
    }

    /// A listener callback is over; the step that waited for it goes on.
    pub fn on_callback_completed(&mut self, ctx: &mut ManagerContext<'_>, id: u64) {
        if let Some(Leave {
            stage: LeaveStage::Callback { id: waiting },
            ..
        }) = &self.leave
        {
            if *waiting == id {
                self.after_leave_callback(ctx);
            }
            return;
        }
        match std::mem::replace(&mut self.step, Step::Idle) {
            Step::PrepareCallback {
                id: waiting,
                remaining,
            } if waiting == id => {
                set_assignment(ctx, &remaining, &BTreeSet::new());
            }
            Step::RevokeCallback {
                id: waiting,
                remaining,
                assigned,
                added,
            } if waiting == id => {
                if self.state == MemberState::Stable {
                    self.start_assign(ctx, assigned, added);
                } else {
                    // The generation was reset during the callback: its assignment is void.
                    set_assignment(ctx, &remaining, &BTreeSet::new());
                }
            }
            Step::AssignCallback { id: waiting, added } if waiting == id => {
                ctx.subscriptions.enable_awaiting_callback(&added);
                if self.state == MemberState::Stable {
                    let took_ms = self
                        .rebalance_started_at
                        .take()
                        .map_or(0, |at| (ctx.now - at).as_millis());
                    self.rebalances.completed += 1;
                    self.rebalances.last_ms = u64::try_from(took_ms).unwrap_or(u64::MAX);
                    tracing::info!(
                        generation = self.generation.generation_id,
                        took_ms,
                        "rebalance complete"
                    );
                }
            }
            other => {
                tracing::debug!(id, "callback completion for an abandoned step");
                self.step = other;
            }
        }
    }
}
