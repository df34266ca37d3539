//! Commit callback order: *when `commitSync` returns, the callbacks of every `commitAsync`
//! requested before it have run* — the contract KAFKA-10337 (classic, fixed in 3.6.0) and
//! KAFKA-16103 (AsyncKafkaConsumer, 3.8.0) restored for `commitSync` with no offsets.
//!
//! Judged per subject from the application's own events: a `CommitRequested` in `Sync` mode,
//! its `CommitCompleted` (recorded when `commitSync` returned, after the callbacks that ran
//! inside it), and the `CommitCompleted` of each earlier `Async` request. A crash or restart
//! excuses the commits before it.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{CommitMode, Event, History};

#[derive(Clone, Debug, Default)]
pub struct CommitCallbacksBeforeSync {}

impl Checker for CommitCallbacksBeforeSync {
    fn name(&self) -> &'static str {
        "commit-callback-order"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            // Async commit id → requested at, for those whose callback has not run.
            let mut pending: BTreeMap<u64, u64> = BTreeMap::new();
            // Sync commit id → the async commits pending when it was requested.
            let mut barriers: BTreeMap<u64, (u64, Vec<u64>)> = BTreeMap::new();
            for e in history.of_subject(subject) {
                match &e.event {
                    Event::MemberCrash | Event::MemberRestart => {
                        pending.clear();
                        barriers.clear();
                    }
                    Event::CommitRequested {
                        id,
                        mode: CommitMode::Async,
                        ..
                    } => {
                        pending.insert(*id, e.at_ms);
                    }
                    Event::CommitRequested {
                        id,
                        mode: CommitMode::Sync,
                        ..
                    } => {
                        barriers.insert(*id, (e.at_ms, pending.keys().copied().collect()));
                    }
                    Event::CommitCompleted { id, .. } => {
                        pending.remove(id);
                        let Some((since, earlier)) = barriers.remove(id) else {
                            continue;
                        };
                        let missing: Vec<u64> = earlier
                            .into_iter()
                            .filter(|a| pending.contains_key(a))
                            .collect();
                        if let Some(first) = missing.first() {
                            out.push(
                                Violation::new(
                                    ViolationKind::CommitCallbackOrder,
                                    e.at_ms,
                                    format!(
                                        "{subject}'s commitSync#{id} (called at {since}ms) \
                                         returned at {}ms before the callback of \
                                         commitAsync#{first} (requested at {}ms) ran{}: \
                                         callbacks of earlier async commits must run before \
                                         commitSync returns (KAFKA-10337).",
                                        e.at_ms,
                                        pending[first],
                                        if missing.len() > 1 {
                                            format!(" ({} more)", missing.len() - 1)
                                        } else {
                                            String::new()
                                        }
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

    fn req(id: u64, mode: CommitMode) -> Event {
        Event::CommitRequested {
            id,
            mode,
            generation: None,
            offsets: if mode == CommitMode::Sync {
                Vec::new()
            } else {
                vec![(Tp::new("t", 0), 1)]
            },
        }
    }

    fn done(id: u64) -> Event {
        Event::CommitCompleted { id, error: None }
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        CommitCallbacksBeforeSync::default().violations(&history)
    }

    #[test]
    fn sync_returning_before_an_earlier_async_callback_breaks_it() {
        let v = check(vec![
            (10, req(0, CommitMode::Async)),
            (11, req(1, CommitMode::Sync)),
            (11, done(1)),
            (40, done(0)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::CommitCallbackOrder);
        assert_eq!(v[0].at_ms, 11);
        assert!(v[0].explanation.contains("commitAsync#0"), "{}", v[0]);
    }

    #[test]
    fn callbacks_run_inside_the_sync_commit_satisfy_it() {
        assert!(check(vec![
            (10, req(0, CommitMode::Async)),
            (11, req(1, CommitMode::Sync)),
            (40, done(0)),
            (40, done(1)),
            (50, req(2, CommitMode::Async)),
        ])
        .is_empty());
    }
}
