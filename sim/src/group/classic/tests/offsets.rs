//! OffsetCommit validation matrix for classic groups, and OffsetFetch shapes.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse, TopicName,
};

use super::*;
use crate::group::classic::ClassicGroupState;
use crate::group::offsets::OffsetStore;

fn commit_request(
    group: &str,
    member_id: &str,
    generation_id: i32,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(sb(group)))
        .with_member_id(sb(member_id))
        .with_generation_id_or_member_epoch(generation_id)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(sb("t")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(5)
                .with_committed_metadata(Some(sb("meta")))])])
}

fn commit(
    h: &mut Harness,
    store: &mut OffsetStore,
    version: i16,
    request: &OffsetCommitRequest,
) -> i16 {
    let id = h.next_request_id();
    h.coordinator
        .offset_commit(h.now_ms, id, version, request, store);
    match h.take(id) {
        ClassicResponse::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
        other => panic!("expected OffsetCommit, got {other:?}"),
    }
}

fn fetch(
    h: &mut Harness,
    store: &OffsetStore,
    version: i16,
    request: &OffsetFetchRequest,
) -> OffsetFetchResponse {
    let id = h.next_request_id();
    h.coordinator
        .offset_fetch(h.now_ms, id, version, request, store);
    match h.take(id) {
        ClassicResponse::OffsetFetch(r) => r,
        other => panic!("expected OffsetFetch, got {other:?}"),
    }
}

#[test]
fn commit_to_a_missing_group() {
    let mut h = Harness::new();
    let mut store = OffsetStore::new();
    assert_eq!(
        commit(&mut h, &mut store, 9, &commit_request("other", "", 1, 1)),
        code(ResponseError::GroupIdNotFound)
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request("other", "", 1, 1)),
        code(ResponseError::IllegalGeneration)
    );
    assert_eq!(h.coordinator.group_state("other"), None);
    assert_eq!(
        commit(&mut h, &mut store, 9, &commit_request("other", "", -1, 7)),
        0
    );
    assert_eq!(
        h.coordinator.group_state("other"),
        Some(ClassicGroupState::Empty),
        "a simple group is created"
    );
    let stored = store.get("other", "t", 0).cloned();
    assert_eq!(
        stored.map(|o| (o.committed_offset, o.leader_epoch)),
        Some((7, Some(5)))
    );
}

#[test]
fn commit_validation_per_state() {
    let mut h = Harness::new();
    let mut store = OffsetStore::new();
    // Empty: generation -1 commits, with or without a member id.
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "", -1, 1)),
        0
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "x", -1, 1)),
        0
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "x", 0, 1)),
        code(ResponseError::UnknownMemberId)
    );

    // CompletingRebalance: a valid member is told to finish the rebalance.
    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "", -1, 1)),
        code(ResponseError::UnknownMemberId),
        "PreparingRebalance: anonymous commits need an Empty group"
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, &a, 0, 2)),
        0,
        "PreparingRebalance with the current generation"
    );
    h.advance(DELAY_MS);
    let _ = h.join_response(join_a);
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, &a, 1, 3)),
        code(ResponseError::RebalanceInProgress)
    );

    // Stable.
    let sync = h.send_sync(&a, 1, &[]);
    let _ = h.sync_response(sync);
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, &a, 1, 4)),
        0
    );
    assert_eq!(
        store.get(GROUP, "t", 0).map(|o| o.committed_offset),
        Some(4)
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, &a, 2, 5)),
        code(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "ghost", 1, 5)),
        code(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "", -1, 5)),
        code(ResponseError::UnknownMemberId)
    );
    let fenced = commit_request(GROUP, &a, 1, 5).with_group_instance_id(Some(sb("i9")));
    assert_eq!(
        commit(&mut h, &mut store, 8, &fenced),
        code(ResponseError::UnknownMemberId)
    );

    // Dead.
    h.coordinator.unload(h.now_ms);
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, &a, 1, 6)),
        code(ResponseError::CoordinatorNotAvailable)
    );
    assert_eq!(
        store.get(GROUP, "t", 0).map(|o| o.committed_offset),
        Some(4)
    );
}

#[test]
fn commit_from_a_static_member_with_a_stale_id_is_fenced() {
    let mut h = Harness::new();
    let mut store = OffsetStore::new();
    let join = h.send_join(5, &join_request("", Some("i1"), &[("range", b"")]));
    h.advance(DELAY_MS);
    let s = h.join_response(join).member_id.to_string();
    let sync = h.send_sync(&s, 1, &[]);
    let _ = h.sync_response(sync);
    let stale = commit_request(GROUP, "old-id", 1, 5).with_group_instance_id(Some(sb("i1")));
    assert_eq!(
        commit(&mut h, &mut store, 8, &stale),
        code(ResponseError::FencedInstanceId)
    );
}

#[test]
fn commits_keep_a_stable_members_session_alive() {
    let mut h = Harness::new();
    let mut store = OffsetStore::new();
    let (a, b) = h.stable_pair();
    h.advance(SESSION_MS as u64 / 2);
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, &a, 1, 1)),
        0
    );
    assert_eq!(h.heartbeat(&b, 1), 0);
    h.advance(SESSION_MS as u64 / 2 + 1);
    assert_eq!(h.heartbeat(&a, 1), 0, "the commit refreshed a's session");
}

#[test]
fn fetch_shapes_and_unknown_partitions() {
    let mut h = Harness::new();
    let mut store = OffsetStore::new();
    assert_eq!(
        commit(&mut h, &mut store, 8, &commit_request(GROUP, "", -1, 11)),
        0
    );

    let batched = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(sb(GROUP)))
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(TopicName(sb("t")))
                .with_partition_indexes(vec![0, 1])])),
        OffsetFetchRequestGroup::default().with_group_id(GroupId(sb("unknown"))),
    ]);
    let response = fetch(&mut h, &store, 8, &batched);
    assert_eq!(response.groups.len(), 2);
    let partitions = &response.groups[0].topics[0].partitions;
    assert_eq!(
        partitions
            .iter()
            .map(|p| (p.committed_offset, p.committed_leader_epoch))
            .collect::<Vec<_>>(),
        [(11, 5), (-1, -1)]
    );
    assert_eq!(partitions[0].metadata, Some(sb("meta")));
    assert!(
        response.groups[1].topics.is_empty(),
        "all offsets of an unknown group: none"
    );

    let single = OffsetFetchRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_topics(None);
    let response = fetch(&mut h, &store, 7, &single);
    assert_eq!(response.error_code, 0);
    assert_eq!(response.topics[0].partitions[0].committed_offset, 11);

    h.coordinator.unload(h.now_ms);
    let single = single.with_topics(Some(vec![OffsetFetchRequestTopic::default()
        .with_name(TopicName(sb("t")))
        .with_partition_indexes(vec![0])]));
    let response = fetch(&mut h, &store, 5, &single);
    assert_eq!(
        response.topics[0].partitions[0].committed_offset, -1,
        "Dead groups read as empty"
    );
}
