//! Staying in the group and leaving it: heartbeats (Java's `HeartbeatThread` loop without the
//! thread), the session and poll timers, and LeaveGroup on `unsubscribe` / `close` / poll
//! timeout.

use std::collections::BTreeSet;

use super::join::Retry;
use super::{requests, ClassicMembershipManager, Generation, Leave, LeaveStage, Step};
use crate::close_options::GroupMembershipOperation;
use crate::error::Error;
use crate::error::ErrorCode;
use crate::internals::completion::Completion;
use crate::internals::context::ManagerContext;
use crate::internals::events::RebalanceCallback;
use crate::internals::membership::MemberState;
use crate::internals::membership::{set_assignment, stop_fetching};
use crate::internals::requests::{PollResult, ResponseBody};
use crate::network::NetworkError;
use crate::protocol::ResponseError;
use crate::sabotage::{self, Sabotage};

impl ClassicMembershipManager {
    /// Sends a heartbeat when one is due, in CompletingRebalance and Stable (KAFKA-10134: also
    /// while the SyncGroup is out); a session without a heartbeat response for
    /// `session.timeout.ms` marks the coordinator unknown and gives up on the group requests
    /// still out (the heartbeat and a SyncGroup). Java's heartbeat thread disconnects from the
    /// coordinator there, which fails those requests. Waiting for the heartbeat's
    /// `request.timeout.ms` instead kept a member cut off past its session from hearing that it
    /// was fenced for seconds after the network healed, handing out records of partitions the
    /// group had already moved; applying a SyncGroup answer that arrives after the session
    /// lapsed made a member the coordinator had already removed own partitions of the next
    /// generation.
    pub(super) fn poll_heartbeat(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        if !matches!(
            self.state,
            MemberState::CompletingRebalance | MemberState::Stable
        ) {
            return;
        }
        let Some(coordinator) = ctx.coordinator else {
            return;
        };
        if self.timers.session_expired(ctx.now) {
            let reason = "no heartbeat response within session.timeout.ms";
            ctx.mark_coordinator_unknown(reason);
            self.timers.reset_session(ctx.now);
            self.timers.fail_heartbeat(ctx.now);
            self.heartbeat_in_flight = None;
            self.session_lapsed = true;
            if matches!(self.step, Step::Syncing { .. }) {
                self.join_failed(ctx, Retry::Backoff, reason);
            }
            return;
        }
        result.wake_at(self.timers.session_deadline());
        if self.heartbeat_in_flight.is_some() {
            return;
        }
        if sabotage::active(Sabotage::HeartbeatPausedDuringCallback) && self.awaiting_callback() {
            return;
        }
        if !self.timers.should_heartbeat(ctx.now) {
            result.wake_at(self.timers.next_heartbeat_at());
            return;
        }
        let token = self.token();
        self.heartbeat_in_flight = Some((token, self.generation.generation_id));
        self.timers.sent_heartbeat(ctx.now);
        tracing::trace!(
            generation = self.generation.generation_id,
            "sending Heartbeat"
        );
        result.requests.push(requests::unsent(
            coordinator,
            None,
            requests::heartbeat(self).into(),
            token,
            None,
        ));
    }

    pub(super) fn on_heartbeat_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let Some((_, sent_generation)) = self.heartbeat_in_flight.take() else {
            return;
        };
        let body = match result {
            Ok((ResponseBody::Heartbeat(body), _)) => body,
            Ok(_) => return,
            Err(error) => {
                tracing::debug!(%error, "heartbeat failed");
                if error.is_retriable() {
                    ctx.mark_coordinator_unknown(format!("heartbeat failed: {error}"));
                }
                self.timers.fail_heartbeat(ctx.now);
                return;
            }
        };
        let Some(code) = ResponseError::try_from_code(body.error_code) else {
            self.timers.received_heartbeat(ctx.now);
            self.session_lapsed = false;
            return;
        };
        let current = sent_generation == self.generation.generation_id;
        match code {
            ResponseError::RebalanceInProgress => {
                // The coordinator answered: the session is alive.
                self.timers.received_heartbeat(ctx.now);
                self.session_lapsed = false;
                if self.state == MemberState::Stable && current {
                    self.request_rejoin("the group is rebalancing (heartbeat)");
                }
            }
            ResponseError::IllegalGeneration | ResponseError::UnknownMemberId
                if !current || self.state.has_not_joined() =>
            {
                // KAFKA-9823: a response for a generation already left behind says nothing
                // about the current one.
                tracing::debug!(%code, sent_generation, "ignoring a stale heartbeat error");
            }
            ResponseError::IllegalGeneration => {
                self.reset_generation(ctx, true, "heartbeat: ILLEGAL_GENERATION");
            }
            ResponseError::UnknownMemberId => {
                self.reset_generation(ctx, false, "heartbeat: UNKNOWN_MEMBER_ID");
            }
            ResponseError::FencedInstanceId if current => self.fail(
                ctx,
                Error::Fenced {
                    code: Some(ErrorCode::of(code)),
                    message: format!(
                        "heartbeat: another consumer with group.instance.id {:?} took this member's place",
                        self.group_instance_id.as_deref().unwrap_or_default()
                    ),
                },
            ),
            ResponseError::CoordinatorNotAvailable | ResponseError::NotCoordinator => {
                ctx.mark_coordinator_unknown(format!("heartbeat: {code}"));
                self.timers.fail_heartbeat(ctx.now);
            }
            ResponseError::GroupAuthorizationFailed => {
                self.fail(ctx, Error::from_code(code, "heartbeat"));
            }
            code => {
                tracing::warn!(%code, "heartbeat failed");
                self.timers.fail_heartbeat(ctx.now);
            }
        }
    }

    /// Java's `maybeLeaveGroup("consumer poll timeout has expired.")`: the application stayed
    /// away from `poll` for `max.poll.interval.ms`; a dynamic member leaves, a static one only
    /// forgets its generation (it keeps its place until the session times out). Either way it
    /// rejoins at the next poll, its partitions lost.
    pub(super) fn maybe_leave_on_poll_timeout(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        result: &mut PollResult,
    ) -> bool {
        if !self.generation.is_valid() && self.state == MemberState::Unjoined {
            return false;
        }
        if !self.timers.poll_expired(ctx.now) {
            result.wake_at(self.timers.poll_deadline());
            return false;
        }
        if sabotage::active(Sabotage::PollTimeoutNoLeave) {
            return false;
        }
        tracing::warn!(
            max_poll_interval_ms = self.rebalance_timeout_ms,
            "consumer poll timeout has expired: the time between calls to poll() was longer \
             than max.poll.interval.ms; leaving the group"
        );
        if let Some(request) = self.leave_request(
            ctx,
            "consumer poll timeout has expired",
            GroupMembershipOperation::Default,
        ) {
            result.requests.push(request);
        }
        self.reset_generation(ctx, false, "consumer poll timeout has expired");
        self.join_requested = false;
        // Java tells the listener in the next poll's `onJoinPrepare`, before that poll's fetch
        // returns anything. Here the next poll would hand out the lost partitions' buffered
        // records before a join prepare it starts could run, so the loss is queued now (and
        // fetching stops): the next poll runs `on_partitions_lost` first, and rejoins after.
        if matches!(self.step, Step::Idle) {
            self.needs_join_prepare = false;
            self.start_prepare_callback(ctx);
        }
        true
    }

    /// A LeaveGroup for a member still in a generation, when the coordinator is known: dynamic
    /// members send it unless told to remain, static ones only when told to leave (Java's
    /// `shouldSendLeaveGroupRequest`).
    fn leave_request(
        &mut self,
        ctx: &ManagerContext<'_>,
        reason: &str,
        operation: GroupMembershipOperation,
    ) -> Option<crate::internals::requests::UnsentRequest> {
        let coordinator = ctx.coordinator?;
        let leaves = match operation {
            GroupMembershipOperation::LeaveGroup => true,
            GroupMembershipOperation::Default => self.group_instance_id.is_none(),
            GroupMembershipOperation::RemainInGroup => false,
        };
        if !leaves
            || self.state == MemberState::Unjoined && !self.generation.is_valid()
            || self.generation.member_id.is_empty()
        {
            return None;
        }
        let version = requests::leave_group_version(ctx, coordinator)?;
        tracing::info!(
            member_id = self.generation.member_id,
            reason,
            "sending LeaveGroup"
        );
        let token = self.token();
        Some(requests::unsent(
            coordinator,
            Some(version),
            requests::leave_group(self, version, reason).into(),
            token,
            None,
        ))
    }

    /// `unsubscribe` / `close`: revoke (or lose) the partitions through the listener, send
    /// LeaveGroup (as `operation` says), drop the subscription. A rebalance under way is
    /// abandoned, except a listener call already out: it finishes first, so the application
    /// never sees a partition revoked twice.
    pub fn leave(
        &mut self,
        completion: Option<Completion<()>>,
        operation: GroupMembershipOperation,
    ) {
        if self.leave.is_some() {
            if let Some(c) = completion {
                c.complete(Ok(()));
            }
            return;
        }
        if !self.awaiting_callback() {
            self.step = Step::Idle;
        }
        self.leave = Some(Leave {
            completion,
            operation,
            stage: LeaveStage::Start,
        });
    }

    pub(super) fn poll_leave(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        let Some(leave) = &self.leave else {
            return;
        };
        if leave.completion.as_ref().is_some_and(Completion::is_done) {
            // The caller gave up (deadline): finish without waiting any longer.
            return self.finish_leave(ctx);
        }
        if !matches!(leave.stage, LeaveStage::Start) || self.awaiting_callback() {
            return;
        }
        let owned = ctx.subscriptions.assigned();
        if owned.is_empty() {
            return self.send_leave(ctx, result);
        }
        if sabotage::active(Sabotage::LeaveWithoutCallback) {
            set_assignment(ctx, &BTreeSet::new(), &BTreeSet::new());
            return self.send_leave(ctx, result);
        }
        let callback = if self.generation.is_valid()
            && self.state == MemberState::Stable
            && !self.session_lapsed
        {
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

    pub(super) fn after_leave_callback(&mut self, ctx: &mut ManagerContext<'_>) {
        set_assignment(ctx, &BTreeSet::new(), &BTreeSet::new());
        let mut result = PollResult::default();
        self.send_leave(ctx, &mut result);
        self.outbox.extend(result.requests);
    }

    fn send_leave(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        let operation = self
            .leave
            .as_ref()
            .map_or(GroupMembershipOperation::Default, |l| l.operation);
        match self.leave_request(ctx, "the consumer is unsubscribing or closing", operation) {
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

    pub(super) fn on_leave_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        match result {
            Ok((ResponseBody::LeaveGroup(body), _)) => {
                let code = ResponseError::try_from_code(body.error_code).or_else(|| {
                    body.members
                        .iter()
                        .find_map(|m| ResponseError::try_from_code(m.error_code))
                });
                match code {
                    None => tracing::info!("left the group"),
                    Some(code) => tracing::info!(%code, "LeaveGroup answered with an error"),
                }
            }
            Ok(_) => {}
            Err(error) => tracing::info!(%error, "LeaveGroup failed"),
        }
        self.finish_leave(ctx);
    }

    fn finish_leave(&mut self, ctx: &mut ManagerContext<'_>) {
        let Some(leave) = self.leave.take() else {
            return;
        };
        self.generation = Generation::none();
        self.transition(ctx, MemberState::Unjoined);
        self.step = Step::Idle;
        self.heartbeat_in_flight = None;
        self.rejoin_reason = None;
        self.needs_join_prepare = true;
        self.join_requested = false;
        self.assignment_snapshot = None;
        ctx.subscriptions.unsubscribe();
        ctx.buffer.set_assignment(&BTreeSet::new());
        if let Some(completion) = leave.completion {
            completion.complete(Ok(()));
        }
    }
}
