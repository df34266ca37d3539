//! Fetch (1): sessions (KIP-227), long polling on virtual time woken by appends, Kafka's size
//! rules, `read_committed` up to the last stable offset with aborted transactions, leader
//! epoch checks and diverging-epoch detection, KIP-951 leader hints, and KIP-392 follower
//! fetching when the cluster has a rack-aware replica selector
//! ([`crate::config::ClusterConfig::rack_aware_replica_selector`]).

/// The first Fetch version with `rack_id` and `preferred_read_replica` (KIP-392).
const RACK_ID_VERSION: i16 = 11;

use kafka_consumer::records::LOG_OVERHEAD_BYTES;
use kafka_consumer::rt::{Duration, Instant};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
    PartitionData,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::{leader_partition, NONE};
use crate::broker::dispatch::RequestCtx;
use crate::broker::fetch_session::{FetchContext, FetchKey, FetchParams};
use crate::buggify::Buggify;
use crate::controller::ClusterState;

/// Fetch's `READ_COMMITTED` isolation level.
const READ_COMMITTED: i8 = 1;

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: FetchRequest) -> FetchResponse {
    let version = ctx.version;
    let broker = ctx.broker;
    let (requested, forgotten) = {
        let state = broker.controller.read();
        let requested = request
            .topics
            .iter()
            .flat_map(|t| {
                let name = topic_name(&state, &t.topic, t.topic_id, version);
                t.partitions.iter().map(move |p| {
                    let key = FetchKey {
                        topic_id: t.topic_id,
                        topic: name.clone(),
                        partition: p.partition,
                    };
                    let params = FetchParams {
                        fetch_offset: p.fetch_offset,
                        partition_max_bytes: p.partition_max_bytes,
                        current_leader_epoch: if version >= 9 {
                            p.current_leader_epoch
                        } else {
                            -1
                        },
                        last_fetched_epoch: if version >= 12 {
                            p.last_fetched_epoch
                        } else {
                            -1
                        },
                    };
                    (key, params)
                })
            })
            .collect::<Vec<_>>();
        let forgotten = request
            .forgotten_topics_data
            .iter()
            .flat_map(|t| {
                let name = topic_name(&state, &t.topic, t.topic_id, version);
                t.partitions.iter().map(move |p| FetchKey {
                    topic_id: t.topic_id,
                    topic: name.clone(),
                    partition: *p,
                })
            })
            .collect::<Vec<_>>();
        (requested, forgotten)
    };
    let context = if version >= 7 {
        let mut sessions = broker
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.new_context(
            request.session_id,
            request.session_epoch,
            requested,
            forgotten,
        )
    } else {
        Ok(FetchContext {
            session_id: 0,
            incremental: false,
            partitions: requested,
        })
    };
    let context = match context {
        Ok(context) => context,
        Err(error) => return FetchResponse::default().with_error_code(error.code()),
    };
    let read_committed = version >= 4 && request.isolation_level == READ_COMMITTED;
    let max_wait = Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0));
    let deadline = Instant::now() + max_wait;
    let min_bytes = usize::try_from(request.min_bytes).unwrap_or(0);
    let max_bytes = usize::try_from(request.max_bytes).unwrap_or(0);
    let mut changes = broker.controller.subscribe();
    let buggify = broker.faults.buggify();
    let replicas = ReplicaSelection {
        from_consumer: version >= RACK_ID_VERSION && consumer_replica_id(&request, version) < 0,
        client_rack: request.rack_id.to_string(),
    };
    loop {
        changes.borrow_and_update();
        let reads = {
            let state = broker.controller.read();
            read_all(
                &state,
                broker.node_id,
                &context,
                max_bytes,
                read_committed,
                version,
                &buggify,
                &replicas,
            )
        };
        let bytes: usize = reads
            .iter()
            .map(|(_, r)| r.records.as_ref().map_or(0, |b| b.len()))
            .sum();
        let errors = reads
            .iter()
            .any(|(_, r)| r.error_code != NONE || r.diverging_epoch.epoch >= 0);
        // Kafka's DelayedFetch: respond at once on enough bytes, any error, or no wait. Buggify:
        // an early answer with less than `min_bytes` (a client must take any answer).
        if max_wait.is_zero()
            || bytes >= min_bytes
            || errors
            || Instant::now() >= deadline
            || crate::buggify!(buggify)
        {
            return respond(ctx, &context, reads);
        }
        tokio::select! {
            _ = changes.changed() => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// `data` with its records cut after the first whole batch.
fn first_batch_only(data: PartitionData) -> PartitionData {
    let Some(records) = data.records.clone() else {
        return data;
    };
    let first = records
        .get(8..12)
        .and_then(|len| <[u8; 4]>::try_from(len).ok())
        .and_then(|len| usize::try_from(i32::from_be_bytes(len)).ok())
        .map(|len| (LOG_OVERHEAD_BYTES + len).min(records.len()));
    match first {
        Some(end) => data.with_records(Some(records.slice(..end))),
        None => data,
    }
}

/// The topic's name as the request names it: by name before v13, by id from v13 (empty if the
/// id is unknown).
fn topic_name(state: &ClusterState, name: &TopicName, topic_id: Uuid, version: i16) -> String {
    if version >= 13 {
        state
            .topic_by_id(topic_id)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    } else {
        name.0.to_string()
    }
}

/// The replica id a fetch names: a consumer's is negative (Fetch v15+ moved it into
/// `replica_state`).
fn consumer_replica_id(request: &FetchRequest, version: i16) -> i32 {
    if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    }
}

/// What a fetch tells about follower fetching (KIP-392).
struct ReplicaSelection {
    /// A consumer's fetch at v11+: it may read from a follower and be sent to one.
    from_consumer: bool,
    /// Its `client.rack` (empty: none).
    client_rack: String,
}

/// Kafka's `RackAwareReplicaSelector` as `ReplicaManager.findPreferredReadReplica` applies it
/// on the leader: the in-sync replicas on live brokers in the client's rack; none there, or
/// the leader among them, means the leader (`None`); otherwise the most caught-up of them
/// (all are, replication being instantaneous here), the lowest id to be deterministic.
fn preferred_read_replica(
    state: &ClusterState,
    part: &crate::controller::PartitionState,
    client_rack: &str,
) -> Option<i32> {
    if client_rack.is_empty() {
        return None;
    }
    let same_rack: Vec<i32> = part
        .isr
        .iter()
        .copied()
        .filter(|id| {
            state
                .brokers
                .get(id)
                .is_some_and(|b| b.alive && b.rack.as_deref() == Some(client_rack))
        })
        .collect();
    if same_rack.is_empty() || same_rack.contains(&part.leader) {
        return None;
    }
    same_rack.into_iter().min()
}

/// The partition a consumer may read from this broker as a follower (KIP-392): the broker is
/// an in-sync replica and the leader epoch checks pass as on the leader.
fn follower_partition<'a>(
    state: &'a ClusterState,
    node_id: i32,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
) -> Result<&'a crate::controller::PartitionState, ResponseError> {
    let part = state
        .partition(topic, partition)
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    if !part.isr.contains(&node_id) {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    if current_leader_epoch >= 0 {
        if current_leader_epoch < part.leader_epoch {
            return Err(ResponseError::FencedLeaderEpoch);
        }
        if current_leader_epoch > part.leader_epoch {
            return Err(ResponseError::UnknownLeaderEpoch);
        }
    }
    Ok(part)
}

#[allow(clippy::too_many_arguments)] // the whole request context, as `read_partition`
fn read_all(
    state: &ClusterState,
    node_id: i32,
    context: &FetchContext,
    max_bytes: usize,
    read_committed: bool,
    version: i16,
    buggify: &Buggify,
    replicas: &ReplicaSelection,
) -> Vec<(FetchKey, PartitionData)> {
    let mut remaining = max_bytes;
    // KIP-74: until some partition returns data, the first batch comes back whole even if it
    // exceeds the limits, so a consumer can always make progress.
    let mut min_one_batch = true;
    context
        .partitions
        .iter()
        .map(|(key, params)| {
            let data = read_partition(
                state,
                node_id,
                key,
                params,
                remaining,
                min_one_batch,
                read_committed,
                version,
                replicas,
            );
            // Buggify: only the first batch, as when the limits had been smaller.
            let data = if crate::buggify!(buggify) {
                first_batch_only(data)
            } else {
                data
            };
            let size = data.records.as_ref().map_or(0, |b| b.len());
            if size > 0 {
                min_one_batch = false;
                remaining = remaining.saturating_sub(size);
            }
            (key.clone(), data)
        })
        .collect()
}

#[allow(clippy::too_many_arguments)] // one partition's read needs the whole request context
fn read_partition(
    state: &ClusterState,
    node_id: i32,
    key: &FetchKey,
    params: &FetchParams,
    remaining_bytes: usize,
    min_one_batch: bool,
    read_committed: bool,
    version: i16,
    replicas: &ReplicaSelection,
) -> PartitionData {
    let base = PartitionData::default()
        .with_partition_index(key.partition)
        .with_high_watermark(-1)
        .with_aborted_transactions(None);
    let error = |code: ResponseError| {
        let mut data = base
            .clone()
            .with_error_code(code.code())
            .with_records(Some(Default::default()));
        // KafkaApis answers partitions missing from the metadata itself, with the schema's
        // default empty list; errors from the replica manager carry null.
        if matches!(
            code,
            ResponseError::UnknownTopicId | ResponseError::UnknownTopicOrPartition
        ) {
            data = data.with_aborted_transactions(Some(Vec::new()));
        }
        if version >= 12
            && matches!(
                code,
                ResponseError::NotLeaderOrFollower | ResponseError::FencedLeaderEpoch
            )
        {
            if let Some(part) = state.partition(&key.topic, key.partition) {
                data = data.with_current_leader(
                    LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(part.leader))
                        .with_leader_epoch(part.leader_epoch),
                );
            }
        }
        data
    };
    if key.topic.is_empty() {
        return error(if version >= 13 {
            ResponseError::UnknownTopicId
        } else {
            ResponseError::UnknownTopicOrPartition
        });
    }
    let selector = state.config.rack_aware_replica_selector && replicas.from_consumer;
    let found = if selector {
        follower_partition(
            state,
            node_id,
            &key.topic,
            key.partition,
            params.current_leader_epoch,
        )
    } else {
        leader_partition(
            state,
            node_id,
            &key.topic,
            key.partition,
            params.current_leader_epoch,
        )
    };
    let part = match found {
        Ok(part) => part,
        Err(code) => return error(code),
    };
    let log = &part.log;
    let mut data = base
        .clone()
        .with_high_watermark(log.high_watermark())
        .with_last_stable_offset(log.last_stable_offset());
    if version >= 5 {
        data = data.with_log_start_offset(log.log_start_offset());
    }
    // KIP-392: the leader sends a consumer in another replica's rack there, with no records
    // (Kafka's `ReplicaManager.readFromLog` skips the read when a preferred replica is set).
    if selector && part.leader == node_id {
        if let Some(replica) = preferred_read_replica(state, part, &replicas.client_rack) {
            return data
                .with_preferred_read_replica(BrokerId(replica))
                .with_records(Some(Default::default()));
        }
    }
    if params.last_fetched_epoch >= 0 {
        let (epoch, end_offset) = log.end_offset_for_epoch(params.last_fetched_epoch);
        if epoch != params.last_fetched_epoch || end_offset < params.fetch_offset {
            return data
                .with_diverging_epoch(
                    EpochEndOffset::default()
                        .with_epoch(epoch)
                        .with_end_offset(end_offset),
                )
                .with_records(Some(Default::default()));
        }
    }
    if params.fetch_offset < log.log_start_offset() || params.fetch_offset > log.log_end_offset() {
        return error(ResponseError::OffsetOutOfRange);
    }
    let max_offset = if read_committed {
        log.last_stable_offset()
    } else {
        log.high_watermark()
    };
    let limit = usize::try_from(params.partition_max_bytes)
        .unwrap_or(0)
        .min(remaining_bytes);
    let read = log.read(
        params.fetch_offset,
        max_offset,
        limit,
        min_one_batch,
        read_committed,
    );
    if read_committed {
        let aborted = read
            .aborted
            .iter()
            .map(|a| {
                AbortedTransaction::default()
                    .with_producer_id(ProducerId(a.producer_id))
                    .with_first_offset(a.first_offset)
            })
            .collect();
        data = data.with_aborted_transactions(Some(aborted));
    }
    data.with_records(Some(read.records))
}

fn respond(
    ctx: &RequestCtx<'_>,
    context: &FetchContext,
    reads: Vec<(FetchKey, PartitionData)>,
) -> FetchResponse {
    let version = ctx.version;
    let broker = ctx.broker;
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    let mut leaders: Vec<i32> = Vec::new();
    {
        let mut sessions = broker
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (key, data) in reads {
            let news = data.records.as_ref().is_some_and(|r| !r.is_empty())
                || data.error_code != NONE
                || data.diverging_epoch.epoch >= 0;
            let include = sessions.must_include(
                context.session_id,
                &key,
                data.high_watermark,
                data.log_start_offset,
                news,
            );
            if context.incremental && !include {
                continue;
            }
            if context.incremental && data.records.as_ref().is_some_and(|r| !r.is_empty()) {
                sessions.rotate_to_end(context.session_id, &key);
            }
            if data.current_leader.leader_id.0 >= 0 {
                leaders.push(data.current_leader.leader_id.0);
            }
            let same_topic = topics.last().is_some_and(|t| {
                if version >= 13 {
                    t.topic_id == key.topic_id
                } else {
                    t.topic.0.as_str() == key.topic
                }
            });
            if !same_topic {
                let mut topic = FetchableTopicResponse::default();
                if version >= 13 {
                    topic = topic.with_topic_id(key.topic_id);
                } else {
                    topic = topic.with_topic(TopicName(StrBytes::from_string(key.topic.clone())));
                }
                topics.push(topic);
            }
            if let Some(topic) = topics.last_mut() {
                topic.partitions.push(data);
            }
        }
    }
    let mut response = FetchResponse::default().with_responses(topics);
    if version >= 7 {
        response = response.with_session_id(context.session_id);
    }
    if version >= 16 && !leaders.is_empty() {
        let state = broker.controller.read();
        leaders.sort_unstable();
        leaders.dedup();
        response = response.with_node_endpoints(
            leaders
                .into_iter()
                .filter_map(|id| state.brokers.get(&id))
                .map(|b| {
                    NodeEndpoint::default()
                        .with_node_id(BrokerId(b.node_id))
                        .with_host(StrBytes::from_string(b.host.clone()))
                        .with_port(i32::from(b.port))
                        .with_rack(b.rack.clone().map(StrBytes::from_string))
                })
                .collect(),
        );
    }
    response
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &FetchRequest,
    code: i16,
) -> FetchResponse {
    let version = ctx.version;
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_error_code(code)
                        .with_high_watermark(-1)
                        .with_aborted_transactions(None)
                })
                .collect();
            let topic = FetchableTopicResponse::default().with_partitions(partitions);
            if version >= 13 {
                topic.with_topic_id(t.topic_id)
            } else {
                topic.with_topic(t.topic.clone())
            }
        })
        .collect();
    let mut response = FetchResponse::default().with_responses(topics);
    if version >= 7 {
        response = response.with_error_code(code).with_session_id(0);
    }
    response
}
