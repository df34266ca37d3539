//! OffsetCommit (8): routed to the shard owning the group; coordinator errors as Kafka reports them.

use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let group_id = request.group_id.0.to_string();
    let result = match route(ctx, &group_id, GroupRequest::OffsetCommit(request.clone())).await {
        Ok(GroupResponse::OffsetCommit(response)) => Ok(response),
        Ok(_) => Err(mismatched()),
        Err(error) => Err(error),
    };
    result.unwrap_or_else(|error| error_response(ctx, &request, error.code()))
}

/// Every partition gets the error, as Kafka's `OffsetCommitRequest.getErrorResponse`.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &OffsetCommitRequest,
    code: i16,
) -> OffsetCommitResponse {
    use kafka_protocol::messages::offset_commit_response::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    };
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
