//! The Kafka APIs, one file each (franz-go kfake's layout), named after the API.
//!
//! Each file has `handle(ctx, request) -> response` and `error_response(ctx, request, code)`,
//! the response Kafka would send if handling failed with `code` everywhere (used by error
//! injection and by coordinator-level failures).

pub(crate) mod alter_configs;
pub(crate) mod api_versions;
mod broker_configs;
mod config_alter;
#[cfg(test)]
mod config_api_tests;
mod config_resource;
pub(crate) mod consumer_group_describe;
pub(crate) mod consumer_group_heartbeat;
pub(crate) mod create_partitions;
pub(crate) mod create_topics;
pub(crate) mod delete_groups;
pub(crate) mod delete_records;
pub(crate) mod delete_topics;
pub(crate) mod describe_cluster;
pub(crate) mod describe_configs;
pub(crate) mod describe_groups;
pub(crate) mod fetch;
pub(crate) mod find_coordinator;
mod group_routing;
pub(crate) mod heartbeat;
pub(crate) mod incremental_alter_configs;
pub(crate) mod init_producer_id;
pub(crate) mod join_group;
pub(crate) mod leave_group;
pub(crate) mod list_groups;
pub(crate) mod list_offsets;
#[cfg(test)]
mod log_admin_tests;
pub(crate) mod metadata;
pub(crate) mod offset_commit;
pub(crate) mod offset_delete;
pub(crate) mod offset_fetch;
pub(crate) mod offset_for_leader_epoch;
pub(crate) mod produce;
pub(crate) mod sasl_authenticate;
pub(crate) mod sasl_handshake;
pub(crate) mod sync_group;
#[cfg(test)]
mod test_support;

use kafka_protocol::error::ResponseError;

use crate::controller::{ClusterState, PartitionState};

/// Kafka's `NO_ERROR`.
pub(crate) const NONE: i16 = 0;

/// The partition, if this broker may serve it as leader at the client's `current_leader_epoch`
/// (-1: unknown, no check). Kafka's order: unknown partition; not a replica here; fenced or
/// unknown epoch; replica but not leader.
pub(crate) fn leader_partition<'a>(
    state: &'a ClusterState,
    node_id: i32,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
) -> Result<&'a PartitionState, ResponseError> {
    let part = state
        .partition(topic, partition)
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    if !part.replicas.contains(&node_id) {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    if current_leader_epoch >= 0 {
        if current_leader_epoch < part.leader_epoch {
            return Err(ResponseError::FencedLeaderEpoch);
        }
        if current_leader_epoch > part.leader_epoch {
            return Err(ResponseError::UnknownLeaderEpoch);
        }
    }
    if part.leader != node_id {
        return Err(ResponseError::NotLeaderOrFollower);
    }
    Ok(part)
}
