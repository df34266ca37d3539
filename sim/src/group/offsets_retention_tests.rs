//! Offset expiry on virtual time (`cleanupGroupMetadata` every check interval): the base time of
//! each group type, explicit expire timestamps, the deletion of groups left without offsets,
//! and tombstones that keep expired offsets gone on the next coordinator.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;

use super::migration::consumer_protocol::tests::subscription;
use super::move_tests::{join, join_response, s, sync, Fixture, GROUP};
use super::offsets_retention::OffsetsRetentionConfig;
use super::shard_tests::{cgh, cgh_answer, list, listed};
use crate::coordinator::{GroupRequest, GroupResponse, GroupShard};

const RETENTION_MS: u64 = 10_000;
const CHECK_MS: u64 = 1_000;

fn fixture() -> Fixture {
    let mut fx = Fixture::new();
    fx.configure(|f| {
        f.offsets_retention = OffsetsRetentionConfig {
            offsets_retention_ms: RETENTION_MS,
            offsets_retention_check_interval_ms: CHECK_MS,
        };
    });
    fx
}

/// A commit of `offset` to each of `topics`' partition 0.
fn commit(
    fx: &mut Fixture,
    shard: &mut dyn GroupShard,
    now_ms: u64,
    request: OffsetCommitRequest,
    topics: &[&str],
) {
    let request = request.with_topics(
        topics
            .iter()
            .map(|t| {
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(3)])
            })
            .collect(),
    );
    match fx.call(shard, now_ms, 9, GroupRequest::OffsetCommit(request)) {
        Some(GroupResponse::OffsetCommit(r)) => {
            assert!(
                r.topics.iter().all(|t| t.partitions[0].error_code == 0),
                "{r:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

fn simple(group: &str) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
}

/// Polls the shard at every check up to `now_ms`, as the runtime polls it at each deadline.
fn run_until(shard: &mut dyn GroupShard, now_ms: u64) {
    for check_ms in (0..=now_ms).step_by(CHECK_MS as usize) {
        shard.poll(check_ms);
    }
}

/// The topics `group` has offsets for at `now_ms` (an admin v8 fetch of everything).
fn committed_topics(
    fx: &mut Fixture,
    shard: &mut dyn GroupShard,
    now_ms: u64,
    group: &str,
) -> Vec<String> {
    run_until(shard, now_ms);
    let request = OffsetFetchRequest::default().with_groups(vec![
        offset_fetch_request::OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(None),
    ]);
    match fx.call(shard, now_ms, 8, GroupRequest::OffsetFetch(request)) {
        Some(GroupResponse::OffsetFetch(r)) => r.groups[0]
            .topics
            .iter()
            .map(|t| t.name.0.to_string())
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_simple_groups_offsets_expire_after_their_commit_and_the_group_goes() {
    let mut fx = fixture();
    let mut shard = fx.load(0);
    commit(&mut fx, shard.as_mut(), 500, simple("g"), &["t"]);
    commit(&mut fx, shard.as_mut(), 4_500, simple("g"), &["u"]);
    // Checks run at 1 s, 2 s, …: t (committed at 0.5 s) expires at the 11 s check.
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 10_999, "g"),
        ["t", "u"]
    );
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 11_000, "g"),
        ["u"]
    );
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![listed("g", "", "Empty", "classic")]
    );
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 15_000, "g"),
        Vec::<String>::new()
    );
    assert!(
        list(&mut fx, shard.as_mut(), &[], &[]).is_empty(),
        "the group is deleted"
    );

    // The tombstones keep them deleted for the next coordinator.
    fx.move_coordinator();
    let mut moved = fx.load(16_000);
    assert!(list(&mut fx, moved.as_mut(), &[], &[]).is_empty());
}

#[test]
fn an_explicit_retention_time_overrides_the_broker_setting() {
    let mut fx = fixture();
    let mut shard = fx.load(0);
    // OffsetCommit v2–v4 `retention_time_ms`: expires 2.5 s after the commit.
    commit(
        &mut fx,
        shard.as_mut(),
        500,
        simple("g").with_retention_time_ms(2_500),
        &["t"],
    );
    assert_eq!(committed_topics(&mut fx, shard.as_mut(), 2_999, "g"), ["t"]);
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 3_000, "g"),
        Vec::<String>::new()
    );
    fx.move_coordinator();
    let mut moved = fx.load(4_000);
    assert_eq!(
        committed_topics(&mut fx, moved.as_mut(), 4_000, "g"),
        Vec::<String>::new()
    );
}

/// A Stable classic group of one member whose ConsumerProtocolSubscription names topic t.
fn stable_consumer_protocol_group(fx: &mut Fixture, shard: &mut dyn GroupShard) -> String {
    let with_subscription = |member: &str| match join(member) {
        GroupRequest::JoinGroup(r) => {
            let mut protocols = r.protocols.clone();
            protocols[0].metadata = subscription(0, &["t"], &[]);
            GroupRequest::JoinGroup(r.with_protocols(protocols))
        }
        _ => unreachable!(),
    };
    let first = join_response(fx.call(shard, 0, 9, with_subscription("")));
    let member = first.member_id.to_string();
    let joined = join_response(fx.call(shard, 0, 9, with_subscription(&member)));
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    match fx.call(shard, 0, 5, sync(&member, 1, b"a-0")) {
        Some(GroupResponse::SyncGroup(r)) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    member
}

#[test]
fn an_empty_classic_groups_offsets_expire_after_it_became_empty() {
    let mut fx = fixture();
    let mut shard = fx.load(0);
    let member = stable_consumer_protocol_group(&mut fx, shard.as_mut());
    let by_member = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(&member))
        .with_generation_id_or_member_epoch(1);
    commit(&mut fx, shard.as_mut(), 0, by_member, &["t", "u"]);
    // Stable: the member subscribes to t (its metadata); u's offset expires from its commit.
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 9_999, GROUP),
        ["t", "u"]
    );
    // The member keeps its session alive.
    let hb = super::move_tests::heartbeat(&member, 1);
    fx.call(shard.as_mut(), 9_999, 4, hb.clone());
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 10_000, GROUP),
        ["t"]
    );
    // It leaves at 15 s: t's offset expires 10 s later, not 10 s after its commit.
    fx.call(shard.as_mut(), 15_000, 4, hb);
    let leave = LeaveGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_members(vec![
            leave_group_request::MemberIdentity::default().with_member_id(s(&member))
        ]);
    fx.call(shard.as_mut(), 15_000, 3, GroupRequest::LeaveGroup(leave));
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 24_999, GROUP),
        ["t"]
    );
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 25_000, GROUP),
        Vec::<String>::new()
    );
    assert!(
        list(&mut fx, shard.as_mut(), &[], &[]).is_empty(),
        "the group is deleted"
    );
}

#[test]
fn a_consumer_group_keeps_subscribed_topics_and_goes_once_empty_and_expired() {
    let mut fx = fixture();
    let mut shard = fx.load(0);
    let joined = cgh_answer(fx.call(shard.as_mut(), 0, 1, cgh("cg", "m1", 0)));
    assert_eq!(joined.error_code, 0);
    let by_member = OffsetCommitRequest::default()
        .with_group_id(GroupId(s("cg")))
        .with_member_id(s("m1"))
        .with_generation_id_or_member_epoch(joined.member_epoch);
    commit(&mut fx, shard.as_mut(), 0, by_member, &["t", "u"]);
    // The member (subscribed to t) heartbeats; u, which nobody subscribes to, expires.
    let heartbeat = |epoch| cgh("cg", "m1", epoch);
    for now_ms in [4_000, 8_000] {
        cgh_answer(fx.call(shard.as_mut(), now_ms, 1, heartbeat(joined.member_epoch)));
    }
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 9_999, "cg"),
        ["t", "u"]
    );
    cgh_answer(fx.call(shard.as_mut(), 10_000, 1, heartbeat(joined.member_epoch)));
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 10_000, "cg"),
        ["t"]
    );
    // Still subscribed long after its commit: kept. Then the member leaves: t is no longer
    // subscribed and already past its retention, so it expires and the group goes.
    cgh_answer(fx.call(shard.as_mut(), 14_000, 1, heartbeat(joined.member_epoch)));
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 14_000, "cg"),
        ["t"]
    );
    assert_eq!(
        cgh_answer(fx.call(shard.as_mut(), 14_000, 1, heartbeat(-1))).error_code,
        0
    );
    assert_eq!(
        list(&mut fx, shard.as_mut(), &[], &[]),
        vec![listed("cg", "consumer", "Empty", "consumer")]
    );
    assert_eq!(
        committed_topics(&mut fx, shard.as_mut(), 15_000, "cg"),
        Vec::<String>::new()
    );
    assert!(
        list(&mut fx, shard.as_mut(), &[], &[]).is_empty(),
        "the group is deleted"
    );
    fx.move_coordinator();
    let mut moved = fx.load(16_000);
    assert!(list(&mut fx, moved.as_mut(), &[], &[]).is_empty());
}
