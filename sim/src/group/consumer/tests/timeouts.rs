//! Session and rebalance timeouts on the fake clock.

use super::harness::*;
use crate::group::consumer::MemberState;

#[test]
fn session_timeout_fences_a_silent_member() {
    let mut c = coordinator();
    send(&mut c, &join("a", &["foo"]), 0);
    send(&mut c, &join("b", &["foo"]), 1_000);
    assert_eq!(c.next_deadline_ms(), Some(45_000));
    c.poll(44_999);
    assert!(c.group(GROUP).unwrap().members.contains_key("a"));
    assert!(c.take_expelled().is_empty());
    c.poll(45_000);
    let group = c.group(GROUP).unwrap();
    assert!(!group.members.contains_key("a"));
    assert_eq!(group.group_epoch, 3);
    let expelled = c.take_expelled();
    assert_eq!(expelled.len(), 1, "{expelled:?}");
    assert_eq!(
        (expelled[0].member_id.as_str(), expelled[0].reason),
        ("a", "session expired")
    );
    assert!(c.take_expelled().is_empty(), "drained");
    // b then gets everything once it heartbeats.
    let r = send(&mut c, &heartbeat("b", 2, &parts(&[])), 2_000);
    assert_eq!(r.member_epoch, 3);
    assert_eq!(
        assignment_of(&r),
        Some(parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]))
    );
}

#[test]
fn heartbeats_keep_the_session_alive() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);
    for t in (40_000..=200_000).step_by(40_000) {
        let r = send(&mut c, &heartbeat("a", 1, &all), t);
        assert_eq!(r.error_code, 0, "at {t}");
    }
}

#[test]
fn rebalance_timeout_fences_a_member_that_never_revokes() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);
    send(&mut c, &join("b", &["foo"]), 1);
    send(&mut c, &heartbeat("a", 1, &all), 10);
    assert_eq!(
        c.group(GROUP).unwrap().members["a"].state,
        MemberState::UnrevokedPartitions
    );
    // Keep a's session alive while it refuses to revoke.
    send(&mut c, &heartbeat("a", 1, &all), 20_000);
    send(&mut c, &heartbeat("b", 2, &parts(&[])), 20_000);
    c.poll(10 + REBALANCE_TIMEOUT_MS as u64 - 1);
    assert!(c.group(GROUP).unwrap().members.contains_key("a"));
    c.poll(10 + REBALANCE_TIMEOUT_MS as u64);
    assert!(!c.group(GROUP).unwrap().members.contains_key("a"));
    let expelled = c.take_expelled();
    assert_eq!(expelled.len(), 1, "{expelled:?}");
    assert_eq!(
        (expelled[0].member_id.as_str(), expelled[0].reason),
        ("a", "did not revoke in time")
    );
}

#[test]
fn rebalance_timeout_is_cancelled_once_revoked() {
    let mut c = coordinator();
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 0);
    send(&mut c, &join("b", &["foo"]), 1);
    send(&mut c, &heartbeat("a", 1, &all), 10);
    let a_target = c.group(GROUP).unwrap().target_assignment["a"].clone();
    send(&mut c, &heartbeat("a", 1, &a_target), 20);
    send(&mut c, &heartbeat("a", 2, &a_target), 25_000);
    send(&mut c, &heartbeat("b", 2, &parts(&[])), 25_000);
    c.poll(40_000);
    assert!(c.group(GROUP).unwrap().members.contains_key("a"));
}
