//! Heartbeat (12): routed to the shard owning the group; coordinator errors as Kafka reports them.

use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: HeartbeatRequest) -> HeartbeatResponse {
    let group_id = request.group_id.0.to_string();
    let result = match route(ctx, &group_id, GroupRequest::Heartbeat(request.clone())).await {
        Ok(GroupResponse::Heartbeat(response)) => Ok(response),
        Ok(_) => Err(mismatched()),
        Err(error) => Err(error),
    };
    result.unwrap_or_else(|error| error_response(ctx, &request, error.code()))
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &HeartbeatRequest,
    code: i16,
) -> HeartbeatResponse {
    HeartbeatResponse::default().with_error_code(code)
}
