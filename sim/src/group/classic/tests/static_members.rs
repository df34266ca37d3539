//! Static membership (KIP-345): replacement per state, fencing, KIP-814 skipAssignment.

use kafka_protocol::error::ResponseError;

use super::*;
use crate::group::classic::ClassicGroupState;

/// A Stable generation-1 group of a dynamic member and a static one with instance "i1";
/// `static_first` decides who joined first (and so leads). Returns (static id, dynamic id).
fn stable_static_group(h: &mut Harness, static_first: bool) -> (String, String) {
    let join_static = |h: &mut Harness| {
        let id = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
        assert!(
            !h.answered(id),
            "static members join without MEMBER_ID_REQUIRED"
        );
        id
    };
    let (s_join, (d, d_join)) = if static_first {
        let s = join_static(h);
        (s, h.join_dynamic(&[("range", b"d")]))
    } else {
        let d = h.join_dynamic(&[("range", b"d")]);
        (join_static(h), d)
    };
    h.advance(2 * DELAY_MS);
    let s_response = h.join_response(s_join);
    let s = s_response.member_id.to_string();
    assert!(
        s.starts_with("i1-"),
        "static ids are prefixed by the instance id"
    );
    let _ = h.join_response(d_join);
    let leader = h.coordinator.group_leader_id(GROUP).unwrap_or_default();
    let follower = if leader == s { d.clone() } else { s.clone() };
    let sync_follower = h.send_sync(&follower, 1, &[]);
    let sync_leader = h.send_sync(&leader, 1, &[(&s, b"S"), (&d, b"D")]);
    assert_eq!(h.sync_response(sync_leader).error_code, 0);
    assert_eq!(h.sync_response(sync_follower).error_code, 0);
    (s, d)
}

#[test]
fn static_replacement_in_stable_does_not_rebalance_and_fences_the_old_id() {
    let mut h = Harness::new();
    let (old, d) = stable_static_group(&mut h, false);
    let join = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
    let response = h.join_response(join);
    assert_eq!(response.error_code, 0);
    let new = response.member_id.to_string();
    assert_ne!(new, old);
    assert_eq!(response.generation_id, 1);
    assert_eq!(response.leader, sb(&d));
    assert!(!response.skip_assignment);
    assert_eq!(h.state(), Some(ClassicGroupState::Stable), "no rebalance");
    assert_eq!(h.generation(), Some(1));

    assert_eq!(
        h.heartbeat_with(&heartbeat_request(&old, 1, Some("i1"))),
        code(ResponseError::FencedInstanceId)
    );
    assert_eq!(h.heartbeat(&old, 1), code(ResponseError::UnknownMemberId));
    assert_eq!(h.heartbeat_with(&heartbeat_request(&new, 1, Some("i1"))), 0);
    let sync = h.send_sync(&new, 1, &[]);
    assert_eq!(
        h.sync_response(sync).assignment.as_ref(),
        b"S",
        "assignment carried over"
    );
}

#[test]
fn replaced_static_leader_gets_skip_assignment_on_join_v9() {
    let mut h = Harness::new();
    let (old, _d) = stable_static_group(&mut h, true);
    assert_eq!(h.coordinator.group_leader_id(GROUP), Some(old.clone()));
    let join = h.send_join(9, &join_request("", Some("i1"), &[("range", b"s")]));
    let response = h.join_response(join);
    let new = response.member_id.to_string();
    assert!(response.skip_assignment);
    assert_eq!(response.leader, sb(&new));
    assert_eq!(response.members.len(), 2);
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));
}

#[test]
fn replaced_static_leader_before_v9_is_told_the_old_leader_id() {
    let mut h = Harness::new();
    let (old, _d) = stable_static_group(&mut h, true);
    let join = h.send_join(8, &join_request("", Some("i1"), &[("range", b"s")]));
    let response = h.join_response(join);
    assert!(!response.skip_assignment);
    assert_eq!(
        response.leader,
        sb(&old),
        "Kafka answers with the leader before replacement"
    );
    assert!(response.members.is_empty());
}

#[test]
fn static_replacement_keeping_the_selected_protocol_does_not_rebalance() {
    let mut h = Harness::new();
    let _ = stable_static_group(&mut h, false);
    // A new preference order, but "range" is still the only common protocol.
    let join = h.send_join(
        5,
        &join_request("", Some("i1"), &[("roundrobin", b""), ("range", b"s")]),
    );
    assert_eq!(h.join_response(join).error_code, 0);
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));
    let other = h.send_join(5, &join_request("", Some("i1"), &[("sticky", b"")]));
    assert_eq!(
        h.join_response(other).error_code,
        code(ResponseError::InconsistentGroupProtocol)
    );
}

#[test]
fn static_replacement_in_completing_rebalance_fences_the_parked_sync_and_rebalances() {
    let mut h = Harness::new();
    let join_d = h.join_dynamic(&[("range", b"d")]);
    let join_s = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
    h.advance(2 * DELAY_MS);
    let old = h.join_response(join_s).member_id.to_string();
    let _ = h.join_response(join_d.1);
    let old_sync = h.send_sync(&old, 1, &[]);
    assert!(!h.answered(old_sync));

    let new_join = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
    let fenced = h.sync_response(old_sync);
    assert_eq!(fenced.error_code, code(ResponseError::FencedInstanceId));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    assert!(!h.answered(new_join));
    let rejoin_d = h.send_join(5, &join_request(&join_d.0, None, &[("range", b"d")]));
    let response = h.join_response(new_join);
    assert_eq!(response.generation_id, 2);
    assert_ne!(response.member_id, sb(&old));
    assert_eq!(h.join_response(rejoin_d).generation_id, 2);
}

#[test]
fn static_replacement_while_rebalancing_fences_the_parked_join() {
    let mut h = Harness::new();
    let (old, d) = stable_static_group(&mut h, false);
    let old_join = h.send_join(5, &join_request(&old, Some("i1"), &[("range", b"s2")]));
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    assert!(!h.answered(old_join), "waiting for d");
    let new_join = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
    let fenced = h.join_response(old_join);
    assert_eq!(fenced.error_code, code(ResponseError::FencedInstanceId));
    assert_eq!(fenced.member_id, sb(&old));
    assert_eq!(
        fenced.protocol_name,
        Some(sb("")),
        "v5 cannot carry a null protocol name"
    );
    assert!(!h.answered(new_join), "still waiting for d");
    let d_join = h.send_join(5, &join_request(&d, None, &[("range", b"d")]));
    let response = h.join_response(new_join);
    assert_eq!(response.generation_id, 2);
    assert_ne!(response.member_id, sb(&old));
    assert_eq!(h.join_response(d_join).generation_id, 2);
}

#[test]
fn static_members_survive_the_join_barrier_without_rejoining() {
    let mut h = Harness::new();
    let (s, d) = stable_static_group(&mut h, false);
    let d_join = h.send_join(5, &join_request(&d, None, &[("range", b"d2")]));
    for _ in 0..(REBALANCE_MS / 5_000) {
        h.advance(5_000);
        let _ = h.heartbeat_with(&heartbeat_request(&s, 1, Some("i1")));
    }
    let response = h.join_response(d_join);
    assert_eq!(response.generation_id, 2);
    assert_eq!(response.members.len(), 2, "the static member is kept");
    let mut members = h.coordinator.group_member_ids(GROUP);
    members.sort();
    let mut expected = vec![s, d];
    expected.sort();
    assert_eq!(members, expected);
}

#[test]
fn wrong_member_id_for_a_known_instance_is_fenced_on_join() {
    let mut h = Harness::new();
    let (_s, _d) = stable_static_group(&mut h, false);
    let join = h.send_join(
        5,
        &join_request("someone-else", Some("i1"), &[("range", b"s")]),
    );
    let response = h.join_response(join);
    assert_eq!(response.error_code, code(ResponseError::FencedInstanceId));
}
