//! Request validation (`throwIfConsumerGroupHeartbeatRequestIsInvalid`) and group size.

use kafka_protocol::error::ResponseError;
use kafka_protocol::protocol::StrBytes;

use super::harness::*;
use crate::group::consumer::{ConsumerGroupConfig, ConsumerGroupCoordinator};

fn invalid(
    c: &mut ConsumerGroupCoordinator,
    request: &kafka_protocol::messages::ConsumerGroupHeartbeatRequest,
    version: i16,
) -> Option<String> {
    let r = c.consumer_group_heartbeat(request, version, "client", "host", 0);
    (r.error_code == ResponseError::InvalidRequest.code())
        .then(|| r.error_message.map(|m| m.to_string()).unwrap_or_default())
}

#[test]
fn invalid_requests_carry_kafkas_messages() {
    let mut c = coordinator();
    let cases = [
        (join("", &["foo"]), 1, "MemberId can't be empty."),
        (
            heartbeat(" ", 3, &parts(&[])),
            0,
            "MemberId can't be empty.",
        ),
        (
            join("a", &["foo"]).with_rebalance_timeout_ms(-1),
            1,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            join("a", &["foo"]).with_topic_partitions(None),
            1,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            join("a", &[]).with_subscribed_topic_names(None),
            1,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when \
             (re-)joining.",
        ),
        (
            heartbeat("a", -2, &parts(&[])),
            1,
            "InstanceId can't be null.",
        ),
        (
            heartbeat("a", -3, &parts(&[])),
            1,
            "MemberEpoch is invalid.",
        ),
        (
            join("a", &["foo"]).with_instance_id(Some(StrBytes::from_static_str(""))),
            1,
            "InstanceId can't be empty.",
        ),
        (
            join("a", &["foo"]).with_rack_id(Some(StrBytes::from_static_str(" "))),
            1,
            "RackId can't be empty.",
        ),
    ];
    for (request, version, message) in cases {
        assert_eq!(invalid(&mut c, &request, version).as_deref(), Some(message));
    }
    assert!(c.group(GROUP).is_none(), "refused joins create no group");
}

/// KAFKA-18095: a client-side pattern that matches nothing yet joins with an empty list.
#[test]
fn a_member_may_join_subscribed_to_nothing_yet() {
    let mut c = coordinator();
    let r = send(&mut c, &join("a", &[]), 0);
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    // The new group still moves away from epoch 0.
    assert_eq!(r.member_epoch, 1);
    assert_eq!(assignment_of(&r), Some(parts(&[])));
    assert!(c.group(GROUP).unwrap().members.contains_key("a"));
}

#[test]
fn v0_join_with_empty_member_id_gets_a_generated_one() {
    let mut c = coordinator();
    let r = c.consumer_group_heartbeat(&join("", &["foo"]), 0, "client", "host", 0);
    assert_eq!(r.error_code, 0);
    let id = r.member_id.expect("generated member id");
    assert!(!id.is_empty());
    assert!(c.group(GROUP).unwrap().members.contains_key(id.as_str()));
}

#[test]
fn group_max_size_refuses_new_members_only() {
    let config = ConsumerGroupConfig {
        max_size: 1,
        ..ConsumerGroupConfig::default()
    };
    let mut c = ConsumerGroupCoordinator::new(config, topics());
    send(&mut c, &join("a", &["foo"]), 0);
    let r = send(&mut c, &join("b", &["foo"]), 1);
    assert_eq!(r.error_code, ResponseError::GroupMaxSizeReached.code());
    let r = send(&mut c, &join("a", &["foo"]), 2);
    assert_eq!(r.error_code, 0);
}
