//! Offset commits and committed-offset fetches (Java's `CommitRequestManager`).
//!
//! - `commit_sync` retries retriable errors until its deadline (the reaper fails it then);
//!   `commit_async` and auto-commit never retry. Commits go out in the order they were asked
//!   for, on the coordinator's one connection, so they complete in order too.
//! - Auto-commit commits, every `auto.commit.interval.ms`, the positions the application sent
//!   with its latest poll event: only records returned by earlier polls (KAFKA-2942/18641).
//! - OffsetFetch serves `committed()` and initializes the positions of newly assigned partitions
//!   (the committed offset, or a reset when there is none).
//! - Everything waits for the coordinator, level-triggered, up to its deadline; when closing
//!   with the coordinator unknown, pending commits fail at once (KAFKA-19357).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
};
use kafka_protocol::protocol::{Message, StrBytes};

use super::completion::{Completion, CompletionReceiver};
use super::context::{GenerationReset, ManagerContext};
use super::events::CommittedOffsets;
use super::fetch_buffer::FetchPosition;
use super::membership::MemberIdentity;
use super::node_versions::VersionChoice;
use super::request_state::RequestState;
use super::requests::{
    group_runs, topic_name, PollResult, RequestBody, ResponseBody, UnsentRequest,
};
use super::subscription_state::{FetchState, FetchStateId};
use crate::config::GroupProtocol;
use crate::error::Error;
use crate::error::ErrorCode;
use crate::network::{NetworkError, Target};
use crate::protocol::ResponseError;
use crate::rt::{Duration, Instant};
use crate::sabotage::{self, Sabotage};
use crate::types::{OffsetAndMetadata, TopicPartition};

/// The first OffsetFetch version with the batched `groups` layout.
const GROUPS_VERSION: i16 = 8;
/// Generation/epoch of a consumer outside any group (assign mode).
const NO_GENERATION: i32 = -1;

/// Commits with a completion: the application awaits `Some`; auto-commits have none.
struct PendingCommit {
    offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
    completion: Option<Completion<()>>,
    retry: bool,
    state: RequestState,
    token: Option<u64>,
    sent_at: Option<Instant>,
    /// The group generation the request carried (subscribe mode).
    sent_generation: Option<i32>,
    /// The auto-commit before a reconciliation revokes partitions: with the consumer
    /// protocol, STALE_MEMBER_EPOCH is retried with the newest epoch (Java's
    /// `maybeAutoCommitSyncBeforeRevocation`).
    before_revocation: bool,
}

enum FetchPurpose {
    /// `committed()`.
    User(Completion<CommittedOffsets>),
    /// Initializing positions of newly assigned partitions, each for the instance of its
    /// `Initializing` state the fetch was made for: a partition seeked, or unassigned and
    /// assigned again, before the answer comes is no longer waiting for it.
    Positions(BTreeMap<TopicPartition, FetchStateId>),
}

struct PendingOffsetFetch {
    partitions: BTreeSet<TopicPartition>,
    purpose: FetchPurpose,
    state: RequestState,
    token: Option<u64>,
}

/// How a response turned out.
enum Outcome<T> {
    Done(T),
    Retry(Error),
    Fail(Error),
}

/// The commit manager.
pub(crate) struct CommitRequestManager {
    group_id: Option<String>,
    retry_backoff_ms: u64,
    retry_backoff_max_ms: u64,
    auto_commit_interval: Option<Duration>,
    next_auto_commit_at: Option<Instant>,
    latest_consumed: BTreeMap<TopicPartition, OffsetAndMetadata>,
    /// The highest offset per partition this member has sent in any commit since its consumed
    /// position last moved back (a seek or a reset). Auto-commits never commit a partition
    /// below it: a `commit_sync` of the positions (the one `close` makes, or the
    /// application's) may have committed past the poll-start snapshot auto-commits use, and
    /// committing the snapshot after it would move the group's offset back (KAFKA-16033).
    committed_floor: BTreeMap<TopicPartition, i64>,
    commits: VecDeque<PendingCommit>,
    fetches: Vec<PendingOffsetFetch>,
    next_token: u64,
    closing: bool,
    /// Latency of the last successful commit, for metrics.
    pub last_commit_latency: Option<Duration>,
}

impl CommitRequestManager {
    /// A manager for the settings' group; auto-commit only with a group and
    /// `enable.auto.commit`.
    pub fn new(settings: &super::settings::ConsumerSettings) -> Self {
        Self {
            group_id: settings.group_id.clone(),
            retry_backoff_ms: settings.retry_backoff_ms,
            retry_backoff_max_ms: settings.retry_backoff_max_ms,
            auto_commit_interval: settings
                .auto_commit()
                .then(|| Duration::from_millis(settings.auto_commit_interval_ms)),
            next_auto_commit_at: None,
            latest_consumed: BTreeMap::new(),
            committed_floor: BTreeMap::new(),
            commits: VecDeque::new(),
            fetches: Vec::new(),
            next_token: 0,
            closing: false,
            last_commit_latency: None,
        }
    }

    fn request_state(&self) -> RequestState {
        RequestState::new(self.retry_backoff_ms, self.retry_backoff_max_ms)
    }

    /// A poll started with these consumed positions (records returned by earlier polls).
    pub fn on_poll(&mut self, now: Instant, offsets: BTreeMap<TopicPartition, OffsetAndMetadata>) {
        // A consumed position that moved back was sought or reset: commits below the floor
        // are the application's wish from then on. A partition no longer consumed drops it.
        let previous = &self.latest_consumed;
        self.committed_floor.retain(|tp, _| {
            offsets
                .get(tp)
                .is_some_and(|new| previous.get(tp).is_none_or(|old| new.offset >= old.offset))
        });
        self.latest_consumed = offsets;
        if let (Some(interval), None) = (self.auto_commit_interval, self.next_auto_commit_at) {
            self.next_auto_commit_at = Some(now + interval);
        }
    }

    /// Auto-commits `offsets` now (before the assignment changes), without retries.
    pub fn auto_commit_now(&mut self, offsets: BTreeMap<TopicPartition, OffsetAndMetadata>) {
        if self.auto_commit_interval.is_some() && !offsets.is_empty() {
            tracing::debug!(
                partitions = offsets.len(),
                "auto-commit before assignment change"
            );
            self.enqueue_commit(offsets, None, false);
        }
    }

    fn enqueue_commit(
        &mut self,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
        completion: Option<Completion<()>>,
        retry: bool,
    ) {
        let state = self.request_state();
        self.commits.push_back(PendingCommit {
            offsets,
            completion,
            retry,
            state,
            token: None,
            sent_at: None,
            sent_generation: None,
            before_revocation: false,
        });
    }

    /// The auto-commit before a rebalance revokes partitions (Java's `onJoinPrepare` commit):
    /// what earlier polls returned for the assigned partitions, retried until `deadline`.
    /// `None` when there is nothing to commit.
    pub fn commit_before_revocation(
        &mut self,
        ctx: &ManagerContext<'_>,
        deadline: Instant,
    ) -> Option<(Completion<()>, CompletionReceiver<()>)> {
        self.auto_commit_interval?;
        if sabotage::active(Sabotage::NoCommitBeforeRevocation) {
            return None;
        }
        let offsets: BTreeMap<_, _> = self
            .latest_consumed
            .iter()
            .filter(|(tp, _)| ctx.subscriptions.is_assigned(tp))
            .map(|(tp, o)| (tp.clone(), o.clone()))
            .collect();
        if offsets.is_empty() {
            return None;
        }
        tracing::debug!(partitions = offsets.len(), "auto-commit before revocation");
        let timeout_ms = u64::try_from((deadline - ctx.now).as_millis()).unwrap_or(u64::MAX);
        let (completion, receiver) =
            Completion::new("auto-commit before revocation", Some(deadline), timeout_ms);
        self.enqueue_commit(offsets, Some(completion.clone()), true);
        if let Some(commit) = self.commits.back_mut() {
            commit.before_revocation = true;
        }
        Some((completion, receiver))
    }

    /// `commit_sync` (`retry`) or `commit_async`.
    pub fn commit(
        &mut self,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
        retry: bool,
        completion: Completion<()>,
    ) {
        if self.group_id.is_none() {
            completion.complete(Err(Error::IllegalState(
                "committing offsets needs a group.id".to_owned(),
            )));
            return;
        }
        if offsets.is_empty() {
            completion.complete(Ok(()));
            return;
        }
        self.enqueue_commit(offsets, Some(completion), retry);
    }

    /// `committed()`.
    pub fn fetch_committed(
        &mut self,
        partitions: BTreeSet<TopicPartition>,
        completion: Completion<CommittedOffsets>,
    ) {
        if self.group_id.is_none() {
            completion.complete(Err(Error::IllegalState(
                "fetching committed offsets needs a group.id".to_owned(),
            )));
            return;
        }
        if partitions.is_empty() {
            completion.complete(Ok(BTreeMap::new()));
            return;
        }
        let state = self.request_state();
        self.fetches.push(PendingOffsetFetch {
            partitions,
            purpose: FetchPurpose::User(completion),
            state,
            token: None,
        });
    }

    /// Close started: no new auto-commits; pending ones drain, or fail without a coordinator.
    pub fn signal_close(&mut self) {
        self.closing = true;
        self.auto_commit_interval = None;
    }

    /// Whether commits are still pending (close waits for them).
    pub fn has_pending_commits(&self) -> bool {
        !self.commits.is_empty()
    }

    /// Fails everything waiting (a fatal coordinator error).
    pub fn fail_all(&mut self, error: &Error) {
        for commit in self.commits.drain(..) {
            if let Some(c) = commit.completion {
                c.complete(Err(error.clone()));
            }
        }
        for fetch in self.fetches.drain(..) {
            if let FetchPurpose::User(c) = fetch.purpose {
                c.complete(Err(error.clone()));
            }
        }
    }

    /// Sends what can be sent.
    pub fn poll(&mut self, ctx: &mut ManagerContext<'_>) -> PollResult {
        let mut result = PollResult::default();
        let Some(group_id) = self.group_id.clone() else {
            return result;
        };
        self.forget_unassigned(ctx);
        self.maybe_fetch_positions(ctx);
        self.maybe_auto_commit(ctx);
        if let Some(at) = self
            .next_auto_commit_at
            .filter(|_| self.auto_commit_interval.is_some())
        {
            result.wake_at(at);
        }
        // Drop what nobody waits for any more (reaped, or the caller went away).
        self.commits
            .retain(|c| c.token.is_some() || c.completion.as_ref().is_none_or(|c| !c.is_done()));
        self.fetches.retain(|f| {
            f.token.is_some() || !matches!(&f.purpose, FetchPurpose::User(c) if c.is_done())
        });

        let Some(coordinator) = ctx.coordinator else {
            if self.closing {
                // KAFKA-19357: closing stops coordinator discovery from mattering; waiting
                // would only hang close until its timeout.
                let error = Error::CommitFailed {
                    code: None,
                    message: "the group coordinator is unknown while closing".to_owned(),
                };
                self.fail_all(&error);
            }
            return result;
        };
        if let Some(member) = ctx.member.filter(|m| !m.stable) {
            self.fail_unsent_outside_generation(member.rebalancing);
        }
        let mut emptied = false;
        for commit in &mut self.commits {
            // In queue order, so the floor includes what this round already sent.
            let current = |tp: &TopicPartition| of_current_topic(ctx, tp);
            if !prepare_unsent_auto_commit(
                commit,
                &self.latest_consumed,
                &self.committed_floor,
                current,
            ) {
                emptied = true;
                continue;
            }
            if !commit.state.can_send(ctx.now) {
                if let Some(at) = commit.state.backoff_until(ctx.now) {
                    result.wake_at(at);
                }
                continue;
            }
            for (tp, offset) in &commit.offsets {
                let floor = self
                    .committed_floor
                    .entry(tp.clone())
                    .or_insert(offset.offset);
                *floor = (*floor).max(offset.offset);
            }
            self.next_token += 1;
            commit.token = Some(self.next_token);
            commit.sent_at = Some(ctx.now);
            commit.sent_generation = ctx.member.map(|m| m.generation_id);
            commit.state.on_send();
            tracing::debug!(
                partitions = commit.offsets.len(),
                auto = commit.completion.is_none(),
                "sending OffsetCommit"
            );
            result.requests.push(UnsentRequest {
                timeout_ms: None,
                target: Target::Node(coordinator),
                version: None,
                body: RequestBody::OffsetCommit(commit_request(
                    &group_id,
                    ctx.member,
                    &commit.offsets,
                )),
                token: self.next_token,
            });
        }
        if emptied {
            self.commits
                .retain(|c| c.token.is_some() || !c.offsets.is_empty());
        }
        // Built for the coordinator's own versions (the layout changed in v8); while its
        // connection is not up, the loop connects it and polls us again.
        let version = match ctx
            .version_for::<OffsetFetchRequest>(coordinator, OffsetFetchRequest::VERSIONS)
        {
            VersionChoice::Version(version) => version,
            VersionChoice::NotConnected => return result,
            VersionChoice::Unsupported(source) => {
                let error = Error::Network(NetworkError::UnsupportedApi {
                    broker: format!("coordinator (connection {coordinator})"),
                    source,
                });
                for index in (0..self.fetches.len()).rev() {
                    let fetch = &self.fetches[index];
                    if fetch.token.is_none() && fetch.state.can_send(ctx.now) {
                        self.fail_fetch(ctx, index, error.clone());
                    }
                }
                return result;
            }
        };
        for fetch in &mut self.fetches {
            if !fetch.state.can_send(ctx.now) {
                if let Some(at) = fetch.state.backoff_until(ctx.now) {
                    result.wake_at(at);
                }
                continue;
            }
            self.next_token += 1;
            fetch.token = Some(self.next_token);
            fetch.state.on_send();
            result.requests.push(UnsentRequest {
                timeout_ms: None,
                target: Target::Node(coordinator),
                version: Some(version),
                body: RequestBody::OffsetFetch(offset_fetch_request(
                    &group_id,
                    &fetch.partitions,
                    version,
                    epoch_member(ctx),
                )),
                token: self.next_token,
            });
        }
        result
    }

    /// A poll snapshot's position belongs to the ownership it was taken in: once the partition
    /// is no longer assigned (revoked, lost, unassigned) it is forgotten, with its committed
    /// floor. Kept, it outlived a loss and a reassignment: a member whose poll stalled past
    /// `max.poll.interval.ms` reported the position after the record it was stuck on, lost the
    /// partition, got it back positioned at the committed offset before that record, and its
    /// next auto-commit committed the stale position — the record, not yet processed, counted
    /// as consumed (family-zombie seed 114).
    fn forget_unassigned(&mut self, ctx: &ManagerContext<'_>) {
        if sabotage::active(Sabotage::StalePositionSurvivesLoss) {
            return;
        }
        self.latest_consumed
            .retain(|tp, _| ctx.subscriptions.is_assigned(tp));
        self.committed_floor
            .retain(|tp, _| ctx.subscriptions.is_assigned(tp));
    }

    /// Java's `sendOffsetCommitRequest` outside a stable generation: a group member commits
    /// only within one, so unsent commits fail — REBALANCE_IN_PROGRESS while a rebalance is
    /// under way (poll, then retry), COMMIT_FAILED when the member is out of the group.
    /// Auto-commits are dropped quietly: the next one commits newer positions.
    fn fail_unsent_outside_generation(&mut self, rebalancing: bool) {
        self.commits.retain(|commit| {
            if commit.token.is_some() {
                return true;
            }
            if let Some(completion) = &commit.completion {
                let error = if rebalancing {
                    Error::RebalanceInProgress {
                        message: "the offset commit cannot be completed since the consumer is \
                                  undergoing a rebalance; complete it with poll() and retry"
                            .to_owned(),
                    }
                } else {
                    Error::CommitFailed {
                        code: None,
                        message: "the consumer is not part of an active group; it rejoins in \
                                  poll()"
                            .to_owned(),
                    }
                };
                completion.complete(Err(error));
            }
            false
        });
    }

    /// Newly assigned partitions start from their committed offsets.
    fn maybe_fetch_positions(&mut self, ctx: &mut ManagerContext<'_>) {
        let covered: BTreeSet<(&TopicPartition, &FetchStateId)> = self
            .fetches
            .iter()
            .filter_map(|f| match &f.purpose {
                FetchPurpose::Positions(ids) => Some(ids.iter()),
                FetchPurpose::User(_) => None,
            })
            .flatten()
            .collect();
        let needed: BTreeMap<TopicPartition, FetchStateId> = ctx
            .subscriptions
            .partitions_in_with_ids(FetchState::Initializing)
            .into_iter()
            .filter(|(tp, id)| !covered.contains(&(tp, id)))
            .collect();
        if !needed.is_empty() {
            tracing::debug!(
                ?needed,
                "fetching committed offsets to initialize positions"
            );
            let state = self.request_state();
            self.fetches.push(PendingOffsetFetch {
                partitions: needed.keys().cloned().collect(),
                purpose: FetchPurpose::Positions(needed),
                state,
                token: None,
            });
        }
    }

    fn maybe_auto_commit(&mut self, ctx: &mut ManagerContext<'_>) {
        let (Some(interval), Some(at)) = (self.auto_commit_interval, self.next_auto_commit_at)
        else {
            return;
        };
        if ctx.now < at {
            return;
        }
        self.next_auto_commit_at = Some(ctx.now + interval);
        let auto_in_flight = self.commits.iter().any(|c| c.completion.is_none());
        if auto_in_flight {
            return;
        }
        let offsets: BTreeMap<_, _> = self
            .latest_consumed
            .iter()
            .filter(|(tp, _)| ctx.subscriptions.is_assigned(tp))
            .map(|(tp, o)| (tp.clone(), o.clone()))
            .collect();
        if !offsets.is_empty() {
            tracing::debug!(partitions = offsets.len(), "auto-commit on interval");
            self.enqueue_commit(offsets, None, false);
        }
    }

    /// Handles an OffsetCommit or OffsetFetch response.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        if let Some(index) = self.commits.iter().position(|c| c.token == Some(token)) {
            self.on_commit_response(ctx, index, result);
        } else if let Some(index) = self.fetches.iter().position(|f| f.token == Some(token)) {
            self.on_fetch_response(ctx, index, result);
        }
    }

    fn on_commit_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        index: usize,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let sent_generation = self.commits.get(index).and_then(|c| c.sent_generation);
        let before_revocation = self.commits.get(index).is_some_and(|c| c.before_revocation);
        let outcome = match result {
            Ok((ResponseBody::OffsetCommit(body), _)) => {
                match commit_outcome(ctx, &body, sent_generation) {
                    // Retried (until the rebalance timeout) with the epoch the next heartbeat
                    // brings; any other commit fails with COMMIT_FAILED (KAFKA-16033).
                    Outcome::Fail(error) if before_revocation && is_stale_member_epoch(&error) => {
                        Outcome::Retry(error)
                    }
                    // A deleted topic never comes back: retrying would hold the revocation
                    // for the whole rebalance timeout (KAFKA-16224, KAFKA-13310's twin).
                    Outcome::Retry(error)
                        if before_revocation
                            && error.code() == Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
                            && !sabotage::active(Sabotage::UnknownTopicCommitRetried) =>
                    {
                        Outcome::Fail(error)
                    }
                    outcome => outcome,
                }
            }
            Ok(_) => Outcome::Fail(Error::Internal(
                "unexpected response to OffsetCommit".into(),
            )),
            Err(error) => network_outcome(ctx, error),
        };
        let Some(commit) = self.commits.get_mut(index) else {
            return;
        };
        commit.token = None;
        match outcome {
            Outcome::Done(()) => {
                commit.state.on_success();
                let latency = commit.sent_at.map(|at| ctx.now - at);
                self.last_commit_latency = latency;
                tracing::debug!(
                    partitions = commit.offsets.len(),
                    ?latency,
                    "offsets committed"
                );
                if let Some(c) = self.commits.remove(index).and_then(|c| c.completion) {
                    c.complete(Ok(()));
                }
            }
            Outcome::Retry(error) if commit.retry => {
                tracing::debug!(%error, "commit failed, retrying");
                commit.state.on_failure(ctx.now, ctx.rng);
            }
            Outcome::Retry(error) | Outcome::Fail(error) => {
                let auto = commit.completion.is_none();
                tracing::warn!(%error, auto, "commit failed");
                if auto && error.is_retriable() {
                    // Try the next auto-commit sooner than a full interval (Java: backoff).
                    self.next_auto_commit_at =
                        Some(ctx.now + Duration::from_millis(self.retry_backoff_ms));
                }
                if let Some(c) = self.commits.remove(index).and_then(|c| c.completion) {
                    c.complete(Err(error));
                }
            }
        }
    }

    fn on_fetch_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        index: usize,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let outcome = match result {
            Ok((ResponseBody::OffsetFetch(body), version)) => {
                match fetch_outcome(ctx, &body, version) {
                    // Retried with the newest epoch while the member has one; never a fall-back
                    // to the reset policy.
                    Outcome::Fail(error)
                        if is_stale_member_epoch(&error) && epoch_member(ctx).is_some() =>
                    {
                        Outcome::Retry(error)
                    }
                    outcome => outcome,
                }
            }
            Ok(_) => Outcome::Fail(Error::Internal("unexpected response to OffsetFetch".into())),
            Err(error) => network_outcome(ctx, error),
        };
        let Some(fetch) = self.fetches.get_mut(index) else {
            return;
        };
        fetch.token = None;
        match outcome {
            Outcome::Done(offsets) => {
                let fetch = self.fetches.remove(index);
                match fetch.purpose {
                    FetchPurpose::User(c) => {
                        let answer = fetch
                            .partitions
                            .iter()
                            .map(|tp| (tp.clone(), offsets.get(tp).cloned().flatten()))
                            .collect();
                        c.complete(Ok(answer));
                    }
                    FetchPurpose::Positions(ids) => {
                        initialize_positions(ctx, &ids, &offsets);
                    }
                }
            }
            Outcome::Retry(error) => {
                tracing::debug!(%error, "OffsetFetch failed, retrying");
                fetch.state.on_failure(ctx.now, ctx.rng);
            }
            Outcome::Fail(error) => self.fail_fetch(ctx, index, error),
        }
    }

    /// Fails the OffsetFetch at `index`: `committed()` gets the error; positions report it to
    /// the application and are fetched again after a backoff.
    fn fail_fetch(&mut self, ctx: &mut ManagerContext<'_>, index: usize, error: Error) {
        let fetch = self.fetches.remove(index);
        match fetch.purpose {
            FetchPurpose::User(c) => {
                c.complete(Err(error));
            }
            FetchPurpose::Positions(mut ids) => {
                tracing::warn!(%error, "cannot fetch committed offsets for positions");
                ctx.report(error);
                // Level-triggered: the partitions still initializing are fetched
                // again, after a backoff.
                ids.retain(|tp, id| ctx.subscriptions.is_current(tp, *id));
                if !ids.is_empty() {
                    let mut state = self.request_state();
                    state.on_failure(ctx.now, ctx.rng);
                    self.fetches.push(PendingOffsetFetch {
                        partitions: ids.keys().cloned().collect(),
                        purpose: FetchPurpose::Positions(ids),
                        state,
                        token: None,
                    });
                }
            }
        }
    }
}

/// Applies committed offsets to initializing partitions: a committed offset becomes the
/// position (validated first when it carries a leader epoch, KIP-320), none means a reset.
/// Only to partitions still in the `Initializing` state the fetch was made for: one seeked
/// meanwhile keeps the user's position, one unassigned and assigned again gets a fetch of its
/// own (another member may have committed in between).
fn initialize_positions(
    ctx: &mut ManagerContext<'_>,
    partitions: &BTreeMap<TopicPartition, FetchStateId>,
    offsets: &BTreeMap<TopicPartition, Option<OffsetAndMetadata>>,
) {
    for (tp, id) in partitions {
        let superseded = !ctx.subscriptions.is_current(tp, *id)
            || ctx.subscriptions.fetch_state(tp) != Some(FetchState::Initializing);
        if superseded && !sabotage::active(Sabotage::LateCommittedOffsetApplied) {
            tracing::debug!(partition = %tp, "dropping the committed offset of a superseded fetch");
            continue;
        }
        let committed = offsets
            .get(tp)
            .cloned()
            .flatten()
            .filter(|_| !sabotage::active(Sabotage::CommittedOffsetIgnored));
        match committed {
            Some(committed) => {
                let position = FetchPosition {
                    offset: committed.offset,
                    offset_epoch: committed.leader_epoch,
                    current_leader_epoch: ctx.leader(&tp.topic, tp.partition).map(|(_, e)| e),
                };
                ctx.buffer.set_position(tp, position);
                let next = if committed.leader_epoch.is_some() {
                    FetchState::AwaitingValidation
                } else {
                    FetchState::Fetching
                };
                tracing::info!(partition = %tp, offset = committed.offset,
                    "position initialized from committed offset");
                ctx.subscriptions.set_fetch_state(tp, next);
            }
            None => {
                let strategy = ctx.settings.auto_offset_reset;
                ctx.subscriptions
                    .set_fetch_state(tp, FetchState::AwaitingReset(strategy));
            }
        }
    }
}

/// Whether the consumed position of `tp` belongs to its topic as the consumer knows it now: the
/// topic is in the metadata, under the id the position was recorded with. An auto-commit of a
/// topic missing from metadata (deleted) is refused by the broker anyway, until the topic
/// exists again — and then it would put the old topic's position into the new one, whose
/// next owner would skip the new records below it (family-data-path-recreate seeds 230 and
/// 766). So the automatic commits leave such a partition out; an explicit commit is the
/// application's to make.
fn of_current_topic(ctx: &ManagerContext<'_>, tp: &TopicPartition) -> bool {
    if sabotage::active(Sabotage::AutoCommitIntoRecreatedTopic) {
        return true;
    }
    let Some(current) = ctx.metadata.topic_id(&tp.topic) else {
        return false;
    };
    ctx.buffer
        .incarnation(tp)
        .is_none_or(|recorded| current.is_nil() || recorded == current)
}

/// An unsent auto-commit about to go out: the commit before revocation takes the newest
/// consumed positions (KAFKA-16033), read when it is sent rather than when its last attempt
/// failed, since an interval auto-commit may have gone out during its backoff; every
/// auto-commit leaves out partitions below the committed floor — raised by the commits sent
/// before it in the same round too, or two auto-commits from different snapshots go out
/// together and the second moves the offset back (family-lost-commits seeds 0 and 34). One
/// left with nothing to commit is done: returns false, and the caller drops it.
fn prepare_unsent_auto_commit(
    commit: &mut PendingCommit,
    latest: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    floor: &BTreeMap<TopicPartition, i64>,
    of_current_topic: impl Fn(&TopicPartition) -> bool,
) -> bool {
    if commit.token.is_some() || !(commit.before_revocation || commit.completion.is_none()) {
        return true;
    }
    if commit.before_revocation {
        for (tp, offset) in &mut commit.offsets {
            if let Some(newest) = latest.get(tp) {
                *offset = newest.clone();
            }
        }
    }
    commit.offsets.retain(|tp, offset| {
        let above_floor = floor.get(tp).is_none_or(|f| offset.offset >= *f)
            || sabotage::active(Sabotage::AutoCommitIgnoresFloor);
        above_floor && of_current_topic(tp)
    });
    if !commit.offsets.is_empty() {
        return true;
    }
    tracing::debug!("auto-commit left with nothing above what was committed");
    if let Some(c) = &commit.completion {
        c.complete(Ok(()));
    }
    false
}

fn commit_request(
    group_id: &str,
    member: Option<&MemberIdentity>,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
) -> OffsetCommitRequest {
    let topics = group_runs(offsets.iter().map(|(tp, offset)| {
        let partition = OffsetCommitRequestPartition::default()
            .with_partition_index(tp.partition)
            .with_committed_offset(offset.offset)
            .with_committed_leader_epoch(offset.leader_epoch.unwrap_or(-1))
            .with_committed_metadata(Some(StrBytes::from_string(offset.metadata.clone())));
        (&tp.topic, partition)
    }))
    .into_iter()
    .map(|(topic, partitions)| {
        OffsetCommitRequestTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(partitions)
    })
    .collect();
    OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group_id.to_owned())))
        .with_generation_id_or_member_epoch(member.map_or(NO_GENERATION, |m| m.generation_id))
        .with_member_id(member.map_or_else(StrBytes::default, |m| {
            StrBytes::from_string(m.member_id.clone())
        }))
        .with_group_instance_id(
            member
                .and_then(|m| m.group_instance_id.clone())
                .map(StrBytes::from_string),
        )
        .with_topics(topics)
}

/// The member id and epoch OffsetFetch v9+ carries: a consumer-protocol member with an epoch.
fn epoch_member<'a>(ctx: &ManagerContext<'a>) -> Option<&'a MemberIdentity> {
    ctx.member
        .filter(|m| ctx.settings.group_protocol == GroupProtocol::Consumer && m.generation_id > 0)
}

fn is_stale_member_epoch(error: &Error) -> bool {
    matches!(
        error,
        Error::CommitFailed {
            code: Some(ErrorCode::STALE_MEMBER_EPOCH),
            ..
        }
    )
}

fn offset_fetch_request(
    group_id: &str,
    partitions: &BTreeSet<TopicPartition>,
    version: i16,
    member: Option<&MemberIdentity>,
) -> OffsetFetchRequest {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        by_topic.entry(&tp.topic).or_default().push(tp.partition);
    }
    let group = GroupId(StrBytes::from_string(group_id.to_owned()));
    // Always `require_stable` (v7+), whatever the isolation level, as Java's consumers do
    // (`CommitRequestManager` and `ConsumerCoordinator` both `setRequireStable(true)`). Without
    // it, Kafka's group coordinator answers from a read of the offsets at the partition's last
    // committed offset (`GroupCoordinatorService.fetchOffsets`: a read operation), and a
    // coordinator that has just taken over `__consumer_offsets` may still have a high watermark
    // below its predecessor's: a new owner of a partition would then start from an older
    // committed offset, re-deliver and commit behind what was committed. With it, the fetch is
    // a write operation that sees every offset in the log and waits for pending ones.
    let require_stable = version >= 7 && !sabotage::active(Sabotage::OffsetFetchNotStable);
    let request = OffsetFetchRequest::default().with_require_stable(require_stable);
    if version >= GROUPS_VERSION {
        let topics = by_topic
            .into_iter()
            .map(|(name, partitions)| {
                OffsetFetchRequestTopics::default()
                    .with_name(topic_name(name))
                    .with_partition_indexes(partitions)
            })
            .collect();
        request
            // v8+ has no top-level topics: kafka-protocol wants the field at its default (an
            // empty list), not null.
            .with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(group)
                .with_member_id(member.map(|m| StrBytes::from_string(m.member_id.clone())))
                .with_member_epoch(member.map_or(NO_GENERATION, |m| m.generation_id))
                .with_topics(Some(topics))])
    } else {
        let topics = by_topic
            .into_iter()
            .map(|(name, partitions)| {
                OffsetFetchRequestTopic::default()
                    .with_name(topic_name(name))
                    .with_partition_indexes(partitions)
            })
            .collect();
        request.with_group_id(group).with_topics(Some(topics))
    }
}

/// Maps a network failure of coordinator traffic: a disconnect or timeout means the
/// coordinator may be gone (KAFKA-17293).
fn network_outcome<T>(ctx: &mut ManagerContext<'_>, error: NetworkError) -> Outcome<T> {
    if error.is_retriable() {
        ctx.mark_coordinator_unknown(format!("request to the coordinator failed: {error}"));
        Outcome::Retry(Error::Network(error))
    } else {
        Outcome::Fail(Error::Network(error))
    }
}

/// Error mapping shared by OffsetCommit and OffsetFetch (kafka-consumer-design.md §1.9).
fn coordinator_error<T>(
    ctx: &mut ManagerContext<'_>,
    code: ResponseError,
    what: &str,
) -> Outcome<T> {
    let message = format!("{what}: {code}");
    match code {
        ResponseError::NotCoordinator
        | ResponseError::CoordinatorNotAvailable
        | ResponseError::RequestTimedOut => {
            ctx.mark_coordinator_unknown(message.clone());
            Outcome::Retry(Error::Retriable {
                code: Some(ErrorCode::of(code)),
                message,
            })
        }
        ResponseError::CoordinatorLoadInProgress
        | ResponseError::UnknownTopicOrPartition
        | ResponseError::UnstableOffsetCommit => Outcome::Retry(Error::Retriable {
            code: Some(ErrorCode::of(code)),
            message,
        }),
        ResponseError::UnknownMemberId
        | ResponseError::IllegalGeneration
        | ResponseError::StaleMemberEpoch => Outcome::Fail(Error::CommitFailed {
            code: Some(ErrorCode::of(code)),
            message,
        }),
        code if code.is_retriable() => Outcome::Retry(Error::Retriable {
            code: Some(ErrorCode::of(code)),
            message,
        }),
        code => Outcome::Fail(Error::from_code(code, message)),
    }
}

/// Java's classic `OffsetCommitResponseHandler` for the group errors: the generation the
/// commit carried is refused; a newer one is left alone (a late response never resets it).
fn generation_error(
    ctx: &mut ManagerContext<'_>,
    code: ResponseError,
    sent_generation: Option<i32>,
    message: String,
) -> Option<Outcome<()>> {
    let member = ctx.member?;
    let outcome = match code {
        ResponseError::RebalanceInProgress => {
            ctx.effects.rejoin_requested = Some(message.clone());
            Outcome::Fail(Error::RebalanceInProgress { message })
        }
        ResponseError::UnknownMemberId | ResponseError::IllegalGeneration => {
            let sent = sent_generation.unwrap_or(NO_GENERATION);
            if sent != member.generation_id && member.rebalancing {
                Outcome::Fail(Error::RebalanceInProgress { message })
            } else {
                ctx.effects.generation_reset = Some(GenerationReset {
                    generation_id: sent,
                    keep_member_id: code == ResponseError::IllegalGeneration,
                    reason: message.clone(),
                });
                Outcome::Fail(Error::CommitFailed {
                    code: Some(ErrorCode::of(code)),
                    message,
                })
            }
        }
        ResponseError::FencedInstanceId => Outcome::Fail(Error::Fenced {
            code: Some(ErrorCode::of(code)),
            message,
        }),
        _ => return None,
    };
    Some(outcome)
}

fn commit_outcome(
    ctx: &mut ManagerContext<'_>,
    body: &OffsetCommitResponse,
    sent_generation: Option<i32>,
) -> Outcome<()> {
    let first_error = body
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t, p)))
        .find_map(|(t, p)| {
            ResponseError::try_from_code(p.error_code)
                .map(|code| (code, format!("{}-{}", t.name.0, p.partition_index)))
        });
    match first_error {
        None => Outcome::Done(()),
        Some((code, partition)) => {
            let what = format!("commit of {partition}");
            generation_error(ctx, code, sent_generation, format!("{what}: {code}"))
                .unwrap_or_else(|| coordinator_error(ctx, code, &what))
        }
    }
}

fn fetch_outcome(
    ctx: &mut ManagerContext<'_>,
    body: &OffsetFetchResponse,
    version: i16,
) -> Outcome<CommittedOffsets> {
    let mut offsets = BTreeMap::new();
    let mut record = |topic: &str,
                      partition: i32,
                      offset: i64,
                      epoch: i32,
                      metadata: Option<&StrBytes>,
                      code: i16|
     -> Option<ResponseError> {
        if let Some(code) = ResponseError::try_from_code(code) {
            return Some(code);
        }
        let value = (offset >= 0).then(|| OffsetAndMetadata {
            offset,
            leader_epoch: (epoch >= 0).then_some(epoch),
            metadata: metadata.map(|m| m.to_string()).unwrap_or_default(),
        });
        offsets.insert(TopicPartition::new(topic, partition), value);
        None
    };
    let (group_code, error) = if version >= GROUPS_VERSION {
        let Some(group) = body.groups.first() else {
            return Outcome::Retry(Error::Retriable {
                code: None,
                message: "OffsetFetch response without a group".to_owned(),
            });
        };
        let error = group.topics.iter().find_map(|t| {
            t.partitions.iter().find_map(|p| {
                record(
                    t.name.0.as_str(),
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata.as_ref(),
                    p.error_code,
                )
            })
        });
        (group.error_code, error)
    } else {
        let error = body.topics.iter().find_map(|t| {
            t.partitions.iter().find_map(|p| {
                record(
                    t.name.0.as_str(),
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata.as_ref(),
                    p.error_code,
                )
            })
        });
        (body.error_code, error)
    };
    if let Some(code) = ResponseError::try_from_code(group_code).or(error) {
        return coordinator_error(ctx, code, "OffsetFetch");
    }
    Outcome::Done(offsets)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod superseded_tests;
