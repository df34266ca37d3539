//! The position pipeline and offset lookups (Java's `OffsetsRequestManager`).
//!
//! Level-triggered on [`SubscriptionState`](super::subscription_state::SubscriptionState):
//! every poll, partitions awaiting a reset get a ListOffsets to their leader (earliest, latest or
//! `now - duration` by `auto.offset.reset`, or a `seek_to_*`), and partitions awaiting validation get an
//! OffsetForLeaderEpoch (KIP-320) that detects log truncation below the position. Without a
//! `group.id` new partitions go straight to a reset; with one, the commit manager first looks
//! for committed offsets. The same ListOffsets machinery answers `beginning_offsets`,
//! `end_offsets` and `offsets_for_times`.
//!
//! Every reset and validation is made for one instance of the partition's fetch state (its
//! [`FetchStateId`]) and its answer is applied only while that instance lasts: a user's seek,
//! a new reset, an unassignment start a new one, the stale answer is dropped and the lookup
//! the new state needs goes out at once, without waiting for it (KAFKA-7703).

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId, ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
};

use kafka_protocol::protocol::Message;

use super::completion::Completion;
use super::context::ManagerContext;
use super::events::ListedOffsets;
use super::fetch_buffer::FetchPosition;
use super::node_versions::VersionChoice;
use super::request_state::{RETRY_BACKOFF_JITTER, RETRY_BACKOFF_MULTIPLIER};
use super::requests::{
    group_runs, topic_name, PollResult, RequestBody, ResponseBody, UnsentRequest,
};
use super::subscription_state::{FetchState, FetchStateId};
use crate::config::{AutoOffsetReset, LATEST_TIMESTAMP};
use crate::error::Error;
use crate::network::backoff::ExponentialBackoff;
use crate::network::{NetworkError, Target};
use crate::protocol::ResponseError;
use crate::rt::{wall_clock_ms, Duration, Instant};
use crate::sabotage::{self, Sabotage};
use crate::types::{OffsetAndTimestamp, TopicPartition};

/// A consumer's replica id in ListOffsets.
const CONSUMER_REPLICA_ID: i32 = -1;

/// A reset's ListOffsets for one partition: the timestamp asked for, the state it is for.
struct ResetLookup {
    tp: TopicPartition,
    timestamp: i64,
    state_id: FetchStateId,
}

/// A validation's OffsetForLeaderEpoch for one partition: the position checked, the state it
/// is for.
struct ValidationLookup {
    tp: TopicPartition,
    position: FetchPosition,
    state_id: FetchStateId,
}

enum InFlight {
    Reset(Vec<ResetLookup>),
    Validate(Vec<ValidationLookup>),
    User {
        id: u64,
        partitions: Vec<TopicPartition>,
    },
}

struct UserListOffsets {
    id: u64,
    timestamps: BTreeMap<TopicPartition, i64>,
    results: ListedOffsets,
    in_flight: BTreeSet<TopicPartition>,
    retry_at: Option<Instant>,
    /// Rounds in a row that left partitions to retry, for the backoff.
    failed_rounds: u32,
    completion: Completion<ListedOffsets>,
}

/// One partition's answer to ListOffsets.
enum ListOutcome {
    Found(Option<OffsetAndTimestamp>),
    Retry,
    Fail(Error),
}

/// The offsets manager.
pub(crate) struct OffsetsRequestManager {
    /// From `retry.backoff.ms`, doubling per failure in a row to `retry.backoff.max.ms`.
    retry_backoff: ExponentialBackoff,
    /// Failures in a row of each partition's lookups for one fetch state: a lookup that keeps
    /// failing (a leader that stays unavailable, an error that persists) is retried ever more
    /// slowly instead of every `retry.backoff.ms`.
    failures: BTreeMap<TopicPartition, (FetchStateId, u32)>,
    next_token: u64,
    in_flight: BTreeMap<u64, InFlight>,
    /// Partitions with a reset or validation in flight, with the state it is for: a partition
    /// whose state has moved on since is free for the lookup its new state needs.
    busy: BTreeMap<TopicPartition, FetchStateId>,
    /// Partitions whose last lookup failed: no retry before the instant, unless the state it
    /// was for has moved on (a seek is not held back by the failure of what it replaced).
    backoff_until: BTreeMap<TopicPartition, (Instant, FetchStateId)>,
    /// Partitions whose `by_duration` reset found no record that recent, with the reset state
    /// it was for: that reset asks for the latest offset instead, as Java does (KIP-1106).
    reset_to_latest: BTreeMap<TopicPartition, FetchStateId>,
    user: Vec<UserListOffsets>,
    next_user_id: u64,
    /// Partitions whose log truncation was reported with `auto.offset.reset=none`: they keep
    /// their position and await validation, and are validated (and reported) again only after
    /// the application polled past the error or asked for their `position`, as Java's
    /// `maybeCompleteValidation` leaves them awaiting validation.
    truncation_reported: BTreeMap<TopicPartition, ReportedTruncation>,
    /// Partitions validated again because the application called `position` on them: a
    /// truncation found again answers that call, as Java's `position` throws the
    /// `LogTruncationException` its validation caches, instead of going to the next `poll`.
    validating_for_position: BTreeSet<TopicPartition>,
}

/// A truncation reported to the application: the position found above the leader's end offset
/// for the position's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReportedTruncation {
    position: i64,
    end_offset: i64,
}

impl OffsetsRequestManager {
    /// A manager retrying failed lookups after a backoff from `retry_backoff_ms` doubling to
    /// `retry_backoff_max_ms`.
    pub fn new(retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            retry_backoff: ExponentialBackoff::new(
                retry_backoff_ms,
                RETRY_BACKOFF_MULTIPLIER,
                retry_backoff_max_ms.max(retry_backoff_ms),
                RETRY_BACKOFF_JITTER,
            ),
            failures: BTreeMap::new(),
            next_token: 0,
            in_flight: BTreeMap::new(),
            busy: BTreeMap::new(),
            backoff_until: BTreeMap::new(),
            reset_to_latest: BTreeMap::new(),
            user: Vec::new(),
            next_user_id: 0,
            truncation_reported: BTreeMap::new(),
            validating_for_position: BTreeSet::new(),
        }
    }

    /// `beginning_offsets` / `end_offsets` / `offsets_for_times`.
    pub fn list_offsets(
        &mut self,
        timestamps: BTreeMap<TopicPartition, i64>,
        completion: Completion<ListedOffsets>,
    ) {
        if timestamps.is_empty() {
            completion.complete(Ok(BTreeMap::new()));
            return;
        }
        self.next_user_id += 1;
        self.user.push(UserListOffsets {
            id: self.next_user_id,
            timestamps,
            results: BTreeMap::new(),
            in_flight: BTreeSet::new(),
            retry_at: None,
            failed_rounds: 0,
            completion,
        });
    }

    /// A poll started: partitions that need a reset but have no policy are an error for it.
    pub fn on_poll(&mut self, ctx: &mut ManagerContext<'_>) {
        self.truncation_reported.clear();
        self.validating_for_position.clear();
        if let Some(error) = no_offset_error(ctx) {
            ctx.report(error);
        }
    }

    /// The application asked for `partition`'s position. A truncation reported for it is
    /// validated again (Java's `position` runs `validatePositionsIfNeeded`); if it is found
    /// again, [`Self::truncation_error`] answers the call.
    pub fn on_position_request(&mut self, partition: &TopicPartition) {
        if self.truncation_reported.remove(partition).is_some() {
            self.validating_for_position.insert(partition.clone());
        }
    }

    /// The error a `position` call on `partition` fails with: its truncation, found again by
    /// the validation that call started.
    pub fn truncation_error(&self, partition: &TopicPartition) -> Option<Error> {
        if self.validating_for_position.contains(partition) {
            return None;
        }
        let reported = self.truncation_reported.get(partition)?;
        Some(Error::LogTruncation {
            divergent_offsets: vec![(partition.clone(), reported.end_offset)],
        })
    }

    /// Metadata changed: positions of a topic created again are dropped; positions whose
    /// leader epoch moved on must be validated (KIP-320).
    pub fn on_metadata_update(&mut self, ctx: &mut ManagerContext<'_>) {
        restart_recreated_topics(ctx);
        for tp in ctx.subscriptions.partitions_in(FetchState::Fetching) {
            let Some((position, _)) = ctx.buffer.position(&tp) else {
                continue;
            };
            let Some((_, epoch)) = ctx.leader(&tp.topic, tp.partition) else {
                continue;
            };
            let moved = position.current_leader_epoch.is_some_and(|e| e < epoch);
            if moved && position.offset_epoch.is_some() {
                tracing::debug!(partition = %tp, epoch, "leader epoch changed: validating position");
                ctx.subscriptions
                    .set_fetch_state(&tp, FetchState::AwaitingValidation);
            } else if position.current_leader_epoch.is_none_or(|e| e < epoch) {
                ctx.buffer.set_current_leader_epoch(&tp, Some(epoch));
            }
        }
    }

    /// Sends resets, validations and lookups that are due.
    pub fn poll(&mut self, ctx: &mut ManagerContext<'_>) -> PollResult {
        let mut result = PollResult::default();
        let subscriptions = &*ctx.subscriptions;
        self.backoff_until
            .retain(|tp, (at, id)| *at > ctx.now && subscriptions.is_current(tp, *id));
        self.reset_to_latest
            .retain(|tp, id| subscriptions.is_current(tp, *id));
        self.failures
            .retain(|tp, (id, _)| subscriptions.is_current(tp, *id));
        for (at, _) in self.backoff_until.values() {
            result.wake_at(*at);
        }
        if ctx.settings.group_id.is_none() {
            // No committed offsets to look for: new partitions reset at once.
            let strategy = ctx.settings.auto_offset_reset;
            for tp in ctx.subscriptions.partitions_in(FetchState::Initializing) {
                ctx.subscriptions
                    .set_fetch_state(&tp, FetchState::AwaitingReset(strategy));
            }
        }
        self.send_resets(ctx, &mut result);
        self.send_validations(ctx, &mut result);
        self.send_user_lookups(ctx, &mut result);
        result
    }

    /// Whether a lookup for the fetch state `id` of `tp` may go out: none is in flight for it
    /// and it is not backing off.
    fn ready(&self, tp: &TopicPartition, id: FetchStateId) -> bool {
        self.busy.get(tp) != Some(&id) && self.backoff_until.get(tp).is_none_or(|(_, b)| *b != id)
    }

    /// Groups partitions by leader; asks for metadata when a leader is unknown.
    fn by_leader<T>(
        ctx: &mut ManagerContext<'_>,
        items: Vec<(TopicPartition, T)>,
    ) -> BTreeMap<i32, Vec<(TopicPartition, T, i32)>> {
        let mut out: BTreeMap<i32, Vec<_>> = BTreeMap::new();
        for (tp, item) in items {
            match ctx.leader(&tp.topic, tp.partition) {
                Some((leader, epoch)) => out.entry(leader).or_default().push((tp, item, epoch)),
                None => ctx.request_metadata_refresh(),
            }
        }
        out
    }

    fn send_resets(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        let now_ms = wall_clock_ms();
        let due: Vec<(TopicPartition, (i64, FetchStateId))> = ctx
            .subscriptions
            .resets_awaited()
            .into_iter()
            .filter(|(tp, _, id)| self.ready(tp, *id))
            .filter_map(|(tp, strategy, id)| {
                let timestamp = if self.reset_to_latest.get(&tp) == Some(&id) {
                    LATEST_TIMESTAMP
                } else {
                    strategy.list_offsets_timestamp(now_ms)?
                };
                Some((tp, (timestamp, id)))
            })
            .collect();
        for (leader, partitions) in Self::by_leader(ctx, due) {
            let listed: Vec<_> = partitions
                .iter()
                .map(|(tp, (ts, _), epoch)| (tp.clone(), *ts, *epoch))
                .collect();
            let request = list_offsets_request(ctx, &listed);
            let entries: Vec<ResetLookup> = partitions
                .into_iter()
                .map(|(tp, (timestamp, state_id), _)| ResetLookup {
                    tp,
                    timestamp,
                    state_id,
                })
                .collect();
            tracing::debug!(leader, partitions = ?listed, "resetting positions with ListOffsets");
            for e in &entries {
                self.busy.insert(e.tp.clone(), e.state_id);
            }
            self.push(
                result,
                leader,
                None,
                RequestBody::ListOffsets(request),
                InFlight::Reset(entries),
            );
        }
    }

    fn send_validations(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        let mut due = Vec::new();
        for (tp, id) in ctx
            .subscriptions
            .partitions_in_with_ids(FetchState::AwaitingValidation)
        {
            if !self.ready(&tp, id) {
                continue;
            }
            let position = ctx.buffer.position(&tp).map(|(p, _)| p);
            if let Some(reported) = self.truncation_reported.get(&tp) {
                if position.map(|p| p.offset) == Some(reported.position) {
                    continue;
                }
                self.truncation_reported.remove(&tp);
            }
            match position {
                Some(position) if position.offset_epoch.is_some() => {
                    match validation_supported(ctx, &tp) {
                        Some(true) => due.push((tp, (position, id))),
                        // The leader cannot validate: trust the position.
                        Some(false) => {
                            ctx.subscriptions.set_fetch_state(&tp, FetchState::Fetching);
                        }
                        None => {} // the leader's connection is on its way
                    }
                }
                // Nothing to validate against: trust the position.
                Some(_) => ctx.subscriptions.set_fetch_state(&tp, FetchState::Fetching),
                None => ctx.subscriptions.set_fetch_state(
                    &tp,
                    FetchState::AwaitingReset(ctx.settings.auto_offset_reset),
                ),
            }
        }
        for (leader, partitions) in Self::by_leader(ctx, due) {
            let topics = group_runs(partitions.iter().map(|(tp, (position, _), epoch)| {
                let partition = OffsetForLeaderPartition::default()
                    .with_partition(tp.partition)
                    .with_current_leader_epoch(*epoch)
                    .with_leader_epoch(position.offset_epoch.unwrap_or(-1));
                (&tp.topic, partition)
            }))
            .into_iter()
            .map(|(topic, partitions)| {
                OffsetForLeaderTopic::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(partitions)
            })
            .collect();
            let entries: Vec<ValidationLookup> = partitions
                .into_iter()
                .map(|(tp, (position, state_id), _)| ValidationLookup {
                    tp,
                    position,
                    state_id,
                })
                .collect();
            tracing::debug!(leader, partitions = entries.len(), "validating positions");
            for e in &entries {
                self.busy.insert(e.tp.clone(), e.state_id);
            }
            let request = OffsetForLeaderEpochRequest::default().with_topics(topics);
            self.push(
                result,
                leader,
                None,
                RequestBody::OffsetForLeaderEpoch(request),
                InFlight::Validate(entries),
            );
        }
    }

    fn send_user_lookups(&mut self, ctx: &mut ManagerContext<'_>, result: &mut PollResult) {
        self.user.retain(|u| !u.completion.is_done());
        // A lookup may name partitions of topics the consumer neither subscribes to nor is
        // assigned: metadata must cover them, or their leaders stay unknown and the lookup
        // times out (Java's `addTransientTopics` in `OffsetsRequestManager.fetchOffsets`).
        ctx.subscriptions.set_transient_topics(
            self.user
                .iter()
                .flat_map(|u| u.timestamps.keys().map(|tp| tp.topic.to_string()))
                .collect(),
        );
        let mut sends = Vec::new();
        for lookup in &mut self.user {
            if let Some(at) = lookup.retry_at {
                if at > ctx.now {
                    result.wake_at(at);
                    continue;
                }
                lookup.retry_at = None;
            }
            let due: Vec<(TopicPartition, i64)> = lookup
                .timestamps
                .iter()
                .filter(|(tp, _)| {
                    !lookup.results.contains_key(*tp) && !lookup.in_flight.contains(*tp)
                })
                .map(|(tp, ts)| (tp.clone(), *ts))
                .collect();
            for (leader, partitions) in Self::by_leader(ctx, due) {
                lookup
                    .in_flight
                    .extend(partitions.iter().map(|(tp, _, _)| tp.clone()));
                sends.push((lookup.id, leader, partitions));
            }
        }
        for (id, leader, partitions) in sends {
            let request = list_offsets_request(ctx, &partitions);
            let partitions = partitions.into_iter().map(|(tp, _, _)| tp).collect();
            self.push(
                result,
                leader,
                None,
                RequestBody::ListOffsets(request),
                InFlight::User { id, partitions },
            );
        }
    }

    fn push(
        &mut self,
        result: &mut PollResult,
        leader: i32,
        version: Option<i16>,
        body: RequestBody,
        in_flight: InFlight,
    ) {
        self.next_token += 1;
        self.in_flight.insert(self.next_token, in_flight);
        result.requests.push(UnsentRequest {
            timeout_ms: None,
            target: Target::Node(leader),
            version,
            body,
            token: self.next_token,
        });
    }

    /// Handles a ListOffsets or OffsetForLeaderEpoch response.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let Some(in_flight) = self.in_flight.remove(&token) else {
            return;
        };
        let failed = |ctx: &mut ManagerContext<'_>, error: &NetworkError| {
            tracing::debug!(%error, "offsets request failed");
            ctx.request_metadata_refresh();
        };
        match in_flight {
            InFlight::Reset(entries) => {
                for e in &entries {
                    self.release(&e.tp, e.state_id);
                }
                let answers = match result {
                    Ok((ResponseBody::ListOffsets(body), _)) => list_outcomes(ctx, &body),
                    Ok(_) => BTreeMap::new(),
                    Err(error) => {
                        failed(ctx, &error);
                        BTreeMap::new()
                    }
                };
                for lookup in entries {
                    let answer = answers.get(&lookup.tp);
                    self.apply_reset(ctx, &lookup, answer);
                }
            }
            InFlight::Validate(entries) => {
                for e in &entries {
                    self.release(&e.tp, e.state_id);
                }
                let body = match result {
                    Ok((ResponseBody::OffsetForLeaderEpoch(body), _)) => Some(body),
                    Ok(_) => None,
                    Err(error) => {
                        failed(ctx, &error);
                        None
                    }
                };
                for lookup in entries {
                    self.apply_validation(ctx, &lookup, body.as_ref());
                }
            }
            InFlight::User { id, partitions } => {
                let answers = match result {
                    Ok((ResponseBody::ListOffsets(body), _)) => list_outcomes(ctx, &body),
                    Ok(_) => BTreeMap::new(),
                    Err(error) => {
                        failed(ctx, &error);
                        BTreeMap::new()
                    }
                };
                self.apply_user(ctx, id, partitions, answers);
            }
        }
    }

    /// A lookup for `tp`'s state `id` is answered: the partition is no longer busy with it
    /// (a lookup for a newer state may be in flight and keeps it busy).
    fn release(&mut self, tp: &TopicPartition, id: FetchStateId) {
        if self.busy.get(tp) == Some(&id) {
            self.busy.remove(tp);
        }
    }

    fn back_off(&mut self, ctx: &mut ManagerContext<'_>, tp: &TopicPartition, id: FetchStateId) {
        let failures = self.failures.entry(tp.clone()).or_insert((id, 0));
        if failures.0 != id {
            *failures = (id, 0);
        }
        let delay_ms = self.retry_backoff.backoff_ms(failures.1, ctx.rng);
        failures.1 = failures.1.saturating_add(1);
        self.backoff_until
            .insert(tp.clone(), (ctx.now + Duration::from_millis(delay_ms), id));
    }

    fn apply_reset(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        lookup: &ResetLookup,
        answer: Option<&ListOutcome>,
    ) {
        let (tp, timestamp, state_id) = (&lookup.tp, lookup.timestamp, lookup.state_id);
        let state = ctx.subscriptions.fetch_state(tp);
        let superseded = !ctx.subscriptions.is_current(tp, state_id)
            || !matches!(state, Some(FetchState::AwaitingReset(_)));
        if superseded && !sabotage::active(Sabotage::LateResetOverridesSeek) {
            // Seeked, reset anew or unassigned meanwhile: the answer is for a reset nobody
            // awaits any more, and the current state's own lookup goes out (or has gone).
            tracing::debug!(partition = %tp, timestamp, ?state, "dropping the answer to a superseded reset");
            return;
        }
        if let Some(ListOutcome::Found(Some(_))) = answer {
            self.reset_to_latest.remove(tp);
        }
        match answer {
            Some(ListOutcome::Found(Some(found))) => {
                let position = FetchPosition {
                    offset: found.offset,
                    offset_epoch: found.leader_epoch,
                    current_leader_epoch: ctx.leader(&tp.topic, tp.partition).map(|(_, e)| e),
                };
                tracing::info!(partition = %tp, offset = found.offset, "reset position");
                ctx.buffer.set_position(tp, position);
                ctx.subscriptions.set_fetch_state(tp, FetchState::Fetching);
            }
            Some(ListOutcome::Fail(error)) => {
                ctx.report(error.clone());
                self.back_off(ctx, tp, state_id);
            }
            // No record at or after `now - duration`: Java resets to the latest offset then.
            Some(ListOutcome::Found(None)) if timestamp >= 0 => {
                tracing::debug!(partition = %tp, timestamp, "no offset by time: resetting to latest");
                self.reset_to_latest.insert(tp.clone(), state_id);
            }
            Some(ListOutcome::Found(None)) | Some(ListOutcome::Retry) | None => {
                self.back_off(ctx, tp, state_id);
            }
        }
    }

    fn apply_validation(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        lookup: &ValidationLookup,
        body: Option<&OffsetForLeaderEpochResponse>,
    ) {
        let (tp, validated, state_id) = (&lookup.tp, lookup.position, lookup.state_id);
        let current = ctx.buffer.position(tp).map(|(p, _)| p);
        // Java's `maybeCompleteValidation`: still awaiting this validation, of this position
        // (offset and epoch: a seek to the same offset with another epoch needs its own).
        let same_position = current.is_some_and(|p| {
            (p.offset, p.offset_epoch) == (validated.offset, validated.offset_epoch)
        });
        let superseded = !ctx.subscriptions.is_current(tp, state_id)
            || ctx.subscriptions.fetch_state(tp) != Some(FetchState::AwaitingValidation)
            || !same_position;
        if superseded && !sabotage::active(Sabotage::LateValidationApplied) {
            tracing::debug!(partition = %tp, offset = validated.offset,
                "dropping the answer to a superseded validation");
            return;
        }
        // Validated again for a `position` call: a truncation found again fails that call.
        let for_position = self.validating_for_position.remove(tp);
        let answer = body.and_then(|b| {
            b.topics
                .iter()
                .filter(|t| t.topic.0.as_str() == &*tp.topic)
                .flat_map(|t| t.partitions.iter())
                .find(|p| p.partition == tp.partition)
        });
        let Some(answer) = answer else {
            self.back_off(ctx, tp, state_id);
            return;
        };
        if let Some(code) = ResponseError::try_from_code(answer.error_code) {
            if code.is_retriable() || code == ResponseError::UnknownTopicOrPartition {
                ctx.request_metadata_refresh();
                self.back_off(ctx, tp, state_id);
            } else {
                ctx.report(Error::from_code(
                    code,
                    format!("OffsetForLeaderEpoch for {tp}"),
                ));
                self.back_off(ctx, tp, state_id);
            }
            return;
        }
        let leader_epoch = ctx.leader(&tp.topic, tp.partition).map(|(_, e)| e);
        let policy = ctx.settings.auto_offset_reset;
        let undefined = answer.end_offset < 0 || answer.leader_epoch < 0;
        if undefined || answer.end_offset < validated.offset {
            if policy == AutoOffsetReset::None {
                tracing::warn!(partition = %tp, position = validated.offset,
                    end_offset = answer.end_offset, "log truncation detected");
                // Found again for a `position` call: that call fails with it, not the next
                // poll (which validates, and reports, again).
                if !for_position {
                    ctx.report(Error::LogTruncation {
                        divergent_offsets: vec![(tp.clone(), answer.end_offset)],
                    });
                }
                // The position is kept (still awaiting validation) so the application can
                // decide where to seek; the error comes again after its next poll.
                self.truncation_reported.insert(
                    tp.clone(),
                    ReportedTruncation {
                        position: validated.offset,
                        end_offset: answer.end_offset,
                    },
                );
            } else if undefined {
                tracing::info!(partition = %tp, "truncation detected, no common epoch: resetting");
                ctx.subscriptions
                    .set_fetch_state(tp, FetchState::AwaitingReset(policy));
            } else {
                tracing::info!(partition = %tp, position = validated.offset,
                    end_offset = answer.end_offset, "truncation detected: moving to the divergence point");
                ctx.buffer.set_position(
                    tp,
                    FetchPosition {
                        offset: answer.end_offset,
                        offset_epoch: Some(answer.leader_epoch),
                        current_leader_epoch: leader_epoch,
                    },
                );
                ctx.subscriptions.set_fetch_state(tp, FetchState::Fetching);
            }
            return;
        }
        ctx.buffer.set_current_leader_epoch(tp, leader_epoch);
        ctx.subscriptions.set_fetch_state(tp, FetchState::Fetching);
    }

    fn apply_user(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        id: u64,
        partitions: Vec<TopicPartition>,
        answers: BTreeMap<TopicPartition, ListOutcome>,
    ) {
        let Some(index) = self.user.iter().position(|u| u.id == id) else {
            return;
        };
        let lookup = &mut self.user[index];
        let mut retry = false;
        for tp in partitions {
            lookup.in_flight.remove(&tp);
            match answers.get(&tp) {
                Some(ListOutcome::Found(found)) => {
                    lookup.results.insert(tp, *found);
                }
                Some(ListOutcome::Fail(error)) => {
                    lookup.completion.complete(Err(error.clone()));
                }
                Some(ListOutcome::Retry) | None => retry = true,
            }
        }
        if retry {
            let delay_ms = self.retry_backoff.backoff_ms(lookup.failed_rounds, ctx.rng);
            lookup.failed_rounds = lookup.failed_rounds.saturating_add(1);
            lookup.retry_at = Some(ctx.now + Duration::from_millis(delay_ms));
        }
        if lookup.results.len() == lookup.timestamps.len() {
            let lookup = self.user.remove(index);
            lookup.completion.complete(Ok(lookup.results));
        } else if lookup.completion.is_done() {
            self.user.remove(index);
        }
    }
}

/// The error for partitions that need a reset without a reset policy.
pub(crate) fn no_offset_error(ctx: &ManagerContext<'_>) -> Option<Error> {
    let partitions: Vec<TopicPartition> = ctx
        .subscriptions
        .partitions_awaiting_reset()
        .into_iter()
        .filter(|(_, s)| *s == AutoOffsetReset::None)
        .map(|(tp, _)| tp)
        .collect();
    (!partitions.is_empty()).then_some(Error::NoOffsetForPartition { partitions })
}

fn list_offsets_request(
    ctx: &ManagerContext<'_>,
    partitions: &[(TopicPartition, i64, i32)],
) -> ListOffsetsRequest {
    let topics = group_runs(partitions.iter().map(|(tp, timestamp, epoch)| {
        let partition = ListOffsetsPartition::default()
            .with_partition_index(tp.partition)
            .with_current_leader_epoch(*epoch)
            .with_timestamp(*timestamp);
        (&tp.topic, partition)
    }))
    .into_iter()
    .map(|(topic, partitions)| {
        ListOffsetsTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(partitions)
    })
    .collect();
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(CONSUMER_REPLICA_ID))
        .with_isolation_level(ctx.settings.isolation_level.wire())
        .with_topics(topics)
}

/// Per-partition outcomes of a ListOffsets response.
fn list_outcomes(
    ctx: &mut ManagerContext<'_>,
    body: &ListOffsetsResponse,
) -> BTreeMap<TopicPartition, ListOutcome> {
    let mut out = BTreeMap::new();
    for topic in &body.topics {
        for p in &topic.partitions {
            let tp = TopicPartition::new(topic.name.0.as_str(), p.partition_index);
            let outcome = match ResponseError::try_from_code(p.error_code) {
                None => ListOutcome::Found((p.offset >= 0).then_some(OffsetAndTimestamp {
                    offset: p.offset,
                    timestamp_ms: p.timestamp,
                    leader_epoch: (p.leader_epoch >= 0).then_some(p.leader_epoch),
                })),
                Some(ResponseError::UnsupportedForMessageFormat) => ListOutcome::Found(None),
                Some(
                    ResponseError::NotLeaderOrFollower
                    | ResponseError::LeaderNotAvailable
                    | ResponseError::UnknownTopicOrPartition
                    | ResponseError::FencedLeaderEpoch
                    | ResponseError::UnknownLeaderEpoch
                    | ResponseError::KafkaStorageError,
                ) => {
                    ctx.request_metadata_refresh();
                    ListOutcome::Retry
                }
                Some(code) if code.is_retriable() => ListOutcome::Retry,
                Some(code) => {
                    ListOutcome::Fail(Error::from_code(code, format!("ListOffsets for {tp}")))
                }
            };
            out.insert(tp, outcome);
        }
    }
    out
}

/// Whether the partition's leader offers OffsetForLeaderEpoch (KIP-320 validation), from the
/// leader's own versions; `None` while its connection is not up (the loop connects it). With
/// no known leader, `Some(true)`: the lookup then asks for metadata as any other does.
fn validation_supported(ctx: &mut ManagerContext<'_>, tp: &TopicPartition) -> Option<bool> {
    let Some((leader, _)) = ctx.leader(&tp.topic, tp.partition) else {
        return Some(true);
    };
    match ctx
        .version_for::<OffsetForLeaderEpochRequest>(leader, OffsetForLeaderEpochRequest::VERSIONS)
    {
        VersionChoice::Version(_) => Some(true),
        VersionChoice::Unsupported(_) => Some(false),
        VersionChoice::NotConnected => None,
    }
}

/// A partition whose topic metadata now names another topic id than the one its position
/// belongs to was deleted and created again: its position (and any data fetched for it) is of
/// the old topic, so it starts over as a newly assigned partition does — the committed offset,
/// else `auto.offset.reset`. Kept, it would skip the new topic's records below it: silently
/// while it is in range of the new log (the real-broker test
/// `a_topic_created_again_is_read_from_its_start` loses 20 of 30 that way), or through a
/// validation that takes the difference for a truncation; committed, it would put the old
/// position into the new topic (family-data-path-recreate seeds 230 and 766). Java's consumer
/// keeps the position (and validates it only if the leader epoch moved).
fn restart_recreated_topics(ctx: &mut ManagerContext<'_>) {
    for tp in ctx.subscriptions.assigned() {
        let Some(current) = ctx.metadata.topic_id(&tp.topic).filter(|id| !id.is_nil()) else {
            continue;
        };
        match ctx.buffer.set_incarnation(&tp, current) {
            Some(old) if old != current => {
                tracing::info!(
                    partition = %tp,
                    %old,
                    new = %current,
                    "topic created again: its position of the old topic is dropped"
                );
                ctx.buffer.clear_position(&tp);
                ctx.subscriptions
                    .set_fetch_state(&tp, FetchState::Initializing);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod superseded_tests;
