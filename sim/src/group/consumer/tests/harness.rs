//! Builders for requests and a coordinator over two topics.

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::group::consumer::assignment::Assignment;
use crate::group::consumer::{ConsumerGroupConfig, ConsumerGroupCoordinator, TopicsImage};

pub const FOO: Uuid = Uuid::from_u128(0xF00);
pub const BAR: Uuid = Uuid::from_u128(0xBA7);
pub const GROUP: &str = "grp";
pub const REBALANCE_TIMEOUT_MS: i32 = 30_000;

/// Topic `foo` with 6 partitions and `bar` with 3.
pub fn topics() -> TopicsImage {
    TopicsImage::default()
        .with_topic("foo", FOO, 6)
        .with_topic("bar", BAR, 3)
}

pub fn coordinator() -> ConsumerGroupCoordinator {
    ConsumerGroupCoordinator::new(ConsumerGroupConfig::default(), topics())
}

/// A join (epoch 0) of `member_id` subscribing to `topics`.
pub fn join(member_id: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_member_id(StrBytes::from_string(member_id.to_owned()))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(REBALANCE_TIMEOUT_MS)
        .with_subscribed_topic_names(Some(
            topics
                .iter()
                .map(|t| TopicName(StrBytes::from_string((*t).to_owned())))
                .collect(),
        ))
        .with_topic_partitions(Some(vec![]))
}

/// A regular heartbeat at `epoch` reporting `owned`.
pub fn heartbeat(member_id: &str, epoch: i32, owned: &Assignment) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_member_id(StrBytes::from_string(member_id.to_owned()))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(Some(owned_partitions(owned)))
}

pub fn owned_partitions(owned: &Assignment) -> Vec<TopicPartitions> {
    owned
        .iter()
        .map(|(topic_id, partitions)| {
            TopicPartitions::default()
                .with_topic_id(*topic_id)
                .with_partitions(partitions.iter().copied().collect())
        })
        .collect()
}

pub fn with_instance(
    request: ConsumerGroupHeartbeatRequest,
    instance: &str,
) -> ConsumerGroupHeartbeatRequest {
    request.with_instance_id(Some(StrBytes::from_string(instance.to_owned())))
}

/// Sends `request` as v1 at `now_ms`.
pub fn send(
    coordinator: &mut ConsumerGroupCoordinator,
    request: &ConsumerGroupHeartbeatRequest,
    now_ms: u64,
) -> ConsumerGroupHeartbeatResponse {
    coordinator.consumer_group_heartbeat(request, 1, "client", "/127.0.0.1", now_ms)
}

/// The assignment carried by `response`, if any.
pub fn assignment_of(response: &ConsumerGroupHeartbeatResponse) -> Option<Assignment> {
    response.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .map(|tp| (tp.topic_id, tp.partitions.iter().copied().collect()))
            .collect()
    })
}

/// An assignment from (topic, partitions) pairs.
pub fn parts(entries: &[(Uuid, &[i32])]) -> Assignment {
    entries
        .iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (*t, ps.iter().copied().collect()))
        .collect()
}

pub fn error_of(response: &ConsumerGroupHeartbeatResponse) -> i16 {
    response.error_code
}
