//! SyncGroup barrier and errors, Heartbeat per state, session and pending-sync expiry.

use kafka_protocol::error::ResponseError;

use super::*;
use crate::group::classic::ClassicGroupState;

#[test]
fn followers_wait_for_the_leaders_sync_and_get_their_assignment() {
    let mut h = Harness::new();
    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    let (b, join_b) = h.join_dynamic(&[("range", b"b")]);
    let (c, join_c) = h.join_dynamic(&[("range", b"c")]);
    h.advance(2 * DELAY_MS);
    for id in [join_a, join_b, join_c] {
        assert_eq!(h.join_response(id).generation_id, 1);
    }
    let sync_b = h.send_sync(&b, 1, &[]);
    assert!(
        !h.answered(sync_b),
        "followers are parked until the leader syncs"
    );
    assert_eq!(
        h.heartbeat(&b, 1),
        0,
        "heartbeats are fine in CompletingRebalance"
    );
    let sync_a = h.send_sync(&a, 1, &[(&a, b"A"), (&b, b"B")]);
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));
    let (ra, rb) = (h.sync_response(sync_a), h.sync_response(sync_b));
    assert_eq!(ra.assignment.as_ref(), b"A");
    assert_eq!(rb.assignment.as_ref(), b"B");
    assert_eq!(rb.protocol_name, Some(sb("range")));
    assert_eq!(rb.protocol_type, Some(sb("consumer")));
    let sync_c = h.send_sync(&c, 1, &[]);
    let rc = h.sync_response(sync_c);
    assert_eq!(rc.error_code, 0);
    assert!(
        rc.assignment.is_empty(),
        "left out by the leader: empty assignment"
    );
}

#[test]
fn sync_errors_per_state() {
    let mut h = Harness::new();
    let id = h.send_sync("m", 0, &[]);
    assert_eq!(
        h.sync_response(id).error_code,
        code(ResponseError::UnknownMemberId),
        "no group"
    );

    let (a, b) = h.stable_pair();
    let id = h.send_sync(&b, 0, &[]);
    assert_eq!(
        h.sync_response(id).error_code,
        code(ResponseError::IllegalGeneration)
    );
    let id = h.send_sync("ghost", 1, &[]);
    assert_eq!(
        h.sync_response(id).error_code,
        code(ResponseError::UnknownMemberId)
    );

    let mut wrong_protocol = SyncGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_generation_id(1)
        .with_member_id(sb(&b))
        .with_protocol_name(Some(sb("roundrobin")));
    let id = h.next_request_id();
    h.coordinator.sync_group(h.now_ms, id, 5, &wrong_protocol);
    assert_eq!(
        h.sync_response(id).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
    wrong_protocol.group_id = GroupId(sb(""));
    let id = h.next_request_id();
    h.coordinator.sync_group(h.now_ms, id, 5, &wrong_protocol);
    assert_eq!(
        h.sync_response(id).error_code,
        code(ResponseError::InvalidGroupId)
    );

    let _rejoin = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    let id = h.send_sync(&b, 1, &[]);
    assert_eq!(
        h.sync_response(id).error_code,
        code(ResponseError::RebalanceInProgress)
    );
}

#[test]
fn rebalance_during_completing_fails_parked_syncs() {
    let mut h = Harness::new();
    let (_a, join_a) = h.join_dynamic(&[("range", b"a")]);
    let (b, join_b) = h.join_dynamic(&[("range", b"b")]);
    h.advance(2 * DELAY_MS);
    let _ = (h.join_response(join_a), h.join_response(join_b));
    let sync_b = h.send_sync(&b, 1, &[]);
    let _changed = h.send_join(5, &join_request(&b, None, &[("range", b"b2")]));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    let response = h.sync_response(sync_b);
    assert_eq!(
        response.error_code,
        code(ResponseError::RebalanceInProgress)
    );
    assert_eq!(response.protocol_name, None);
}

#[test]
fn heartbeat_errors_per_state() {
    let mut h = Harness::new();
    assert_eq!(
        h.heartbeat("m", 0),
        code(ResponseError::UnknownMemberId),
        "no group"
    );
    let mut empty = heartbeat_request("m", 0, None);
    empty.group_id = GroupId(sb(""));
    assert_eq!(
        h.heartbeat_with(&empty),
        code(ResponseError::InvalidGroupId)
    );

    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    assert_eq!(
        h.heartbeat(&a, 0),
        code(ResponseError::RebalanceInProgress),
        "PreparingRebalance"
    );
    h.advance(DELAY_MS);
    let _ = h.join_response(join_a);
    assert_eq!(h.heartbeat(&a, 1), 0, "CompletingRebalance");
    assert_eq!(h.heartbeat(&a, 0), code(ResponseError::IllegalGeneration));
    assert_eq!(
        h.heartbeat("ghost", 1),
        code(ResponseError::UnknownMemberId)
    );
    let sync = h.send_sync(&a, 1, &[(&a, b"x")]);
    let _ = h.sync_response(sync);
    assert_eq!(h.heartbeat(&a, 1), 0, "Stable");
    assert_eq!(h.heartbeat(&a, 2), code(ResponseError::IllegalGeneration));
    assert_eq!(
        h.heartbeat_with(&heartbeat_request(&a, 1, Some("unknown-instance"))),
        code(ResponseError::UnknownMemberId)
    );
}

#[test]
fn heartbeats_keep_a_member_alive_and_session_expiry_triggers_a_rebalance() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    h.advance(SESSION_MS as u64 / 2);
    assert_eq!(h.heartbeat(&a, 1), 0);
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));
    assert!(h.coordinator.take_expelled().is_empty());
    h.advance(SESSION_MS as u64 / 2);
    assert_eq!(
        h.state(),
        Some(ClassicGroupState::PreparingRebalance),
        "b expired"
    );
    let expelled = h.coordinator.take_expelled();
    assert_eq!(expelled.len(), 1, "{expelled:?}");
    assert_eq!(
        (expelled[0].member_id.as_str(), expelled[0].reason),
        (b.as_str(), "session expired")
    );
    assert_eq!(h.heartbeat(&a, 1), code(ResponseError::RebalanceInProgress));
    assert_eq!(h.heartbeat(&b, 1), code(ResponseError::UnknownMemberId));
    let rejoin = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    let response = h.join_response(rejoin);
    assert_eq!(
        response.generation_id, 2,
        "a is the only member: completes at once"
    );
    assert_eq!(response.members.len(), 1);
}

#[test]
fn members_that_do_not_sync_in_time_are_removed() {
    let mut h = Harness::new();
    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    let (b, join_b) = h.join_dynamic(&[("range", b"b")]);
    h.advance(2 * DELAY_MS);
    let _ = (h.join_response(join_a), h.join_response(join_b));
    let sync_a = h.send_sync(&a, 1, &[(&a, b"A"), (&b, b"B")]);
    assert_eq!(h.sync_response(sync_a).error_code, 0);
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));
    // b heartbeats (so its session is fine) but never syncs.
    for _ in 0..(REBALANCE_MS / 5_000 - 1) {
        h.advance(5_000);
        assert_eq!(h.heartbeat(&b, 1), 0);
        assert_eq!(h.heartbeat(&a, 1), 0);
    }
    h.advance(5_000);
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    assert_eq!(h.coordinator.group_member_ids(GROUP), vec![a.clone()]);
    let expelled = h.coordinator.take_expelled();
    assert_eq!(expelled.len(), 1, "{expelled:?}");
    assert_eq!(
        (expelled[0].member_id.as_str(), expelled[0].reason),
        (b.as_str(), "did not sync in time")
    );
    assert_eq!(h.heartbeat(&b, 1), code(ResponseError::UnknownMemberId));
    assert_eq!(h.heartbeat(&a, 1), code(ResponseError::RebalanceInProgress));
}

#[test]
fn when_every_session_expires_the_group_becomes_empty() {
    let mut h = Harness::new();
    let _pair = h.stable_pair();
    h.advance(SESSION_MS as u64);
    assert_eq!(h.state(), Some(ClassicGroupState::Empty));
    assert_eq!(h.generation(), Some(2), "an empty generation is formed");
    assert!(h.coordinator.group_member_ids(GROUP).is_empty());
    assert_eq!(h.coordinator.next_deadline_ms(), None, "no timers left");
}

#[test]
fn a_request_after_a_missed_poll_sees_the_expiry_first() {
    let mut h = Harness::new();
    let (a, _b) = h.stable_pair();
    // No poll: the heartbeat itself arrives after both sessions ended.
    h.now_ms += SESSION_MS as u64 + 1;
    assert_eq!(h.heartbeat(&a, 1), code(ResponseError::UnknownMemberId));
    assert_eq!(h.state(), Some(ClassicGroupState::Empty));
}
