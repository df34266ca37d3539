//! Topic metadata changes, assignor selection, regex subscriptions and describe.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, GroupId};
use kafka_protocol::protocol::StrBytes;

use super::harness::*;

#[test]
fn added_partitions_bump_the_epoch_and_are_assigned() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);
    c.on_topics_changed(topics().with_topic("foo", FOO, 8));
    // Unrelated topic changes do not touch the group.
    c.on_topics_changed(topics().with_topic("foo", FOO, 8).with_topic("baz", BAR, 1));
    let r = send(&mut c, &heartbeat("a", 1, &all), 1);
    assert_eq!(r.member_epoch, 2);
    assert_eq!(c.group(GROUP).unwrap().group_epoch, 2);
    assert_eq!(
        assignment_of(&r),
        Some(parts(&[(FOO, &[0, 1, 2, 3, 4, 5, 6, 7])]))
    );
}

#[test]
fn deleted_topic_is_revoked() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5]), (BAR, &[0, 1, 2])]);
    send(&mut c, &join("a", &["foo", "bar"]), 0);
    let mut image = topics();
    image.remove("bar");
    c.on_topics_changed(image);
    let r = send(&mut c, &heartbeat("a", 1, &all), 1);
    // Still owns bar: revoke first at the same epoch.
    assert_eq!(r.member_epoch, 1);
    assert_eq!(
        assignment_of(&r),
        Some(parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]))
    );
}

#[test]
fn unknown_assignor_is_refused_and_range_is_used_when_asked() {
    let mut c = coordinator();
    let r = send(
        &mut c,
        &join("a", &["foo"]).with_server_assignor(Some(StrBytes::from_static_str("sticky"))),
        0,
    );
    assert_eq!(error_of(&r), ResponseError::UnsupportedAssignor.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some("ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
    );
    let range = |id: &str| {
        join(id, &["foo"]).with_server_assignor(Some(StrBytes::from_static_str("range")))
    };
    send(&mut c, &range("a"), 0);
    send(&mut c, &range("b"), 1);
    let group = c.group(GROUP).unwrap();
    assert_eq!(group.target_assignment["a"], parts(&[(FOO, &[0, 1, 2])]));
    assert_eq!(group.target_assignment["b"], parts(&[(FOO, &[3, 4, 5])]));
}

#[test]
fn regex_subscription_full_matches_topic_names() {
    let mut c = coordinator();
    let request = join("a", &[])
        .with_subscribed_topic_names(None)
        .with_subscribed_topic_regex(Some(StrBytes::from_static_str("fo")));
    let r = send(&mut c, &request, 0);
    assert_eq!(error_of(&r), 0);
    assert_eq!(
        assignment_of(&r),
        Some(parts(&[])),
        "`fo` must not match `foo`"
    );
    let request = join("b", &[])
        .with_subscribed_topic_names(None)
        .with_subscribed_topic_regex(Some(StrBytes::from_static_str("b.*")));
    let r = send(&mut c, &request, 1);
    assert_eq!(assignment_of(&r), Some(parts(&[(BAR, &[0, 1, 2])])));
    let bad = join("c", &[]).with_subscribed_topic_regex(Some(StrBytes::from_static_str("(")));
    let r = send(&mut c, &bad, 2);
    assert_eq!(error_of(&r), ResponseError::InvalidRegularExpression.code());
}

#[test]
fn describe_reports_state_epochs_and_assignments() {
    let mut c = coordinator();
    send(&mut c, &join("a", &["foo"]), 0);
    send(&mut c, &join("b", &["foo"]), 1);
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![
        GroupId(StrBytes::from_static_str(GROUP)),
        GroupId(StrBytes::from_static_str("nope")),
    ]);
    let response = c.consumer_group_describe(&request, 2);
    let [group, missing] = &response.groups[..] else {
        panic!("two groups expected");
    };
    assert_eq!(group.error_code, 0);
    assert_eq!(group.group_state.as_str(), "Reconciling");
    assert_eq!((group.group_epoch, group.assignment_epoch), (2, 2));
    assert_eq!(group.assignor_name.as_str(), "uniform");
    assert_eq!(group.members.len(), 2);
    let a = &group.members[0];
    assert_eq!(a.member_id.as_str(), "a");
    assert_eq!(a.member_epoch, 1);
    assert_eq!(a.client_id.as_str(), "client");
    assert_eq!(a.member_type, 1);
    assert_eq!(
        a.assignment.topic_partitions[0].partitions,
        vec![0, 1, 2, 3, 4, 5]
    );
    assert_eq!(
        a.assignment.topic_partitions[0].topic_name.0.as_str(),
        "foo"
    );
    assert_eq!(a.target_assignment.topic_partitions[0].partitions.len(), 3);
    assert_eq!(missing.error_code, ResponseError::GroupIdNotFound.code());
}
