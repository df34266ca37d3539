//! The checkers together: a clean two-member run passes all of them; a broken one is reported
//! with the earliest violation first.

use super::testkit::*;
use super::*;
use crate::history::{CallbackKind::*, Event, History};

/// Two members of group `g`; c0 owns both partitions, commits, then hands t-1 to c1
/// cooperatively; faults heal; everything is consumed and committed.
fn clean_run() -> Vec<(u64, &'static str, Event)> {
    let mut h = vec![
        (0, "c0", start()),
        (
            0,
            "c0",
            Event::Subscribe {
                topics: vec!["t".into()],
            },
        ),
        (1, "producer", acked(0, 0)),
        (1, "producer", acked(1, 0)),
        (2, "producer", acked(0, 1)),
        (2, "producer", acked(1, 1)),
        (10, "c0", Event::PollStart { timeout_ms: 100 }),
        (12, "c0", assigned(1, &[0, 1])),
        (13, "c0", cb_start(Assigned, &[0, 1])),
        (14, "c0", cb_end(Assigned, &[0, 1])),
        (20, "c0", delivered(0, 0)),
        (20, "c0", delivered(1, 0)),
        (
            20,
            "c0",
            Event::PollEnd {
                records: 2,
                error: None,
            },
        ),
        (21, "c0", commit(1, 0, 1)),
        (22, "c0", commit_ok(1)),
        (30, "c1", start()),
        (
            30,
            "c1",
            Event::Subscribe {
                topics: vec!["t".into()],
            },
        ),
        (
            31,
            "faults",
            Event::Fault {
                kind: "clog c1".into(),
            },
        ),
        (40, "c0", Event::PollStart { timeout_ms: 100 }),
        (41, "c0", cb_start(Revoked, &[1])),
        (42, "c0", cb_end(Revoked, &[1])),
        (42, "c0", revoked(1, &[1])),
        (43, "c0", assigned(2, &[])),
        (60, "faults", Event::Healed),
        (61, "c1", assigned(2, &[1])),
        (61, "c1", cb_start(Assigned, &[1])),
        (62, "c1", cb_end(Assigned, &[1])),
        // c1 starts at t-1's committed offset: none, so from 0 again (allowed re-delivery).
        (63, "c1", delivered(1, 0)),
        (63, "c1", delivered(1, 1)),
        (64, "c1", commit(1, 1, 2)),
        (65, "c1", commit_ok(1)),
        (70, "c0", delivered(0, 1)),
        (
            70,
            "c0",
            Event::PollEnd {
                records: 1,
                error: None,
            },
        ),
        (71, "c0", commit(2, 0, 2)),
        (72, "c0", commit_ok(2)),
        (80, "c0", Event::CloseStart { timeout_ms: 1000 }),
        (81, "c0", cb_start(Revoked, &[0])),
        (82, "c0", cb_end(Revoked, &[0])),
        (
            82,
            "c0",
            Event::Leave {
                reason: "close".into(),
            },
        ),
        (83, "c0", Event::CloseEnd { error: None }),
    ];
    h.push((2_000, "faults", Event::Note { text: "end".into() }));
    h
}

fn all_checkers() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows).with(Liveness {
        within_ms: 500,
        stable_for_ms: 100,
        require_committed: true,
        ..Liveness::default()
    })
}

#[test]
fn clean_run_passes_every_checker() {
    let set = all_checkers();
    assert_eq!(
        set.names(),
        vec![
            "lost-writes",
            "duplicate-deliveries",
            "inconsistent-offsets",
            "delivery-order",
            "committed-offsets-monotonic",
            "exclusive-ownership",
            "revoke-before-reassign",
            "callback-handshake",
            "blocking-bounds",
            "no-leave-in-poll",
            "liveness",
        ]
    );
    let report = set.run(&history(clean_run()));
    assert!(report.is_ok(), "{report}");
    let generation = CheckerSet::group(OwnershipMode::Generation).run(&history(clean_run()));
    assert!(generation.is_ok(), "{generation}");
}

#[test]
fn broken_run_reports_earliest_violation_first() {
    let mut h = clean_run();
    // c1 is handed t-0 (owned by c0), and a later poll of c1 overshoots.
    h.push((50, "c1", delivered(0, 5)));
    h.push((100, "c1", Event::PollStart { timeout_ms: 10 }));
    h.push((
        900,
        "c1",
        Event::PollEnd {
            records: 0,
            error: None,
        },
    ));
    let report = all_checkers().run(&history(h));
    assert!(!report.is_ok());
    let (checker, first) = report.first_violation().unwrap();
    assert_eq!(
        (checker, first.kind),
        ("delivery-order", ViolationKind::DeliveredWhileNotOwned)
    );
    assert_eq!(first.at_ms, 50);
    let kinds: Vec<ViolationKind> = report.violations().iter().map(|(_, v)| v.kind).collect();
    assert!(kinds.contains(&ViolationKind::PollOvershoot), "{report}");
    insta::assert_snapshot!("broken_run_report", report.to_string());
}

#[test]
fn weird_histories_do_not_panic() {
    let weird = History::from_events(vec![
        (5, "x", commit_ok(9)),
        (
            4,
            "x",
            Event::CallbackEnd {
                kind: Lost,
                partitions: vec![],
                error: None,
            },
        ),
        (
            3,
            "x",
            Event::PollEnd {
                records: 0,
                error: None,
            },
        ),
        (2, "x", delivered(0, i64::MAX)),
        (2, "x", delivered(0, i64::MIN)),
        (
            1,
            "x",
            Event::Seek {
                tp: tp(0),
                offset: i64::MAX,
            },
        ),
        (1, "x", Event::CloseEnd { error: None }),
        (
            0,
            "x",
            Event::PollStart {
                timeout_ms: u64::MAX,
            },
        ),
        (0, "y", revoked(i32::MIN, &[0])),
        (0, "y", acked(0, -1)),
        (
            u64::MAX,
            "z",
            Event::CloseStart {
                timeout_ms: u64::MAX,
            },
        ),
    ]);
    let report = all_checkers().run(&weird);
    let _ = report.to_string();
    assert!(all_checkers().run(&History::default()).is_ok());
}
