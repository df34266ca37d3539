//! `poll(d)` and `close(d)` return within their timeout.
//!
//! A blocking call's timeout is a promise to the application thread. KAFKA-13310: `poll(d)`
//! stayed inside a synchronous auto-commit retry loop for up to `max.poll.interval.ms`;
//! KAFKA-16243 family: the new consumer's blocking was not bounded by `maximumTimeToWait`;
//! KAFKA-19357: `close(t)` hung on a commitAsync that could never complete without a
//! coordinator. The allowed time is the timeout plus the time user rebalance callbacks ran
//! inside the call (the consumer cannot interrupt them) plus a tolerance.

use std::collections::BTreeMap;

use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History};

#[derive(Clone, Debug)]
pub struct BlockingBounds {
    /// Slack on top of the timeout (scheduling, one in-flight round trip).
    pub tolerance_ms: u64,
    /// Also bound `close(d)`.
    pub check_close: bool,
}

impl Default for BlockingBounds {
    fn default() -> Self {
        Self {
            tolerance_ms: 50,
            check_close: true,
        }
    }
}

/// An open blocking call.
#[derive(Clone, Debug)]
struct Open {
    start_ms: u64,
    timeout_ms: u64,
    callbacks_ms: u64,
    callback_since: Option<u64>,
}

impl BlockingBounds {
    fn violation(
        &self,
        subject: &str,
        call: &str,
        open: &Open,
        ended: Option<u64>,
    ) -> Option<Violation> {
        let allowed = open
            .timeout_ms
            .saturating_add(open.callbacks_ms)
            .saturating_add(self.tolerance_ms);
        let deadline = open.start_ms.saturating_add(allowed);
        let took = match ended {
            Some(end) if end > deadline => format!("returned at {end}ms"),
            Some(_) => return None,
            None => "had not returned when the history ended".to_string(),
        };
        let kind = if call == "poll" {
            ViolationKind::PollOvershoot
        } else {
            ViolationKind::CloseOvershoot
        };
        let cite = if call == "poll" {
            "KAFKA-13310, KAFKA-16243"
        } else {
            "KAFKA-19357"
        };
        Some(
            Violation::new(
                kind,
                deadline,
                format!(
                    "{subject}'s {call}(timeout={}ms) started at {}ms {took}: expected it back by \
                     {deadline}ms (timeout + {}ms in rebalance callbacks + {}ms tolerance) \
                     ({cite}).",
                    open.timeout_ms, open.start_ms, open.callbacks_ms, self.tolerance_ms
                ),
            )
            .subject(subject),
        )
    }
}

impl Checker for BlockingBounds {
    fn name(&self) -> &'static str {
        "blocking-bounds"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        // (subject, "poll" | "close") → open call.
        let mut open: BTreeMap<(&str, &str), Open> = BTreeMap::new();
        let end_ms = history.end_ms();
        for e in history.entries() {
            let subject = e.subject.as_str();
            let started = |timeout_ms: u64| Open {
                start_ms: e.at_ms,
                timeout_ms,
                callbacks_ms: 0,
                callback_since: None,
            };
            match &e.event {
                Event::PollStart { timeout_ms } => {
                    open.insert((subject, "poll"), started(*timeout_ms));
                }
                Event::CloseStart { timeout_ms } if self.check_close => {
                    open.insert((subject, "close"), started(*timeout_ms));
                }
                Event::PollEnd { .. } => {
                    if let Some(o) = open.remove(&(subject, "poll")) {
                        out.extend(self.violation(subject, "poll", &o, Some(e.at_ms)));
                    }
                }
                Event::CloseEnd { .. } => {
                    if let Some(o) = open.remove(&(subject, "close")) {
                        out.extend(self.violation(subject, "close", &o, Some(e.at_ms)));
                    }
                }
                Event::CallbackStart { .. } => {
                    for ((s, _), o) in open.iter_mut() {
                        if *s == subject {
                            o.callback_since = Some(e.at_ms);
                        }
                    }
                }
                Event::CallbackEnd { .. } => {
                    for ((s, _), o) in open.iter_mut() {
                        if *s == subject {
                            if let Some(since) = o.callback_since.take() {
                                let ran = e.at_ms.saturating_sub(since);
                                o.callbacks_ms = o.callbacks_ms.saturating_add(ran);
                            }
                        }
                    }
                }
                Event::MemberStart { .. } | Event::MemberCrash | Event::MemberRestart => {
                    open.retain(|(s, _), _| *s != subject);
                }
                _ => {}
            }
        }
        for ((subject, call), mut o) in open {
            // A callback still running at the end counts until the end.
            if let Some(since) = o.callback_since.take() {
                o.callbacks_ms = o.callbacks_ms.saturating_add(end_ms.saturating_sub(since));
            }
            let allowed_end = o
                .start_ms
                .saturating_add(o.timeout_ms)
                .saturating_add(o.callbacks_ms)
                .saturating_add(self.tolerance_ms);
            if end_ms > allowed_end {
                out.extend(self.violation(subject, call, &o, None));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::history::CallbackKind::Revoked;

    fn poll(timeout_ms: u64) -> Event {
        Event::PollStart { timeout_ms }
    }

    fn poll_end() -> Event {
        Event::PollEnd {
            records: 0,
            error: None,
        }
    }

    #[test]
    fn poll_within_timeout_plus_callbacks_passes() {
        let h = history(vec![
            (0, "c0", poll(100)),
            (10, "c0", cb_start(Revoked, &[0])),
            (510, "c0", cb_end(Revoked, &[0])),
            (640, "c0", poll_end()),
        ]);
        let v = BlockingBounds::default().check(&h);
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn poll_overshoot() {
        let h = history(vec![(0, "c0", poll(100)), (300_000, "c0", poll_end())]);
        let v = BlockingBounds::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::PollOvershoot);
        assert_eq!(first.at_ms, 150);
        assert!(
            first.explanation.contains("returned at 300000ms"),
            "{first}"
        );
    }

    #[test]
    fn hung_close() {
        let h = history(vec![
            (0, "c0", Event::CloseStart { timeout_ms: 1000 }),
            (5000, "faults", Event::Healed),
        ]);
        let v = BlockingBounds::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::CloseOvershoot);
        assert!(v.violations[0].explanation.contains("had not returned"));
        let no_close = BlockingBounds {
            check_close: false,
            ..BlockingBounds::default()
        };
        assert!(no_close.check(&h).is_ok());
    }
}
