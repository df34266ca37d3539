//! SyncGroup (14): routed to the shard owning the group; coordinator errors as Kafka reports them.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: SyncGroupRequest) -> SyncGroupResponse {
    // KafkaApis: from v5 on, ProtocolType and ProtocolName are mandatory
    // (`SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent`), checked before the
    // coordinator sees the request.
    if ctx.version >= 5 && (request.protocol_type.is_none() || request.protocol_name.is_none()) {
        return error_response(
            ctx,
            &request,
            ResponseError::InconsistentGroupProtocol.code(),
        );
    }
    let group_id = request.group_id.0.to_string();
    let result = match route(ctx, &group_id, GroupRequest::SyncGroup(request.clone())).await {
        Ok(GroupResponse::SyncGroup(response)) => Ok(response),
        Ok(_) => Err(mismatched()),
        Err(error) => Err(error),
    };
    result.unwrap_or_else(|error| error_response(ctx, &request, error.code()))
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &SyncGroupRequest,
    code: i16,
) -> SyncGroupResponse {
    SyncGroupResponse::default().with_error_code(code)
}
