//! LeaveGroup: by member id, by instance id, batches with per-member errors, v0–2 shape.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use super::*;
use crate::group::classic::ClassicGroupState;

fn leave(h: &mut Harness, version: i16, request: &LeaveGroupRequest) -> LeaveGroupResponse {
    let id = h.next_request_id();
    h.coordinator.leave_group(h.now_ms, id, version, request);
    match h.take(id) {
        ClassicResponse::LeaveGroup(r) => r,
        other => panic!("expected LeaveGroup, got {other:?}"),
    }
}

fn identity(member_id: &str, instance_id: Option<&str>) -> MemberIdentity {
    MemberIdentity::default()
        .with_member_id(sb(member_id))
        .with_group_instance_id(instance_id.map(sb))
}

fn batch(members: Vec<MemberIdentity>) -> LeaveGroupRequest {
    LeaveGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_members(members)
}

#[test]
fn leave_by_member_id_rebalances_and_reports_per_member_errors() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let response = leave(
        &mut h,
        3,
        &batch(vec![identity(&b, None), identity("ghost", None)]),
    );
    assert_eq!(response.error_code, 0);
    let errors: Vec<i16> = response.members.iter().map(|m| m.error_code).collect();
    assert_eq!(errors, [0, code(ResponseError::UnknownMemberId)]);
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
    assert_eq!(h.heartbeat(&b, 1), code(ResponseError::UnknownMemberId));
    let rejoin = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    assert_eq!(h.join_response(rejoin).generation_id, 2);
}

#[test]
fn leave_by_instance_id_for_admin_removal() {
    let mut h = Harness::new();
    let join = h.send_join(5, &join_request("", Some("i1"), &[("range", b"")]));
    h.advance(DELAY_MS);
    let s = h.join_response(join).member_id.to_string();
    let sync = h.send_sync(&s, 1, &[]);
    let _ = h.sync_response(sync);

    let response = leave(
        &mut h,
        4,
        &batch(vec![
            identity("", Some("unknown")),
            identity("wrong-id", Some("i1")),
        ]),
    );
    let errors: Vec<i16> = response.members.iter().map(|m| m.error_code).collect();
    assert_eq!(
        errors,
        [
            code(ResponseError::UnknownMemberId),
            code(ResponseError::FencedInstanceId)
        ]
    );
    assert_eq!(h.state(), Some(ClassicGroupState::Stable));

    let response = leave(&mut h, 4, &batch(vec![identity("", Some("i1"))]));
    assert_eq!(response.members[0].error_code, 0);
    assert_eq!(
        h.state(),
        Some(ClassicGroupState::Empty),
        "the last member left"
    );
    assert_eq!(h.generation(), Some(2));
}

#[test]
fn leave_v0_uses_the_top_level_member_id_and_error() {
    let mut h = Harness::new();
    let (a, _b) = h.stable_pair();
    let request = LeaveGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_member_id(sb("ghost"));
    let response = leave(&mut h, 0, &request);
    assert_eq!(response.error_code, code(ResponseError::UnknownMemberId));
    assert!(response.members.is_empty());
    let response = leave(&mut h, 2, &request.with_member_id(sb(&a)));
    assert_eq!(response.error_code, 0);
    assert_eq!(h.state(), Some(ClassicGroupState::PreparingRebalance));
}

#[test]
fn leave_errors_for_unknown_group_and_pending_member_removal() {
    let mut h = Harness::new();
    let response = leave(&mut h, 3, &batch(vec![identity("m", None)]));
    assert_eq!(response.error_code, code(ResponseError::UnknownMemberId));
    let mut bad = batch(vec![]);
    bad.group_id = GroupId(sb(""));
    assert_eq!(
        leave(&mut h, 3, &bad).error_code,
        code(ResponseError::InvalidGroupId)
    );

    let (a, join_a) = h.join_dynamic(&[("range", b"")]);
    let first = h.send_join(5, &join_request("", None, &[("range", b"")]));
    let pending = h.join_response(first).member_id.to_string();
    let response = leave(&mut h, 3, &batch(vec![identity(&pending, None)]));
    assert_eq!(response.members[0].error_code, 0);
    h.advance(DELAY_MS);
    assert_eq!(h.join_response(join_a).members.len(), 1);
    assert_eq!(h.coordinator.group_member_ids(GROUP), vec![a]);
}

#[test]
fn leaving_while_parked_in_join_answers_the_join_unknown_member() {
    let mut h = Harness::new();
    let (a, join_a) = h.join_dynamic(&[("range", b"")]);
    let response = leave(&mut h, 3, &batch(vec![identity(&a, None)]));
    assert_eq!(response.members[0].error_code, 0);
    let join = h.join_response(join_a);
    assert_eq!(join.error_code, code(ResponseError::UnknownMemberId));
    // Still the initial rebalance: the delay timer completes it, to Empty.
    h.advance(DELAY_MS);
    assert_eq!(h.state(), Some(ClassicGroupState::Empty));
}
