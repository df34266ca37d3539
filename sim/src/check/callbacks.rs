//! The rebalance-callback handshake: every callback-needed gets exactly one callback-completed,
//! and every callback that starts returns.
//!
//! KAFKA-18160: a `wakeup()` or interrupt inside `onPartitionsAssigned` skipped the
//! `ConsumerRebalanceListenerCallbackCompletedEvent`, so reconciliation never finished and the
//! partitions stayed non-fetchable until the member was fenced (classic analogue KAFKA-5611).
//! The design doc's invariant: "exactly one Completed per Needed, even on
//! panic/wakeup/interrupt/cancel". A crash excuses whatever was pending.

use std::collections::BTreeMap;

use super::{Checker, Violation, ViolationKind};
use crate::history::{CallbackKind, Event, History};

#[derive(Clone, Debug, Default)]
pub struct CallbackHandshake {
    /// A callback-needed (or a callback start) younger than this at the end of the history is
    /// not judged: the run may have ended mid-handshake.
    pub grace_ms: u64,
}

impl Checker for CallbackHandshake {
    fn name(&self) -> &'static str {
        "callback-handshake"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        // (subject, id) → (kind, at_ms, completed at).
        let mut needed: BTreeMap<(&str, u64), (CallbackKind, u64, Option<u64>)> = BTreeMap::new();
        // subject → (kind, started at).
        let mut running: BTreeMap<&str, (CallbackKind, u64)> = BTreeMap::new();
        let end_ms = history.end_ms();
        let stuck = |subject: &str, kind: CallbackKind, id: u64, at_ms: u64, why: &str| {
            Violation::new(
                ViolationKind::CallbackNotCompleted,
                at_ms,
                format!(
                    "{subject} needed callback#{id} ({kind}) at {at_ms}ms and it was never \
                     completed ({why}): reconciliation waits on it forever (KAFKA-18160)."
                ),
            )
            .subject(subject)
        };
        for e in history.entries() {
            let subject = e.subject.as_str();
            match &e.event {
                Event::CallbackNeeded { id, kind, .. } => {
                    if let Some((old_kind, at, None)) = needed.get(&(subject, *id)) {
                        let why = "its id was reused for a new request";
                        out.push(stuck(subject, *old_kind, *id, *at, why));
                    }
                    needed.insert((subject, *id), (*kind, e.at_ms, None));
                }
                Event::CallbackCompleted { id, kind, .. } => {
                    match needed.get_mut(&(subject, *id)) {
                        None => out.push(
                            Violation::new(
                                ViolationKind::CallbackCompletedUnasked,
                                e.at_ms,
                                format!(
                                    "{subject} completed callback#{id} ({kind}) at {}ms, but no \
                                 callback#{id} was needed.",
                                    e.at_ms
                                ),
                            )
                            .subject(subject),
                        ),
                        Some((_, _, Some(first))) => out.push(
                            Violation::new(
                                ViolationKind::CallbackCompletedTwice,
                                e.at_ms,
                                format!(
                                    "{subject} completed callback#{id} ({kind}) again at {}ms \
                                 (first at {first}ms): exactly one completion per request.",
                                    e.at_ms
                                ),
                            )
                            .subject(subject),
                        ),
                        Some((_, _, done)) => *done = Some(e.at_ms),
                    }
                }
                Event::CallbackStart { kind, .. } => {
                    if let Some((old, at)) = running.insert(subject, (*kind, e.at_ms)) {
                        out.push(
                            Violation::new(
                                ViolationKind::CallbackNotEnded,
                                e.at_ms,
                                format!(
                                    "{subject} started the {kind} callback at {}ms while the \
                                     {old} callback started at {at}ms had not returned.",
                                    e.at_ms
                                ),
                            )
                            .subject(subject),
                        );
                    }
                }
                Event::CallbackEnd { .. } => {
                    running.remove(subject);
                }
                Event::MemberStart { .. } | Event::MemberCrash | Event::MemberRestart => {
                    running.remove(subject);
                    needed.retain(|(s, _), _| *s != subject);
                }
                _ => {}
            }
        }
        for ((subject, id), (kind, at_ms, done)) in needed {
            if done.is_none() && end_ms.saturating_sub(at_ms) >= self.grace_ms {
                let why = format!("history ends at {end_ms}ms");
                out.push(stuck(subject, kind, id, at_ms, &why));
            }
        }
        for (subject, (kind, at_ms)) in running {
            if end_ms.saturating_sub(at_ms) >= self.grace_ms {
                out.push(
                    Violation::new(
                        ViolationKind::CallbackNotEnded,
                        at_ms,
                        format!(
                            "{subject} started the {kind} callback at {at_ms}ms and it had not \
                             returned when the history ended at {end_ms}ms."
                        ),
                    )
                    .subject(subject),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use CallbackKind::*;

    fn needed(id: u64) -> Event {
        Event::CallbackNeeded {
            id,
            kind: Assigned,
            partitions: vec![tp(0)],
        }
    }

    fn completed(id: u64) -> Event {
        Event::CallbackCompleted {
            id,
            kind: Assigned,
            error: None,
        }
    }

    #[test]
    fn complete_handshake_passes() {
        let h = history(vec![
            (1, "c0", needed(1)),
            (2, "c0", cb_start(Assigned, &[0])),
            (3, "c0", cb_end(Assigned, &[0])),
            (4, "c0", completed(1)),
            (5, "c1", needed(1)),
            (6, "c1", Event::MemberCrash),
        ]);
        let v = CallbackHandshake::default().check(&h);
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn callback_without_completion() {
        let h = history(vec![
            (1, "c0", needed(1)),
            (2, "c0", cb_start(Assigned, &[0])),
            (3, "c0", cb_end(Assigned, &[0])),
            (
                90,
                "c0",
                Event::Note {
                    text: "wakeup".into(),
                },
            ),
        ]);
        let v = CallbackHandshake::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::CallbackNotCompleted);
        assert_eq!(first.at_ms, 1);
        assert!(first.explanation.contains("KAFKA-18160"));
        let lenient = CallbackHandshake { grace_ms: 100 };
        assert!(lenient.check(&h).is_ok());
    }

    #[test]
    fn double_and_unasked_completion() {
        let h = history(vec![
            (1, "c0", needed(1)),
            (2, "c0", completed(1)),
            (3, "c0", completed(1)),
            (4, "c0", completed(2)),
        ]);
        let v = CallbackHandshake::default().check(&h);
        assert!(v.has(ViolationKind::CallbackCompletedTwice), "{v}");
        assert!(v.has(ViolationKind::CallbackCompletedUnasked), "{v}");
        assert_eq!(v.violations.len(), 2);
    }

    #[test]
    fn callback_that_never_returns() {
        let h = history(vec![
            (1, "c0", cb_start(Revoked, &[0])),
            (5, "c0", Event::Healed),
        ]);
        let v = CallbackHandshake::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::CallbackNotEnded);
    }
}
