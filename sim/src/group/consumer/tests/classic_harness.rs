//! Builders for the classic requests of members inside a consumer group.

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::group::consumer::assignment::Assignment;
use crate::group::consumer::TopicsImage;
use crate::group::migration::consumer_protocol::{decode_assignment, tests::subscription};

pub const CLASSIC_SESSION_MS: i32 = 10_000;
pub const CLASSIC_REBALANCE_MS: i32 = 20_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

/// A JoinGroup of `member_id` in `group` with a v3 `range` subscription to `topics`, owning
/// `owned` (topic name, partitions).
pub fn classic_join(
    group: &str,
    member_id: &str,
    topics: &[&str],
    owned: &[(&str, &[i32])],
) -> JoinGroupRequest {
    classic_join_with(group, member_id, "range", subscription(3, topics, owned))
}

/// A JoinGroup of `member_id` in `group` with protocol `protocol` and `metadata`.
pub fn classic_join_with(
    group: &str,
    member_id: &str,
    protocol: &str,
    metadata: Bytes,
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member_id))
        .with_session_timeout_ms(CLASSIC_SESSION_MS)
        .with_rebalance_timeout_ms(CLASSIC_REBALANCE_MS)
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s(protocol))
            .with_metadata(metadata)])
}

pub fn classic_sync(group: &str, member_id: &str, generation: i32) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member_id))
        .with_generation_id(generation)
        .with_protocol_type(Some(s("consumer")))
        .with_protocol_name(Some(s("range")))
}

pub fn classic_heartbeat(group: &str, member_id: &str, generation: i32) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member_id))
        .with_generation_id(generation)
}

/// A v3+ LeaveGroup of `member_ids`.
pub fn classic_leave(group: &str, member_ids: &[&str]) -> LeaveGroupRequest {
    LeaveGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_members(
            member_ids
                .iter()
                .map(|m| MemberIdentity::default().with_member_id(s(m)))
                .collect(),
        )
}

/// The partitions a SyncGroup assignment carries.
pub fn synced(assignment: &Bytes, topics: &TopicsImage) -> Assignment {
    decode_assignment(assignment, topics).expect("a consumer protocol assignment")
}
