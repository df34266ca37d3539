//! DeleteRecords (21): moves a partition's log start offset up, as the leader does in Kafka
//! (`KafkaApis.handleDeleteRecordsRequest`, `ReplicaManager.deleteRecordsOnLocalLog`,
//! `Partition.deleteRecordsOnLeader`). Fetches below the new start then get
//! OFFSET_OUT_OF_RANGE and ListOffsets' earliest is the new start.
//!
//! Per partition, in Kafka's order: an unknown partition is UNKNOWN_TOPIC_OR_PARTITION; an
//! internal topic INVALID_TOPIC_EXCEPTION; a broker that does not lead it
//! NOT_LEADER_OR_FOLLOWER; a topic whose `cleanup.policy` lacks `delete` POLICY_VIOLATION;
//! offset -1 means the high watermark; a negative offset, or one above the high watermark, is
//! OFFSET_OUT_OF_RANGE. An offset at or below the current start changes nothing. The answer's
//! low watermark is the log start offset afterwards (-1 with an error).
//!
//! Simplified: the replicas share one log, so the deletion is complete at once (Kafka waits,
//! up to the request's timeout, for the followers' log start offsets to follow). A partition
//! named twice is answered once, for its last offset, as Kafka's maps do; topics are answered
//! in request order (Kafka: hash map order).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::*;

use super::leader_partition;
use crate::broker::dispatch::RequestCtx;
use crate::controller::ClusterState;

/// `DeleteRecordsRequest.HIGH_WATERMARK`.
const HIGH_WATERMARK: i64 = -1;
/// `DeleteRecordsResponse.INVALID_LOW_WATERMARK`.
const INVALID_LOW_WATERMARK: i64 = -1;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let node_id = ctx.broker.node_id;
    let topics = ctx.broker.controller.update(|state| {
        let mut topics: Vec<DeleteRecordsTopicResult> = Vec::new();
        for topic in &request.topics {
            for partition in &topic.partitions {
                let index = partition.partition_index;
                let answer = match delete(state, node_id, &topic.name.0, index, partition.offset) {
                    Ok(low_watermark) => DeleteRecordsPartitionResult::default()
                        .with_partition_index(index)
                        .with_low_watermark(low_watermark),
                    Err(error) => failed(index, error.code()),
                };
                add(&mut topics, &topic.name, answer);
            }
        }
        topics
    });
    DeleteRecordsResponse::default().with_topics(topics)
}

/// The answer for `name`, replacing an earlier one for the same partition.
fn add(
    topics: &mut Vec<DeleteRecordsTopicResult>,
    name: &TopicName,
    answer: DeleteRecordsPartitionResult,
) {
    let at = match topics.iter().position(|t| &t.name == name) {
        Some(at) => at,
        None => {
            topics.push(DeleteRecordsTopicResult::default().with_name(name.clone()));
            topics.len() - 1
        }
    };
    let partitions = &mut topics[at].partitions;
    partitions.retain(|p| p.partition_index != answer.partition_index);
    partitions.push(answer);
}

/// Deletes the records of `topic`-`partition` below `offset`; the new log start offset.
fn delete(
    state: &mut ClusterState,
    node_id: i32,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<i64, ResponseError> {
    let topic_state = state
        .topics
        .get(topic)
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    if state.partition(topic, partition).is_none() {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    if topic_state.internal {
        return Err(ResponseError::InvalidTopicException);
    }
    let delete_policy = topic_state.honoured().delete_policy;
    leader_partition(state, node_id, topic, partition, -1)?;
    if !delete_policy {
        return Err(ResponseError::PolicyViolation);
    }
    let log = &mut state
        .partition_mut(topic, partition)
        .ok_or(ResponseError::UnknownTopicOrPartition)?
        .log;
    let target = if offset == HIGH_WATERMARK {
        log.high_watermark()
    } else {
        offset
    };
    if target < 0 || target > log.high_watermark() {
        return Err(ResponseError::OffsetOutOfRange);
    }
    Ok(log.delete_before(target))
}

fn failed(partition: i32, code: i16) -> DeleteRecordsPartitionResult {
    DeleteRecordsPartitionResult::default()
        .with_partition_index(partition)
        .with_low_watermark(INVALID_LOW_WATERMARK)
        .with_error_code(code)
}

/// `DeleteRecordsRequest.getErrorResponse`: `code` for every partition.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &DeleteRecordsRequest,
    code: i16,
) -> DeleteRecordsResponse {
    DeleteRecordsResponse::default().with_topics(
        request
            .topics
            .iter()
            .map(|t| {
                DeleteRecordsTopicResult::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| failed(p.partition_index, code))
                            .collect(),
                    )
            })
            .collect(),
    )
}
