//! The state table, every legal transition, Dead-group errors, DescribeGroups, ListGroups and
//! determinism.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{DescribeGroupsRequest, ListGroupsRequest};

use super::*;
use crate::group::classic::ClassicGroupState::{self, *};

#[test]
fn valid_previous_states_match_kafkas_table() {
    let all = [Empty, PreparingRebalance, CompletingRebalance, Stable, Dead];
    let legal: Vec<(ClassicGroupState, ClassicGroupState)> = all
        .iter()
        .flat_map(|&from| all.iter().map(move |&to| (from, to)))
        .filter(|&(from, to)| to.is_valid_previous(from))
        .filter(|&(_, to)| to != Dead)
        .collect();
    assert_eq!(
        legal,
        [
            (Empty, PreparingRebalance),
            (PreparingRebalance, Empty),
            (PreparingRebalance, CompletingRebalance),
            (CompletingRebalance, PreparingRebalance),
            (CompletingRebalance, Stable),
            (Stable, PreparingRebalance),
        ]
    );
    assert!(all.iter().all(|&from| Dead.is_valid_previous(from)));
    let names: Vec<&str> = all.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "Empty",
            "PreparingRebalance",
            "CompletingRebalance",
            "Stable",
            "Dead"
        ]
    );
}

/// Walks the group through every legal transition and checks each state on the way.
#[test]
fn every_legal_transition_is_reachable() {
    let mut h = Harness::new();
    let (a, join_a) = h.join_dynamic(&[("range", b"a")]);
    assert_eq!(
        h.state(),
        Some(PreparingRebalance),
        "Empty -> PreparingRebalance"
    );
    h.advance(DELAY_MS);
    let _ = h.join_response(join_a);
    assert_eq!(
        h.state(),
        Some(CompletingRebalance),
        "PreparingRebalance -> CompletingRebalance"
    );
    let rejoin = h.send_join(5, &join_request(&a, None, &[("range", b"a2")]));
    assert_eq!(
        h.state(),
        Some(CompletingRebalance),
        "a lone member completes at once"
    );
    assert_eq!(
        h.join_response(rejoin).generation_id,
        2,
        "... via CompletingRebalance -> PreparingRebalance"
    );
    let sync = h.send_sync(&a, 2, &[]);
    let _ = h.sync_response(sync);
    assert_eq!(h.state(), Some(Stable), "CompletingRebalance -> Stable");
    let (b, join_b) = h.join_dynamic(&[("range", b"b")]);
    assert_eq!(
        h.state(),
        Some(PreparingRebalance),
        "Stable -> PreparingRebalance"
    );
    let rejoin_a = h.send_join(5, &join_request(&a, None, &[("range", b"a2")]));
    let _ = (h.join_response(rejoin_a), h.join_response(join_b));
    let leave = kafka_protocol::messages::LeaveGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_members(vec![
            kafka_protocol::messages::leave_group_request::MemberIdentity::default()
                .with_member_id(sb(&a)),
            kafka_protocol::messages::leave_group_request::MemberIdentity::default()
                .with_member_id(sb(&b)),
        ]);
    let id = h.next_request_id();
    h.coordinator.leave_group(h.now_ms, id, 3, &leave);
    assert_eq!(h.state(), Some(Empty), "PreparingRebalance -> Empty");
    assert_eq!(h.generation(), Some(4));
    h.coordinator.unload(h.now_ms);
    assert_eq!(h.state(), Some(Dead), "any -> Dead");
}

#[test]
fn dead_group_errors() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let parked = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    h.coordinator.unload(h.now_ms);
    assert_eq!(
        h.join_response(parked).error_code,
        code(ResponseError::NotCoordinator),
        "parked joins are answered on unload"
    );
    let unavailable = code(ResponseError::CoordinatorNotAvailable);
    let join = h.send_join(5, &join_request(&b, None, &[("range", b"b")]));
    assert_eq!(h.join_response(join).error_code, unavailable);
    let join = h.send_join(5, &join_request("", None, &[("range", b"b")]));
    assert_eq!(h.join_response(join).error_code, unavailable);
    let sync = h.send_sync(&b, 1, &[]);
    assert_eq!(h.sync_response(sync).error_code, unavailable);
    assert_eq!(h.heartbeat(&b, 1), unavailable);
    let leave = kafka_protocol::messages::LeaveGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_members(vec![
            kafka_protocol::messages::leave_group_request::MemberIdentity::default()
                .with_member_id(sb(&b)),
        ]);
    let id = h.next_request_id();
    h.coordinator.leave_group(h.now_ms, id, 3, &leave);
    match h.take(id) {
        ClassicResponse::LeaveGroup(r) => assert_eq!(r.error_code, unavailable),
        other => panic!("unexpected {other:?}"),
    }
    h.advance(u64::from(REBALANCE_MS.unsigned_abs()) * 2);
    assert_eq!(h.state(), Some(Dead), "timers do not revive a Dead group");
}

fn describe(h: &mut Harness, groups: &[&str]) -> kafka_protocol::messages::DescribeGroupsResponse {
    let request = DescribeGroupsRequest::default()
        .with_groups(groups.iter().map(|g| GroupId(sb(g))).collect());
    let id = h.next_request_id();
    h.coordinator.describe_groups(h.now_ms, id, 5, &request);
    match h.take(id) {
        ClassicResponse::DescribeGroups(r) => r,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn describe_groups_reports_state_protocol_and_members() {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let response = describe(&mut h, &[GROUP, "missing"]);
    let stable = &response.groups[0];
    assert_eq!(stable.group_state, sb("Stable"));
    assert_eq!(stable.protocol_type, sb("consumer"));
    assert_eq!(stable.protocol_data, sb("range"));
    let mut members: Vec<(String, Vec<u8>, Vec<u8>)> = stable
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.to_string(),
                m.member_metadata.to_vec(),
                m.member_assignment.to_vec(),
            )
        })
        .collect();
    members.sort();
    let mut expected = vec![
        (a.clone(), b"a".to_vec(), b"A".to_vec()),
        (b.clone(), b"b".to_vec(), b"B".to_vec()),
    ];
    expected.sort();
    assert_eq!(members, expected);
    assert_eq!(stable.members[0].client_id, sb("client"));
    assert_eq!(response.groups[1].group_state, sb("Dead"));
    assert_eq!(response.groups[1].error_code, 0);

    let _rejoin = h.send_join(5, &join_request(&a, None, &[("range", b"a")]));
    let response = describe(&mut h, &[GROUP]);
    let preparing = &response.groups[0];
    assert_eq!(preparing.group_state, sb("PreparingRebalance"));
    assert_eq!(preparing.protocol_data, sb(""));
    assert!(preparing
        .members
        .iter()
        .all(|m| m.member_metadata.is_empty()));
}

#[test]
fn list_groups_filters_by_state_and_type() {
    let mut h = Harness::new();
    let _ = h.stable_pair();
    let list = |h: &mut Harness, request: ListGroupsRequest| {
        let id = h.next_request_id();
        h.coordinator.list_groups(h.now_ms, id, 5, &request);
        match h.take(id) {
            ClassicResponse::ListGroups(r) => r.groups,
            other => panic!("unexpected {other:?}"),
        }
    };
    let all = list(&mut h, ListGroupsRequest::default());
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].group_state, sb("Stable"));
    assert_eq!(all[0].group_type, sb("classic"));
    assert_eq!(
        list(
            &mut h,
            ListGroupsRequest::default().with_states_filter(vec![sb("STABLE")])
        )
        .len(),
        1
    );
    assert!(list(
        &mut h,
        ListGroupsRequest::default().with_states_filter(vec![sb("empty")])
    )
    .is_empty());
    assert!(list(
        &mut h,
        ListGroupsRequest::default().with_types_filter(vec![sb("consumer")])
    )
    .is_empty());
}

/// A scripted run with joins, syncs, expiries and a static replacement.
fn scripted_run() -> Vec<(u64, RequestId, ClassicResponse)> {
    let mut h = Harness::new();
    let (a, b) = h.stable_pair();
    let join = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
    h.advance(1_000);
    let _ = h.heartbeat(&a, 1);
    let _ = h.heartbeat(&b, 1);
    h.advance(REBALANCE_MS as u64);
    let _ = h.answered(join);
    let _ = h.send_join(5, &join_request("", Some("i1"), &[("range", b"s")]));
    h.advance(REBALANCE_MS as u64);
    h.log
}

#[test]
fn same_inputs_give_identical_outputs() {
    let first = scripted_run();
    assert!(first.len() >= 8, "{first:?}");
    assert_eq!(format!("{first:?}"), format!("{:?}", scripted_run()));
}
