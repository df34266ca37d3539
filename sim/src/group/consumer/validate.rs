//! Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`: checks that need no group state.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
use regex::Regex;

use super::config::ConsumerGroupConfig;
use super::error::GroupError;

/// `ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH`.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// `ConsumerGroupHeartbeatRequest.LEAVE_GROUP_STATIC_MEMBER_EPOCH`.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;
/// `ConsumerGroupHeartbeatRequest.CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION` (KIP-1082).
pub const CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION: i16 = 1;

/// Java's `Utils.throwIfEmptyString` test: present but blank after `String.trim()`.
fn is_blank(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.chars().all(|c| c <= ' '))
}

/// Validates `request` received with `api_version`, in Kafka's order of checks.
pub fn validate_heartbeat(
    request: &ConsumerGroupHeartbeatRequest,
    api_version: i16,
    config: &ConsumerGroupConfig,
) -> Result<(), GroupError> {
    let epoch = request.member_epoch;
    if (api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        || epoch > 0
        || epoch == LEAVE_GROUP_MEMBER_EPOCH)
        && is_blank(Some(&request.member_id))
    {
        return Err(GroupError::invalid_request("MemberId can't be empty."));
    }
    if is_blank(Some(&request.group_id.0)) {
        return Err(GroupError::invalid_request("GroupId can't be empty."));
    }
    if is_blank(request.instance_id.as_deref()) {
        return Err(GroupError::invalid_request("InstanceId can't be empty."));
    }
    if is_blank(request.rack_id.as_deref()) {
        return Err(GroupError::invalid_request("RackId can't be empty."));
    }
    if epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return Err(GroupError::invalid_request(
                "RebalanceTimeoutMs must be provided in first request.",
            ));
        }
        if request
            .topic_partitions
            .as_ref()
            .is_none_or(|tp| !tp.is_empty())
        {
            return Err(GroupError::invalid_request(
                "TopicPartitions must be empty when (re-)joining.",
            ));
        }
        // KAFKA-18095 (4.0): an empty list or regex is a member subscribed to nothing yet — a
        // client-side pattern that matches no topic so far must still be able to join.
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return Err(GroupError::invalid_request(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when \
                 (re-)joining.",
            ));
        }
    } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if request.instance_id.is_none() {
            return Err(GroupError::invalid_request("InstanceId can't be null."));
        }
    } else if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return Err(GroupError::invalid_request("MemberEpoch is invalid."));
    }
    if let Some(name) = request.server_assignor.as_deref() {
        if config.assignor(name).is_none() {
            let supported: Vec<&str> = config.assignors.iter().map(|a| a.name()).collect();
            return Err(GroupError::new(
                ResponseError::UnsupportedAssignor,
                format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    supported.join(", ")
                ),
            ));
        }
    }
    if let Some(regex) = request.subscribed_topic_regex.as_deref() {
        if let Err(e) = Regex::new(regex) {
            return Err(GroupError::new(
                ResponseError::InvalidRegularExpression,
                format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}."),
            ));
        }
    }
    Ok(())
}
