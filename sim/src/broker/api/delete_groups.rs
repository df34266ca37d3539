//! DeleteGroups (42): the groups are split by `__consumer_offsets` partition and each batch goes
//! to its shard, as `GroupCoordinatorService.deleteGroups` does.
//!
//! A shard that is not here or still loading fails its whole batch (NOT_COORDINATOR /
//! COORDINATOR_LOAD_IN_PROGRESS for each of its groups), while the other batches are answered by
//! their shards. Kafka's result order comes from hash maps (partitions, then a `HashSet` of the
//! batch's ids, which also drops a group named twice); here it is partition order, then request
//! order, each group once.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::*;

use super::group_routing::{mismatched, route};
use crate::broker::dispatch::RequestCtx;
use crate::controller::OFFSETS_TOPIC;
use crate::coordinator::placement::offsets_partition_for;
use crate::coordinator::{GroupRequest, GroupResponse};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let offsets_partitions = {
        let state = ctx.broker.controller.read();
        state
            .topics
            .get(OFFSETS_TOPIC)
            .map_or(0, |t| t.partitions.len() as i32)
    };
    // Group ids per offsets partition, each id once, in request order.
    let mut batches: std::collections::BTreeMap<i32, Vec<GroupId>> = Default::default();
    for group_id in &request.groups_names {
        let partition = offsets_partition_for(group_id.0.as_str(), offsets_partitions.max(1));
        let batch = batches.entry(partition).or_default();
        if !batch.contains(group_id) {
            batch.push(group_id.clone());
        }
    }
    let mut results = Vec::with_capacity(request.groups_names.len());
    for batch in batches.into_values() {
        let first = batch[0].0.to_string();
        let single = request.clone().with_groups_names(batch.clone());
        let error = match route(ctx, &first, GroupRequest::DeleteGroups(single)).await {
            Ok(GroupResponse::DeleteGroups(response)) => {
                results.extend(response.results);
                continue;
            }
            Ok(_) => mismatched(),
            Err(error) => error,
        };
        results.extend(batch.into_iter().map(|g| failed(g, error.code())));
    }
    DeleteGroupsResponse::default().with_results(results)
}

fn failed(group_id: GroupId, code: i16) -> DeletableGroupResult {
    DeletableGroupResult::default()
        .with_group_id(group_id)
        .with_error_code(code)
}

/// `DeleteGroupsRequest.getErrorResponse`: `code` for every group named.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &DeleteGroupsRequest,
    code: i16,
) -> DeleteGroupsResponse {
    DeleteGroupsResponse::default().with_results(
        request
            .groups_names
            .iter()
            .map(|g| failed(g.clone(), code))
            .collect(),
    )
}
