//! ConsumerGroupHeartbeat requests, built from the manager's state (Java's
//! `HeartbeatState.buildRequestData`): group, member id, epoch and instance id always; the
//! rebalance timeout, subscription (topic names and broker-side regex), server assignor and
//! owned partitions only when they changed since the last heartbeat — and all of them when
//! joining.

use std::collections::BTreeSet;

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId};
use kafka_protocol::protocol::{Message, StrBytes};

use super::state::MemberState;
use super::ConsumerMembershipManager;
use crate::error::Error;
use crate::error::ErrorCode;
use crate::internals::context::ManagerContext;
use crate::internals::node_versions::{NodeVersions, VersionChoice};
use crate::internals::requests::{topic_name, RequestBody, UnsentRequest};
use crate::network::{NetworkError, Target};

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

impl From<ConsumerGroupHeartbeatRequest> for RequestBody {
    fn from(r: ConsumerGroupHeartbeatRequest) -> Self {
        Self::ConsumerGroupHeartbeat(r)
    }
}

/// The ConsumerGroupHeartbeat version to build for the coordinator, from its own
/// connection's versions (not another broker's: during a rolling upgrade only some offer it).
pub(super) fn heartbeat_version(versions: &NodeVersions, coordinator: i32) -> VersionChoice {
    versions.select::<ConsumerGroupHeartbeatRequest>(
        coordinator,
        ConsumerGroupHeartbeatRequest::VERSIONS,
    )
}

/// A request to the coordinator.
pub(super) fn unsent(
    coordinator: i32,
    version: i16,
    body: RequestBody,
    token: u64,
) -> UnsentRequest {
    UnsentRequest {
        target: Target::Node(coordinator),
        version: Some(version),
        body,
        token,
        timeout_ms: None,
    }
}

/// KAFKA-17536: a broker without KIP-848 gets a hint, not a bare error code.
pub(super) fn unsupported_version_error(cause: Option<&NetworkError>) -> Error {
    let cause = cause.map(|c| format!(" ({c})")).unwrap_or_default();
    Error::Fatal {
        code: Some(ErrorCode::UNSUPPORTED_VERSION),
        message: format!(
            "the cluster does not support the consumer group protocol (KIP-848, \
             ConsumerGroupHeartbeat){cause}; set group.protocol=classic to use the classic \
             protocol until the cluster is upgraded"
        ),
    }
}

fn base(m: &ConsumerMembershipManager) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(str_bytes(&m.group_id)))
        .with_member_id(str_bytes(&m.member_id))
        .with_member_epoch(m.member_epoch)
        .with_instance_id(m.group_instance_id.as_deref().map(str_bytes))
}

/// A regular heartbeat; records what it sends.
pub(super) fn heartbeat(
    m: &mut ConsumerMembershipManager,
    ctx: &ManagerContext<'_>,
) -> ConsumerGroupHeartbeatRequest {
    let all = m.state == MemberState::Joining;
    let mut request = base(m);
    if all {
        request = request.with_rack_id(m.rack_id.as_deref().map(str_bytes));
    }
    let rebalance_timeout_ms = i32::try_from(m.rebalance_timeout_ms).unwrap_or(i32::MAX);
    if all || m.sent.rebalance_timeout_ms != Some(rebalance_timeout_ms) {
        request = request.with_rebalance_timeout_ms(rebalance_timeout_ms);
        m.sent.rebalance_timeout_ms = Some(rebalance_timeout_ms);
    }
    let subscribed: &BTreeSet<String> = ctx.subscriptions.subscribed_topics();
    if all || m.sent.subscribed_topic_names.as_ref() != Some(subscribed) {
        request = request
            .with_subscribed_topic_names(Some(subscribed.iter().map(|t| topic_name(t)).collect()));
        m.sent.subscribed_topic_names = Some(subscribed.clone());
    }
    // The broker-side regex when joining or changed; "" tells the broker a regex it holds is
    // gone (Java's `SubscribedTopicRegex` rule).
    let regex = ctx.subscriptions.subscribed_regex();
    if (all && regex.is_some()) || m.sent.subscribed_topic_regex.as_deref() != regex {
        request = request.with_subscribed_topic_regex(Some(str_bytes(regex.unwrap_or_default())));
        m.sent.subscribed_topic_regex = regex.map(str::to_owned);
    }
    if let Some(assignor) = &m.server_assignor {
        if all || m.sent.server_assignor.as_ref() != Some(assignor) {
            request = request.with_server_assignor(Some(str_bytes(assignor)));
            m.sent.server_assignor = Some(assignor.clone());
        }
    }
    let sent = m.owned_for_heartbeat(ctx);
    if all || m.sent.assignment.as_ref() != Some(&sent) {
        let owned = sent
            .0
            .partitions
            .iter()
            .map(|(id, partitions)| {
                TopicPartitions::default()
                    .with_topic_id(*id)
                    .with_partitions(partitions.iter().copied().collect())
            })
            .collect();
        request = request.with_topic_partitions(Some(owned));
        m.sent.assignment = Some(sent);
    }
    request
}

/// The leave heartbeat: identity and the leave epoch only.
pub(super) fn leave_heartbeat(m: &ConsumerMembershipManager) -> ConsumerGroupHeartbeatRequest {
    base(m)
}
