//! Group membership on the background side: who this member is in the group, when it joins,
//! and the rebalance steps that run the application's listener (via callback-needed events).
//!
//! Two protocols, chosen by `group.protocol`: classic (JoinGroup / SyncGroup / Heartbeat /
//! LeaveGroup) in [`classic`], and KIP-848 (ConsumerGroupHeartbeat) in [`consumer`]. The loop
//! talks to either through [`Membership`]: it asks for requests, routes responses and
//! callback completions, and hands the commit manager the [`MemberIdentity`] to stamp commits
//! with.

pub(crate) mod classic;
pub(crate) mod consumer;
mod heartbeat;
mod repeated_failures;
mod state;

pub(crate) use classic::ClassicMembershipManager;
pub(crate) use consumer::ConsumerMembershipManager;
pub(crate) use state::MemberState;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::close_options::GroupMembershipOperation;
use crate::config::GroupProtocol;
use crate::error::Error;
use crate::internals::commit_request_manager::CommitRequestManager;
use crate::internals::completion::Completion;
use crate::internals::context::{GenerationReset, ManagerContext};
use crate::internals::events::{BackgroundEvent, RebalanceCallback};
use crate::internals::requests::{PollResult, ResponseBody};
use crate::internals::settings::ConsumerSettings;
use crate::network::NetworkError;
use crate::rt::Instant;
use crate::sabotage::{self, Sabotage};
use crate::types::TopicPartition;

/// What the rebalance metrics read from a membership (`rebalance-total`,
/// `rebalance-latency-*`, `failed-rebalance-total`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RebalanceStats {
    /// Rebalances completed: an assignment received and its `on_partitions_assigned` run.
    pub completed: u64,
    /// How long the last completed one took, in ms (its start to that callback's end).
    pub last_ms: u64,
    /// Rebalances that failed: classic, a JoinGroup or SyncGroup that failed (Java records
    /// one per failed join future); consumer protocol, a member fenced or failed while
    /// reconciling (Java's `maybeRecordRebalanceFailed`).
    pub failed: u64,
}

/// What a commit needs to know about the member (Java's `Generation` plus the state checks of
/// `generationIfStable` / `rebalanceInProgress`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberIdentity {
    /// The generation (classic) or member epoch (consumer protocol) the member belongs to,
    /// -1 outside the group.
    pub generation_id: i32,
    /// The member id, empty before the first join.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Whether the member is stable in its generation (classic) or has an epoch (consumer
    /// protocol): only then may it commit.
    pub stable: bool,
    /// Whether a rebalance is under way (commits then fail with REBALANCE_IN_PROGRESS rather
    /// than COMMIT_FAILED, telling the caller to poll and retry). Classic only.
    pub rebalancing: bool,
}

/// The membership manager of the configured `group.protocol`.
#[derive(Debug)]
pub(crate) enum Membership {
    /// `group.protocol=classic`.
    Classic(Box<ClassicMembershipManager>),
    /// `group.protocol=consumer` (KIP-848).
    Consumer(Box<ConsumerMembershipManager>),
}

impl Membership {
    /// The manager for the settings' group and protocol; `None` without a `group.id`.
    pub fn new(settings: &ConsumerSettings, now: Instant) -> Result<Option<Self>, Error> {
        Ok(match settings.group_protocol {
            GroupProtocol::Classic => {
                ClassicMembershipManager::new(settings, now)?.map(|m| Self::Classic(Box::new(m)))
            }
            GroupProtocol::Consumer => {
                ConsumerMembershipManager::new(settings, now).map(|m| Self::Consumer(Box::new(m)))
            }
        })
    }

    /// What commits must carry.
    pub fn identity(&self) -> MemberIdentity {
        match self {
            Self::Classic(m) => m.identity(),
            Self::Consumer(m) => m.identity(),
        }
    }

    /// Rebalances (reconciliations) completed and failed, and the last one's duration.
    pub fn rebalance_stats(&self) -> RebalanceStats {
        match self {
            Self::Classic(m) => m.rebalance_stats(),
            Self::Consumer(m) => m.rebalance_stats(),
        }
    }

    /// The generation (or member epoch) and member id for `group_metadata()`.
    pub fn group_metadata(&self) -> (i32, &str) {
        match self {
            Self::Classic(m) => {
                let g = m.generation();
                (g.generation_id, g.member_id.as_str())
            }
            Self::Consumer(m) => m.group_metadata(),
        }
    }

    /// Classic: whether the coordinator has not answered for a whole session while the member
    /// was in its generation. KIP-848 members learn that they were fenced from the
    /// coordinator's answers instead.
    pub fn session_lapsed(&self) -> bool {
        match self {
            Self::Classic(m) => m.session_lapsed(),
            Self::Consumer(_) => false,
        }
    }

    /// Whether a leave is under way.
    pub fn is_leaving(&self) -> bool {
        match self {
            Self::Classic(m) => m.is_leaving(),
            Self::Consumer(m) => m.is_leaving(),
        }
    }

    /// `unsubscribe` / `close`.
    pub fn leave(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        completion: Option<Completion<()>>,
        operation: GroupMembershipOperation,
    ) {
        match self {
            Self::Classic(m) => m.leave(completion, operation),
            Self::Consumer(m) => m.leave(ctx, completion, operation),
        }
    }

    /// The application polled.
    pub fn on_poll(&mut self, ctx: &mut ManagerContext<'_>, acknowledged: bool) {
        match self {
            Self::Classic(m) => m.on_poll(ctx, acknowledged),
            Self::Consumer(m) => m.on_poll(ctx, acknowledged),
        }
    }

    /// The subscription changed. The consumer protocol sends the new one with the next
    /// heartbeat (the field changed); nothing else to do.
    pub fn on_subscription_changed(&mut self) {
        if let Self::Classic(m) = self {
            m.on_subscription_changed();
        }
    }

    /// `enforce_rebalance`: the coordinator drives every rebalance of the consumer protocol,
    /// so only classic members act on it (as in Java's `AsyncKafkaConsumer`).
    pub fn enforce_rebalance(&mut self, reason: String) {
        match self {
            Self::Classic(m) => m.enforce_rebalance(reason),
            Self::Consumer(_) => {
                tracing::debug!(
                    reason,
                    "enforce_rebalance has no effect with group.protocol=consumer"
                );
            }
        }
    }

    /// Polls the manager.
    pub fn poll(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
    ) -> PollResult {
        match self {
            Self::Classic(m) => m.poll(ctx, commit),
            Self::Consumer(m) => m.poll(ctx, commit),
        }
    }

    /// Routes a response.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        match self {
            Self::Classic(m) => m.on_response(ctx, token, result),
            Self::Consumer(m) => m.on_response(ctx, token, result),
        }
    }

    /// A listener callback is over.
    pub fn on_callback_completed(&mut self, ctx: &mut ManagerContext<'_>, id: u64) {
        match self {
            Self::Classic(m) => m.on_callback_completed(ctx, id),
            Self::Consumer(m) => m.on_callback_completed(ctx, id),
        }
    }

    /// A commit asked for a rejoin (classic REBALANCE_IN_PROGRESS; the consumer protocol
    /// never does).
    pub fn request_rejoin(&mut self, reason: String) {
        if let Self::Classic(m) = self {
            m.request_rejoin(reason);
        }
    }

    /// A commit saw the generation refused. Classic resets it; with the consumer protocol an
    /// UNKNOWN_MEMBER_ID for the current epoch fences the member (see
    /// `ConsumerMembershipManager::on_commit_unknown_member`).
    pub fn on_generation_reset(&mut self, ctx: &mut ManagerContext<'_>, reset: &GenerationReset) {
        match self {
            Self::Classic(m) => m.on_generation_reset(ctx, reset),
            Self::Consumer(m) if !reset.keep_member_id => m.on_commit_unknown_member(ctx, reset),
            Self::Consumer(_) => {}
        }
    }

    /// A fatal membership error since the last call: the loop fails pending commits with it.
    pub fn take_new_fatal(&mut self) -> Option<Error> {
        match self {
            Self::Classic(_) => None,
            Self::Consumer(m) => m.take_new_fatal(),
        }
    }
}

/// Java's `canCommit`: a rebalance step that commits consumed offsets before revoking
/// partitions starts only in the managers' round right after an acknowledged `poll` — the one
/// moment the application has processed everything it was given and is not collecting
/// records. Started from the background at any other time, the commit would miss records the
/// application is handed meanwhile, and the next owner would consume them again
/// (KAFKA-14196).
#[derive(Debug, Default)]
pub(crate) struct PollGate {
    /// An acknowledged poll arrived since the last round.
    polled: bool,
    /// A poll was asked for and has not come yet.
    requested: bool,
}

impl PollGate {
    /// The application polled; `acknowledged` when it waits for this round.
    pub fn on_poll(&mut self, acknowledged: bool) {
        if acknowledged {
            self.polled = true;
            self.requested = false;
        }
    }

    /// Whether the step may start in this round; if not, asks for a poll (once).
    pub fn open(&mut self, ctx: &mut ManagerContext<'_>) -> bool {
        if sabotage::active(Sabotage::ReconcileWithoutPoll) {
            return true;
        }
        if std::mem::take(&mut self.polled) {
            return true;
        }
        if !self.requested {
            self.requested = true;
            ctx.effects.poll_requested = true;
        }
        false
    }

    /// The round is over: a poll it did not use is stale for the next.
    pub fn end_round(&mut self) {
        self.polled = false;
    }
}

/// Numbers the listener calls a manager asks the application side for.
#[derive(Debug, Default)]
pub(crate) struct ListenerCalls {
    next_id: u64,
    /// The latest `on_partitions_revoked` call's "became lost" flag (see
    /// [`ListenerCalls::revocation_lost`]).
    last_revoke: Option<Arc<AtomicBool>>,
}

impl ListenerCalls {
    /// Asks the application side to run a listener method; returns the id its completion
    /// carries (the step that waits for it keeps the id).
    pub fn request(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        callback: RebalanceCallback,
        partitions: BTreeSet<TopicPartition>,
        assignment_after: BTreeSet<TopicPartition>,
    ) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        tracing::info!(?callback, ?partitions, id, "rebalance callback needed");
        let became_lost = Arc::new(AtomicBool::new(false));
        if callback == RebalanceCallback::Revoked {
            self.last_revoke = Some(Arc::clone(&became_lost));
        }
        ctx.effects
            .background_events
            .push(BackgroundEvent::RebalanceCallbackNeeded {
                id,
                callback,
                partitions,
                assignment_after,
                became_lost,
            });
        id
    }

    /// The member lost its generation (poll timer, fencing, a reset generation) while an
    /// `on_partitions_revoked` call is out: if the application has not started it yet, it runs
    /// `on_partitions_lost` instead. The group may already have handed the partitions to
    /// others, so the application must not treat them as still its own (commit them, flush
    /// state for them) — what Java's application thread would see, since it only learns of
    /// the rebalance when it polls, after the reset.
    pub fn revocation_lost(&mut self) {
        if let Some(flag) = self.last_revoke.take() {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

/// Java's `updatePatternSubscription`: a `subscribe_pattern` subscription is matched again
/// against every topic of the latest metadata, whatever the group protocol — a classic member
/// rejoins when the matched set changed, a KIP-848 member sends the new names with its next
/// heartbeat. A change asks for metadata of the newly matched topics.
pub(crate) fn match_pattern_subscription(ctx: &mut ManagerContext<'_>) {
    if !ctx.subscriptions.needs_all_topics_metadata()
        || (sabotage::active(Sabotage::PatternNotRematched)
            && !ctx.subscriptions.subscribed_topics().is_empty())
    {
        return;
    }
    let topics: Vec<&str> = ctx
        .metadata
        .topics()
        .filter(|t| !(t.is_internal && ctx.settings.exclude_internal_topics))
        .map(|t| t.name.as_str())
        .collect();
    if ctx.subscriptions.match_pattern(topics) {
        ctx.request_metadata_refresh();
    }
}

/// Stops fetching `partitions` and drops their buffered and in-flight data, ahead of a
/// revoked or lost callback.
pub(crate) fn stop_fetching(ctx: &mut ManagerContext<'_>, partitions: &BTreeSet<TopicPartition>) {
    if sabotage::active(Sabotage::FetchRevokedPartitions) {
        return;
    }
    ctx.subscriptions.mark_pending_revocation(partitions);
    for tp in partitions {
        ctx.buffer.drop_buffered(tp);
    }
}

/// Replaces the group-assigned partitions in the subscription state and the fetch buffer;
/// `awaiting_callback` are not fetched until `on_partitions_assigned` has run.
pub(crate) fn set_assignment(
    ctx: &mut ManagerContext<'_>,
    assigned: &BTreeSet<TopicPartition>,
    awaiting_callback: &BTreeSet<TopicPartition>,
) {
    ctx.subscriptions
        .assign_from_subscribed(assigned, awaiting_callback);
    ctx.buffer.set_assignment(assigned);
}
