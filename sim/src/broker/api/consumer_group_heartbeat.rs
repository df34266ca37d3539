//! ConsumerGroupHeartbeat (68): routed to the shard owning the group; coordinator errors as Kafka reports them.

use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let group_id = request.group_id.0.to_string();
    let result = match route(
        ctx,
        &group_id,
        GroupRequest::ConsumerGroupHeartbeat(request.clone()),
    )
    .await
    {
        Ok(GroupResponse::ConsumerGroupHeartbeat(response)) => Ok(response),
        Ok(_) => Err(mismatched()),
        Err(error) => Err(error),
    };
    result.unwrap_or_else(|error| error_response(ctx, &request, error.code()))
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &ConsumerGroupHeartbeatRequest,
    code: i16,
) -> ConsumerGroupHeartbeatResponse {
    let message = kafka_protocol::error::ResponseError::try_from_code(code)
        .map(|e| kafka_protocol::protocol::StrBytes::from_string(e.to_string()));
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(code)
        .with_error_message(message)
}
