//! Recorder, queries and the golden-trace rendering.

use super::*;

fn tp(p: i32) -> Tp {
    Tp::new("orders", p)
}

/// One of every event, in the order a small run would produce them.
fn every_event(rec: &Recorder) {
    let c0 = rec.subject("c0");
    let faults = rec.subject("faults");
    let producer = rec.subject("producer");
    c0.record(0, Event::MemberStart { group: "g1".into() });
    c0.record(
        0,
        Event::Subscribe {
            topics: vec!["orders".into()],
        },
    );
    c0.record(1, Event::PollStart { timeout_ms: 1000 });
    c0.record(
        2,
        Event::Request {
            api: "JoinGroup".into(),
            correlation: 3,
            node: "broker-1".into(),
            member_id: None,
            generation: Some(-1),
        },
    );
    c0.record(
        9,
        Event::Response {
            api: "JoinGroup".into(),
            correlation: 3,
            node: "broker-1".into(),
            error: None,
            member_id: Some("c0-1".into()),
            generation: Some(1),
        },
    );
    c0.record(
        12,
        Event::Assignment {
            generation: 1,
            assigned: vec![tp(0), tp(1)],
            revoked: vec![],
            lost: vec![],
        },
    );
    c0.record(
        12,
        Event::CallbackNeeded {
            id: 1,
            kind: CallbackKind::Assigned,
            partitions: vec![tp(0), tp(1)],
        },
    );
    c0.record(
        13,
        Event::CallbackStart {
            kind: CallbackKind::Assigned,
            partitions: vec![tp(0), tp(1)],
        },
    );
    c0.record(
        14,
        Event::CallbackEnd {
            kind: CallbackKind::Assigned,
            partitions: vec![tp(0), tp(1)],
            error: None,
        },
    );
    c0.record(
        14,
        Event::CallbackCompleted {
            id: 1,
            kind: CallbackKind::Assigned,
            error: None,
        },
    );
    c0.record(
        15,
        Event::PositionReset {
            tp: tp(1),
            offset: 0,
            strategy: "earliest".into(),
        },
    );
    producer.record(
        16,
        Event::ProduceAcked {
            tp: tp(0),
            offset: 0,
            value: "a".into(),
        },
    );
    c0.record(
        20,
        Event::Delivered {
            tp: tp(0),
            offset: 0,
            value: "a".into(),
        },
    );
    c0.record(
        20,
        Event::PollEnd {
            records: 1,
            error: None,
        },
    );
    c0.record(
        21,
        Event::CommitRequested {
            id: 7,
            mode: CommitMode::Async,
            generation: Some(1),
            offsets: vec![(tp(0), 1), (tp(1), 0)],
        },
    );
    faults.record(
        22,
        Event::Fault {
            kind: "clog c0<->broker-1 both".into(),
        },
    );
    c0.record(
        30,
        Event::CommitCompleted {
            id: 7,
            error: Some("REQUEST_TIMED_OUT".into()),
        },
    );
    c0.record(
        31,
        Event::Seek {
            tp: tp(0),
            offset: 0,
        },
    );
    c0.record(
        32,
        Event::Leave {
            reason: "poll-timeout".into(),
        },
    );
    c0.record(
        33,
        Event::Assignment {
            generation: 1,
            assigned: vec![],
            revoked: vec![],
            lost: vec![tp(0), tp(1)],
        },
    );
    faults.record(40, Event::Healed);
    c0.record(41, Event::MemberCrash);
    c0.record(50, Event::MemberRestart);
    c0.record(
        51,
        Event::ManualAssign {
            partitions: vec![tp(1)],
        },
    );
    c0.record(52, Event::CloseStart { timeout_ms: 30_000 });
    c0.record(
        53,
        Event::CloseEnd {
            error: Some("timeout".into()),
        },
    );
    faults.record(
        60,
        Event::Note {
            text: "run ends".into(),
        },
    );
}

#[test]
fn golden_trace_rendering_is_stable() {
    let rec = Recorder::new();
    every_event(&rec);
    let history = rec.snapshot();
    // Deterministic: recording the same run twice renders identically.
    let again = Recorder::new();
    every_event(&again);
    assert_eq!(history.render(), again.snapshot().render());
    insta::assert_snapshot!("every_event", history.render());
}

#[test]
fn snapshot_sorts_by_time_keeping_recording_order_on_ties() {
    let rec = Recorder::new();
    let clone = rec.clone();
    rec.record(5, "b", Event::Healed);
    clone.record(
        3,
        "a",
        Event::Note {
            text: "first".into(),
        },
    );
    rec.record(5, "a", Event::Note { text: "tie".into() });
    rec.bump("rare_state");
    clone.bump("rare_state");
    rec.declare("never");
    let h = rec.snapshot();
    let order: Vec<(u64, &str)> = h
        .entries()
        .iter()
        .map(|e| (e.at_ms, e.subject.as_str()))
        .collect();
    assert_eq!(order, vec![(3, "a"), (5, "b"), (5, "a")]);
    assert_eq!(h.entries()[2].seq, 2);
    assert_eq!(h.coverage().get("rare_state"), 2);
    assert_eq!(h.coverage().get("never"), 0);
    assert_eq!(h.coverage().to_string(), "never=0\nrare_state=2\n");
    assert_eq!(h.end_ms(), 5);
    assert_eq!(h.healed_at_ms(), Some(5));
}

#[test]
fn queries_pair_commits_and_track_ownership() {
    let rec = Recorder::new();
    every_event(&rec);
    let h = rec.snapshot();

    assert_eq!(h.group_of("c0"), "g1");
    assert_eq!(h.groups().get("c0").map(String::as_str), Some("g1"));
    assert_eq!(
        h.subjects().into_iter().collect::<Vec<_>>(),
        vec!["c0", "faults", "producer"]
    );

    let deliveries = h.deliveries();
    assert_eq!(deliveries.len(), 1);
    assert_eq!(deliveries[0].group, "g1");
    assert_eq!(h.produce_acks().len(), 1);

    let commits = h.commits();
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].completed_ms, Some(30));
    assert_eq!(commits[0].error.as_deref(), Some("REQUEST_TIMED_OUT"));
    assert!(!commits[0].succeeded());
    assert!(h.committed_sequence("g1").is_empty());
    assert_eq!(h.committed_before("g1", &tp(0), u64::MAX), None);

    let periods = h.ownership_periods();
    let summary: Vec<String> = periods
        .iter()
        .map(|p| {
            format!(
                "{} {} {}..{:?} {:?}",
                p.subject, p.tp, p.start_ms, p.end_ms, p.end
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            "c0 orders-0 12..Some(33) Some(Lost)",
            "c0 orders-1 12..Some(33) Some(Lost)",
            "c0 orders-1 51..Some(53) Some(Closed)",
        ]
    );
    assert!(periods[0].managed && !periods[2].managed);
    assert_eq!(h.faults(), vec![(22, "clog c0<->broker-1 both")]);
}

#[test]
fn successful_commits_define_the_committed_offset() {
    let h = History::from_events(vec![
        (0, "c0", Event::MemberStart { group: "g".into() }),
        (
            1,
            "c0",
            Event::CommitRequested {
                id: 1,
                mode: CommitMode::Sync,
                generation: Some(1),
                offsets: vec![(tp(0), 5)],
            },
        ),
        (2, "c0", Event::CommitCompleted { id: 1, error: None }),
        (
            3,
            "c0",
            Event::CommitRequested {
                id: 2,
                mode: CommitMode::Sync,
                generation: Some(1),
                offsets: vec![(tp(0), 9)],
            },
        ),
        (4, "c0", Event::MemberCrash),
        // A completion after a crash belongs to no open request.
        (5, "c0", Event::CommitCompleted { id: 2, error: None }),
    ]);
    assert_eq!(h.committed_before("g", &tp(0), 2), None);
    assert_eq!(h.committed_before("g", &tp(0), 3), Some(5));
    assert_eq!(h.committed_before("g", &tp(0), 99), Some(5));
    assert_eq!(h.commits()[1].completed_ms, None);
}
