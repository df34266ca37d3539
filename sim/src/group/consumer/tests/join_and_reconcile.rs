//! Joins, the revoke-then-assign handover between two members, and epoch fencing.

use kafka_protocol::error::ResponseError;

use super::harness::*;
use crate::group::consumer::{ConsumerGroupState, MemberState};

#[test]
fn first_member_gets_epoch_one_and_every_partition() {
    let mut c = coordinator();
    let r = send(&mut c, &join("a", &["foo", "bar"]), 0);
    assert_eq!(error_of(&r), 0);
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(r.member_id.as_deref(), Some("a"));
    assert_eq!(
        assignment_of(&r),
        Some(parts(&[(FOO, &[0, 1, 2, 3, 4, 5]), (BAR, &[0, 1, 2])]))
    );
    let group = c.group(GROUP).unwrap();
    assert_eq!((group.group_epoch, group.assignment_epoch), (1, 1));
    assert_eq!(group.state(), ConsumerGroupState::Stable);
}

#[test]
fn second_member_waits_for_the_first_to_revoke() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);

    // b joins: epoch 2, target splits foo 3/3, but a still owns everything.
    let rb = send(&mut c, &join("b", &["foo"]), 10);
    assert_eq!(rb.member_epoch, 2);
    assert_eq!(assignment_of(&rb), Some(parts(&[])));
    let b = &c.group(GROUP).unwrap().members["b"];
    assert_eq!(b.state, MemberState::UnreleasedPartitions);
    let b_target = c.group(GROUP).unwrap().target_assignment["b"].clone();
    let a_target = c.group(GROUP).unwrap().target_assignment["a"].clone();
    assert_eq!(a_target.values().map(|p| p.len()).sum::<usize>(), 3);

    // a heartbeats still owning all: must revoke, stays at epoch 1.
    let ra = send(&mut c, &heartbeat("a", 1, &all), 20);
    assert_eq!(ra.member_epoch, 1);
    assert_eq!(assignment_of(&ra), Some(a_target.clone()));
    assert_eq!(
        c.group(GROUP).unwrap().members["a"].state,
        MemberState::UnrevokedPartitions
    );
    assert_eq!(
        c.group(GROUP).unwrap().state(),
        ConsumerGroupState::Reconciling
    );

    // b still gets nothing while a holds the partitions.
    let rb = send(&mut c, &heartbeat("b", 2, &parts(&[])), 30);
    assert_eq!(rb.member_epoch, 2);
    assert_eq!(assignment_of(&rb), None);

    // a acknowledges the revocation: epoch 2, stable.
    let ra = send(&mut c, &heartbeat("a", 1, &a_target), 40);
    assert_eq!(ra.member_epoch, 2);
    assert_eq!(
        c.group(GROUP).unwrap().members["a"].state,
        MemberState::Stable
    );

    // b now receives the released partitions.
    let rb = send(&mut c, &heartbeat("b", 2, &parts(&[])), 50);
    assert_eq!(rb.member_epoch, 2);
    assert_eq!(assignment_of(&rb), Some(b_target));
    assert_eq!(c.group(GROUP).unwrap().state(), ConsumerGroupState::Stable);
}

#[test]
fn epoch_ahead_or_behind_is_fenced_but_a_lost_response_is_tolerated() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);

    let ahead = send(&mut c, &heartbeat("a", 5, &all), 1);
    assert_eq!(error_of(&ahead), ResponseError::FencedMemberEpoch.code());

    // Re-sending the join (epoch 0 = previous epoch, owning nothing): the response was lost.
    let tolerated = send(&mut c, &join("a", &["foo"]), 3);
    assert_eq!(error_of(&tolerated), 0);
    assert_eq!(tolerated.member_epoch, 1);

    // Move a to epoch 2 (b joins and a revokes), then epoch 1 with extra partitions is fenced.
    send(&mut c, &join("b", &["foo"]), 4);
    let a_target = c.group(GROUP).unwrap().target_assignment["a"].clone();
    send(&mut c, &heartbeat("a", 1, &all), 5);
    send(&mut c, &heartbeat("a", 1, &a_target), 6);
    assert_eq!(c.group(GROUP).unwrap().members["a"].member_epoch, 2);
    let behind = send(&mut c, &heartbeat("a", 1, &all), 7);
    assert_eq!(error_of(&behind), ResponseError::FencedMemberEpoch.code());
    let behind_ok = send(&mut c, &heartbeat("a", 1, &a_target), 8);
    assert_eq!(error_of(&behind_ok), 0);
    assert_eq!(behind_ok.member_epoch, 2);
}

#[test]
fn unknown_member_and_unknown_group() {
    let mut c = coordinator();
    let r = send(&mut c, &heartbeat("ghost", 1, &parts(&[])), 0);
    assert_eq!(error_of(&r), ResponseError::GroupIdNotFound.code());
    send(&mut c, &join("a", &["foo"]), 0);
    let r = send(&mut c, &heartbeat("ghost", 1, &parts(&[])), 1);
    assert_eq!(error_of(&r), ResponseError::UnknownMemberId.code());
    assert_eq!(r.member_id, None);
}

#[test]
fn assignment_is_only_sent_when_changed_or_on_full_requests() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);
    let r = send(&mut c, &heartbeat("a", 1, &all), 1);
    assert_eq!(assignment_of(&r), None);
    let full = heartbeat("a", 1, &all)
        .with_rebalance_timeout_ms(REBALANCE_TIMEOUT_MS)
        .with_subscribed_topic_names(join("a", &["foo"]).subscribed_topic_names);
    let r = send(&mut c, &full, 2);
    assert_eq!(assignment_of(&r), Some(all));
}
