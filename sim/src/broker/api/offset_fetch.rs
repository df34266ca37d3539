//! OffsetFetch (9): v0–7 name one group; v8+ a batch of groups, each routed to its own shard
//! and answered per group, as Kafka's `KafkaApis.handleOffsetFetchRequest` does.

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    if ctx.version < 8 {
        let group_id = request.group_id.0.to_string();
        return match route(ctx, &group_id, GroupRequest::OffsetFetch(request.clone())).await {
            Ok(GroupResponse::OffsetFetch(response)) => response,
            Ok(_) => error_response(ctx, &request, mismatched().code()),
            Err(error) => error_response(ctx, &request, error.code()),
        };
    }
    let mut groups = Vec::new();
    for group in &request.groups {
        let single = OffsetFetchRequest::default()
            .with_groups(vec![group.clone()])
            .with_require_stable(request.require_stable);
        let error = match route(
            ctx,
            group.group_id.0.as_str(),
            GroupRequest::OffsetFetch(single),
        )
        .await
        {
            Ok(GroupResponse::OffsetFetch(response)) => {
                groups.extend(response.groups);
                continue;
            }
            Ok(_) => mismatched(),
            Err(error) => error,
        };
        groups.push(
            OffsetFetchResponseGroup::default()
                .with_group_id(group.group_id.clone())
                .with_error_code(error.code()),
        );
    }
    OffsetFetchResponse::default().with_groups(groups)
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &OffsetFetchRequest,
    code: i16,
) -> OffsetFetchResponse {
    if ctx.version >= 8 {
        let groups = request
            .groups
            .iter()
            .map(|g| {
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_error_code(code)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    if ctx.version >= 2 {
        return OffsetFetchResponse::default().with_error_code(code);
    }
    // v0–1 have no top-level error: every requested partition carries it.
    let topics = request
        .topics
        .iter()
        .flatten()
        .map(|t| {
            let partitions = t
                .partition_indexes
                .iter()
                .map(|p| {
                    OffsetFetchResponsePartition::default()
                        .with_partition_index(*p)
                        .with_committed_offset(-1)
                        .with_error_code(code)
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}
