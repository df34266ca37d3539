//! No leave while the application is inside `poll`.
//!
//! KAFKA-16243 (and KAFKA-16026 before it): the new consumer reset its max-poll-interval timer
//! only on new `poll()` calls, so an application blocked in `poll(1h)` on an idle topic was
//! judged "not polling", left the group and rejoined in a loop. The application is polling: the
//! member must not leave. A leave inside `close` is expected and not inside `poll`.

use std::collections::BTreeMap;

use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History};

#[derive(Clone, Debug, Default)]
pub struct NoLeaveInPoll {}

impl Checker for NoLeaveInPoll {
    fn name(&self) -> &'static str {
        "no-leave-in-poll"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        self.violations_except(history, |_, _, _| false)
    }
}

impl NoLeaveInPoll {
    /// The violations, except the leaves `excused(subject, poll_start_ms, leave_ms)` accepts
    /// (a caller that knows the member's process was frozen inside that poll).
    pub fn violations_except(
        &self,
        history: &History,
        excused: impl Fn(&str, u64, u64) -> bool,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        // subject → (poll start ms, timeout).
        let mut in_poll: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for e in history.entries() {
            match &e.event {
                Event::PollStart { timeout_ms } => {
                    in_poll.insert(&e.subject, (e.at_ms, *timeout_ms));
                }
                Event::PollEnd { .. }
                | Event::MemberStart { .. }
                | Event::MemberCrash
                | Event::MemberRestart => {
                    in_poll.remove(e.subject.as_str());
                }
                Event::Leave { reason } => {
                    if let Some((start, timeout)) = in_poll.get(e.subject.as_str()) {
                        if excused(&e.subject, *start, e.at_ms) {
                            continue;
                        }
                        out.push(
                            Violation::new(
                                ViolationKind::LeaveInPoll,
                                e.at_ms,
                                format!(
                                    "{} left the group at {}ms (reason: {reason}) while its \
                                     application was inside poll(timeout={timeout}ms) since \
                                     {start}ms: a member blocked in poll is polling and must \
                                     stay (KAFKA-16243).",
                                    e.subject, e.at_ms
                                ),
                            )
                            .subject(&e.subject),
                        );
                    }
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn leave() -> Event {
        Event::Leave {
            reason: "poll-timeout".into(),
        }
    }

    #[test]
    fn leave_outside_poll_passes() {
        let h = history(vec![
            (0, "c0", Event::PollStart { timeout_ms: 100 }),
            (
                100,
                "c0",
                Event::PollEnd {
                    records: 0,
                    error: None,
                },
            ),
            (5000, "c0", leave()),
        ]);
        assert!(NoLeaveInPoll::default().check(&h).is_ok());
    }

    #[test]
    fn leave_inside_poll_fails() {
        let h = history(vec![
            (
                0,
                "c0",
                Event::PollStart {
                    timeout_ms: 3_600_000,
                },
            ),
            (5000, "c0", leave()),
        ]);
        let v = NoLeaveInPoll::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::LeaveInPoll);
        assert_eq!(first.at_ms, 5000);
        assert!(first.explanation.contains("KAFKA-16243"));
    }
}
