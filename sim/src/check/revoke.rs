//! Every partition given to the application is taken back (revoked or lost) before it is given
//! again, and before `close` returns.
//!
//! The application keeps per-partition state (open transactions, caches, offsets to commit)
//! between `onPartitionsAssigned` and `onPartitionsRevoked`/`onPartitionsLost`. KAFKA-16258: a
//! STALE member must call `onPartitionsLost` before rejoining; KAFKA-16375: a stale
//! reconciliation applied an old assignment after a rejoin; close must revoke what the member
//! holds (the close pipeline's "callbacks + leave" step). A partition assigned twice without a
//! take-back in between, or still held when `close` ends, means the application was never told
//! its state is invalid.

use std::collections::{BTreeMap, BTreeSet};

use super::{Checker, Violation, ViolationKind};
use crate::history::{CallbackKind, Event, History, Tp};

#[derive(Clone, Debug, Default)]
pub struct RevokeBeforeReassign {}

impl Checker for RevokeBeforeReassign {
    fn name(&self) -> &'static str {
        "revoke-before-reassign"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        // subject → tp → when the application was given it.
        let mut held: BTreeMap<&str, BTreeMap<Tp, u64>> = BTreeMap::new();
        for e in history.entries() {
            match &e.event {
                Event::CallbackStart {
                    kind: CallbackKind::Assigned,
                    partitions,
                } => {
                    let mine = held.entry(&e.subject).or_default();
                    for tp in partitions {
                        if let Some(since) = mine.get(tp) {
                            out.push(
                                Violation::new(
                                    ViolationKind::AssignedAgainWithoutRevoke,
                                    e.at_ms,
                                    format!(
                                        "{}'s application was given {tp} again at {}ms, but had \
                                         held it since {since}ms with no onPartitionsRevoked or \
                                         onPartitionsLost in between: its state for {tp} was \
                                         never invalidated (KAFKA-16258, KAFKA-16375).",
                                        e.subject, e.at_ms
                                    ),
                                )
                                .subject(&e.subject)
                                .tp(tp),
                            );
                        }
                        mine.insert(tp.clone(), e.at_ms);
                    }
                }
                Event::CallbackStart {
                    kind: CallbackKind::Revoked | CallbackKind::Lost,
                    partitions,
                } => {
                    if let Some(mine) = held.get_mut(e.subject.as_str()) {
                        for tp in partitions {
                            mine.remove(tp);
                        }
                    }
                }
                Event::MemberStart { .. } | Event::MemberCrash | Event::MemberRestart => {
                    held.remove(e.subject.as_str());
                }
                Event::CloseEnd { .. } => {
                    let Some(mine) = held.remove(e.subject.as_str()) else {
                        continue;
                    };
                    if mine.is_empty() {
                        continue;
                    }
                    let tps: BTreeSet<String> = mine.keys().map(Tp::to_string).collect();
                    let tps: Vec<String> = tps.into_iter().collect();
                    let mut v = Violation::new(
                        ViolationKind::ClosedWithoutRevoke,
                        e.at_ms,
                        format!(
                            "{}'s close ended at {}ms while its application still held [{}]: \
                             close must call onPartitionsRevoked (or onPartitionsLost when \
                             fenced) for everything it holds.",
                            e.subject,
                            e.at_ms,
                            tps.join(",")
                        ),
                    )
                    .subject(&e.subject);
                    if let Some(tp) = mine.keys().next() {
                        v = v.tp(tp);
                    }
                    out.push(v);
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
    use CallbackKind::*;

    #[test]
    fn revoke_then_assign_then_close_passes() {
        let h = history(vec![
            (1, "c0", cb_start(Assigned, &[0, 1])),
            (5, "c0", cb_start(Revoked, &[0, 1])),
            (6, "c0", cb_start(Assigned, &[0])),
            (8, "c0", cb_start(Lost, &[0])),
            (9, "c0", cb_start(Assigned, &[1])),
            (10, "c0", Event::CloseStart { timeout_ms: 100 }),
            (11, "c0", cb_start(Revoked, &[1])),
            (12, "c0", Event::CloseEnd { error: None }),
        ]);
        let v = RevokeBeforeReassign::default().check(&h);
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn assigned_again_without_revoke() {
        let h = history(vec![
            (1, "c0", cb_start(Assigned, &[0])),
            (7, "c0", cb_start(Assigned, &[0])),
        ]);
        let v = RevokeBeforeReassign::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::AssignedAgainWithoutRevoke);
        assert!(first.explanation.contains("held it since 1ms"), "{first}");
    }

    #[test]
    fn close_without_revoke_but_crash_is_excused() {
        let h = history(vec![
            (1, "c0", cb_start(Assigned, &[0])),
            (2, "c0", Event::CloseEnd { error: None }),
            (3, "c1", cb_start(Assigned, &[1])),
            (4, "c1", Event::MemberCrash),
            (5, "c1", cb_start(Assigned, &[1])),
        ]);
        let v = RevokeBeforeReassign::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::ClosedWithoutRevoke);
        assert!(v.violations[0].explanation.contains("still held [t-0]"));
    }
}
