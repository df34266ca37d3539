//! JoinGroup (11): routed to the shard owning the group; coordinator errors as Kafka reports them.

use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: JoinGroupRequest) -> JoinGroupResponse {
    let group_id = request.group_id.0.to_string();
    let result = match route(ctx, &group_id, GroupRequest::JoinGroup(request.clone())).await {
        Ok(GroupResponse::JoinGroup(response)) => Ok(response),
        Ok(_) => Err(mismatched()),
        Err(error) => Err(error),
    };
    result.unwrap_or_else(|error| error_response(ctx, &request, error.code()))
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &JoinGroupRequest,
    code: i16,
) -> JoinGroupResponse {
    let response = JoinGroupResponse::default()
        .with_error_code(code)
        .with_generation_id(-1)
        .with_member_id(request.member_id.clone());
    if ctx.version >= 7 {
        response.with_protocol_name(None)
    } else {
        response.with_protocol_name(Some(Default::default()))
    }
}
