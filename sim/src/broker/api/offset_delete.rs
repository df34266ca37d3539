//! OffsetDelete (47): removes a group's committed offsets for some partitions
//! (`KafkaApis.handleOffsetDeleteRequest`, `GroupCoordinatorService.deleteOffsets`); the group
//! rules are the shard's (`crate::group::shard`'s `offset_delete`).
//!
//! Here, as in `KafkaApis`: a topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION for
//! each of its partitions, and so does each partition the topic lacks; only the rest goes to the
//! group's coordinator, whose answer is merged with those. An empty group id is
//! INVALID_GROUP_ID; NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS (and the shard's group
//! errors) are top-level error codes, still with the partitions answered here.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_delete_request::OffsetDeleteRequestTopic;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let mut unknown: Vec<(TopicName, i32)> = Vec::new();
    let mut known: Vec<OffsetDeleteRequestTopic> = Vec::new();
    {
        let state = ctx.broker.controller.read();
        for topic in &request.topics {
            let exists = state.topics.contains_key(topic.name.0.as_str());
            let mut valid = topic.clone().with_partitions(Vec::new());
            for partition in &topic.partitions {
                let index = partition.partition_index;
                if exists && state.partition(topic.name.0.as_str(), index).is_some() {
                    valid.partitions.push(partition.clone());
                } else {
                    unknown.push((topic.name.clone(), index));
                }
            }
            if !valid.partitions.is_empty() {
                known.push(valid);
            }
        }
    }
    let group_id = request.group_id.0.to_string();
    let mut response = if group_id.is_empty() {
        OffsetDeleteResponse::default().with_error_code(ResponseError::InvalidGroupId.code())
    } else {
        let narrowed = request.clone().with_topics(known);
        match route(ctx, &group_id, GroupRequest::OffsetDelete(narrowed)).await {
            Ok(GroupResponse::OffsetDelete(response)) => response,
            Ok(_) => OffsetDeleteResponse::default().with_error_code(mismatched().code()),
            Err(error) => OffsetDeleteResponse::default().with_error_code(error.code()),
        }
    };
    for (name, index) in unknown {
        let answer = OffsetDeleteResponsePartition::default()
            .with_partition_index(index)
            .with_error_code(ResponseError::UnknownTopicOrPartition.code());
        match response.topics.iter_mut().find(|t| t.name == name) {
            Some(topic) => topic.partitions.push(answer),
            None => response.topics.push(
                OffsetDeleteResponseTopic::default()
                    .with_name(name)
                    .with_partitions(vec![answer]),
            ),
        }
    }
    response
}

/// `OffsetDeleteRequest.getErrorResponse`: the top-level error alone.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &OffsetDeleteRequest,
    code: i16,
) -> OffsetDeleteResponse {
    OffsetDeleteResponse::default().with_error_code(code)
}
