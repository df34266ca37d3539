//! JoinGroup: MEMBER_ID_REQUIRED, the initial delay, the join barrier, leader election,
//! protocol vote and request validation.

use kafka_protocol::error::ResponseError;

use super::*;
use crate::group::classic::ClassicGroupState;

#[test]
fn first_join_requires_member_id_then_completes_after_initial_delay() {
    let mut h = Harness::new();
    let first = h.send_join(5, &join_request("", None, &[("range", b"m")]));
    let response = h.join_response(first);
    assert_eq!(response.error_code, code(ResponseError::MemberIdRequired));
    assert!(response.member_id.starts_with("client-"));
    assert_eq!(h.state(), Some(ClassicGroupState::Empty));
    assert_eq!(h.coordinator.group_member_ids(GROUP), Vec::<String>::new());

    let member_id = response.member_id.to_string();
    let rejoin = h.send_join(5, &join_request(&member_id, None, &[("range", b"m")]));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    h.advance(DELAY_MS - 1);
    assert!(!h.answered(rejoin), "parked during the initial delay");
    h.advance(1);
    let joined = h.join_response(rejoin);
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, sb(&member_id));
    assert_eq!(joined.protocol_name, Some(sb("range")));
    assert_eq!(joined.members.len(), 1);
    assert_eq!(joined.members[0].metadata.as_ref(), b"m");
    assert_eq!(h.state(), Some(ClassicGroupState::CompletingRebalance));
}

#[test]
fn initial_delay_is_extended_when_a_member_arrives_during_it() {
    let mut h = Harness::new();
    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    h.advance(1_000);
    let (b, join_b) = h.join_dynamic(&[("range", b"b")]);
    h.advance(2_000);
    assert!(!h.answered(join_a), "extended by another delay at 3000 ms");
    h.advance(DELAY_MS - 1);
    assert!(!h.answered(join_b));
    h.advance(1);
    let (ra, rb) = (h.join_response(join_a), h.join_response(join_b));
    assert_eq!(ra.leader, sb(&a), "the first member is leader");
    assert_eq!(ra.members.len(), 2, "the leader gets the member list");
    assert!(rb.members.is_empty(), "followers get an empty list");
    assert_eq!(rb.member_id, sb(&b));
    assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
}

#[test]
fn initial_delay_extensions_are_capped_by_the_rebalance_timeout() {
    let mut h = Harness::new();
    let mut request = join_request("", None, &[("range", b"")]);
    request.rebalance_timeout_ms = 5_000;
    // v3: members join at once, no MEMBER_ID_REQUIRED round trip.
    let first = h.send_join(3, &request);
    h.advance(1_000);
    let second = h.send_join(3, &request);
    h.advance(3_000); // 4000: the first extension (2000 ms left) runs to 5000
    let third = h.send_join(3, &request);
    h.advance(999);
    assert!(!h.answered(first));
    h.advance(1);
    for id in [first, second, third] {
        assert_eq!(h.join_response(id).generation_id, 1, "completed at 5000 ms");
    }
}

#[test]
fn v3_join_is_added_immediately() {
    let mut h = Harness::new();
    let id = h.send_join(3, &join_request("", None, &[("range", b"")]));
    assert!(!h.answered(id));
    assert_eq!(h.coordinator.group_member_ids(GROUP).len(), 1);
    h.advance(DELAY_MS);
    let response = h.join_response(id);
    assert_eq!(response.error_code, 0);
    assert_eq!(
        response.protocol_type,
        Some(sb("consumer")),
        "set regardless of version; the v0-6 encoding omits it"
    );
}

#[test]
fn join_validation_errors() {
    let mut h = Harness::new();
    let mut bad_group = join_request("", None, &[("range", b"")]);
    bad_group.group_id = GroupId(sb(""));
    let id = h.send_join(5, &bad_group);
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::InvalidGroupId)
    );

    let mut bad_session = join_request("", None, &[("range", b"")]);
    bad_session.session_timeout_ms = 5_999;
    let id = h.send_join(5, &bad_session);
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::InvalidSessionTimeout)
    );
    bad_session.session_timeout_ms = 1_800_001;
    let id = h.send_join(5, &bad_session);
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::InvalidSessionTimeout)
    );
    assert_eq!(h.state(), None, "rejected before any group exists");

    let id = h.send_join(5, &join_request("ghost", None, &[("range", b"")]));
    let response = h.join_response(id);
    assert_eq!(response.error_code, code(ResponseError::UnknownMemberId));
    assert_eq!(h.state(), None, "a member id does not create a group");

    let mut no_type = join_request("", None, &[("range", b"")]);
    no_type.protocol_type = sb("");
    let id = h.send_join(5, &no_type);
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
    assert_eq!(
        h.state(),
        Some(ClassicGroupState::Empty),
        "the group was still created"
    );

    let id = h.send_join(5, &join_request("ghost", None, &[("range", b"")]));
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::UnknownMemberId),
        "known-member join to an Empty group"
    );
}

#[test]
fn protocol_type_and_protocol_mismatch_are_inconsistent() {
    let mut h = Harness::new();
    let (_a, _join) = h.join_dynamic(&[("range", b"")]);
    let id = h.send_join(5, &join_request("", None, &[("sticky", b"")]));
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
    let mut other_type = join_request("", None, &[("range", b"")]);
    other_type.protocol_type = sb("connect");
    let id = h.send_join(5, &other_type);
    assert_eq!(
        h.join_response(id).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
}

#[test]
fn protocol_is_selected_by_vote_among_common_protocols() {
    let mut h = Harness::new();
    let (_a, join_a) = h.join_dynamic(&[("range", b"1"), ("roundrobin", b"2"), ("sticky", b"x")]);
    let (_b, join_b) = h.join_dynamic(&[("roundrobin", b"3"), ("range", b"4")]);
    let (_c, join_c) = h.join_dynamic(&[("roundrobin", b"5"), ("range", b"6")]);
    h.advance(2 * DELAY_MS);
    let ra = h.join_response(join_a);
    assert_eq!(ra.protocol_name, Some(sb("roundrobin")), "two votes to one");
    let mut metadata: Vec<_> = ra.members.iter().map(|m| m.metadata.to_vec()).collect();
    metadata.sort();
    assert_eq!(metadata, [b"2".to_vec(), b"3".to_vec(), b"5".to_vec()]);
    let _ = (h.join_response(join_b), h.join_response(join_c));
}

#[test]
fn group_max_size_is_enforced() {
    let config = crate::group::classic::ClassicGroupConfig {
        group_max_size: 1,
        ..Default::default()
    };
    let mut h = Harness::with_config(config);
    let (_a, _join_a) = h.join_dynamic(&[("range", b"")]);
    let first = h.send_join(5, &join_request("", None, &[("range", b"")]));
    let b = h.join_response(first).member_id.to_string();
    let rejoin = h.send_join(5, &join_request(&b, None, &[("range", b"")]));
    let response = h.join_response(rejoin);
    assert_eq!(
        response.error_code,
        code(ResponseError::GroupMaxSizeReached)
    );
    assert_eq!(response.member_id, sb(""));
}

#[test]
fn pending_member_expires_after_its_session_timeout() {
    let mut h = Harness::new();
    let (a, _join_a) = h.join_dynamic(&[("range", b"")]);
    let first = h.send_join(5, &join_request("", None, &[("range", b"")]));
    let pending = h.join_response(first).member_id.to_string();
    assert_eq!(
        h.heartbeat(&pending, 0),
        code(ResponseError::UnknownMemberId),
        "pending members cannot heartbeat"
    );
    h.advance(SESSION_MS as u64);
    let late = h.send_join(5, &join_request(&pending, None, &[("range", b"")]));
    assert_eq!(
        h.join_response(late).error_code,
        code(ResponseError::UnknownMemberId)
    );
    assert_eq!(h.coordinator.group_member_ids(GROUP), vec![a]);
}

#[test]
fn pending_member_holds_the_barrier_until_it_joins() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    // a new member is announced (pending), then the leader rejoins.
    let first = h.send_join(5, &join_request("", None, &[("range", b"")]));
    let c = h.join_response(first).member_id.to_string();
    let join_a = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    let join_b = h.send_join(5, &join_request(&b, None, &[("range", b"b")]));
    assert!(!h.answered(join_a), "c is still pending");
    let join_c = h.send_join(5, &join_request(&c, None, &[("range", b"")]));
    for id in [join_a, join_b, join_c] {
        assert_eq!(h.join_response(id).generation_id, 2);
    }
}

#[test]
fn new_member_parked_in_join_times_out() {
    let config = crate::group::classic::ClassicGroupConfig {
        group_new_member_join_timeout_ms: 7_000,
        ..Default::default()
    };
    let mut h = Harness::with_config(config);
    let (a, _b) = h.stable_pair();
    let c = h.send_join(3, &join_request("", None, &[("range", b"")]));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    h.advance(6_999);
    assert_eq!(h.heartbeat(&a, 1), code(ResponseError::RebalanceInProgress));
    assert!(!h.answered(c));
    h.advance(1);
    let response = h.join_response(c);
    assert_eq!(response.error_code, code(ResponseError::UnknownMemberId));
    assert_eq!(response.member_id, sb(""));
}

#[test]
fn rejoin_with_same_metadata_in_completing_rebalance_returns_current_generation() {
    let mut h = Harness::new();
    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    let (b, join_b) = h.join_dynamic(&[("range", b"b")]);
    h.advance(2 * DELAY_MS);
    let _ = (h.join_response(join_a), h.join_response(join_b));
    let again_a = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    let again_b = h.send_join(5, &join_request(&b, None, &[("range", b"b")]));
    let (ra, rb) = (h.join_response(again_a), h.join_response(again_b));
    assert_eq!((ra.generation_id, ra.members.len()), (1, 2));
    assert_eq!((rb.generation_id, rb.members.len()), (1, 0));
    assert_eq!(h.state(), Some(ClassicGroupState::CompletingRebalance));

    let changed = h.send_join(5, &join_request(&b, None, &[("range", b"b2")]));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    assert!(!h.answered(changed));
}

#[test]
fn stable_follower_rejoin_is_answered_and_leader_rejoin_rebalances() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let follower = h.send_join(5, &join_request(&b, None, &[("range", b"b")]));
    let response = h.join_response(follower);
    assert_eq!(
        (response.generation_id, response.leader.to_string()),
        (1, a.clone())
    );
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));

    let leader = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    let follower = h.send_join(5, &join_request(&b, None, &[("range", b"b")]));
    assert_eq!(h.join_response(leader).generation_id, 2);
    assert_eq!(h.join_response(follower).generation_id, 2);
}

#[test]
fn member_that_does_not_rejoin_is_dropped_at_the_barrier_timeout() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let rejoin_b = h.send_join(5, &join_request(&b, None, &[("range", b"b2")]));
    // a keeps heartbeating (REBALANCE_IN_PROGRESS, session refreshed) but never rejoins.
    for _ in 0..(REBALANCE_MS / 5_000 - 1) {
        h.advance(5_000);
        assert_eq!(h.heartbeat(&a, 1), code(ResponseError::RebalanceInProgress));
        assert!(!h.answered(rejoin_b));
    }
    h.advance(5_000);
    let response = h.join_response(rejoin_b);
    assert_eq!(response.generation_id, 2);
    assert_eq!(
        response.leader,
        sb(&b),
        "the old leader did not rejoin: b leads"
    );
    assert_eq!(response.members.len(), 1);
    assert_eq!(h.coordinator.group_member_ids(GROUP), vec![b]);
    assert_eq!(h.heartbeat(&a, 1), code(ResponseError::UnknownMemberId));
}
