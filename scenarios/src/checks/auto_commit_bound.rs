//! Auto-commit bound (at-least-once): *an automatic commit never covers a record the
//! application has not been given and moved past* — committed offset ≤ 1 + the last offset of
//! records returned by a `poll` that has since been followed by another `poll` (or `close`).
//!
//! KAFKA-2942 (classic, 0.9.0.1): auto-commit used fetch positions including prefetched records;
//! KAFKA-18641 (AsyncKafkaConsumer, 4.0): the network thread read `allConsumed()` at an
//! arbitrary moment, including positions the application thread had just advanced for records
//! it was still returning — a crash then lost them, since the group resumes after them.
//!
//! Judged per subject on its `Auto` commit requests (for our consumer: every `OffsetCommit` the
//! coordinator received from an application that never commits itself). A commit may also
//! repeat an offset the group already committed (a new owner's starting position) or 0.
//! Offsets count from a `PollStart` or `CloseStart` after the poll that returned them.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{CommitMode, Event, History, Tp};

#[derive(Clone, Debug, Default)]
pub struct AutoCommitBound {}

/// A commit request awaiting its outcome: its group and offsets.
type OpenCommit<'a> = (&'a str, &'a [(Tp, i64)]);

impl Checker for AutoCommitBound {
    fn name(&self) -> &'static str {
        "auto-commit-bound"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let groups = history.groups();
        // Group → tp → the highest offset a successful commit of the group stored.
        let mut committed: BTreeMap<&str, BTreeMap<Tp, i64>> = BTreeMap::new();
        // Subject → tp → next offset after records returned and then moved past.
        let mut safe: BTreeMap<&str, BTreeMap<Tp, i64>> = BTreeMap::new();
        // Subject → tp → next offset after records of the poll not yet followed by another.
        let mut returned: BTreeMap<&str, BTreeMap<Tp, i64>> = BTreeMap::new();
        // (subject, commit id) → (group, offsets), to credit the group on success.
        let mut open: BTreeMap<(&str, u64), OpenCommit<'_>> = BTreeMap::new();
        let mut out = Vec::new();
        for e in history.entries() {
            let subject = e.subject.as_str();
            let group = groups.get(subject).map_or("", String::as_str);
            match &e.event {
                Event::PollStart { .. } | Event::CloseStart { .. } => {
                    if let Some(moved_past) = returned.remove(subject) {
                        let safe = safe.entry(subject).or_default();
                        for (tp, next) in moved_past {
                            let at = safe.entry(tp).or_insert(next);
                            *at = (*at).max(next);
                        }
                    }
                }
                Event::Delivered { tp, offset, .. } => {
                    let next = returned
                        .entry(subject)
                        .or_default()
                        .entry(tp.clone())
                        .or_insert(offset + 1);
                    *next = (*next).max(offset + 1);
                }
                Event::CommitRequested {
                    id, mode, offsets, ..
                } => {
                    open.insert((subject, *id), (group, offsets.as_slice()));
                    if *mode != CommitMode::Auto {
                        continue;
                    }
                    for (tp, offset) in offsets {
                        let moved_past = safe
                            .get(subject)
                            .and_then(|s| s.get(tp))
                            .copied()
                            .unwrap_or(0);
                        let stored = committed
                            .get(group)
                            .and_then(|c| c.get(tp))
                            .copied()
                            .unwrap_or(0);
                        if *offset > moved_past.max(stored) {
                            out.push(
                                Violation::new(
                                    ViolationKind::LostWrite,
                                    e.at_ms,
                                    format!(
                                        "{subject} auto-committed {tp} at offset {offset}, but \
                                         the application had only moved past offset \
                                         {moved_past} (and the group had stored {stored}): \
                                         records it had not finished would be skipped after a \
                                         crash (KAFKA-18641)"
                                    ),
                                )
                                .subject(subject)
                                .tp(tp)
                                .offset(*offset),
                            );
                        }
                    }
                }
                Event::CommitCompleted { id, error: None } => {
                    if let Some((group, offsets)) = open.remove(&(subject, *id)) {
                        let stored = committed.entry(group).or_default();
                        for (tp, offset) in offsets {
                            let at = stored.entry(tp.clone()).or_insert(*offset);
                            *at = (*at).max(*offset);
                        }
                    }
                }
                Event::CommitCompleted { id, .. } => {
                    open.remove(&(subject, *id));
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> Tp {
        Tp::new("t", 0)
    }

    fn deliver(offset: i64) -> Event {
        Event::Delivered {
            tp: tp(),
            offset,
            value: format!("t-0-{offset}"),
        }
    }

    fn poll() -> Event {
        Event::PollStart { timeout_ms: 100 }
    }

    fn auto(id: u64, offset: i64) -> Event {
        Event::CommitRequested {
            id,
            mode: CommitMode::Auto,
            generation: Some(1),
            offsets: vec![(tp(), offset)],
        }
    }

    fn check(events: Vec<(u64, &'static str, Event)>) -> Vec<Violation> {
        AutoCommitBound::default().violations(&History::from_events(events))
    }

    #[test]
    fn committing_records_still_being_processed_breaks_it() {
        let v = check(vec![
            (0, "c0", poll()),
            (5, "c0", deliver(0)),
            (5, "c0", deliver(1)),
            (10, "c0", poll()),
            (15, "c0", deliver(2)),
            (15, "c0", deliver(3)),
            // The poll that returned 2 and 3 has not been followed by another yet.
            (20, "c0", auto(7, 4)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].offset, Some(4));
        assert!(v[0].explanation.contains("moved past offset 2"), "{}", v[0]);
    }

    #[test]
    fn commits_up_to_the_last_finished_poll_or_the_groups_offset_pass() {
        assert!(check(vec![
            (0, "c0", poll()),
            (5, "c0", deliver(0)),
            (5, "c0", deliver(1)),
            (10, "c0", poll()),
            (15, "c0", deliver(2)),
            (20, "c0", auto(7, 2)),
            (30, "c0", Event::CommitCompleted { id: 7, error: None }),
            (40, "c0", Event::CloseStart { timeout_ms: 100 }),
            (45, "c0", auto(8, 3)),
            // A new owner starts where the group committed.
            (50, "c1", auto(1, 2)),
            (55, "c1", auto(2, 0)),
        ])
        .is_empty());
    }
}
