//! DescribeGroups (15): each group routed to its own shard, answered per group.

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut groups = Vec::new();
    for group_id in &request.groups {
        let single = request.clone().with_groups(vec![group_id.clone()]);
        let error = match route(
            ctx,
            group_id.0.as_str(),
            GroupRequest::DescribeGroups(single),
        )
        .await
        {
            Ok(GroupResponse::DescribeGroups(response)) => {
                groups.extend(response.groups);
                continue;
            }
            Ok(_) => mismatched(),
            Err(error) => error,
        };
        groups.push(failed(group_id.clone(), error.code()));
    }
    DescribeGroupsResponse::default().with_groups(groups)
}

fn failed(group_id: GroupId, code: i16) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(group_id)
        .with_error_code(code)
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &DescribeGroupsRequest,
    code: i16,
) -> DescribeGroupsResponse {
    DescribeGroupsResponse::default().with_groups(
        request
            .groups
            .iter()
            .map(|g| failed(g.clone(), code))
            .collect(),
    )
}
