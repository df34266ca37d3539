//! Async commits on close: *when `close` returns, the callback of every `commitAsync` requested
//! before it has run* — with success or an error, never left hanging (KAFKA-16103: the
//! AsyncKafkaConsumer's `close` must await pending async commits and run their callbacks;
//! KAFKA-19357: without a coordinator they must fail rather than hang `close`).
//!
//! Judged per subject from the application's events: `CommitRequested` in `Async` mode before
//! `CloseStart`, and its `CommitCompleted` before `CloseEnd`. A crash excuses the commits
//! before it; a history that ends inside `close` is `BlockingBounds`' business, not this one's.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{CommitMode, Event, History};

#[derive(Clone, Debug, Default)]
pub struct AsyncCommitsBeforeClose {}

impl Checker for AsyncCommitsBeforeClose {
    fn name(&self) -> &'static str {
        "async-commits-before-close"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            // Async commit id → requested at, while its callback has not run.
            let mut pending: BTreeMap<u64, u64> = BTreeMap::new();
            // The async commits pending when close was called, and when that was.
            let mut closing: Option<(u64, Vec<u64>)> = None;
            for e in history.of_subject(subject) {
                match &e.event {
                    Event::MemberCrash | Event::MemberRestart => {
                        pending.clear();
                        closing = None;
                    }
                    Event::CommitRequested {
                        id,
                        mode: CommitMode::Async,
                        ..
                    } => {
                        pending.insert(*id, e.at_ms);
                    }
                    Event::CommitCompleted { id, .. } => {
                        pending.remove(id);
                    }
                    Event::CloseStart { .. } => {
                        closing = Some((e.at_ms, pending.keys().copied().collect()));
                    }
                    Event::CloseEnd { .. } => {
                        let Some((since, earlier)) = closing.take() else {
                            continue;
                        };
                        let missing: Vec<u64> = earlier
                            .into_iter()
                            .filter(|id| pending.contains_key(id))
                            .collect();
                        if let Some(first) = missing.first() {
                            out.push(
                                Violation::new(
                                    ViolationKind::CommitCallbackOrder,
                                    e.at_ms,
                                    format!(
                                        "{subject}'s close (called at {since}ms) returned at \
                                         {}ms before the callback of commitAsync#{first} \
                                         (requested at {}ms) ran ({} pending in all): close \
                                         must complete pending async commits, failing them if \
                                         it must (KAFKA-16103, KAFKA-19357).",
                                        e.at_ms,
                                        pending[first],
                                        missing.len()
                                    ),
                                )
                                .subject(subject),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sim::history::Tp;

    use super::*;

    fn commit(id: u64) -> Event {
        Event::CommitRequested {
            id,
            mode: CommitMode::Async,
            generation: None,
            offsets: vec![(Tp::new("t", 0), 1)],
        }
    }

    fn done(id: u64, error: Option<&str>) -> Event {
        Event::CommitCompleted {
            id,
            error: error.map(str::to_owned),
        }
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        AsyncCommitsBeforeClose::default().violations(&history)
    }

    #[test]
    fn close_returning_with_a_callback_outstanding_breaks_it() {
        let v = check(vec![
            (10, commit(0)),
            (20, commit(1)),
            (25, done(0, None)),
            (30, Event::CloseStart { timeout_ms: 5_000 }),
            (40, Event::CloseEnd { error: None }),
            (90, done(1, None)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 40);
        assert!(v[0].explanation.contains("commitAsync#1"), "{}", v[0]);
    }

    #[test]
    fn callbacks_run_inside_close_even_as_failures_satisfy_it() {
        assert!(check(vec![
            (10, commit(0)),
            (30, Event::CloseStart { timeout_ms: 5_000 }),
            (35, done(0, Some("COMMIT_FAILED"))),
            (40, Event::CloseEnd { error: None }),
        ])
        .is_empty());
        assert!(check(vec![
            (10, commit(0)),
            (20, Event::MemberCrash),
            (30, Event::CloseStart { timeout_ms: 5_000 }),
            (40, Event::CloseEnd { error: None }),
        ])
        .is_empty());
    }
}
