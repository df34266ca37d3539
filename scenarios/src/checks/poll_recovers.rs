//! Poll recovers: *a `poll` that throws is followed, within a bound, by one that does not* —
//! an application that catches the exception and polls again gets a working consumer back.
//!
//! KAFKA-8104 (classic, before 2.4.0): the heartbeat thread reset the generation between the
//! join future's success and `onJoinComplete`; `onJoinComplete` threw, the join future was
//! never reset, and every later `poll` threw the same `IllegalStateException` until restart.
//!
//! Judged per subject on `PollEnd`: from a failed poll, a successful one must end within
//! `bound_ms`. A subject whose history ends (or whose application closes) before the bound is
//! not judged.

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

#[derive(Clone, Debug)]
pub struct PollRecovers {
    /// How long polls may keep failing after the first failure of a run of them.
    pub bound_ms: u64,
}

impl Checker for PollRecovers {
    fn name(&self) -> &'static str {
        "poll-recovers"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            // The first failure of the current run of failed polls, with its error, and how
            // many failed since.
            let mut failing: Option<(u64, String, u64)> = None;
            for e in history.of_subject(subject) {
                match &e.event {
                    Event::PollEnd { error: None, .. } | Event::CloseStart { .. } => {
                        failing = None;
                    }
                    Event::PollEnd {
                        error: Some(err), ..
                    } => match failing.as_mut() {
                        Some((_, _, count)) => *count += 1,
                        None => failing = Some((e.at_ms, err.clone(), 1)),
                    },
                    _ => {}
                }
                if let Some((since, err, count)) = &failing {
                    if e.at_ms > since + self.bound_ms {
                        out.push(
                            Violation::new(
                                ViolationKind::PollKeepsFailing,
                                since + self.bound_ms,
                                format!(
                                    "{subject}'s poll has failed since {since}ms ({count} \
                                     polls, the first with `{err}`) and still fails after \
                                     {}ms: the consumer does not recover (KAFKA-8104)",
                                    self.bound_ms
                                ),
                            )
                            .subject(subject),
                        );
                        break;
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(error: Option<&str>) -> Event {
        Event::PollEnd {
            records: 0,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn polls_failing_past_the_bound_break_it_once() {
        let history = History::from_events(vec![
            (10, "c0", end(Some("IllegalStateException"))),
            (500, "c0", end(Some("IllegalStateException"))),
            (2_000, "c0", end(Some("IllegalStateException"))),
            (3_000, "c0", end(Some("IllegalStateException"))),
            (3_000, "c1", end(None)),
        ]);
        let v = PollRecovers { bound_ms: 1_000 }.violations(&history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::PollKeepsFailing);
        assert_eq!((v[0].at_ms, v[0].subject.as_deref()), (1_010, Some("c0")));
    }

    #[test]
    fn a_poll_that_succeeds_in_time_satisfies_it() {
        let history = History::from_events(vec![
            (10, "c0", end(Some("listener panicked"))),
            (900, "c0", end(None)),
            (5_000, "c0", end(Some("listener panicked"))),
            (5_500, "c0", end(None)),
            (9_000, "c0", end(None)),
        ]);
        assert!(PollRecovers { bound_ms: 1_000 }
            .violations(&history)
            .is_empty());
    }
}
