//! Coordinator rediscovery: *coordinator unknown ∧ commits pending ⇒ a FindCoordinator is
//! eventually sent* (jira-catalog §2.1: KAFKA-10793, KAFKA-13563, KAFKA-13840, KAFKA-6362,
//! KAFKA-17293).
//!
//! Judged from what any subject records: a commit that completes with a coordinator error
//! (`NOT_COORDINATOR`, `COORDINATOR_NOT_AVAILABLE`, `REQUEST_TIMED_OUT`, a disconnect) shows
//! the subject lost its coordinator; if the application keeps asking for commits after that,
//! a FindCoordinator request must leave within `bound_ms` of the later of the failure and the
//! heal — or a commit must succeed, which proves the coordinator was found some other way.

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

/// Commit errors that mean "the coordinator is gone or moved".
const COORDINATOR_ERRORS: &[&str] = &[
    "NOT_COORDINATOR",
    "COORDINATOR_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT",
    "DISCONNECTED",
];

#[derive(Clone, Debug)]
pub struct CoordinatorRediscovery {
    /// How long after the failure (or the heal, if later) the FindCoordinator may take.
    pub bound_ms: u64,
}

/// An open "coordinator lost" episode of one subject.
struct Episode {
    since_ms: u64,
    error: String,
    commits_after: u64,
}

impl Checker for CoordinatorRediscovery {
    fn name(&self) -> &'static str {
        "coordinator-rediscovery"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let healed = history.healed_at_ms().unwrap_or(0);
        let mut out = Vec::new();
        for subject in history.subjects() {
            let mut open: Option<Episode> = None;
            let mut judged = false;
            for e in history.of_subject(subject) {
                match &e.event {
                    Event::CommitCompleted {
                        error: Some(err), ..
                    } if COORDINATOR_ERRORS.contains(&err.as_str()) && open.is_none() => {
                        open = Some(Episode {
                            since_ms: e.at_ms,
                            error: err.clone(),
                            commits_after: 0,
                        });
                    }
                    Event::CommitCompleted { error: None, .. } => open = None,
                    Event::Request { api, .. } if api == "FindCoordinator" => open = None,
                    Event::CommitRequested { .. } => {
                        if let Some(ep) = open.as_mut() {
                            ep.commits_after += 1;
                        }
                    }
                    _ => {}
                }
                if let Some(ep) = &open {
                    let deadline = ep.since_ms.max(healed) + self.bound_ms;
                    if !judged && e.at_ms > deadline && ep.commits_after > 0 {
                        out.push(
                            Violation::new(
                                ViolationKind::NotCommitted,
                                deadline,
                                format!(
                                    "the coordinator was lost at {}ms ({}) and {} commit(s) \
                                     were requested since, but no FindCoordinator was sent \
                                     within {}ms (by {}ms)",
                                    ep.since_ms,
                                    ep.error,
                                    ep.commits_after,
                                    self.bound_ms,
                                    deadline
                                ),
                            )
                            .subject(subject),
                        );
                        judged = true;
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sim::history::{CommitMode, Tp};

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

    fn find() -> Event {
        Event::Request {
            api: "FindCoordinator".into(),
            correlation: 0,
            node: "broker-1".into(),
            member_id: None,
            generation: None,
        }
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        CoordinatorRediscovery { bound_ms: 1_000 }.violations(&history)
    }

    #[test]
    fn commits_failing_without_find_coordinator_break_it() {
        let v = check(vec![
            (100, done(0, Some("NOT_COORDINATOR"))),
            (200, commit(1)),
            (210, done(1, Some("COORDINATOR_NOT_AVAILABLE"))),
            (3_000, commit(2)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 1_100);
        assert_eq!(v[0].subject.as_deref(), Some("c0"));
    }

    #[test]
    fn a_find_coordinator_or_a_successful_commit_satisfies_it() {
        assert!(check(vec![
            (100, done(0, Some("DISCONNECTED"))),
            (200, commit(1)),
            (200, find()),
            (3_000, commit(2)),
        ])
        .is_empty());
        assert!(check(vec![
            (100, done(0, Some("DISCONNECTED"))),
            (200, commit(1)),
            (300, done(1, None)),
            (3_000, commit(2)),
        ])
        .is_empty());
    }

    #[test]
    fn no_pending_commits_means_nothing_to_rediscover_for() {
        assert!(check(vec![
            (100, done(0, Some("NOT_COORDINATOR"))),
            (5_000, Event::Healed)
        ])
        .is_empty());
    }
}
