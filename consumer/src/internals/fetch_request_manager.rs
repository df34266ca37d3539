//! Fetching (Java's `FetchRequestManager` / `AbstractFetch`).
//!
//! One fetch in flight per broker at a time, for the partitions that are *fetchable*: assigned,
//! with a valid position, not paused, and with no data waiting in the fetch buffer (the
//! application consumes a partition's buffered data before more is fetched for it). A broker
//! that leads any partition with buffered data gets no fetch until that data is consumed
//! (Java's rule since KAFKA-17182): a fetch for only the partitions drained so far would drop
//! the others from the broker's fetch session, and when those few partitions have no new data
//! it waits `fetch.max.wait.ms` at the broker, holding back the broker's next fetch for the
//! partitions that do — the ~500 ms delivery gaps seen in the peer benchmark. Responses
//! become [`CompletedFetch`]es tagged with the position's generation, so data for a partition
//! that was since seeked, paused or unassigned is dropped by the buffer. Fetch sessions
//! (KIP-227) keep requests small; topic ids are used from Fetch v13 on.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse};
use kafka_protocol::protocol::{Request, StrBytes, VersionRange};

use super::completed_fetch::{AbortedTransaction, CompletedFetch, PartitionFetchInfo};
use super::context::ManagerContext;
use super::fetch_buffer::FetchPosition;
use super::fetch_session::{FetchSessionHandler, PartitionData, FINAL_EPOCH};
use super::node_versions::VersionChoice;
use super::requests::{
    group_runs, topic_name, PollResult, RequestBody, ResponseBody, UnsentRequest,
};
use super::subscription_state::FetchState;
use crate::config::AutoOffsetReset;
use crate::config::IsolationLevel;
use crate::error::Error;
use crate::network::{Broker, LeaderHint, NetworkError, Target};
use crate::protocol::ResponseError;
use crate::rt::{Duration, Instant};
use crate::sabotage::{self, Sabotage};
use crate::types::TopicPartition;
use partition_holds::{FailedAt, FailureKind, HoldDecision, PartitionHolds};
use read_replicas::ReadReplicas;

/// The first Fetch version that names topics by id.
const TOPIC_ID_VERSION: i16 = 13;
/// The first Fetch version with `rack_id` (KIP-392).
const RACK_ID_VERSION: i16 = 11;
/// Our Fetch versions.
const FETCH_VERSIONS: VersionRange = VersionRange { min: 4, max: 18 };
/// Fetch versions that name topics by name.
const FETCH_VERSIONS_BY_NAME: VersionRange = VersionRange { min: 4, max: 12 };
/// The first Fetch version with `last_fetched_epoch` and `diverging_epoch` (KIP-595).
const LAST_FETCHED_EPOCH_VERSION: i16 = 12;

struct InFlightFetch {
    node: i32,
    /// Every partition of the session at the time: fetch offset, position generation and the
    /// leader epoch the fetch carried.
    partitions: BTreeMap<TopicPartition, (i64, u64, i32)>,
}

/// The fetch manager.
pub(crate) struct FetchRequestManager {
    retry_backoff: Duration,
    sessions: BTreeMap<i32, FetchSessionHandler>,
    in_flight: BTreeMap<u64, InFlightFetch>,
    busy_nodes: BTreeSet<i32>,
    node_backoff: BTreeMap<i32, Instant>,
    next_token: u64,
    /// Partitions whose last fetch failed, held back from fetching (see [`PartitionHolds`]):
    /// one fetch, one error per application poll at most, as in Java, where the error is
    /// raised when the application collects the failed fetch.
    holds: PartitionHolds,
    /// KIP-392: partitions fetched from a follower the leader preferred ([`ReadReplicas`]).
    read_replicas: ReadReplicas,
    /// Leaders that offer no Fetch version we speak, already reported to the application.
    unsupported_reported: BTreeSet<i32>,
    /// Fetch responses received, for metrics.
    pub responses_received: u64,
}

impl FetchRequestManager {
    /// A manager pausing `retry_backoff_ms` before re-fetching from a broker that failed, and
    /// backing off from `retry_backoff_ms` to `retry_backoff_max_ms` before re-fetching a
    /// partition whose fetch failed.
    pub fn new(retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            retry_backoff: Duration::from_millis(retry_backoff_ms),
            sessions: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            busy_nodes: BTreeSet::new(),
            node_backoff: BTreeMap::new(),
            next_token: 0,
            holds: PartitionHolds::new(retry_backoff_ms, retry_backoff_max_ms),
            read_replicas: ReadReplicas::default(),
            unsupported_reported: BTreeSet::new(),
            responses_received: 0,
        }
    }

    /// The partitions fetched from a preferred read replica (KIP-392), and that replica.
    pub fn preferred_read_replicas(&self) -> impl Iterator<Item = (&TopicPartition, i32)> + Clone {
        self.read_replicas.replicas()
    }

    /// Sends a fetch to every broker that leads a fetchable partition and has none in flight.
    pub fn poll(&mut self, ctx: &mut ManagerContext<'_>) -> PollResult {
        let mut result = PollResult::default();
        self.node_backoff.retain(|_, at| *at > ctx.now);
        self.holds.retain(|tp| ctx.subscriptions.is_assigned(tp));
        self.read_replicas
            .retain(|tp| ctx.subscriptions.is_assigned(tp));
        self.read_replicas.prune(ctx.metadata, ctx.now);
        let mut by_node: BTreeMap<i32, BTreeMap<TopicPartition, (PartitionData, u64)>> =
            BTreeMap::new();
        let buffered = ctx.buffer.buffered_partitions();
        let nodes_with_buffered: BTreeSet<i32> = buffered
            .iter()
            .filter_map(|tp| {
                let (leader, _) = ctx.leader(&tp.topic, tp.partition)?;
                Some(self.read_replicas.select(tp, leader, ctx.metadata, ctx.now))
            })
            .collect();
        for tp in ctx.subscriptions.fetchable_partitions() {
            if buffered.contains(&tp) {
                continue;
            }
            let Some((position, generation)) = ctx.buffer.position(&tp) else {
                continue;
            };
            let Some((leader, epoch)) = ctx.leader(&tp.topic, tp.partition) else {
                ctx.request_metadata_refresh();
                continue;
            };
            match self
                .holds
                .decide(&tp, (position.offset, generation), (leader, epoch), ctx.now)
            {
                HoldDecision::Fetch => {}
                HoldDecision::Wait => continue,
                HoldDecision::WaitUntil(at) => {
                    result.wake_at(at);
                    continue;
                }
            }
            let node = self
                .read_replicas
                .select(&tp, leader, ctx.metadata, ctx.now);
            if self.busy_nodes.contains(&node) || nodes_with_buffered.contains(&node) {
                continue;
            }
            if let Some(at) = self.node_backoff.get(&node) {
                result.wake_at(*at);
                continue;
            }
            let data = PartitionData {
                topic_id: ctx.metadata.topic_id(&tp.topic).unwrap_or_default(),
                fetch_offset: position.offset,
                current_leader_epoch: epoch,
                max_bytes: ctx.settings.max_partition_fetch_bytes,
                last_fetched_epoch: position.offset_epoch.unwrap_or(-1),
            };
            by_node
                .entry(node)
                .or_default()
                .insert(tp, (data, generation));
        }
        for (node, partitions) in by_node {
            let all_ids = partitions.values().all(|(d, _)| !d.topic_id.is_nil());
            let range = if all_ids {
                FETCH_VERSIONS
            } else {
                FETCH_VERSIONS_BY_NAME
            };
            // Built for the leader's own versions: brokers differ during a rolling upgrade.
            let version = match self.version_for(ctx, node, range) {
                Some(version) => version,
                None => continue,
            };
            let session = self.sessions.entry(node).or_default();
            let wanted = partitions
                .iter()
                .map(|(tp, (d, _))| (tp.clone(), *d))
                .collect();
            let data = session.build(wanted);
            let request = fetch_request(ctx, &data, version);
            self.next_token += 1;
            self.in_flight.insert(
                self.next_token,
                InFlightFetch {
                    node,
                    partitions: partitions
                        .into_iter()
                        .map(|(tp, (d, g))| (tp, (d.fetch_offset, g, d.current_leader_epoch)))
                        .collect(),
                },
            );
            self.busy_nodes.insert(node);
            tracing::trace!(
                node,
                version,
                session_id = data.session_id,
                epoch = data.epoch,
                partitions = data.to_send.len(),
                "sending Fetch"
            );
            result.requests.push(UnsentRequest {
                timeout_ms: None,
                target: Target::Node(node),
                version: Some(version),
                body: RequestBody::Fetch(request),
                token: self.next_token,
            });
        }
        result
    }

    /// The Fetch version to build a request to `node` for, from its own versions, within
    /// `range` or, for a broker that cannot name topics by id, by name (Java's
    /// `FetchRequest.Builder` caps the version the same way). `None` while the node is not
    /// connected (the loop connects it and polls again), or when it offers no usable Fetch
    /// version: that is reported once, as an error naming the broker and both ranges, until
    /// the node offers one (after a broker upgrade, say).
    fn version_for(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        node: i32,
        range: VersionRange,
    ) -> Option<i16> {
        let mut choice = ctx.version_for::<FetchRequest>(node, range);
        if matches!(choice, VersionChoice::Unsupported(_)) && range.max > FETCH_VERSIONS_BY_NAME.max
        {
            choice = ctx.version_for::<FetchRequest>(node, FETCH_VERSIONS_BY_NAME);
        }
        match choice {
            VersionChoice::Version(version) => {
                self.unsupported_reported.remove(&node);
                Some(version)
            }
            VersionChoice::NotConnected => None,
            VersionChoice::Unsupported(source) => {
                if self.unsupported_reported.insert(node) {
                    let error = NetworkError::UnsupportedApi {
                        broker: format!("node {node}"),
                        source,
                    };
                    tracing::error!(%error, "the partition leader cannot serve our Fetch");
                    ctx.report(Error::Network(error));
                }
                None
            }
        }
    }

    /// The application polled: partitions whose error it has been given may be fetched again
    /// (after their backoff), and report the error again if it persists.
    pub fn on_poll(&mut self) {
        self.holds.on_poll();
    }

    /// Close: ask every broker with a session to close it (best effort; responses ignored).
    pub fn poll_on_close(&mut self, ctx: &mut ManagerContext<'_>) -> PollResult {
        let mut result = PollResult::default();
        for (node, session) in std::mem::take(&mut self.sessions) {
            let Some(session_id) = session.session_to_close() else {
                continue;
            };
            // Best effort: a broker whose connection is gone has no session worth closing
            // from here (and closing is no time to wait for a connection).
            let Some(version) = ctx.versions.of(node).and_then(|table| {
                table
                    .select(crate::protocol::Api(FetchRequest::KEY), FETCH_VERSIONS)
                    .ok()
            }) else {
                continue;
            };
            tracing::debug!(node, session_id, "closing fetch session");
            let request = FetchRequest::default()
                .with_max_wait_ms(0)
                .with_min_bytes(0)
                .with_max_bytes(ctx.settings.fetch_max_bytes)
                .with_isolation_level(ctx.settings.isolation_level.wire())
                .with_session_id(session_id)
                .with_session_epoch(FINAL_EPOCH);
            self.next_token += 1;
            result.requests.push(UnsentRequest {
                timeout_ms: None,
                target: Target::Node(node),
                version: Some(version),
                body: RequestBody::Fetch(request),
                token: self.next_token,
            });
        }
        result
    }

    /// Handles a Fetch response.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        let Some(fetch) = self.in_flight.remove(&token) else {
            return;
        };
        self.busy_nodes.remove(&fetch.node);
        self.responses_received += 1;
        let session = self.sessions.entry(fetch.node).or_default();
        let (body, version) = match result {
            Ok((ResponseBody::Fetch(body), version)) => (body, version),
            Ok(_) => return,
            Err(error) => {
                tracing::debug!(node = fetch.node, %error, "fetch failed");
                session.handle_error();
                // Fetched from a follower: back to the leader.
                for tp in fetch.partitions.keys() {
                    if self.read_replicas.preferred(tp) == Some(fetch.node) {
                        self.read_replicas.clear(tp);
                    }
                }
                ctx.request_metadata_refresh();
                self.node_backoff
                    .insert(fetch.node, ctx.now + self.retry_backoff);
                return;
            }
        };
        let top_error = ResponseError::try_from_code(body.error_code);
        if !session.handle_response(top_error, body.session_id) {
            if !matches!(
                top_error,
                Some(
                    ResponseError::FetchSessionIdNotFound | ResponseError::InvalidFetchSessionEpoch
                )
            ) {
                self.node_backoff
                    .insert(fetch.node, ctx.now + self.retry_backoff);
            }
            return;
        }
        let endpoints = leader_endpoints(&body);
        self.handle_partitions(ctx, &fetch, body, version);
        if !ctx.effects.leader_hints.is_empty() {
            ctx.effects.leader_endpoints.extend(endpoints);
        }
    }

    fn handle_partitions(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        fetch: &InFlightFetch,
        body: FetchResponse,
        version: i16,
    ) {
        for topic in body.responses {
            let name = if version >= TOPIC_ID_VERSION {
                match ctx.metadata.topic_name(topic.topic_id) {
                    Some(name) => name.to_owned(),
                    None => {
                        ctx.request_metadata_refresh();
                        continue;
                    }
                }
            } else {
                topic.topic.0.to_string()
            };
            for partition in topic.partitions {
                let tp = TopicPartition::new(name.as_str(), partition.partition_index);
                let Some(&(fetch_offset, generation, leader_epoch)) = fetch.partitions.get(&tp)
                else {
                    continue;
                };
                let failed_at = FailedAt {
                    position: (fetch_offset, generation),
                    leader: (fetch.node, leader_epoch),
                };
                let error = ResponseError::try_from_code(partition.error_code);
                if error.is_none() {
                    self.holds.on_success(&tp);
                    // KIP-392 (Java's `FetchCollector.handleInitializeSuccess`): the leader
                    // names a follower to fetch from instead, for `metadata.max.age.ms`.
                    if version >= RACK_ID_VERSION && partition.preferred_read_replica.0 >= 0 {
                        let lease = Duration::from_millis(ctx.settings.metadata_max_age_ms);
                        let replica = partition.preferred_read_replica.0;
                        self.read_replicas.update(&tp, replica, ctx.now, lease);
                    }
                }
                match error {
                    None if partition.diverging_epoch.epoch >= 0 => self.on_diverging_epoch(
                        ctx,
                        &tp,
                        failed_at,
                        partition.diverging_epoch.epoch,
                        partition.diverging_epoch.end_offset,
                    ),
                    None => {
                        let records = partition.records.unwrap_or_default();
                        if records.is_empty() {
                            continue;
                        }
                        let aborted: Vec<AbortedTransaction> = partition
                            .aborted_transactions
                            .unwrap_or_default()
                            .iter()
                            .map(|a| AbortedTransaction {
                                producer_id: a.producer_id.0,
                                first_offset: a.first_offset,
                            })
                            .collect();
                        let completed = CompletedFetch::new(
                            tp,
                            generation,
                            fetch_offset,
                            PartitionFetchInfo {
                                high_watermark: partition.high_watermark,
                                last_stable_offset: partition.last_stable_offset,
                                log_start_offset: partition.log_start_offset,
                            },
                            records,
                            &aborted,
                            ctx.settings.isolation_level,
                            ctx.settings.check_crcs,
                        );
                        ctx.buffer.add(completed);
                    }
                    // Java: out of range on a follower (not caught up yet) is retried on
                    // the leader, which alone decides whether the offset is out of range.
                    Some(ResponseError::OffsetOutOfRange)
                        if self.read_replicas.preferred(&tp) == Some(fetch.node) =>
                    {
                        tracing::debug!(partition = %tp, replica = fetch.node, fetch_offset,
                            "offset out of range on the preferred read replica: retrying on the leader");
                        self.read_replicas.clear(&tp);
                    }
                    Some(ResponseError::OffsetOutOfRange) => {
                        self.on_out_of_range(ctx, &tp, failed_at)
                    }
                    Some(
                        code @ (ResponseError::NotLeaderOrFollower
                        | ResponseError::ReplicaNotAvailable
                        | ResponseError::KafkaStorageError
                        | ResponseError::FencedLeaderEpoch
                        | ResponseError::OffsetNotAvailable
                        | ResponseError::UnknownTopicOrPartition
                        | ResponseError::UnknownTopicId
                        | ResponseError::InconsistentTopicId
                        | ResponseError::UnknownLeaderEpoch),
                    ) => {
                        tracing::debug!(partition = %tp, %code, "fetch error: refreshing metadata");
                        ctx.request_metadata_refresh();
                        // Java's `requestMetadataUpdate`: a preferred read replica is dropped.
                        self.read_replicas.clear(&tp);
                        // KIP-951: the broker may name the new leader (Java's
                        // `AbstractFetch.handleFetchSuccess` collects these hints for
                        // `Metadata.updatePartitionLeadership`).
                        let leader = &partition.current_leader;
                        if matches!(
                            code,
                            ResponseError::NotLeaderOrFollower | ResponseError::FencedLeaderEpoch
                        ) && leader.leader_id.0 >= 0
                            && leader.leader_epoch >= 0
                        {
                            ctx.effects.leader_hints.push(LeaderHint {
                                topic: tp.topic.to_string(),
                                partition: tp.partition,
                                leader_id: leader.leader_id.0,
                                leader_epoch: leader.leader_epoch,
                            });
                        }
                        self.holds.on_failure(
                            &tp,
                            failed_at,
                            FailureKind::Retriable,
                            ctx.now,
                            ctx.rng,
                        );
                    }
                    Some(code) => {
                        tracing::warn!(partition = %tp, %code, "fetch error");
                        ctx.report(Error::from_code(code, format!("fetch of {tp}")));
                        self.holds.on_failure(
                            &tp,
                            failed_at,
                            FailureKind::Reported,
                            ctx.now,
                            ctx.rng,
                        );
                    }
                }
            }
        }
    }

    fn on_out_of_range(&mut self, ctx: &mut ManagerContext<'_>, tp: &TopicPartition, at: FailedAt) {
        let (fetch_offset, generation) = at.position;
        let current = ctx.buffer.position(tp);
        if current.map(|(p, g)| (p.offset, g)) != Some((fetch_offset, generation)) {
            return; // the position moved on meanwhile
        }
        let policy = ctx.settings.auto_offset_reset;
        tracing::info!(partition = %tp, fetch_offset, ?policy, "fetch offset out of range");
        if policy == AutoOffsetReset::None {
            // Java's `FetchCollector.handleInitializeErrors`: without a reset policy the
            // position stays where it is and the application gets OffsetOutOfRange, again on
            // each poll while it is still out of range, so it can read `position()` and seek.
            ctx.report(Error::OffsetOutOfRange {
                offsets: vec![(tp.clone(), fetch_offset)],
            });
            let kind = FailureKind::ReportedUntilSeek;
            self.holds.on_failure(tp, at, kind, ctx.now, ctx.rng);
            return;
        }
        if sabotage::active(Sabotage::OutOfRangeIgnored) {
            return;
        }
        ctx.subscriptions
            .set_fetch_state(tp, FetchState::AwaitingReset(policy));
    }
}

impl FetchRequestManager {
    /// The leader answered `last_fetched_epoch` with a diverging epoch: its log was truncated
    /// below (or at) the position, and the largest epoch not above ours ends at `end_offset`.
    /// Handled as an OffsetForLeaderEpoch answer (Java's `maybeCompleteValidation`): move to
    /// the divergence point, or with `auto.offset.reset=none` keep the position and report
    /// the truncation. A divergence at or past the position only means our epoch is unknown
    /// there: the position stays and takes the leader's epoch, so the next fetch does not
    /// diverge again.
    fn on_diverging_epoch(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        tp: &TopicPartition,
        at: FailedAt,
        epoch: i32,
        end_offset: i64,
    ) {
        let (fetch_offset, generation) = at.position;
        let Some((current, current_generation)) = ctx.buffer.position(tp) else {
            return;
        };
        if (current.offset, current_generation) != (fetch_offset, generation) {
            return; // the position moved on meanwhile
        }
        let policy = ctx.settings.auto_offset_reset;
        if end_offset < fetch_offset && policy == AutoOffsetReset::None {
            tracing::warn!(partition = %tp, position = fetch_offset, end_offset,
                "log truncation detected by the fetch's diverging epoch");
            ctx.report(Error::LogTruncation {
                divergent_offsets: vec![(tp.clone(), end_offset)],
            });
            let kind = FailureKind::ReportedUntilSeek;
            self.holds.on_failure(tp, at, kind, ctx.now, ctx.rng);
            return;
        }
        let offset = end_offset.min(fetch_offset);
        tracing::info!(partition = %tp, position = fetch_offset, offset, epoch,
            "diverging epoch: moving to the divergence point");
        ctx.buffer.set_position(
            tp,
            FetchPosition {
                offset,
                offset_epoch: Some(epoch),
                current_leader_epoch: current.current_leader_epoch,
            },
        );
        ctx.subscriptions.set_fetch_state(tp, FetchState::Fetching);
    }
}

/// The brokers a Fetch response's `node_endpoints` describe (v16+, KIP-951).
fn leader_endpoints(body: &FetchResponse) -> Vec<Broker> {
    body.node_endpoints
        .iter()
        .filter_map(|e| {
            Some(Broker {
                node_id: e.node_id.0,
                host: e.host.to_string(),
                port: u16::try_from(e.port).ok()?,
                rack: e.rack.as_ref().map(ToString::to_string),
            })
        })
        .collect()
}

fn fetch_request(
    ctx: &ManagerContext<'_>,
    data: &super::fetch_session::FetchRequestData,
    version: i16,
) -> FetchRequest {
    let by_id = version >= TOPIC_ID_VERSION;
    // Within a session a topic's name and id go together, so runs of either are the same.
    let topics = group_runs(data.to_send.iter().map(|(tp, d)| {
        let partition = FetchPartition::default()
            .with_partition(tp.partition)
            .with_current_leader_epoch(d.current_leader_epoch)
            .with_fetch_offset(d.fetch_offset)
            .with_log_start_offset(-1)
            .with_partition_max_bytes(d.max_bytes)
            .with_last_fetched_epoch(if version >= LAST_FETCHED_EPOCH_VERSION {
                d.last_fetched_epoch
            } else {
                -1
            });
        ((&tp.topic, d.topic_id), partition)
    }))
    .into_iter()
    .map(|((name, topic_id), partitions)| {
        let topic = if by_id {
            FetchTopic::default().with_topic_id(topic_id)
        } else {
            FetchTopic::default().with_topic(topic_name(name))
        };
        topic.with_partitions(partitions)
    })
    .collect();
    let forgotten = group_runs(
        data.to_forget
            .iter()
            .map(|(tp, topic_id)| ((&tp.topic, *topic_id), tp.partition)),
    )
    .into_iter()
    .map(|((name, topic_id), partitions)| {
        let topic = if by_id {
            ForgottenTopic::default().with_topic_id(topic_id)
        } else {
            ForgottenTopic::default().with_topic(topic_name(name))
        };
        topic.with_partitions(partitions)
    })
    .collect();
    let settings = ctx.settings;
    let isolation_level = if sabotage::active(Sabotage::FetchIgnoresIsolation) {
        IsolationLevel::ReadUncommitted
    } else {
        settings.isolation_level
    };
    FetchRequest::default()
        .with_max_wait_ms(settings.fetch_max_wait_ms)
        .with_min_bytes(settings.fetch_min_bytes)
        .with_max_bytes(settings.fetch_max_bytes)
        .with_isolation_level(isolation_level.wire())
        .with_session_id(data.session_id)
        .with_session_epoch(data.epoch)
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten)
        .with_rack_id(if version >= RACK_ID_VERSION {
            StrBytes::from_string(settings.client_rack.clone())
        } else {
            StrBytes::default()
        })
}

mod partition_holds;
mod read_replicas;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod superseded_tests;
