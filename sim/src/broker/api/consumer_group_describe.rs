//! ConsumerGroupDescribe (69): each group routed to its own shard, answered per group.

use kafka_protocol::messages::consumer_group_describe_response::DescribedGroup;
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let mut groups = Vec::new();
    for group_id in &request.group_ids {
        let single = request.clone().with_group_ids(vec![group_id.clone()]);
        let error = match route(
            ctx,
            group_id.0.as_str(),
            GroupRequest::ConsumerGroupDescribe(single),
        )
        .await
        {
            Ok(GroupResponse::ConsumerGroupDescribe(response)) => {
                groups.extend(response.groups);
                continue;
            }
            Ok(_) => mismatched(),
            Err(error) => error,
        };
        groups.push(failed(group_id.clone(), error.code()));
    }
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

fn failed(group_id: GroupId, code: i16) -> DescribedGroup {
    DescribedGroup::default()
        .with_group_id(group_id)
        .with_error_code(code)
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &ConsumerGroupDescribeRequest,
    code: i16,
) -> ConsumerGroupDescribeResponse {
    ConsumerGroupDescribeResponse::default().with_groups(
        request
            .group_ids
            .iter()
            .map(|g| failed(g.clone(), code))
            .collect(),
    )
}
