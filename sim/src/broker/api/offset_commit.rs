//! OffsetCommit (8): routed to the shard owning the group; coordinator errors as Kafka reports them.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    mut request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let refused = take_unknown_partitions(ctx, &mut request);
    // Nothing left for the coordinator: Kafka answers at once, without routing the group.
    if request.topics.is_empty() {
        return OffsetCommitResponse::default().with_topics(refused);
    }
    let group_id = request.group_id.0.to_string();
    let result = match route(ctx, &group_id, GroupRequest::OffsetCommit(request.clone())).await {
        Ok(GroupResponse::OffsetCommit(response)) => Ok(response),
        Ok(_) => Err(mismatched()),
        Err(error) => Err(error),
    };
    let response = result.unwrap_or_else(|error| error_response(ctx, &request, error.code()));
    merge(refused, response)
}

/// Kafka's `KafkaApis.handleOffsetCommitRequest` keeps from the coordinator the topics its
/// metadata does not have (an illegal name included) and the partitions they do not have,
/// answering them UNKNOWN_TOPIC_OR_PARTITION: no offset is stored for a topic that does not
/// exist. Removes them from `request` and returns their answers.
fn take_unknown_partitions(
    ctx: &RequestCtx<'_>,
    request: &mut OffsetCommitRequest,
) -> Vec<OffsetCommitResponseTopic> {
    let state = ctx.broker.controller.read();
    let mut refused = Vec::new();
    for topic in &mut request.topics {
        let name = topic.name.0.as_str();
        let (known, unknown): (Vec<_>, Vec<_>) = std::mem::take(&mut topic.partitions)
            .into_iter()
            .partition(|p| state.partition(name, p.partition_index).is_some());
        topic.partitions = known;
        if !unknown.is_empty() {
            refused.push(
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name.clone())
                    .with_partitions(
                        unknown
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            })
                            .collect(),
                    ),
            );
        }
    }
    request.topics.retain(|t| !t.partitions.is_empty());
    refused
}

/// The refused partitions first, then the coordinator's answers, one entry per topic (Kafka's
/// `OffsetCommitResponse.Builder`).
fn merge(
    mut topics: Vec<OffsetCommitResponseTopic>,
    response: OffsetCommitResponse,
) -> OffsetCommitResponse {
    let OffsetCommitResponse {
        topics: answered, ..
    } = response.clone();
    for topic in answered {
        match topics.iter_mut().find(|t| t.name == topic.name) {
            Some(existing) => existing.partitions.extend(topic.partitions),
            None => topics.push(topic),
        }
    }
    response.with_topics(topics)
}

/// Every partition gets the error, as Kafka's `OffsetCommitRequest.getErrorResponse`.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &OffsetCommitRequest,
    code: i16,
) -> OffsetCommitResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
