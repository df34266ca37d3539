//! Produce (0): validate each partition's batches with our reader (CRC included), assign
//! offsets at the leader, advance the high watermark (replication is instantaneous, unless
//! `lagging_followers` leaves acks=0/1 appends above it), wake long-polling fetches.

use kafka_consumer::rt::wall_clock_ms;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{
    LeaderIdAndEpoch, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::*;

use super::{leader_partition, NONE};
use crate::broker::dispatch::RequestCtx;
use crate::controller::ClusterState;
use crate::log::AppendError;

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: ProduceRequest) -> ProduceResponse {
    let version = ctx.version;
    let node_id = ctx.broker.node_id;
    let acks = request.acks;
    let acks_valid = matches!(acks, -1..=1);
    let now_ms = wall_clock_ms();
    let responses = ctx.broker.controller.update(|state| {
        request
            .topic_data
            .into_iter()
            .map(|topic| {
                let name = topic_name(state, &topic, version);
                let partitions = topic
                    .partition_data
                    .into_iter()
                    .map(|data| {
                        let index = data.index;
                        let result = if acks_valid {
                            append(state, node_id, name.as_deref(), data, now_ms, version, acks)
                        } else {
                            Err(ResponseError::InvalidRequiredAcks)
                        };
                        partition_response(state, name.as_deref(), index, result, version)
                    })
                    .collect();
                topic_response(topic.name, topic.topic_id, partitions, version)
            })
            .collect()
    });
    ProduceResponse::default().with_responses(responses)
}

/// The topic's name: from the request before v13, looked up by id from v13.
fn topic_name(state: &ClusterState, topic: &TopicProduceData, version: i16) -> Option<String> {
    if version >= 13 {
        state.topic_by_id(topic.topic_id).map(|t| t.name.clone())
    } else {
        Some(topic.name.0.to_string())
    }
}

struct Appended {
    base_offset: i64,
    log_append_time_ms: i64,
    log_start_offset: i64,
}

fn append(
    state: &mut ClusterState,
    node_id: i32,
    topic: Option<&str>,
    data: PartitionProduceData,
    now_ms: i64,
    version: i16,
    acks: i16,
) -> Result<Appended, ResponseError> {
    let Some(topic) = topic else {
        return Err(if version >= 13 {
            ResponseError::UnknownTopicId
        } else {
            ResponseError::UnknownTopicOrPartition
        });
    };
    let leader_epoch = leader_partition(state, node_id, topic, data.index, -1)?.leader_epoch;
    let topic_state = state
        .topics
        .get(topic)
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    if topic_state.internal {
        return Err(ResponseError::InvalidTopicException);
    }
    let honoured = topic_state.honoured();
    let log_append_time = honoured.log_append_time.then_some(now_ms);
    let max_message_bytes = honoured
        .max_message_bytes
        .unwrap_or(state.config.max_message_bytes);
    // acks=all waits for the ISR, which then holds the whole log (followers fetch in order);
    // with lagging followers an acks=0/1 append is acknowledged by the leader alone.
    let replicated = acks == -1 || !state.config.lagging_followers;
    let part = state
        .partition_mut(topic, data.index)
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    let records = data.records.ok_or(ResponseError::CorruptMessage)?;
    let info = part
        .log
        .append(records, leader_epoch, log_append_time, max_message_bytes)
        .map_err(|e| match e {
            AppendError::Corrupt(_) => ResponseError::CorruptMessage,
            AppendError::InvalidRecord(_) => ResponseError::InvalidRecord,
            AppendError::TooLarge { .. } => ResponseError::MessageTooLarge,
        })?;
    if replicated {
        part.log.advance_high_watermark(info.last_offset + 1);
    }
    Ok(Appended {
        base_offset: info.base_offset,
        log_append_time_ms: info.log_append_time_ms,
        log_start_offset: part.log.log_start_offset(),
    })
}

fn partition_response(
    state: &ClusterState,
    topic: Option<&str>,
    index: i32,
    result: Result<Appended, ResponseError>,
    version: i16,
) -> PartitionProduceResponse {
    let response = PartitionProduceResponse::default().with_index(index);
    match result {
        Ok(appended) => {
            let mut response = response.with_base_offset(appended.base_offset);
            if version >= 2 {
                response = response.with_log_append_time_ms(appended.log_append_time_ms);
            }
            if version >= 5 {
                response = response.with_log_start_offset(appended.log_start_offset);
            }
            response
        }
        Err(error) => {
            let mut response = response.with_error_code(error.code()).with_base_offset(-1);
            if version >= 10 && error == ResponseError::NotLeaderOrFollower {
                if let Some(part) = topic.and_then(|t| state.partition(t, index)) {
                    response = response.with_current_leader(
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(part.leader))
                            .with_leader_epoch(part.leader_epoch),
                    );
                }
            }
            response
        }
    }
}

fn topic_response(
    name: TopicName,
    topic_id: uuid::Uuid,
    partitions: Vec<PartitionProduceResponse>,
    version: i16,
) -> TopicProduceResponse {
    let response = TopicProduceResponse::default().with_partition_responses(partitions);
    if version >= 13 {
        response.with_topic_id(topic_id)
    } else {
        response.with_name(name)
    }
}

/// Whether any partition failed (acks=0 then closes the connection, as Kafka does).
pub(crate) fn has_error(response: &ProduceResponse) -> bool {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partition_responses)
        .any(|p| p.error_code != NONE)
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &ProduceRequest,
    code: i16,
) -> ProduceResponse {
    let responses = request
        .topic_data
        .iter()
        .map(|topic| {
            let partitions = topic
                .partition_data
                .iter()
                .map(|p| {
                    PartitionProduceResponse::default()
                        .with_index(p.index)
                        .with_error_code(code)
                        .with_base_offset(-1)
                })
                .collect();
            topic_response(topic.name.clone(), topic.topic_id, partitions, ctx.version)
        })
        .collect();
    ProduceResponse::default().with_responses(responses)
}
