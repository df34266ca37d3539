//! The requests the classic consumer sends, at the versions Kafka 3.1.0's client sends them
//! (`ApiKeys` of 3.1: FindCoordinator v3 — one key, before KIP-699's batching was used by the
//! consumer —, OffsetCommit v8, OffsetFetch v7, Fetch v12, Metadata v11, JoinGroup v7,
//! SyncGroup v5, Heartbeat v4, LeaveGroup v4), so the model names topics rather than topic ids
//! exactly as the client under study did.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    FetchRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest,
    LeaveGroupRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use sim::history::Tp;

pub(super) const FIND_COORDINATOR_VERSION: i16 = 3;
pub(super) const OFFSET_COMMIT_VERSION: i16 = 8;
pub(super) const OFFSET_FETCH_VERSION: i16 = 7;
pub(super) const FETCH_VERSION: i16 = 12;
pub(super) const METADATA_VERSION: i16 = 11;
pub(super) const JOIN_GROUP_VERSION: i16 = 7;
pub(super) const SYNC_GROUP_VERSION: i16 = 5;
pub(super) const HEARTBEAT_VERSION: i16 = 4;
pub(super) const LEAVE_GROUP_VERSION: i16 = 4;

fn group_id(group: &str) -> GroupId {
    GroupId(StrBytes::from_string(group.to_owned()))
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// `JoinGroup` as `sendJoinGroupRequest` builds it: protocol type `consumer`, one protocol per
/// configured assignor with the member's subscription bytes.
pub(super) fn join_group(
    group: &str,
    member_id: &str,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    protocols: &[(String, Bytes)],
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(group_id(group))
        .with_session_timeout_ms(session_timeout_ms)
        .with_rebalance_timeout_ms(rebalance_timeout_ms)
        .with_member_id(str_bytes(member_id))
        .with_protocol_type(str_bytes("consumer"))
        .with_protocols(
            protocols
                .iter()
                .map(|(name, metadata)| {
                    JoinGroupRequestProtocol::default()
                        .with_name(str_bytes(name))
                        .with_metadata(metadata.clone())
                })
                .collect(),
        )
}

/// `SyncGroup`: the leader's assignments, or none for a follower.
pub(super) fn sync_group(
    group: &str,
    member_id: &str,
    generation: i32,
    protocol: &str,
    assignments: Vec<(String, Bytes)>,
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(group_id(group))
        .with_generation_id(generation)
        .with_member_id(str_bytes(member_id))
        .with_protocol_type(Some(str_bytes("consumer")))
        .with_protocol_name(Some(str_bytes(protocol)))
        .with_assignments(
            assignments
                .into_iter()
                .map(|(member, bytes)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(str_bytes(&member))
                        .with_assignment(bytes)
                })
                .collect(),
        )
}

pub(super) fn heartbeat(group: &str, member_id: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(group_id(group))
        .with_generation_id(generation)
        .with_member_id(str_bytes(member_id))
}

pub(super) fn leave_group(group: &str, member_id: &str) -> LeaveGroupRequest {
    LeaveGroupRequest::default()
        .with_group_id(group_id(group))
        .with_members(vec![
            MemberIdentity::default().with_member_id(str_bytes(member_id))
        ])
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// Partitions grouped by topic, in a stable order.
fn by_topic<T: Clone>(items: &[(Tp, T)]) -> BTreeMap<&str, Vec<(i32, T)>> {
    let mut topics: BTreeMap<&str, Vec<(i32, T)>> = BTreeMap::new();
    for (tp, v) in items {
        topics
            .entry(tp.topic.as_str())
            .or_default()
            .push((tp.partition, v.clone()));
    }
    topics
}

/// `FindCoordinator(key = group, key_type = GROUP)`.
pub(super) fn find_coordinator(group: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_owned()))
        .with_key_type(0)
}

/// `OffsetCommit` as `sendOffsetCommitRequest` builds it: `Generation.NO_GENERATION`
/// (generation -1, empty member id) for manual assignment, the stable generation otherwise.
pub(super) fn offset_commit(
    group: &str,
    generation: i32,
    member_id: &str,
    offsets: &[(Tp, i64)],
) -> OffsetCommitRequest {
    let topics = by_topic(offsets)
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetCommitRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(p, offset)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(str_bytes(member_id))
        .with_topics(topics)
}

/// `OffsetFetch` for the partitions whose position is unknown, with `require_stable` as Java's
/// `ConsumerCoordinator.sendOffsetFetchRequest` sets it.
pub(super) fn offset_fetch(group: &str, partitions: &[Tp]) -> OffsetFetchRequest {
    let items: Vec<(Tp, ())> = partitions.iter().map(|tp| (tp.clone(), ())).collect();
    let topics = by_topic(&items)
        .into_iter()
        .map(|(topic, ps)| {
            OffsetFetchRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partition_indexes(ps.into_iter().map(|(p, _)| p).collect())
        })
        .collect();
    OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_topics(Some(topics))
        .with_require_stable(true)
}

/// A full (sessionless) fetch of these partitions from their positions.
pub(super) fn fetch(positions: &[(Tp, i64)], max_wait_ms: i32) -> FetchRequest {
    let topics = by_topic(positions)
        .into_iter()
        .map(|(topic, partitions)| {
            FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(p, offset)| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(1 << 20)
                        })
                        .collect(),
                )
        })
        .collect();
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(50 << 20)
        .with_topics(topics)
}

/// `Metadata` for the assigned topics.
pub(super) fn metadata<'a>(topics: impl IntoIterator<Item = &'a str>) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(Some(
            topics
                .into_iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(topic_name(t))))
                .collect(),
        ))
        .with_allow_auto_topic_creation(false)
}
