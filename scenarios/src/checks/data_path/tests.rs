use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, Tp};

use super::DataPathAccounting;
use crate::checks::DataEvent;

fn tp() -> Tp {
    Tp::new("t", 0)
}

fn value(incarnation: u32, o: i64) -> String {
    format!("i{incarnation}v{o}")
}

fn acked(o: i64) -> Event {
    acked_in(0, o)
}

fn acked_in(incarnation: u32, o: i64) -> Event {
    Event::ProduceAcked {
        tp: tp(),
        offset: o,
        value: value(incarnation, o),
    }
}

fn delivered(o: i64) -> Event {
    delivered_in(0, o)
}

fn delivered_in(incarnation: u32, o: i64) -> Event {
    Event::Delivered {
        tp: tp(),
        offset: o,
        value: value(incarnation, o),
    }
}

fn fact(f: DataEvent) -> Event {
    f.note()
}

fn policy(p: &str) -> Event {
    fact(DataEvent::ResetPolicy { policy: p.into() })
}

fn log_start(o: i64) -> Event {
    fact(DataEvent::LogStart {
        tp: tp(),
        offset: o,
    })
}

fn assigned() -> Event {
    Event::Assignment {
        generation: 1,
        assigned: vec![tp()],
        revoked: vec![],
        lost: vec![],
    }
}

fn revoked() -> Event {
    Event::Assignment {
        generation: 1,
        assigned: vec![],
        revoked: vec![tp()],
        lost: vec![],
    }
}

/// c0 starts in group g with `reset` and owns t-0; `acks` records acked at 0.. first.
fn prelude(reset: &str, acks: i64) -> Vec<(u64, &'static str, Event)> {
    let mut h = vec![
        (0, "c0", Event::MemberStart { group: "g".into() }),
        (0, "c0", policy(reset)),
        (
            0,
            "c0",
            Event::Subscribe {
                topics: vec!["t".into()],
            },
        ),
    ];
    for o in 0..acks {
        h.push((1, "p", acked(o)));
    }
    h.push((2, "c0", assigned()));
    h
}

fn check(h: Vec<(u64, &'static str, Event)>) -> Vec<Violation> {
    DataPathAccounting::default().violations(&History::from_events(h))
}

fn kinds(v: &[Violation]) -> Vec<ViolationKind> {
    v.iter().map(|v| v.kind).collect()
}

#[test]
fn every_record_once_in_order_passes() {
    let mut h = prelude("earliest", 4);
    for o in 0..4 {
        h.push((10 + o as u64, "c0", delivered(o)));
    }
    assert!(check(h).is_empty());
}

#[test]
fn a_record_never_delivered_is_lost() {
    let mut h = prelude("earliest", 4);
    for o in [0, 1, 3] {
        h.push((10, "c0", delivered(o)));
    }
    let v = check(h);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(2));
}

#[test]
fn delete_records_excuses_only_what_it_deleted_under_earliest() {
    // Delivered 0..2, the log start moves to 5: 2..5 are gone; earliest resumes at 5.
    let mut h = prelude("earliest", 8);
    h.push((10, "c0", delivered(0)));
    h.push((10, "c0", delivered(1)));
    h.push((20, "faults", log_start(5)));
    for o in 5..8 {
        h.push((30, "c0", delivered(o)));
    }
    assert!(check(h.clone()).is_empty());

    // Resuming at 6 loses 5, which was never deleted.
    let h: Vec<_> = h
        .into_iter()
        .filter(|(_, _, e)| *e != delivered(5))
        .collect();
    let v = check(h);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(5));
}

#[test]
fn a_latest_reset_after_delete_records_excuses_the_jump_it_made_and_no_more() {
    // Position 2, log start → 5 (out of range), latest lands at 8: 5..8 jumped, 8.. owed.
    let mut h = prelude("latest", 8);
    h.push((10, "c0", delivered(0)));
    h.push((10, "c0", delivered(1)));
    h.push((20, "faults", log_start(5)));
    for o in 8..10 {
        h.push((25, "p", acked(o)));
    }
    h.push((30, "c0", delivered(8)));
    h.push((30, "c0", delivered(9)));
    assert!(check(h.clone()).is_empty(), "{:?}", check(h));

    // The same jump under earliest is a loss of 5..8.
    let mut e = h.clone();
    e[1] = (0, "c0", policy("earliest"));
    let v = check(e);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v.iter().all(|v| v.kind == ViolationKind::LostWrite));

    // A later skip is not excused by the earlier reset.
    let mut later = h;
    later.push((40, "p", acked(10)));
    later.push((40, "p", acked(11)));
    later.push((50, "c0", delivered(11)));
    let v = check(later);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(10));
}

#[test]
fn records_held_from_before_the_deletion_do_not_use_up_the_reset() {
    // Delivered 0; 1 and 2 were fetched and held (paused); the log start moves to 5; the held
    // records are handed out, then the next fetch is out of range and latest lands at 8.
    let mut h = prelude("latest", 8);
    h.push((10, "c0", delivered(0)));
    h.push((20, "faults", log_start(5)));
    h.push((22, "c0", delivered(1)));
    h.push((22, "c0", delivered(2)));
    for o in 8..10 {
        h.push((25, "p", acked(o)));
    }
    h.push((30, "c0", delivered(8)));
    h.push((30, "c0", delivered(9)));
    assert!(check(h.clone()).is_empty(), "{:?}", check(h.clone()));

    // Under earliest the same jump loses 5..8.
    let mut e = h;
    e[1] = (0, "c0", policy("earliest"));
    let v = check(e);
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v.iter().all(|v| v.kind == ViolationKind::LostWrite));
}

#[test]
fn a_log_start_below_the_position_is_no_reason_to_reset() {
    // Position 4, log start → 2: a latest member that jumps to 6 skipped 4 and 5.
    let mut h = prelude("latest", 4);
    // Delivered from 0 (the first assignment's reset was due and found 0).
    for o in 0..4 {
        h.push((10, "c0", delivered(o)));
    }
    h.push((20, "faults", log_start(2)));
    for o in 4..7 {
        h.push((25, "p", acked(o)));
    }
    h.push((30, "c0", delivered(6)));
    let v = check(h);
    assert_eq!(
        kinds(&v),
        [ViolationKind::LostWrite, ViolationKind::LostWrite],
        "{v:?}"
    );
}

#[test]
fn an_initial_latest_reset_skips_what_was_acked_before_it() {
    let mut h = prelude("latest", 5);
    h.push((10, "c0", delivered(3)));
    h.push((10, "c0", delivered(4)));
    assert!(check(h.clone()).is_empty());
    let mut committed = prelude("latest", 5);
    // With a committed offset there is no reset: skipping to 3 loses 1 and 2.
    committed.insert(
        3,
        (
            0,
            "c0",
            Event::CommitRequested {
                id: 1,
                mode: sim::history::CommitMode::Sync,
                generation: None,
                offsets: vec![(tp(), 1)],
            },
        ),
    );
    committed.insert(4, (0, "c0", Event::CommitCompleted { id: 1, error: None }));
    committed.push((10, "c0", delivered(3)));
    committed.push((10, "c0", delivered(4)));
    let v = check(committed);
    // A commit says nothing about delivery: 0, 1 and 2 are all owed.
    assert_eq!(v.len(), 3, "{v:?}");
}

fn commit(id: u64, o: i64) -> [Event; 2] {
    [
        Event::CommitRequested {
            id,
            mode: sim::history::CommitMode::Async,
            generation: Some(1),
            offsets: vec![(tp(), o)],
        },
        Event::CommitCompleted { id, error: None },
    ]
}

#[test]
fn a_latest_member_that_commits_its_reset_position_before_delivering_excuses_the_jump() {
    // c0 resets to latest (5), auto-commits 5 without having handed anything out and gives
    // the partition to c1, which starts from the commit: 0..5 were jumped by the reset.
    let mut h = prelude("latest", 5);
    h.extend(commit(1, 5).map(|e| (10, "c0", e)));
    h.push((20, "c0", revoked()));
    h.push((25, "p", acked(5)));
    h.push((30, "c1", Event::MemberStart { group: "g".into() }));
    h.push((30, "c1", policy("latest")));
    h.push((31, "c1", assigned()));
    h.push((40, "c1", delivered(5)));
    assert!(check(h.clone()).is_empty(), "{:?}", check(h.clone()));

    // The reset landed at the commit, not beyond: a commit of 3 excuses 0..3 only.
    let mut low = prelude("latest", 5);
    low.extend(commit(1, 3).map(|e| (10, "c0", e)));
    low.push((20, "c0", revoked()));
    low.push((30, "c1", Event::MemberStart { group: "g".into() }));
    low.push((30, "c1", policy("latest")));
    low.push((31, "c1", assigned()));
    low.push((40, "c1", delivered(4)));
    let v = check(low);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(3));

    // Without the commit the reset explains nothing once c0's ownership ended: 0..5 are owed
    // by c1, which starts from no committed offset with earliest.
    let mut uncommitted = prelude("latest", 5);
    uncommitted.push((20, "c0", revoked()));
    uncommitted.push((30, "c1", Event::MemberStart { group: "g".into() }));
    uncommitted.push((30, "c1", policy("earliest")));
    uncommitted.push((31, "c1", assigned()));
    uncommitted.push((40, "c1", delivered(2)));
    let v = check(uncommitted);
    assert_eq!(v.len(), 4, "{v:?}");
}

#[test]
fn a_deleted_topic_is_not_owed_and_its_new_incarnation_is() {
    let mut h = prelude("earliest", 3);
    h.push((10, "c0", delivered(0)));
    h.push((
        20,
        "faults",
        fact(DataEvent::TopicDeleted { topic: "t".into() }),
    ));
    h.push((
        30,
        "faults",
        fact(DataEvent::TopicCreated { topic: "t".into() }),
    ));
    h.push((31, "p", acked_in(1, 0)));
    h.push((31, "p", acked_in(1, 1)));
    h.push((40, "c0", delivered_in(1, 0)));
    h.push((40, "c0", delivered_in(1, 1)));
    assert!(check(h.clone()).is_empty(), "{:?}", check(h));
    let short: Vec<_> = h
        .into_iter()
        .filter(|(_, _, e)| *e != delivered_in(1, 0))
        .collect();
    let v = check(short);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
}

#[test]
fn re_delivery_needs_a_seek_or_a_new_ownership_above_the_committed_offset() {
    let mut h = prelude("earliest", 4);
    for o in 0..4 {
        h.push((10, "c0", delivered(o)));
    }
    let mut again = h.clone();
    again.push((20, "c0", delivered(2)));
    let v = check(again);
    assert!(
        v.iter()
            .any(|v| v.kind == ViolationKind::DuplicateBeyondBound),
        "{v:?}"
    );

    let mut sought = h.clone();
    sought.push((
        20,
        "c0",
        Event::Seek {
            tp: tp(),
            offset: 2,
        },
    ));
    sought.push((21, "c0", delivered(2)));
    sought.push((21, "c0", delivered(3)));
    assert!(check(sought).is_empty());

    // Committed 2, then a rebalance: re-delivering 2 and 3 is at-least-once, 1 is not.
    let mut rebalance = h;
    rebalance.push((
        15,
        "c0",
        Event::CommitRequested {
            id: 1,
            mode: sim::history::CommitMode::Async,
            generation: None,
            offsets: vec![(tp(), 2)],
        },
    ));
    rebalance.push((16, "c0", Event::CommitCompleted { id: 1, error: None }));
    rebalance.push((20, "c0", revoked()));
    rebalance.push((21, "c0", assigned()));
    let mut ok = rebalance.clone();
    ok.push((22, "c0", delivered(2)));
    ok.push((22, "c0", delivered(3)));
    assert!(check(ok).is_empty());
    rebalance.push((22, "c0", delivered(1)));
    let v = check(rebalance);
    assert_eq!(kinds(&v), [ViolationKind::DuplicateBeyondBound], "{v:?}");
}

#[test]
fn offsets_go_back_only_after_a_seek_or_a_truncation() {
    let mut h = prelude("earliest", 4);
    for o in 0..4 {
        h.push((10, "c0", delivered(o)));
    }
    // The leader truncates to 2; new records take offsets 2 and 3.
    h.push((
        20,
        "faults",
        fact(DataEvent::Truncated {
            tp: tp(),
            end_offset: 2,
        }),
    ));
    h.push((21, "p", acked_in(7, 2)));
    h.push((21, "p", acked_in(7, 3)));
    let mut ok = h.clone();
    ok.push((30, "c0", delivered_in(7, 2)));
    ok.push((30, "c0", delivered_in(7, 3)));
    assert!(check(ok).is_empty(), "{:?}", check(h.clone()));

    // Records fetched before the truncation and handed out after it are stale reads, not a
    // reordering; the new records follow from the truncation point.
    let mut stale = h.clone();
    stale.insert(12, (15, "p", acked(4)));
    stale.push((29, "c0", delivered(4)));
    stale.push((30, "c0", delivered_in(7, 2)));
    stale.push((30, "c0", delivered_in(7, 3)));
    assert!(check(stale.clone()).is_empty(), "{:?}", check(stale));

    let mut back = h;
    back.push((30, "c0", delivered_in(7, 3)));
    back.push((30, "c0", delivered_in(7, 2)));
    let v = check(back);
    assert!(
        v.iter()
            .any(|v| v.kind == ViolationKind::NonMonotonicDelivery),
        "{v:?}"
    );
}

#[test]
fn a_record_nobody_acked_there_is_inconsistent() {
    let mut h = prelude("earliest", 1);
    h.push((10, "c0", delivered(0)));
    h.push((
        11,
        "c0",
        Event::Delivered {
            tp: tp(),
            offset: 1,
            value: "aborted".into(),
        },
    ));
    let v = check(h);
    assert_eq!(kinds(&v), [ViolationKind::InconsistentOffset], "{v:?}");
}

#[test]
fn reset_none_must_keep_the_position() {
    let mut h = prelude("none", 4);
    h.push((10, "c0", delivered(0)));
    h.push((10, "c0", delivered(1)));
    h.push((20, "faults", log_start(3)));
    let error = |position| {
        fact(DataEvent::PositionAfterError {
            tp: tp(),
            error: "OFFSET_OUT_OF_RANGE".into(),
            error_offset: 2,
            position,
        })
    };
    let mut kept = h.clone();
    kept.push((30, "c0", error(2)));
    kept.push((
        31,
        "c0",
        Event::Seek {
            tp: tp(),
            offset: 3,
        },
    ));
    kept.push((32, "c0", delivered(3)));
    assert!(check(kept).is_empty());
    let mut thrown = h;
    thrown.push((30, "c0", error(3)));
    thrown.push((32, "c0", delivered(3)));
    let v = check(thrown);
    assert_eq!(kinds(&v), [ViolationKind::PositionNotKept], "{v:?}");
}

#[test]
fn a_commit_of_the_deleted_topic_does_not_carry_over_to_the_new_one() {
    // A commit asked before the deletion completes after it: the re-created topic still has
    // no committed offset, so a latest member's reset is due at its assignment.
    let mut h = prelude("latest", 3);
    h.push((10, "c0", delivered(0)));
    h.push((
        11,
        "c0",
        Event::CommitRequested {
            id: 1,
            mode: sim::history::CommitMode::Async,
            generation: None,
            offsets: vec![(tp(), 1)],
        },
    ));
    h.push((
        20,
        "faults",
        fact(DataEvent::TopicDeleted { topic: "t".into() }),
    ));
    h.push((21, "c0", Event::CommitCompleted { id: 1, error: None }));
    h.push((22, "c0", revoked()));
    h.push((
        30,
        "faults",
        fact(DataEvent::TopicCreated { topic: "t".into() }),
    ));
    for o in 0..3 {
        h.push((31, "p", acked_in(1, o)));
    }
    h.push((40, "c0", assigned()));
    h.push((41, "c0", delivered_in(1, 2)));
    assert!(check(h).is_empty());
}

fn isolation(level: &str) -> Event {
    fact(DataEvent::Isolation {
        level: level.into(),
    })
}

fn txn_written(o: i64) -> Event {
    fact(DataEvent::TxnWritten {
        tp: tp(),
        offset: o,
        value: value(0, o),
    })
}

/// c0 reads with `level`: offset 0 is plain, a transaction writes 1 and 2 (its marker takes 3)
/// and commits at 20ms, another writes 4 (marker at 5) and aborts; plain 6 after.
fn transactions(level: &str) -> Vec<(u64, &'static str, Event)> {
    let mut h = prelude("earliest", 1);
    h.insert(1, (0, "c0", isolation(level)));
    h.push((5, "tx", txn_written(1)));
    h.push((5, "tx", txn_written(2)));
    h.push((20, "tx", acked(1)));
    h.push((20, "tx", acked(2)));
    h.push((25, "tx", txn_written(4)));
    h.push((30, "p", acked(6)));
    h
}

#[test]
fn read_committed_owes_the_committed_records_and_never_the_aborted_ones() {
    let mut h = transactions("read_committed");
    for o in [0, 1, 2, 6] {
        h.push((40, "c0", delivered(o)));
    }
    assert_eq!(check(h), []);

    let mut missing = transactions("read_committed");
    for o in [0, 1, 6] {
        missing.push((40, "c0", delivered(o)));
    }
    let v = check(missing);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(2));
}

#[test]
fn read_committed_must_not_be_handed_an_aborted_or_open_record() {
    let mut aborted = transactions("read_committed");
    for o in [0, 1, 2, 4, 6] {
        aborted.push((40, "c0", delivered(o)));
    }
    let v = check(aborted);
    assert_eq!(kinds(&v), [ViolationKind::UncommittedDelivered], "{v:?}");
    assert_eq!(v[0].offset, Some(4));

    // Offset 1 handed out at 10ms, before its transaction committed at 20ms.
    let mut early = transactions("read_committed");
    early.insert(
        early
            .iter()
            .position(|(at, _, _)| *at == 20)
            .expect("the commit"),
        (10, "c0", delivered(0)),
    );
    early.insert(
        early
            .iter()
            .position(|(at, _, _)| *at == 20)
            .expect("the commit"),
        (10, "c0", delivered(1)),
    );
    for o in [2, 6] {
        early.push((40, "c0", delivered(o)));
    }
    let v = check(early);
    assert_eq!(kinds(&v), [ViolationKind::UncommittedDelivered], "{v:?}");
    assert_eq!(v[0].offset, Some(1));
}

#[test]
fn read_uncommitted_owes_every_data_record_aborted_ones_too() {
    let mut h = transactions("read_uncommitted");
    for o in [0, 1, 2, 4, 6] {
        h.push((40, "c0", delivered(o)));
    }
    assert_eq!(check(h), []);

    let mut missing = transactions("read_uncommitted");
    for o in [0, 1, 2, 6] {
        missing.push((40, "c0", delivered(o)));
    }
    let v = check(missing);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(4));

    // Out of order is out of order, committed or not.
    let mut reordered = transactions("read_uncommitted");
    for o in [0, 1, 4, 2, 6] {
        reordered.push((40, "c0", delivered(o)));
    }
    let v = check(reordered);
    assert_eq!(kinds(&v), [ViolationKind::NonMonotonicDelivery], "{v:?}");
}

#[test]
fn a_latest_reset_still_due_at_close_excuses_only_what_was_acked_before() {
    // Assigned with no committed offset under `latest`, revoked before handing anything out:
    // 0..3 were acked before the close and nobody is owed them; 3 comes after and is.
    let mut h = prelude("latest", 3);
    h.push((5, "c0", revoked()));
    h.push((6, "p", acked(3)));
    let v = check(h);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(3));

    // With the group's commit above where the reset starts, the next owner starts there:
    // what was acked from the commit on stays owed.
    let mut committed = prelude("latest", 3);
    committed.extend(commit(1, 2).map(|ev| (4, "c0", ev)));
    committed.push((5, "c0", revoked()));
    let v = check(committed);
    assert_eq!(kinds(&v), [ViolationKind::LostWrite], "{v:?}");
    assert_eq!(v[0].offset, Some(2));

    // Under `earliest` nothing is due: all three are owed.
    let mut earliest = prelude("earliest", 3);
    earliest.push((5, "c0", revoked()));
    assert_eq!(check(earliest).len(), 3);
}
