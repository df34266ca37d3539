//! ListGroups (16): the groups of every shard this broker hosts (a client asks each broker).

use kafka_protocol::messages::*;

use super::group_routing::{broadcast, mismatched};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: ListGroupsRequest) -> ListGroupsResponse {
    let responses = match broadcast(ctx, GroupRequest::ListGroups(request.clone())).await {
        Ok(responses) => responses,
        Err(error) => return error_response(ctx, &request, error.code()),
    };
    let mut out = ListGroupsResponse::default();
    for response in responses {
        match response {
            GroupResponse::ListGroups(response) => {
                if out.error_code == 0 {
                    out.error_code = response.error_code;
                }
                out.groups.extend(response.groups);
            }
            _ => return error_response(ctx, &request, mismatched().code()),
        }
    }
    out
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    _request: &ListGroupsRequest,
    code: i16,
) -> ListGroupsResponse {
    ListGroupsResponse::default().with_error_code(code)
}
