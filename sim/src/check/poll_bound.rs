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

/// One `poll(d)` or `close(d)` call of a subject, as the history shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockingCall<'h> {
    pub subject: &'h str,
    /// `"poll"` or `"close"`.
    pub call: &'static str,
    pub start_ms: u64,
    pub timeout_ms: u64,
    /// How long the subject's rebalance callbacks ran inside the call (the consumer cannot
    /// interrupt them, so they extend what the call may take).
    pub callbacks_ms: u64,
    /// How long the member's whole process was frozen inside the call (a GC-pause fault; no
    /// consumer returns from a frozen process). Zero from [`blocking_calls`]; a checker that
    /// knows the pauses fills it in ([`BlockingBounds::violations_of`]).
    pub paused_ms: u64,
    /// When it returned; `None` when it had not by the end of the history (a callback still
    /// running then counts until the end).
    pub end_ms: Option<u64>,
}

impl BlockingCall<'_> {
    /// How long the call took beyond its timeout, its callbacks and its process's pauses (zero
    /// when it kept its promise); a call that had not returned counts until `history_end_ms`.
    pub fn overshoot_ms(&self, history_end_ms: u64) -> u64 {
        self.end_ms
            .unwrap_or(history_end_ms)
            .saturating_sub(self.start_ms)
            .saturating_sub(self.timeout_ms)
            .saturating_sub(self.callbacks_ms)
            .saturating_sub(self.paused_ms)
    }

    /// How much of `[from_ms, to_ms)` falls inside this call (up to `history_end_ms` for a
    /// call that had not returned).
    pub fn overlap_ms(&self, from_ms: u64, to_ms: u64, history_end_ms: u64) -> u64 {
        let end = self.end_ms.unwrap_or(history_end_ms);
        to_ms.min(end).saturating_sub(from_ms.max(self.start_ms))
    }
}

/// Every `poll` and `close` call in `history`, in the order they started. A call cut short by
/// its member's crash or restart is left out: it never returned to an application.
pub fn blocking_calls(history: &History) -> Vec<BlockingCall<'_>> {
    let mut done = Vec::new();
    // (subject, call) → the open call and when its running callback started.
    let mut open: BTreeMap<(&str, &'static str), (BlockingCall<'_>, Option<u64>)> = BTreeMap::new();
    for e in history.entries() {
        let subject = e.subject.as_str();
        match &e.event {
            Event::PollStart { timeout_ms } | Event::CloseStart { timeout_ms } => {
                let call = if matches!(e.event, Event::PollStart { .. }) {
                    "poll"
                } else {
                    "close"
                };
                let started = BlockingCall {
                    subject,
                    call,
                    start_ms: e.at_ms,
                    timeout_ms: *timeout_ms,
                    callbacks_ms: 0,
                    paused_ms: 0,
                    end_ms: None,
                };
                open.insert((subject, call), (started, None));
            }
            Event::PollEnd { .. } | Event::CloseEnd { .. } => {
                let call = if matches!(e.event, Event::PollEnd { .. }) {
                    "poll"
                } else {
                    "close"
                };
                if let Some((mut c, _)) = open.remove(&(subject, call)) {
                    c.end_ms = Some(e.at_ms);
                    done.push(c);
                }
            }
            Event::CallbackStart { .. } => {
                for ((s, _), (_, since)) in open.iter_mut() {
                    if *s == subject {
                        *since = Some(e.at_ms);
                    }
                }
            }
            Event::CallbackEnd { .. } => {
                for ((s, _), (c, since)) in open.iter_mut() {
                    if *s == subject {
                        if let Some(since) = since.take() {
                            c.callbacks_ms += e.at_ms.saturating_sub(since);
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
    let end_ms = history.end_ms();
    for (_, (mut c, since)) in open {
        if let Some(since) = since {
            c.callbacks_ms += end_ms.saturating_sub(since);
        }
        done.push(c);
    }
    done.sort_by_key(|c| c.start_ms);
    done
}

impl BlockingBounds {
    fn violation(&self, c: &BlockingCall<'_>, end_ms: u64) -> Option<Violation> {
        if c.overshoot_ms(end_ms) <= self.tolerance_ms {
            return None;
        }
        let deadline = c
            .start_ms
            .saturating_add(c.timeout_ms)
            .saturating_add(c.callbacks_ms)
            .saturating_add(c.paused_ms)
            .saturating_add(self.tolerance_ms);
        let took = match c.end_ms {
            Some(end) => format!("returned at {end}ms"),
            None => "had not returned when the history ended".to_string(),
        };
        let (kind, cite) = if c.call == "poll" {
            (ViolationKind::PollOvershoot, "KAFKA-13310, KAFKA-16243")
        } else {
            (ViolationKind::CloseOvershoot, "KAFKA-19357")
        };
        Some(
            Violation::new(
                kind,
                deadline,
                format!(
                    "{}'s {}(timeout={}ms) started at {}ms {took}: expected it back by \
                     {deadline}ms (timeout + {}ms in rebalance callbacks + {}ms with its \
                     process paused + {}ms tolerance) ({cite}).",
                    c.subject,
                    c.call,
                    c.timeout_ms,
                    c.start_ms,
                    c.callbacks_ms,
                    c.paused_ms,
                    self.tolerance_ms
                ),
            )
            .subject(c.subject),
        )
    }
}

impl BlockingBounds {
    /// The violations among `calls` (as [`blocking_calls`] found them, possibly with
    /// `paused_ms` filled in) of a history ending at `history_end_ms`.
    pub fn violations_of(&self, calls: &[BlockingCall<'_>], history_end_ms: u64) -> Vec<Violation> {
        calls
            .iter()
            .filter(|c| self.check_close || c.call == "poll")
            .filter_map(|c| self.violation(c, history_end_ms))
            .collect()
    }
}

impl Checker for BlockingBounds {
    fn name(&self) -> &'static str {
        "blocking-bounds"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        self.violations_of(&blocking_calls(history), history.end_ms())
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
    fn blocking_calls_measure_the_overshoot_beyond_timeout_and_callbacks() {
        let h = history(vec![
            (0, "c0", poll(100)),
            (10, "c0", cb_start(Revoked, &[0])),
            (510, "c0", cb_end(Revoked, &[0])),
            (700, "c0", poll_end()),
            (700, "c1", poll(100)),
            (750, "c1", poll_end()),
            (800, "c1", poll(100)),
            (1000, "faults", Event::Healed),
        ]);
        let calls = blocking_calls(&h);
        let overshoots: Vec<(&str, u64)> = calls
            .iter()
            .map(|c| (c.subject, c.overshoot_ms(h.end_ms())))
            .collect();
        assert_eq!(overshoots, [("c0", 100), ("c1", 0), ("c1", 100)]);
        assert_eq!(calls[0].callbacks_ms, 500);
        assert_eq!(calls[2].end_ms, None, "still open when the history ended");
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
