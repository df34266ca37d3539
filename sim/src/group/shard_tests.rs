//! The shard across group types: ListGroups over classic and consumer groups, and an empty group
//! of one type giving way to the other (`maybeDeleteEmptyClassicGroup` /
//! `maybeDeleteEmptyConsumerGroup`), persisted across a coordinator move.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;

use super::group_record::record_type;
use super::move_tests::{
    group_records, join, join_response, s, stable_classic_group, Fixture, GROUP,
};
use crate::coordinator::{GroupRequest, GroupResponse, GroupShard};

pub(super) fn cgh(group: &str, member: &str, epoch: i32) -> GroupRequest {
    let mut request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1);
    if epoch == 0 {
        request = request
            .with_rebalance_timeout_ms(60_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]))
            .with_topic_partitions(Some(vec![]));
    }
    GroupRequest::ConsumerGroupHeartbeat(request)
}

pub(super) fn cgh_answer(r: Option<GroupResponse>) -> ConsumerGroupHeartbeatResponse {
    match r {
        Some(GroupResponse::ConsumerGroupHeartbeat(r)) => r,
        other => panic!("expected a ConsumerGroupHeartbeat answer, got {other:?}"),
    }
}

/// (group id, protocol type, state, type) of every listed group.
pub(super) fn list(
    fx: &mut Fixture,
    shard: &mut dyn GroupShard,
    states: &[&str],
    types: &[&str],
) -> Vec<(String, String, String, String)> {
    let request = ListGroupsRequest::default()
        .with_states_filter(states.iter().map(|v| s(v)).collect())
        .with_types_filter(types.iter().map(|v| s(v)).collect());
    match fx.call(shard, 0, 5, GroupRequest::ListGroups(request)) {
        Some(GroupResponse::ListGroups(r)) => {
            assert_eq!(r.error_code, 0);
            r.groups
                .iter()
                .map(|g| {
                    (
                        g.group_id.0.to_string(),
                        g.protocol_type.to_string(),
                        g.group_state.to_string(),
                        g.group_type.to_string(),
                    )
                })
                .collect()
        }
        other => panic!("expected a ListGroups answer, got {other:?}"),
    }
}

pub(super) fn listed(
    id: &str,
    protocol: &str,
    state: &str,
    group_type: &str,
) -> (String, String, String, String) {
    (id.into(), protocol.into(), state.into(), group_type.into())
}

/// A "simple" commit (no member, generation -1) to `group`.
pub(super) fn simple_commit(group: &str, offset: i64) -> GroupRequest {
    GroupRequest::OffsetCommit(
        OffsetCommitRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("t")))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(offset)])]),
    )
}

pub(super) fn committed(fx: &mut Fixture, shard: &mut dyn GroupShard, group: &str) -> i64 {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![
            offset_fetch_request::OffsetFetchRequestTopic::default()
                .with_name(TopicName(s("t")))
                .with_partition_indexes(vec![0]),
        ]));
    match fx.call(shard, 0, 5, GroupRequest::OffsetFetch(request)) {
        Some(GroupResponse::OffsetFetch(r)) => r.topics[0].partitions[0].committed_offset,
        other => panic!("expected an OffsetFetch answer, got {other:?}"),
    }
}

#[test]
fn list_groups_reports_both_group_types_with_kafkas_filters() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    stable_classic_group(&mut fx, shard.as_mut());
    let joined = cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", 0)));
    assert_eq!(joined.error_code, 0);

    let classic = listed(GROUP, "consumer", "Stable", "classic");
    let consumer = listed("cg", "consumer", "Stable", "consumer");
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![classic.clone(), consumer.clone()]
    );
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &["CONSUMER"]),
        vec![consumer.clone()]
    );
    assert_eq!(
        list(&mut fx, shard.as_mut(), &["stable"], &["classic"]),
        vec![classic]
    );
    assert!(list(&mut fx, shard.as_mut(), &["Empty"], &[]).is_empty());
    assert!(list(&mut fx, shard.as_mut(), &[], &["share"]).is_empty());

    // The member leaves: the consumer group is listed Empty (it is kept, as Kafka keeps it).
    let left = cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", -1)));
    assert_eq!(left.error_code, 0);
    assert_eq!(
        list(&mut fx, shard.as_mut(), &["empty"], &[]),
        vec![listed("cg", "consumer", "Empty", "consumer")]
    );
}

#[test]
fn a_consumer_group_replaces_an_empty_classic_group_and_the_move_keeps_it() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    match fx.call(shard.as_mut(), 0, 8, simple_commit("g", 7)) {
        Some(GroupResponse::OffsetCommit(r)) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![listed("g", "", "Empty", "classic")],
        "a simple group holds the offsets"
    );
    assert_eq!(committed(&mut fx, shard.as_mut(), "g"), 7);
    let joined = cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("g", "m1", 0)));
    assert_eq!((joined.error_code, joined.member_epoch), (0, 1));
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![listed("g", "consumer", "Stable", "consumer")]
    );
    assert_eq!(
        group_records(&fx, record_type::GROUP_METADATA),
        1,
        "the classic group's tombstone"
    );
    assert_eq!(committed(&mut fx, shard.as_mut(), "g"), 7, "still visible");

    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert_eq!(
        list(&mut fx, moved.as_mut(), &[], &[]),
        vec![listed("g", "consumer", "Stable", "consumer")]
    );
    assert_eq!(committed(&mut fx, moved.as_mut(), "g"), 7, "offsets stay");
}

#[test]
fn a_classic_join_replaces_an_empty_consumer_group_and_the_move_keeps_it() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    assert_eq!(
        cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh(GROUP, "m1", 0))).error_code,
        0
    );
    // While the consumer group has a member, a classic join is the consumer group's to answer
    // (`classicGroupJoinToConsumerGroup`): a v9 dynamic member first needs a member id.
    assert_eq!(
        join_response(fx.call(shard.as_mut(), 0, 9, join(""))).error_code,
        ResponseError::MemberIdRequired.code()
    );
    assert_eq!(
        cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh(GROUP, "m1", -1))).error_code,
        0
    );
    // Empty now: the classic join deletes it and creates a classic group.
    let member = stable_classic_group(&mut fx, shard.as_mut());
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![listed(GROUP, "consumer", "Stable", "classic")]
    );
    // A ConsumerGroupHeartbeat for the now non-empty classic group would upgrade it, but its
    // member's metadata is not a consumer protocol subscription: refused, the group stays.
    let refused = cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh(GROUP, "m2", 0)));
    assert_eq!(refused.error_code, ResponseError::GroupIdNotFound.code());
    assert!(refused
        .error_message
        .as_deref()
        .is_some_and(|m| m.contains("malformed")));

    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert_eq!(
        list(&mut fx, moved.as_mut(), &[], &[]),
        vec![listed(GROUP, "consumer", "Stable", "classic")],
        "the consumer group's tombstones and the classic group's records replay in order"
    );
    assert_eq!(
        super::move_tests::heartbeat_error(fx.call(
            moved.as_mut(),
            1_000,
            4,
            super::move_tests::heartbeat(&member, 1)
        )),
        0
    );
}
