//! Classic members inside a consumer group (`classicGroup*ToConsumerGroup`): their assignment
//! comes from the server assignor through SyncGroup, REBALANCE_IN_PROGRESS drives them through
//! revocation, their own timers fence them, and the last consumer-protocol member leaving hands
//! the group back to the classic protocol.

use kafka_protocol::error::ResponseError;

use super::classic_harness::*;
use super::harness::*;
use crate::group::consumer::assignment::{self, Assignment};
use crate::group::consumer::{
    ConsumerGroupConfig, ConsumerGroupCoordinator, ConsumerGroupMember, MemberState,
};
use crate::group::migration::ConsumerGroupMigrationPolicy;

const V9: i16 = 9;

fn classic_join_at(
    c: &mut ConsumerGroupCoordinator,
    member_id: &str,
    owned: &[(&str, &[i32])],
    now_ms: u64,
) -> kafka_protocol::messages::JoinGroupResponse {
    c.classic_group_join(
        &classic_join(GROUP, member_id, &["foo"], owned),
        V9,
        "client",
        "/127.0.0.1",
        now_ms,
    )
}

fn member<'c>(c: &'c ConsumerGroupCoordinator, member_id: &str) -> &'c ConsumerGroupMember {
    &c.group(GROUP).unwrap().members[member_id]
}

/// Partitions of `foo` in `a`, as the (topic, partitions) pairs the classic subscription uses.
fn foo_partitions(a: &Assignment) -> Vec<i32> {
    a.get(&FOO)
        .map(|p| p.iter().copied().collect())
        .unwrap_or_default()
}

/// No partition is held (assigned or pending revocation) by two members at once.
fn assert_disjoint(c: &ConsumerGroupCoordinator) {
    let mut seen = Assignment::new();
    for m in c.group(GROUP).unwrap().members.values() {
        let held = assignment::pairs(&m.assigned_partitions)
            .chain(assignment::pairs(&m.partitions_pending_revocation));
        for (topic, p) in held {
            assert!(
                !assignment::contains(&seen, topic, p),
                "partition {p} held twice"
            );
            assignment::insert(&mut seen, topic, p);
        }
    }
}

/// Consumer member `a` owning all of foo, then classic member `x` joined and reconciled: `a`
/// revoked half, `x` rejoined and synced its half at epoch 2.
fn consumer_and_classic_member(c: &mut ConsumerGroupCoordinator) -> Assignment {
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(c, &join("a", &["foo"]), 0);
    assert_eq!(classic_join_at(c, "x", &[], 10).generation_id, 2);
    let a_target = c.group(GROUP).unwrap().target_assignment["a"].clone();
    send(c, &heartbeat("a", 1, &all), 20);
    send(c, &heartbeat("a", 1, &a_target), 30);
    let rejoined = classic_join_at(c, "x", &[], 40);
    assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 2));
    let sync = c.classic_group_sync(&classic_sync(GROUP, "x", 2), 50);
    let x_assignment = synced(&sync.assignment, &topics());
    assert_eq!(assignment::partition_count(&x_assignment), 3);
    x_assignment
}

#[test]
fn a_classic_member_gets_its_server_side_assignment_through_sync_group() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);

    // A v9 dynamic member without an id is sent back for one (KIP-394) and not added yet.
    let r = classic_join_at(&mut c, "", &[], 10);
    assert_eq!(r.error_code, ResponseError::MemberIdRequired.code());
    let x = r.member_id.to_string();
    assert!(!x.is_empty());
    assert!(!c.group(GROUP).unwrap().members.contains_key(&x));

    // Its join completes at once with the target computed: epoch 2 as generation, no leader.
    let r = classic_join_at(&mut c, &x, &[], 20);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.generation_id, 2);
    assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.leader.as_str(), "");
    assert!(r.members.is_empty());
    assert!(member(&c, &x).uses_classic_protocol());
    assert_eq!(member(&c, &x).state, MemberState::UnreleasedPartitions);
    let x_target = c.group(GROUP).unwrap().target_assignment[&x].clone();
    assert_eq!(assignment::partition_count(&x_target), 3);

    // a still holds x's partitions: SyncGroup hands out nothing, heartbeats are fine.
    let sync = c.classic_group_sync(&classic_sync(GROUP, &x, 2), 30);
    assert_eq!(sync.error_code, 0);
    assert_eq!(sync.protocol_name.as_deref(), Some("range"));
    assert_eq!(synced(&sync.assignment, &topics()), Assignment::new());
    let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, &x, 2), 40);
    assert_eq!(hb.error_code, 0);

    // a revokes; x's partitions are free, so its heartbeat asks it to rejoin to collect them.
    let a_target = c.group(GROUP).unwrap().target_assignment["a"].clone();
    send(&mut c, &heartbeat("a", 1, &all), 50);
    send(&mut c, &heartbeat("a", 1, &a_target), 60);
    let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, &x, 2), 70);
    assert_eq!(hb.error_code, ResponseError::RebalanceInProgress.code());
    let r = classic_join_at(&mut c, &x, &[], 80);
    assert_eq!((r.error_code, r.generation_id), (0, 2));
    assert_eq!(member(&c, &x).state, MemberState::Stable);
    let sync = c.classic_group_sync(&classic_sync(GROUP, &x, 2), 90);
    assert_eq!(synced(&sync.assignment, &topics()), x_target);
    assert_disjoint(&c);
}

#[test]
fn a_classic_member_revokes_before_it_moves_to_the_new_epoch() {
    let mut c = coordinator();
    let x_owned = consumer_and_classic_member(&mut c);

    // b joins: epoch 3. x is behind the group epoch: its heartbeat says rejoin.
    send(&mut c, &join("b", &["foo"]), 100);
    let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, "x", 2), 110);
    assert_eq!(hb.error_code, ResponseError::RebalanceInProgress.code());

    // x rejoins still owning its 3 (a cooperative client): it must give one up first, so it
    // stays at generation 2 holding the 2 it keeps.
    let owned = foo_partitions(&x_owned);
    let r = classic_join_at(&mut c, "x", &[("foo", &owned)], 120);
    assert_eq!((r.error_code, r.generation_id), (0, 2));
    assert_eq!(member(&c, "x").state, MemberState::UnrevokedPartitions);
    assert_disjoint(&c);
    // SyncGroup while revoking is allowed (the member already rejoined) and returns what it
    // keeps; the heartbeat then says rejoin until the revocation is acknowledged.
    let sync = c.classic_group_sync(&classic_sync(GROUP, "x", 2), 130);
    assert_eq!(sync.error_code, 0);
    let kept = synced(&sync.assignment, &topics());
    assert_eq!(assignment::partition_count(&kept), 2);
    assert!(assignment::pairs(&kept).all(|(t, p)| assignment::contains(&x_owned, t, p)));
    let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, "x", 2), 140);
    assert_eq!(hb.error_code, ResponseError::RebalanceInProgress.code());

    // Rejoining without the revoked partition moves x to epoch 3.
    let r = classic_join_at(&mut c, "x", &[("foo", &foo_partitions(&kept))], 150);
    assert_eq!((r.error_code, r.generation_id), (0, 3));
    assert_eq!(member(&c, "x").state, MemberState::Stable);
    let sync = c.classic_group_sync(&classic_sync(GROUP, "x", 3), 160);
    assert_eq!(synced(&sync.assignment, &topics()), kept);
    assert_eq!(
        c.classic_group_heartbeat(&classic_heartbeat(GROUP, "x", 3), 170)
            .error_code,
        0
    );
    assert_disjoint(&c);
}

#[test]
fn classic_requests_are_validated_like_kafka() {
    let mut c = coordinator();
    consumer_and_classic_member(&mut c);
    let code = |e: ResponseError| e.code();

    let wrong_generation = c.classic_group_sync(&classic_sync(GROUP, "x", 1), 100);
    assert_eq!(
        wrong_generation.error_code,
        code(ResponseError::IllegalGeneration)
    );
    let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, "x", 7), 100);
    assert_eq!(hb.error_code, code(ResponseError::IllegalGeneration));
    // A consumer-protocol member cannot speak the classic protocol.
    let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, "a", 2), 100);
    assert_eq!(hb.error_code, code(ResponseError::UnknownMemberId));
    let sync = c.classic_group_sync(&classic_sync(GROUP, "nobody", 2), 100);
    assert_eq!(sync.error_code, code(ResponseError::UnknownMemberId));
    let other_protocol = classic_sync(GROUP, "x", 2).with_protocol_name(Some("roundrobin".into()));
    let sync = c.classic_group_sync(&other_protocol, 100);
    assert_eq!(
        sync.error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );

    // Joins must use the consumer protocol type and share an assignor with the classic members.
    let connect = classic_join(GROUP, "y", &["foo"], &[]).with_protocol_type("connect".into());
    let r = c.classic_group_join(&connect, V9, "client", "/h", 100);
    assert_eq!(r.error_code, code(ResponseError::InconsistentGroupProtocol));
    let metadata =
        crate::group::migration::consumer_protocol::tests::subscription(3, &["foo"], &[]);
    let roundrobin = classic_join_with(GROUP, "y", "roundrobin", metadata);
    let r = c.classic_group_join(&roundrobin, V9, "client", "/h", 100);
    assert_eq!(r.error_code, code(ResponseError::InconsistentGroupProtocol));
    assert!(!c.group(GROUP).unwrap().members.contains_key("y"));

    // Offsets: a classic member commits with its generation (any version); a mismatch is the
    // classic ILLEGAL_GENERATION, not STALE_MEMBER_EPOCH.
    assert_eq!(
        c.validate_offset_commit(GROUP, "x", 2, false, 8, [], 100),
        Ok(())
    );
    let stale = c
        .validate_offset_commit(GROUP, "x", 1, false, 8, [], 100)
        .unwrap_err();
    assert_eq!(stale.error, ResponseError::IllegalGeneration);
    let consumer_v8 = c
        .validate_offset_commit(GROUP, "a", 2, false, 8, [], 100)
        .unwrap_err();
    assert_eq!(consumer_v8.error, ResponseError::UnsupportedVersion);
}

#[test]
fn classic_members_are_fenced_by_their_own_timers() {
    // Session: the JoinGroup's 10 s, not the group's 45 s.
    let mut c = coordinator();
    consumer_and_classic_member(&mut c);
    let a_owned = c.group(GROUP).unwrap().target_assignment["a"].clone();
    send(&mut c, &heartbeat("a", 2, &a_owned), 9_000);
    c.poll(50 + CLASSIC_SESSION_MS as u64 - 1);
    assert!(c.group(GROUP).unwrap().members.contains_key("x"));
    c.poll(50 + CLASSIC_SESSION_MS as u64);
    assert!(!c.group(GROUP).unwrap().members.contains_key("x"));

    // Sync: a join not followed by a SyncGroup within the rebalance timeout.
    let mut c = coordinator();
    send(&mut c, &join("a", &["foo"]), 0);
    let long_session = classic_join(GROUP, "x", &["foo"], &[]).with_session_timeout_ms(60_000);
    c.classic_group_join(&long_session, V9, "client", "/h", 100);
    c.poll(100 + CLASSIC_REBALANCE_MS as u64 - 1);
    assert!(c.group(GROUP).unwrap().members.contains_key("x"));
    c.poll(100 + CLASSIC_REBALANCE_MS as u64);
    assert!(!c.group(GROUP).unwrap().members.contains_key("x"));

    // Rejoin: told REBALANCE_IN_PROGRESS, heartbeating on but never rejoining. Later heartbeats
    // do not push the deadline.
    let mut c = coordinator();
    consumer_and_classic_member(&mut c);
    send(&mut c, &join("b", &["foo"]), 1_000);
    let told_at = 2_000;
    for t in (told_at..told_at + CLASSIC_REBALANCE_MS as u64).step_by(5_000) {
        let hb = c.classic_group_heartbeat(&classic_heartbeat(GROUP, "x", 2), t);
        assert_eq!(hb.error_code, ResponseError::RebalanceInProgress.code());
    }
    c.poll(told_at + CLASSIC_REBALANCE_MS as u64 - 1);
    assert!(c.group(GROUP).unwrap().members.contains_key("x"));
    c.poll(told_at + CLASSIC_REBALANCE_MS as u64);
    assert!(!c.group(GROUP).unwrap().members.contains_key("x"));
}

#[test]
fn leave_group_fences_classic_members_only() {
    let mut c = coordinator();
    consumer_and_classic_member(&mut c);
    classic_join_at(&mut c, "y", &[], 60);
    let epoch = c.group(GROUP).unwrap().group_epoch;
    let r = c.classic_group_leave(&classic_leave(GROUP, &["x", "a", "nobody"]), 3, 100);
    let errors: Vec<(String, i16)> = r
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.error_code))
        .collect();
    assert_eq!(
        errors,
        vec![
            ("x".to_owned(), 0),
            ("a".to_owned(), ResponseError::UnknownMemberId.code()),
            ("nobody".to_owned(), ResponseError::UnknownMemberId.code()),
        ]
    );
    let group = c.group(GROUP).unwrap();
    assert!(!group.members.contains_key("x"));
    assert_eq!(group.group_epoch, epoch + 1, "one bump for the batch");
    // v0–2 name one member and answer with its error at the top level.
    let v2 = kafka_protocol::messages::LeaveGroupRequest::default()
        .with_group_id(kafka_protocol::messages::GroupId(GROUP.into()))
        .with_member_id("nobody".into());
    let r = c.classic_group_leave(&v2, 2, 110);
    assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn the_last_consumer_member_leaving_downgrades_unless_the_policy_forbids_it() {
    // Bidirectional (the default): the group leaves the consumer coordinator as it was.
    let mut c = coordinator();
    consumer_and_classic_member(&mut c);
    let left = send(&mut c, &heartbeat("a", -1, &parts(&[])), 100);
    assert_eq!(left.error_code, 0);
    assert!(c.group(GROUP).is_none());
    let downgraded = c.take_downgraded_groups();
    assert_eq!(downgraded.len(), 1);
    assert_eq!(downgraded[0].leaving_member_ids, vec!["a".to_owned()]);
    assert!(downgraded[0].group.members.contains_key("x"));
    assert!(c.take_downgraded_groups().is_empty());

    // UPGRADE only: x stays in the consumer group, the epoch moves on.
    let config = ConsumerGroupConfig {
        migration_policy: ConsumerGroupMigrationPolicy::Upgrade,
        ..ConsumerGroupConfig::default()
    };
    let mut c = ConsumerGroupCoordinator::new(config, topics());
    consumer_and_classic_member(&mut c);
    send(&mut c, &heartbeat("a", -1, &parts(&[])), 100);
    let group = c.group(GROUP).unwrap();
    assert_eq!(group.members.keys().collect::<Vec<_>>(), vec!["x"]);
    assert_eq!(group.group_epoch, 3);
    assert!(c.take_downgraded_groups().is_empty());
    // ... and the last member leaving empties it; an empty group is not downgraded.
    c.classic_group_leave(&classic_leave(GROUP, &["x"]), 3, 200);
    assert!(c.group(GROUP).unwrap().members.is_empty());
    assert!(c.take_downgraded_groups().is_empty());

    // More classic members than a classic group may hold: no downgrade.
    let config = ConsumerGroupConfig {
        classic_group_max_size: 0,
        ..ConsumerGroupConfig::default()
    };
    let mut c = ConsumerGroupCoordinator::new(config, topics());
    consumer_and_classic_member(&mut c);
    send(&mut c, &heartbeat("a", -1, &parts(&[])), 100);
    assert!(c.group(GROUP).is_some());
    assert!(c.take_downgraded_groups().is_empty());
}

#[test]
fn a_v0_join_uses_its_session_timeout_as_rebalance_timeout() {
    let mut c = coordinator();
    send(&mut c, &join("a", &["foo"]), 0);
    // v0 carries no rebalance timeout (-1 on the wire struct).
    let v0 = classic_join(GROUP, "x", &["foo"], &[]).with_rebalance_timeout_ms(-1);
    let r = c.classic_group_join(&v0, 0, "client", "/h", 100);
    assert_eq!(r.error_code, 0);
    assert_eq!(member(&c, "x").rebalance_timeout_ms, CLASSIC_SESSION_MS);
    // Not fenced at once by a zero sync deadline: only after the session timeout.
    c.poll(101);
    assert!(c.group(GROUP).unwrap().members.contains_key("x"));
    c.poll(100 + CLASSIC_SESSION_MS as u64);
    assert!(!c.group(GROUP).unwrap().members.contains_key("x"));
}

#[test]
fn describe_tells_classic_members_from_consumer_members() {
    let mut c = coordinator();
    consumer_and_classic_member(&mut c);
    let request = kafka_protocol::messages::ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![kafka_protocol::messages::GroupId(GROUP.into())]);
    let response = c.consumer_group_describe(&request, 100);
    let types: Vec<(String, i8)> = response.groups[0]
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.member_type))
        .collect();
    assert_eq!(types, vec![("a".to_owned(), 1), ("x".to_owned(), 0)]);
}
