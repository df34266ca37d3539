//! Routing group requests to the shard that owns the group, like `KafkaApis` handing them to
//! the `GroupCoordinator`: the owning shard is the one for the group's `__consumer_offsets`
//! partition, hosted only by that partition's leader.

use kafka_protocol::error::ResponseError;

use crate::broker::dispatch::RequestCtx;
use crate::controller::OFFSETS_TOPIC;
use crate::coordinator::placement::offsets_partition_for;
use crate::coordinator::{GroupRequest, GroupRequestContext, GroupResponse};

fn context(ctx: &RequestCtx<'_>) -> GroupRequestContext {
    GroupRequestContext {
        request_id: 0, // assigned by the runtime
        api_version: ctx.version,
        client_id: ctx
            .header
            .client_id
            .as_ref()
            .map_or_else(String::new, |c| c.to_string()),
        client_host: ctx.client.host.clone(),
        broker_id: ctx.broker.node_id,
        connection_id: ctx.client.connection_id,
    }
}

/// Sends `request` for `group_id` to its shard on this broker.
pub(super) async fn route(
    ctx: &RequestCtx<'_>,
    group_id: &str,
    request: GroupRequest,
) -> Result<GroupResponse, ResponseError> {
    let coordinator = ctx
        .broker
        .coordinator
        .as_ref()
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    let partitions = {
        let state = ctx.broker.controller.read();
        state
            .topics
            .get(OFFSETS_TOPIC)
            .map_or(0, |t| t.partitions.len() as i32)
    };
    if partitions == 0 {
        return Err(ResponseError::CoordinatorNotAvailable);
    }
    let partition = offsets_partition_for(group_id, partitions);
    coordinator.call(partition, context(ctx), request).await
}

/// Sends `request` to every active shard on this broker (ListGroups).
pub(super) async fn broadcast(
    ctx: &RequestCtx<'_>,
    request: GroupRequest,
) -> Result<Vec<GroupResponse>, ResponseError> {
    let coordinator = ctx
        .broker
        .coordinator
        .as_ref()
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    let mut responses = Vec::new();
    for partition in coordinator.active_partitions()? {
        match coordinator
            .call(partition, context(ctx), request.clone())
            .await
        {
            Ok(response) => responses.push(response),
            // Moved away meanwhile: its groups are listed by the new coordinator.
            Err(ResponseError::NotCoordinator) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(responses)
}

/// A shard answered with the wrong variant: a shard bug, reported as Kafka reports an
/// unexpected exception.
pub(super) fn mismatched() -> ResponseError {
    tracing::error!("group shard answered with a response of another API");
    ResponseError::UnknownServerError
}
