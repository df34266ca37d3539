//! Leaving with epoch -1 and -2, static rejoin, UNRELEASED_INSTANCE_ID and FENCED_INSTANCE_ID.

use kafka_protocol::error::ResponseError;

use super::harness::*;
use crate::group::consumer::ConsumerGroupState;

#[test]
fn leave_with_minus_one_removes_the_member_and_bumps_the_epoch() {
    let mut c = coordinator();
    send(&mut c, &join("a", &["foo"]), 0);
    let r = send(&mut c, &heartbeat("a", -1, &parts(&[])), 1);
    assert_eq!(error_of(&r), 0);
    assert_eq!(r.member_epoch, -1);
    assert_eq!(r.member_id.as_deref(), Some("a"));
    let group = c.group(GROUP).unwrap();
    assert!(group.members.is_empty());
    assert_eq!(group.group_epoch, 2);
    assert_eq!(group.state(), ConsumerGroupState::Empty);
    assert_eq!(
        c.next_deadline_ms(),
        None,
        "the member's timers are cancelled"
    );

    let again = send(&mut c, &heartbeat("a", -1, &parts(&[])), 2);
    assert_eq!(error_of(&again), ResponseError::UnknownMemberId.code());
}

#[test]
fn static_member_rejoins_within_session_with_the_same_assignment() {
    let mut c = coordinator();
    send(&mut c, &with_instance(join("a1", &["foo"]), "inst-a"), 0);
    send(&mut c, &join("b", &["foo"]), 1);
    let a_target = c.group(GROUP).unwrap().target_assignment["a1"].clone();
    send(
        &mut c,
        &with_instance(heartbeat("a1", 1, &a_target), "inst-a"),
        2,
    );
    send(&mut c, &heartbeat("b", 2, &parts(&[])), 3);
    let group = c.group(GROUP).unwrap();
    assert_eq!(group.state(), ConsumerGroupState::Stable);
    let epoch_before = group.group_epoch;
    let b_before = group.members["b"].clone();

    // Temporary leave: kept, epoch -2, no bump.
    let r = send(
        &mut c,
        &with_instance(heartbeat("a1", -2, &parts(&[])), "inst-a"),
        4,
    );
    assert_eq!((error_of(&r), r.member_epoch), (0, -2));
    let group = c.group(GROUP).unwrap();
    assert_eq!(group.group_epoch, epoch_before);
    assert_eq!(group.members["a1"].member_epoch, -2);

    // The restarted instance joins with a new member id and gets the same partitions.
    let r = send(&mut c, &with_instance(join("a2", &["foo"]), "inst-a"), 5);
    assert_eq!(error_of(&r), 0);
    assert_eq!(r.member_epoch, epoch_before);
    assert_eq!(assignment_of(&r), Some(a_target));
    let group = c.group(GROUP).unwrap();
    assert_eq!(
        group.group_epoch, epoch_before,
        "no rebalance for the others"
    );
    assert!(!group.members.contains_key("a1"));
    assert_eq!(group.members["b"], b_before);
    assert_eq!(group.state(), ConsumerGroupState::Stable);
}

#[test]
fn instance_id_still_in_use_is_unreleased_and_old_member_is_fenced() {
    let mut c = coordinator();
    send(&mut c, &with_instance(join("a1", &["foo"]), "inst-a"), 0);
    let r = send(&mut c, &with_instance(join("a2", &["foo"]), "inst-a"), 1);
    assert_eq!(error_of(&r), ResponseError::UnreleasedInstanceId.code());

    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    let r = send(
        &mut c,
        &with_instance(heartbeat("a2", 1, &all), "inst-a"),
        2,
    );
    assert_eq!(error_of(&r), ResponseError::FencedInstanceId.code());
    let r = send(
        &mut c,
        &with_instance(heartbeat("a1", 1, &all), "inst-zzz"),
        3,
    );
    assert_eq!(error_of(&r), ResponseError::UnknownMemberId.code());
}

#[test]
fn static_leave_with_minus_one_removes_the_member() {
    let mut c = coordinator();
    send(&mut c, &with_instance(join("a1", &["foo"]), "inst-a"), 0);
    let r = send(
        &mut c,
        &with_instance(heartbeat("a1", -1, &parts(&[])), "inst-a"),
        1,
    );
    assert_eq!((error_of(&r), r.member_epoch), (0, -1));
    assert!(c.group(GROUP).unwrap().members.is_empty());
    let r = send(&mut c, &with_instance(join("a2", &["foo"]), "inst-a"), 2);
    assert_eq!((error_of(&r), r.member_epoch), (0, 3));
}
