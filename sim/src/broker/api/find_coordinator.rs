//! FindCoordinator (10): a group's coordinator is the leader of its `__consumer_offsets`
//! partition (`Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`). v0–3 carry one
//! key, v4+ a batch.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::broker::dispatch::RequestCtx;
use crate::controller::{ClusterState, NO_LEADER, OFFSETS_TOPIC};
use crate::coordinator::placement::offsets_partition_for;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

/// (node id, host, port) of the coordinator for `key`, or the error.
fn find(
    state: &ClusterState,
    key_type: i8,
    key: &str,
    groups_served: bool,
) -> Result<(i32, String, i32), ResponseError> {
    match key_type {
        KEY_TYPE_GROUP if groups_served => {}
        // No transaction coordinator here; no group coordinator without a plugged-in shard.
        KEY_TYPE_GROUP | KEY_TYPE_TRANSACTION => {
            return Err(ResponseError::CoordinatorNotAvailable)
        }
        _ => return Err(ResponseError::InvalidRequest),
    }
    let topic = state
        .topics
        .get(OFFSETS_TOPIC)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    let partition = offsets_partition_for(key, topic.partitions.len() as i32);
    let leader = state
        .partition(OFFSETS_TOPIC, partition)
        .map_or(NO_LEADER, |p| p.leader);
    let broker = state
        .brokers
        .get(&leader)
        .filter(|b| b.alive)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    Ok((broker.node_id, broker.host.clone(), i32::from(broker.port)))
}

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let version = ctx.version;
    let groups_served = ctx.broker.coordinator.is_some();
    let state = ctx.broker.controller.read();
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                let found = find(&state, request.key_type, key.as_str(), groups_served);
                coordinator_entry(key.clone(), found)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let key_type = if version >= 1 {
        request.key_type
    } else {
        KEY_TYPE_GROUP
    };
    match find(&state, key_type, request.key.as_str(), groups_served) {
        Ok((node_id, host, port)) => FindCoordinatorResponse::default()
            .with_node_id(BrokerId(node_id))
            .with_host(StrBytes::from_string(host))
            .with_port(port),
        Err(error) => single_error(error.code(), version),
    }
}

fn coordinator_entry(
    key: StrBytes,
    found: Result<(i32, String, i32), ResponseError>,
) -> Coordinator {
    match found {
        Ok((node_id, host, port)) => Coordinator::default()
            .with_key(key)
            .with_node_id(BrokerId(node_id))
            .with_host(StrBytes::from_string(host))
            .with_port(port),
        Err(error) => Coordinator::default()
            .with_key(key)
            .with_node_id(BrokerId(-1))
            .with_port(-1)
            .with_error_code(error.code()),
    }
}

fn single_error(code: i16, version: i16) -> FindCoordinatorResponse {
    let response = FindCoordinatorResponse::default()
        .with_error_code(code)
        .with_node_id(BrokerId(-1))
        .with_port(-1);
    if version >= 1 {
        response.with_error_message(
            ResponseError::try_from_code(code).map(|e| StrBytes::from_string(e.to_string())),
        )
    } else {
        response
    }
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &FindCoordinatorRequest,
    code: i16,
) -> FindCoordinatorResponse {
    if ctx.version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(BrokerId(-1))
                    .with_port(-1)
                    .with_error_code(code)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    single_error(code, ctx.version)
}
