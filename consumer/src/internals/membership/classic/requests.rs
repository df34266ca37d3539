//! The classic protocol's requests, built from the manager's state.

use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::{Message, StrBytes};

use super::ClassicMembershipManager;
use crate::assignor::protocol::{encode_subscription, CONSUMER_PROTOCOL_VERSION, PROTOCOL_TYPE};
use crate::assignor::Subscription;
use crate::error::Error;
use crate::internals::context::ManagerContext;
use crate::internals::node_versions::VersionChoice;
use crate::internals::requests::{RequestBody, UnsentRequest};
use crate::network::Target;
use crate::types::TopicPartition;

/// Java's `JOIN_GROUP_TIMEOUT_LAPSE`: JoinGroup waits for the whole rebalance, plus this.
pub(super) const JOIN_GROUP_TIMEOUT_LAPSE_MS: u64 = 5_000;
/// The first JoinGroup version with `group.instance.id` (KIP-345).
pub(super) const STATIC_MEMBERSHIP_VERSION: i16 = 5;
/// The first LeaveGroup version with a member list (KIP-345).
const LEAVE_GROUP_BATCH_VERSION: i16 = 3;

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

/// The JoinGroup version to build for the coordinator, from its own connection's versions.
pub(super) fn join_group_version(ctx: &mut ManagerContext<'_>, coordinator: i32) -> VersionChoice {
    ctx.version_for::<JoinGroupRequest>(coordinator, JoinGroupRequest::VERSIONS)
}

/// A request to the coordinator.
pub(super) fn unsent(
    coordinator: i32,
    version: Option<i16>,
    body: RequestBody,
    token: u64,
    timeout_ms: Option<u64>,
) -> UnsentRequest {
    UnsentRequest {
        target: Target::Node(coordinator),
        version,
        body,
        token,
        timeout_ms,
    }
}

impl From<JoinGroupRequest> for RequestBody {
    fn from(r: JoinGroupRequest) -> Self {
        Self::JoinGroup(r)
    }
}

impl From<SyncGroupRequest> for RequestBody {
    fn from(r: SyncGroupRequest) -> Self {
        Self::SyncGroup(r)
    }
}

impl From<HeartbeatRequest> for RequestBody {
    fn from(r: HeartbeatRequest) -> Self {
        Self::Heartbeat(r)
    }
}

impl From<LeaveGroupRequest> for RequestBody {
    fn from(r: LeaveGroupRequest) -> Self {
        Self::LeaveGroup(r)
    }
}

/// JoinGroup with one protocol per configured assignor, in preference order; each carries the
/// subscription, the assignor's user data, the owned partitions and the generation they are
/// from (ConsumerProtocolSubscription v3).
pub(super) fn join_group(
    m: &ClassicMembershipManager,
    subscribed: &BTreeSet<String>,
    owned: &BTreeSet<TopicPartition>,
    reason: &str,
) -> Result<JoinGroupRequest, Error> {
    let mut protocols = Vec::with_capacity(m.assignors.len());
    for assignor in &m.assignors {
        let subscription = Subscription {
            topics: subscribed.iter().cloned().collect(),
            user_data: assignor.subscription_user_data(subscribed),
            owned_partitions: owned.iter().cloned().collect(),
            generation_id: m
                .generation
                .is_valid()
                .then_some(m.generation.generation_id),
            rack_id: m.client_rack.clone(),
            group_instance_id: None,
        };
        let metadata = encode_subscription(&subscription, CONSUMER_PROTOCOL_VERSION)
            .map_err(|e| Error::Internal(format!("cannot encode the subscription: {e}").into()))?;
        protocols.push(
            JoinGroupRequestProtocol::default()
                .with_name(str_bytes(assignor.name()))
                .with_metadata(metadata),
        );
    }
    Ok(JoinGroupRequest::default()
        .with_group_id(GroupId(str_bytes(&m.group_id)))
        .with_session_timeout_ms(i32::try_from(m.session_timeout_ms).unwrap_or(i32::MAX))
        .with_rebalance_timeout_ms(i32::try_from(m.rebalance_timeout_ms).unwrap_or(i32::MAX))
        .with_member_id(str_bytes(&m.generation.member_id))
        .with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
        .with_protocol_type(str_bytes(PROTOCOL_TYPE))
        .with_protocols(protocols)
        .with_reason(Some(str_bytes(reason))))
}

/// SyncGroup; the leader's carries every member's assignment, the others' none.
pub(super) fn sync_group(
    m: &ClassicMembershipManager,
    assignments: Vec<(String, Bytes)>,
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(GroupId(str_bytes(&m.group_id)))
        .with_generation_id(m.generation.generation_id)
        .with_member_id(str_bytes(&m.generation.member_id))
        .with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
        .with_protocol_type(Some(str_bytes(PROTOCOL_TYPE)))
        .with_protocol_name(m.generation.protocol_name.as_deref().map(str_bytes))
        .with_assignments(
            assignments
                .into_iter()
                .map(|(member_id, assignment)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(str_bytes(&member_id))
                        .with_assignment(assignment)
                })
                .collect(),
        )
}

/// Heartbeat for the current generation.
pub(super) fn heartbeat(m: &ClassicMembershipManager) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(str_bytes(&m.group_id)))
        .with_generation_id(m.generation.generation_id)
        .with_member_id(str_bytes(&m.generation.member_id))
        .with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
}

/// LeaveGroup for this member at `version` (a member list from v3).
pub(super) fn leave_group(
    m: &ClassicMembershipManager,
    version: i16,
    reason: &str,
) -> LeaveGroupRequest {
    let request = LeaveGroupRequest::default().with_group_id(GroupId(str_bytes(&m.group_id)));
    if version >= LEAVE_GROUP_BATCH_VERSION {
        request.with_members(vec![MemberIdentity::default()
            .with_member_id(str_bytes(&m.generation.member_id))
            .with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
            .with_reason(Some(str_bytes(reason)))])
    } else {
        request.with_member_id(str_bytes(&m.generation.member_id))
    }
}

/// The LeaveGroup version to build for the coordinator, while its connection is up (a
/// leave is best effort: it does not wait for a connection).
pub(super) fn leave_group_version(ctx: &ManagerContext<'_>, coordinator: i32) -> Option<i16> {
    ctx.versions
        .select::<LeaveGroupRequest>(coordinator, LeaveGroupRequest::VERSIONS)
        .version()
}
