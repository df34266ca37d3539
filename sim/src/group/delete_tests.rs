//! DeleteGroups on one shard: Kafka's per-group answers, and tombstones that keep a deleted
//! group and its offsets deleted on the next coordinator.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;

use super::move_tests::{s, stable_classic_group, Fixture, GROUP};
use super::shard_tests::{cgh, cgh_answer, committed, list, listed, simple_commit};
use crate::coordinator::{GroupRequest, GroupResponse, GroupShard};

/// (group id, error code) of each result, in answer order.
fn delete(fx: &mut Fixture, shard: &mut dyn GroupShard, groups: &[&str]) -> Vec<(String, i16)> {
    let request = DeleteGroupsRequest::default()
        .with_groups_names(groups.iter().map(|g| GroupId(s(g))).collect());
    match fx.call(shard, 0, 2, GroupRequest::DeleteGroups(request)) {
        Some(GroupResponse::DeleteGroups(r)) => r
            .results
            .iter()
            .map(|g| (g.group_id.0.to_string(), g.error_code))
            .collect(),
        other => panic!("expected a DeleteGroups answer, got {other:?}"),
    }
}

fn commit_ok(fx: &mut Fixture, shard: &mut dyn GroupShard, group: &str, offset: i64) {
    match fx.call(shard, 0, 8, simple_commit(group, offset)) {
        Some(GroupResponse::OffsetCommit(r)) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_group_gets_kafkas_answer() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    stable_classic_group(&mut fx, shard.as_mut());
    assert_eq!(
        cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", 0))).error_code,
        0
    );
    commit_ok(&mut fx, shard.as_mut(), "simple", 5);

    let answers = delete(
        &mut fx,
        shard.as_mut(),
        &[GROUP, "cg", "unknown", "", "simple"],
    );
    assert_eq!(
        answers,
        vec![
            (GROUP.to_owned(), ResponseError::NonEmptyGroup.code()),
            ("cg".to_owned(), ResponseError::NonEmptyGroup.code()),
            ("unknown".to_owned(), ResponseError::GroupIdNotFound.code()),
            (String::new(), ResponseError::GroupIdNotFound.code()),
            ("simple".to_owned(), 0),
        ]
    );
    assert_eq!(committed(&mut fx, shard.as_mut(), "simple"), -1);
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![
            listed(GROUP, "consumer", "Stable", "classic"),
            listed("cg", "consumer", "Stable", "consumer"),
        ]
    );
    // Deleted: a second delete does not find it.
    assert_eq!(
        delete(&mut fx, shard.as_mut(), &["simple"]),
        vec![("simple".to_owned(), ResponseError::GroupIdNotFound.code())]
    );
}

#[test]
fn deleted_groups_and_offsets_stay_deleted_on_the_next_coordinator() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    // A consumer group with a committed offset, emptied by its member's leave.
    let joined = cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", 0)));
    assert_eq!(joined.error_code, 0);
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(s("cg")))
        .with_member_id(s("m1"))
        .with_generation_id_or_member_epoch(joined.member_epoch)
        .with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("t")))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(11),
                ]),
        ]);
    match fx.call(shard.as_mut(), 0, 9, GroupRequest::OffsetCommit(commit)) {
        Some(GroupResponse::OffsetCommit(r)) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", -1))).error_code,
        0
    );
    // A classic group whose only member left, and a simple group.
    let member = stable_classic_group(&mut fx, shard.as_mut());
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_members(vec![
            leave_group_request::MemberIdentity::default().with_member_id(s(&member))
        ]);
    match fx.call(shard.as_mut(), 0, 3, GroupRequest::LeaveGroup(leave)) {
        Some(GroupResponse::LeaveGroup(r)) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    commit_ok(&mut fx, shard.as_mut(), "simple", 5);
    assert_eq!(list(&mut fx, shard.as_mut(), &["empty"], &[]).len(), 3);

    let answers = delete(&mut fx, shard.as_mut(), &["cg", GROUP, "simple"]);
    assert!(answers.iter().all(|(_, code)| *code == 0), "{answers:?}");
    assert!(list(&mut fx, shard.as_mut(), &[], &[]).is_empty());

    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert!(list(&mut fx, moved.as_mut(), &[], &[]).is_empty());
    assert_eq!(committed(&mut fx, moved.as_mut(), "cg"), -1);
    assert_eq!(committed(&mut fx, moved.as_mut(), "simple"), -1);
    assert_eq!(
        delete(&mut fx, moved.as_mut(), &["cg"]),
        vec![("cg".to_owned(), ResponseError::GroupIdNotFound.code())]
    );
}

#[test]
fn a_fenced_shard_answers_nothing_and_deletes_nothing() {
    let mut fx = Fixture::new();
    let mut old = fx.load(0);
    commit_ok(&mut fx, old.as_mut(), "simple", 5);
    // Leadership moves on: the old shard's append is refused, so it never answers (the runtime
    // answers NOT_COORDINATOR) and the new coordinator still has the group.
    fx.move_coordinator();
    let request = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s("simple"))]);
    assert_eq!(
        fx.call(old.as_mut(), 0, 2, GroupRequest::DeleteGroups(request)),
        None
    );
    let mut new = fx.load(1_000);
    assert_eq!(committed(&mut fx, new.as_mut(), "simple"), 5);
}
