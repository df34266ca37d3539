//! Builders for manager unit tests: negotiated versions and cluster metadata.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::network::{Metadata, MetadataScope};
use crate::protocol::ApiVersionsTable;

/// A broker supporting every version of every API.
pub fn all_versions() -> ApiVersionsTable {
    versions_capped(i16::MAX, i16::MAX)
}

/// A broker whose APIs stop at `max`, FindCoordinator at `find_coordinator_max`.
pub fn versions_capped(max: i16, find_coordinator_max: i16) -> ApiVersionsTable {
    let keys = ApiKey::iter()
        .map(|key| {
            let cap = if key == ApiKey::FindCoordinator {
                find_coordinator_max
            } else {
                max
            };
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(0)
                .with_max_version(key.valid_versions().max.min(cap))
        })
        .collect();
    ApiVersionsTable::from_response(&ApiVersionsResponse::default().with_api_keys(keys))
}

/// A broker that does not offer `missing` at all (and every version of everything else), as
/// Kafka 3.9 without KIP-848 enabled lacks ConsumerGroupHeartbeat.
pub fn versions_without(missing: &[ApiKey]) -> ApiVersionsTable {
    let keys = ApiKey::iter()
        .filter(|key| !missing.contains(key))
        .map(|key| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(0)
                .with_max_version(key.valid_versions().max)
        })
        .collect();
    ApiVersionsTable::from_response(&ApiVersionsResponse::default().with_api_keys(keys))
}

/// Metadata with brokers 1 and 2 and topic `t` (id 1) whose partitions' leaders and epochs are
/// given.
pub fn metadata(partitions: &[(i32, i32, i32)]) -> Metadata {
    let mut md = Metadata::default();
    md.update(&metadata_response(partitions), MetadataScope::AllTopics);
    md
}

/// The response behind [`metadata`].
pub fn metadata_response(partitions: &[(i32, i32, i32)]) -> MetadataResponse {
    let brokers = [1, 2]
        .into_iter()
        .map(|id| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(id))
                .with_host(StrBytes::from_string(format!("b{id}")))
                .with_port(9092)
        })
        .collect();
    let partitions = partitions
        .iter()
        .map(|&(index, leader, epoch)| {
            MetadataResponsePartition::default()
                .with_partition_index(index)
                .with_leader_id(BrokerId(leader))
                .with_leader_epoch(epoch)
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_topics(vec![MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
            .with_topic_id(Uuid::from_u128(1))
            .with_partitions(partitions)])
}
