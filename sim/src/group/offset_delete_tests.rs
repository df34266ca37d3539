//! OffsetDelete on one shard: Kafka's group checks (`validateOffsetDelete`), GROUP_SUBSCRIBED_TO_TOPIC
//! for the topics a group's members subscribe to, and tombstones that keep deleted offsets
//! deleted on the next coordinator.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::*;

use super::move_tests::{join_response, s, stable_classic_group, Fixture, GROUP};
use super::shard_tests::{cgh, cgh_answer, committed};
use crate::coordinator::{GroupRequest, GroupResponse, GroupShard};

/// The top-level error and each (topic, partition, error) of the answer.
type Answer = (i16, Vec<(String, i32, i16)>);

fn offset_delete(
    fx: &mut Fixture,
    shard: &mut dyn GroupShard,
    group: &str,
    topics: &[(&str, &[i32])],
) -> Answer {
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(
            topics
                .iter()
                .map(|(name, partitions)| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(TopicName(s(name)))
                        .with_partitions(
                            partitions
                                .iter()
                                .map(|p| {
                                    OffsetDeleteRequestPartition::default().with_partition_index(*p)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    match fx.call(shard, 0, 0, GroupRequest::OffsetDelete(request)) {
        Some(GroupResponse::OffsetDelete(r)) => (
            r.error_code,
            r.topics
                .iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (t.name.0.to_string(), p.partition_index, p.error_code))
                })
                .collect(),
        ),
        other => panic!("expected an OffsetDelete answer, got {other:?}"),
    }
}

/// Commits `offset` for `group`'s `topic`-0 as `member` of `generation` (-1: a simple group).
fn commit(
    fx: &mut Fixture,
    shard: &mut dyn GroupShard,
    group: &str,
    member: &str,
    generation: i32,
    topic: &str,
    offset: i64,
) {
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_member_id(s(member))
        .with_generation_id_or_member_epoch(generation)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(s(topic)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    match fx.call(shard, 0, 9, GroupRequest::OffsetCommit(request)) {
        Some(GroupResponse::OffsetCommit(r)) => {
            assert_eq!(r.topics[0].partitions[0].error_code, 0, "{r:?}")
        }
        other => panic!("{other:?}"),
    }
}

const SUBSCRIBED: i16 = ResponseError::GroupSubscribedToTopic.code();

fn with_topic_u() -> Fixture {
    let fx = Fixture::new();
    fx.update_cluster(|state| state.create_topic("u", 1, 1, None).unwrap());
    fx
}

#[test]
fn a_simple_groups_offsets_are_deleted_and_stay_deleted_on_the_next_coordinator() {
    let mut fx = with_topic_u();
    let mut shard = fx.load(0);
    commit(&mut fx, shard.as_mut(), "simple", "", -1, "t", 5);
    assert_eq!(committed(&mut fx, shard.as_mut(), "simple"), 5);
    // A partition without an offset is answered without error too (no tombstone for it).
    let answer = offset_delete(&mut fx, shard.as_mut(), "simple", &[("t", &[0, 1])]);
    assert_eq!(answer, (0, vec![("t".into(), 0, 0), ("t".into(), 1, 0)]));
    assert_eq!(committed(&mut fx, shard.as_mut(), "simple"), -1);

    fx.move_coordinator();
    let mut next = fx.load(0);
    assert_eq!(committed(&mut fx, next.as_mut(), "simple"), -1);
}

#[test]
fn subscribed_topics_are_refused_while_the_others_go() {
    let mut fx = with_topic_u();
    let mut shard = fx.load(0);
    // Its members' metadata is no ConsumerProtocolSubscription: Kafka cannot tell the topics,
    // so a `consumer`-protocol group counts as subscribed to every topic.
    let member = stable_classic_group(&mut fx, shard.as_mut());
    commit(&mut fx, shard.as_mut(), GROUP, &member, 1, "t", 3);
    let answer = offset_delete(&mut fx, shard.as_mut(), GROUP, &[("t", &[0])]);
    assert_eq!(answer, (0, vec![("t".into(), 0, SUBSCRIBED)]));
    assert_eq!(committed(&mut fx, shard.as_mut(), GROUP), 3);

    // A consumer group member subscribed to `t`: its offsets of `u` may go, not those of `t`.
    assert_eq!(
        cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", 0))).error_code,
        0
    );
    commit(&mut fx, shard.as_mut(), "cg", "m1", 1, "u", 7);
    let answer = offset_delete(
        &mut fx,
        shard.as_mut(),
        "cg",
        &[("t", &[0, 1]), ("u", &[0])],
    );
    assert_eq!(
        answer,
        (
            0,
            vec![
                ("t".into(), 0, SUBSCRIBED),
                ("t".into(), 1, SUBSCRIBED),
                ("u".into(), 0, 0)
            ]
        )
    );
}

#[test]
fn group_level_errors_are_kafkas() {
    let mut fx = with_topic_u();
    let mut shard = fx.load(0);
    assert_eq!(
        offset_delete(&mut fx, shard.as_mut(), "unknown", &[("t", &[0])]),
        (ResponseError::GroupIdNotFound.code(), vec![])
    );
    // A classic group with members whose protocol type is not `consumer` (Kafka Connect's, say).
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(s("connect")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(s("connect"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("default"))
            .with_metadata(Bytes::from_static(b"x"))]);
    let joined = join_response(fx.call(shard.as_mut(), 0, 3, GroupRequest::JoinGroup(join)));
    assert_eq!(joined.error_code, 0);
    assert_eq!(
        offset_delete(&mut fx, shard.as_mut(), "connect", &[("t", &[0])]),
        (ResponseError::NonEmptyGroup.code(), vec![])
    );
}
