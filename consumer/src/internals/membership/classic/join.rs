//! The rebalance: join prepare, JoinGroup, SyncGroup and join complete (Java's
//! `joinGroupIfNeeded`, `onJoinPrepare`, the JoinGroup/SyncGroup response handlers and
//! `onJoinComplete`).

use std::collections::BTreeSet;

use bytes::Bytes;

use super::leader::{self, MemberSubscription};
use super::{requests, ClassicMembershipManager, Generation, Step};
use crate::assignor::protocol::decode_assignment;
use crate::assignor::RebalanceProtocol;
use crate::error::Error;
use crate::error::ErrorCode;
use crate::internals::commit_request_manager::CommitRequestManager;
use crate::internals::context::ManagerContext;
use crate::internals::events::RebalanceCallback;
use crate::internals::membership::MemberState;
use crate::internals::membership::{set_assignment, stop_fetching};
use crate::internals::node_versions::VersionChoice;
use crate::internals::requests::{PollResult, ResponseBody};
use crate::network::NetworkError;
use crate::protocol::ResponseError;
use crate::rt::Duration;
use crate::types::TopicPartition;

/// How long the leader waits for metadata of topics it has never seen before assigning without
/// them (a member may subscribe to a topic that does not exist).
const LEADER_METADATA_WAIT: Duration = Duration::from_secs(5);

/// What a failed JoinGroup / SyncGroup leads to.
pub(super) enum Retry {
    /// Rejoin at once (MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ...).
    Now,
    /// Rejoin after the retry backoff.
    Backoff,
}

impl ClassicMembershipManager {
    /// Rejoin conditions Java checks in `rejoinNeededOrPending`: the subscription changed
    /// since joining; the leader's metadata snapshot of the group's topics differs from the one
    /// it assigned from (a topic appeared, disappeared or gained partitions); a pattern
    /// matches other topics now.
    pub(super) fn check_rejoin_conditions(&mut self, ctx: &mut ManagerContext<'_>) {
        super::super::match_pattern_subscription(ctx);
        if self.state != MemberState::Stable || !matches!(self.step, Step::Idle) {
            return;
        }
        if self.joined_subscription != *ctx.subscriptions.subscribed_topics() {
            self.request_rejoin("the subscription changed since the member joined");
        }
        if let Some(snapshot) = &self.assignment_snapshot {
            let now = leader::metadata_snapshot(ctx);
            if now != *snapshot {
                tracing::info!(before = ?snapshot, ?now, "partition counts changed");
                self.request_rejoin("the partitions of the group's topics changed");
            }
        }
    }

    pub(super) fn poll_rebalance(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
        result: &mut PollResult,
    ) {
        match &self.step {
            Step::Idle => {
                let needed = self.state == MemberState::Unjoined || self.rejoin_reason.is_some();
                if !needed || !self.join_requested {
                    return;
                }
                self.rebalance_started_at.get_or_insert(ctx.now);
                if self.needs_join_prepare {
                    let commits_first = self.auto_commit
                        && self.generation.is_valid()
                        && !ctx.subscriptions.assigned().is_empty();
                    if commits_first && !self.poll_gate.open(ctx) {
                        return;
                    }
                    self.start_join_prepare(ctx, commit);
                    if !matches!(self.step, Step::Idle) {
                        return;
                    }
                }
                self.maybe_send_join(ctx, result);
            }
            Step::PrepareCommit {
                completion,
                receiver,
                deadline,
            } => {
                let done = receiver.borrow().is_some();
                if !done && ctx.now < *deadline {
                    result.wake_at(*deadline);
                    return;
                }
                if !done {
                    tracing::warn!("auto-commit before revocation did not finish in time");
                    completion.complete(Err(Error::Timeout {
                        operation: "auto-commit before revocation",
                        timeout_ms: self.rebalance_timeout_ms / 2,
                    }));
                } else if let Some(Err(error)) = receiver.borrow().as_ref() {
                    tracing::warn!(%error, "auto-commit before revocation failed");
                }
                self.step = Step::Idle;
                self.start_prepare_callback(ctx);
            }
            Step::LeaderMetadata {
                metadata_version,
                deadline,
                ..
            } => {
                if ctx.metadata_version <= *metadata_version && ctx.now < *deadline {
                    result.wake_at(*deadline);
                    return;
                }
                let Step::LeaderMetadata { members, .. } =
                    std::mem::replace(&mut self.step, Step::Idle)
                else {
                    return;
                };
                self.assign_and_sync(ctx, &members);
            }
            Step::PrepareCallback { .. }
            | Step::Joining { .. }
            | Step::Syncing { .. }
            | Step::RevokeCallback { .. }
            | Step::AssignCallback { .. } => {}
        }
    }

    /// Java's `onJoinPrepare`, first half: the auto-commit before revocation, only from a
    /// valid generation (a reset one could not commit), started right after the application
    /// polled ([`PollGate`](crate::internals::membership::PollGate)). Eager revokes everything:
    /// fetching stops before the commit goes out, so nothing is handed to the application
    /// that the commit leaves out (Java's `maybeMarkPartitionsPendingRevocation`,
    /// KAFKA-14196). It may take half the rebalance timeout at most: the member must still
    /// revoke and rejoin before the coordinator's rebalance timeout evicts it while it holds
    /// its partitions (KAFKA-13310: a commit retried for the whole rebalance timeout lets the
    /// partitions move before they are revoked).
    fn start_join_prepare(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
    ) {
        self.needs_join_prepare = false;
        if self.auto_commit && self.generation.is_valid() {
            if self.protocol == RebalanceProtocol::Eager {
                stop_fetching(ctx, &ctx.subscriptions.assigned());
            }
            let deadline = ctx.now + Duration::from_millis(self.rebalance_timeout_ms / 2);
            if let Some((completion, receiver)) = commit.commit_before_revocation(ctx, deadline) {
                self.step = Step::PrepareCommit {
                    completion,
                    receiver,
                    deadline,
                };
                return;
            }
        }
        self.start_prepare_callback(ctx);
    }

    /// Java's `onJoinPrepare`, second half: lost (reset generation), eager revoke-all, or
    /// cooperative revoke of partitions whose topics are no longer subscribed.
    pub(super) fn start_prepare_callback(&mut self, ctx: &mut ManagerContext<'_>) {
        let owned = ctx.subscriptions.assigned();
        let (callback, revoked) = if !self.generation.is_valid() {
            (RebalanceCallback::Lost, owned.clone())
        } else {
            match self.protocol {
                RebalanceProtocol::Eager => (RebalanceCallback::Revoked, owned.clone()),
                RebalanceProtocol::Cooperative => {
                    let subscribed = ctx.subscriptions.subscribed_topics();
                    let gone = owned
                        .iter()
                        .filter(|tp| !subscribed.contains(&*tp.topic))
                        .cloned()
                        .collect();
                    (RebalanceCallback::Revoked, gone)
                }
            }
        };
        // Eager always tells the listener a rebalance started (Java invokes
        // `onPartitionsRevoked` even with nothing to revoke); lost and cooperative only when
        // there is something.
        let always =
            callback == RebalanceCallback::Revoked && self.protocol == RebalanceProtocol::Eager;
        let remaining: BTreeSet<TopicPartition> = owned.difference(&revoked).cloned().collect();
        if revoked.is_empty() && !always {
            set_assignment(ctx, &remaining, &BTreeSet::new());
            return;
        }
        stop_fetching(ctx, &revoked);
        let id = self
            .listener_calls
            .request(ctx, callback, revoked, remaining.clone());
        self.step = Step::PrepareCallback { id, remaining };
    }

    fn maybe_send_join(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        let Some(coordinator) = ctx.coordinator else {
            return;
        };
        if !self.join_backoff.can_send(ctx.now) {
            if let Some(at) = self.join_backoff.backoff_until(ctx.now) {
                result.wake_at(at);
            }
            return;
        }
        if let Some(at) = self.refusals.not_before(ctx.now) {
            result.wake_at(at);
            return;
        }
        // Built for the coordinator's own versions; while its connection is not up, the loop
        // connects it and polls again. A coordinator without JoinGroup cannot host us.
        let version = match requests::join_group_version(ctx, coordinator) {
            VersionChoice::Version(version) => version,
            VersionChoice::NotConnected => return,
            VersionChoice::Unsupported(source) => {
                let error = NetworkError::UnsupportedApi {
                    broker: format!("the group coordinator (connection {coordinator})"),
                    source,
                };
                self.fail(
                    ctx,
                    Error::Fatal {
                        code: Some(ErrorCode::UNSUPPORTED_VERSION),
                        message: error.to_string(),
                    },
                );
                return;
            }
        };
        if self.group_instance_id.is_some() && version < requests::STATIC_MEMBERSHIP_VERSION {
            self.fail(
                ctx,
                Error::Fatal {
                    code: Some(ErrorCode::UNSUPPORTED_VERSION),
                    message: "the broker does not support static membership (group.instance.id needs JoinGroup v5+)".to_owned(),
                },
            );
            return;
        }
        let subscribed = ctx.subscriptions.subscribed_topics().clone();
        let owned = ctx.subscriptions.assigned();
        let reason = self
            .rejoin_reason
            .take()
            .unwrap_or_else(|| "joining the group".to_owned());
        let request = match requests::join_group(self, &subscribed, &owned, &reason) {
            Ok(request) => request,
            Err(error) => {
                self.fail(ctx, error);
                return;
            }
        };
        self.transition(ctx, MemberState::PreparingRebalance);
        self.joined_subscription = subscribed;
        self.join_backoff.on_send();
        let token = self.token();
        tracing::info!(
            member_id = self.generation.member_id,
            reason,
            "sending JoinGroup"
        );
        let timeout_ms = self
            .request_timeout_ms
            .max(self.rebalance_timeout_ms + requests::JOIN_GROUP_TIMEOUT_LAPSE_MS);
        result.requests.push(requests::unsent(
            coordinator,
            Some(version),
            request.into(),
            token,
            Some(timeout_ms),
        ));
        self.step = Step::Joining { token };
    }

    /// A JoinGroup or SyncGroup failed: back to Unjoined, rejoin now or after a backoff.
    pub(super) fn join_failed(&mut self, ctx: &mut ManagerContext<'_>, retry: Retry, reason: &str) {
        self.rebalances.failed += 1;
        self.step = Step::Idle;
        self.transition(ctx, MemberState::Unjoined);
        match retry {
            Retry::Now => {
                self.join_backoff.on_success();
                self.refusals
                    .on_failure(ctx.coordinator, ctx.now, ctx.rng, reason);
            }
            Retry::Backoff => self.join_backoff.on_failure(ctx.now, ctx.rng),
        }
        self.request_rejoin(reason);
    }

    /// Error handling common to JoinGroup and SyncGroup.
    fn join_error(&mut self, ctx: &mut ManagerContext<'_>, code: ResponseError, api: &str) {
        let reason = format!("{api} failed: {code}");
        match code {
            ResponseError::MemberIdRequired | ResponseError::RebalanceInProgress => {
                self.join_failed(ctx, Retry::Now, &reason);
            }
            ResponseError::UnknownMemberId => {
                self.reset_generation(ctx, false, &reason);
                self.join_failed(ctx, Retry::Now, &reason);
            }
            ResponseError::IllegalGeneration => {
                self.reset_generation(ctx, true, &reason);
                self.join_failed(ctx, Retry::Now, &reason);
            }
            ResponseError::CoordinatorNotAvailable
            | ResponseError::NotCoordinator
            | ResponseError::RequestTimedOut => {
                ctx.mark_coordinator_unknown(reason.clone());
                self.join_failed(ctx, Retry::Backoff, &reason);
            }
            ResponseError::CoordinatorLoadInProgress => {
                self.join_failed(ctx, Retry::Backoff, &reason);
            }
            ResponseError::FencedInstanceId => self.fail(
                ctx,
                Error::Fenced {
                    code: Some(ErrorCode::of(code)),
                    message: format!(
                        "{api}: another consumer with group.instance.id {:?} took this member's place",
                        self.group_instance_id.as_deref().unwrap_or_default()
                    ),
                },
            ),
            code => self.fail(ctx, Error::from_code(code, reason)),
        }
    }

    pub(super) fn on_join_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let body = match result {
            Ok((ResponseBody::JoinGroup(body), _)) => body,
            Ok(_) => {
                return self.fail(
                    ctx,
                    Error::Internal("unexpected response to JoinGroup".into()),
                )
            }
            Err(error) => {
                let reason = format!("JoinGroup failed: {error}");
                if error.is_retriable() {
                    ctx.mark_coordinator_unknown(reason.clone());
                }
                return self.join_failed(ctx, Retry::Backoff, &reason);
            }
        };
        if let Some(code) = ResponseError::try_from_code(body.error_code) {
            if code == ResponseError::MemberIdRequired {
                // KIP-394: the coordinator hands out the id; join again with it.
                self.generation.member_id = body.member_id.to_string();
            }
            return self.join_error(ctx, code, "JoinGroup");
        }
        self.join_backoff.on_success();
        self.generation = Generation {
            generation_id: body.generation_id,
            member_id: body.member_id.to_string(),
            protocol_name: body.protocol_name.as_ref().map(ToString::to_string),
        };
        self.transition(ctx, MemberState::CompletingRebalance);
        self.timers.reset_session(ctx.now);
        self.session_lapsed = false;
        let leader = body.leader.as_str() == body.member_id.as_str();
        tracing::info!(
            generation = body.generation_id,
            member_id = %body.member_id,
            leader,
            protocol = ?self.generation.protocol_name,
            "joined the group"
        );
        if !leader {
            ctx.subscriptions.set_group_subscription(BTreeSet::new());
            self.assignment_snapshot = None;
            return self.send_sync(ctx, Vec::new());
        }
        let members = match leader::decode_members(&body.members) {
            Ok(members) => members,
            Err(error) => return self.fail(ctx, error),
        };
        let topics = leader::group_topics(&members);
        ctx.subscriptions.set_group_subscription(topics.clone());
        if body.skip_assignment {
            // KIP-814: a static leader rejoining a stable group keeps the assignment; it only
            // needs the group's topics to notice metadata changes.
            self.assignment_snapshot = Some(leader::metadata_snapshot(ctx));
            return self.send_sync(ctx, Vec::new());
        }
        let missing = topics.iter().any(|t| ctx.metadata.topic(t).is_none());
        if missing {
            ctx.request_metadata_refresh();
            self.step = Step::LeaderMetadata {
                members,
                metadata_version: ctx.metadata_version,
                deadline: ctx.now + LEADER_METADATA_WAIT,
            };
        } else {
            self.assign_and_sync(ctx, &members);
        }
    }

    /// The leader: runs the group's assignor and sends the assignments in SyncGroup.
    fn assign_and_sync(&mut self, ctx: &mut ManagerContext<'_>, members: &[MemberSubscription]) {
        let protocol = self.generation.protocol_name.clone().unwrap_or_default();
        let Some(assignor) = self.assignors.iter().find(|a| a.name() == protocol) else {
            return self.fail(
                ctx,
                Error::Fatal {
                    code: Some(ErrorCode::INCONSISTENT_GROUP_PROTOCOL),
                    message: format!(
                        "the group chose assignor {protocol:?}, which this member did not offer"
                    ),
                },
            );
        };
        match leader::assign(ctx, assignor.as_ref(), members) {
            Ok((assignments, snapshot)) => {
                self.assignment_snapshot = Some(snapshot);
                self.send_sync(ctx, assignments);
            }
            Err(error) => self.fail(ctx, error),
        }
    }

    fn send_sync(&mut self, ctx: &mut ManagerContext<'_>, assignments: Vec<(String, Bytes)>) {
        let Some(coordinator) = ctx.coordinator else {
            return self.join_failed(
                ctx,
                Retry::Backoff,
                "the coordinator is unknown before SyncGroup",
            );
        };
        let token = self.token();
        let request = requests::sync_group(self, assignments);
        tracing::debug!(
            generation = self.generation.generation_id,
            "sending SyncGroup"
        );
        self.outbox.push(requests::unsent(
            coordinator,
            None,
            request.into(),
            token,
            None,
        ));
        self.step = Step::Syncing { token };
    }

    pub(super) fn on_sync_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let body = match result {
            Ok((ResponseBody::SyncGroup(body), _)) => body,
            Ok(_) => {
                return self.fail(
                    ctx,
                    Error::Internal("unexpected response to SyncGroup".into()),
                )
            }
            Err(error) => {
                let reason = format!("SyncGroup failed: {error}");
                if error.is_retriable() {
                    ctx.mark_coordinator_unknown(reason.clone());
                }
                return self.join_failed(ctx, Retry::Backoff, &reason);
            }
        };
        if let Some(code) = ResponseError::try_from_code(body.error_code) {
            return self.join_error(ctx, code, "SyncGroup");
        }
        let assignment = match decode_assignment(&body.assignment) {
            Ok(assignment) => assignment,
            Err(error) => {
                // Java fails the member: an assignment it cannot read is not one it can own.
                return self.fail(
                    ctx,
                    Error::Fatal {
                        code: None,
                        message: format!("cannot read the assignment from SyncGroup: {error}"),
                    },
                );
            }
        };
        self.transition(ctx, MemberState::Stable);
        self.refusals.on_success();
        self.step = Step::Idle;
        self.timers.reset_session(ctx.now);
        self.session_lapsed = false;
        self.needs_join_prepare = true;
        self.rejoin_reason = None;
        let protocol = self.generation.protocol_name.clone();
        let generation_id = self.generation.generation_id;
        if let Some(assignor) = self
            .assignors
            .iter_mut()
            .find(|a| Some(a.name()) == protocol.as_deref())
        {
            assignor.on_assignment(&assignment, generation_id);
        }
        let assigned: BTreeSet<TopicPartition> = assignment.partitions.into_iter().collect();
        tracing::info!(generation = generation_id, ?assigned, "received assignment");
        self.on_join_complete(ctx, assigned);
    }

    /// Java's `onJoinComplete`: revoke what moved away (cooperative; then rejoin so it can be
    /// assigned), then assign.
    fn on_join_complete(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        assigned: BTreeSet<TopicPartition>,
    ) {
        let subscribed = ctx.subscriptions.subscribed_topics();
        if assigned.iter().any(|tp| !subscribed.contains(&*tp.topic)) {
            self.request_rejoin("the assignment has topics this member does not subscribe to");
        }
        let owned = ctx.subscriptions.assigned();
        let added: BTreeSet<TopicPartition> = assigned.difference(&owned).cloned().collect();
        let revoked: BTreeSet<TopicPartition> = owned.difference(&assigned).cloned().collect();
        if revoked.is_empty() {
            return self.start_assign(ctx, assigned, added);
        }
        if self.protocol == RebalanceProtocol::Cooperative {
            self.request_rejoin("partitions were revoked; rejoining so they can be reassigned");
        }
        stop_fetching(ctx, &revoked);
        let remaining: BTreeSet<TopicPartition> = owned.difference(&revoked).cloned().collect();
        let id = self.listener_calls.request(
            ctx,
            RebalanceCallback::Revoked,
            revoked,
            remaining.clone(),
        );
        self.step = Step::RevokeCallback {
            id,
            remaining,
            assigned,
            added,
        };
    }

    /// New partitions are assigned but not fetchable until `on_partitions_assigned` has run
    /// (which Java calls even with nothing new).
    pub(super) fn start_assign(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        assigned: BTreeSet<TopicPartition>,
        added: BTreeSet<TopicPartition>,
    ) {
        set_assignment(ctx, &assigned, &added);
        let id =
            self.listener_calls
                .request(ctx, RebalanceCallback::Assigned, added.clone(), assigned);
        self.step = Step::AssignCallback { id, added };
    }
}
