//! Who owns which partition when, as each member sees it.
//!
//! Several checkers need "one continuous ownership period" of a partition by a member: offsets
//! must increase within one, re-deliveries are judged at the start of one, two members' periods
//! must not overlap. [`OwnershipTracker`] derives them from the stream of entries, so every
//! checker agrees on the boundaries.

use std::collections::{BTreeMap, BTreeSet};

use super::event::{Event, Tp};
use super::Entry;

/// Why an ownership period ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OwnershipEnd {
    /// Given back in an orderly way (`Assignment.revoked`).
    Revoked,
    /// The member learned it had been fenced (`Assignment.lost`).
    Lost,
    /// The process crashed or restarted.
    Crash,
    /// `close` finished.
    Closed,
    /// A new manual `assign` no longer includes it.
    Unassigned,
}

/// A change the tracker saw while applying one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnershipChange {
    Opened {
        subject: String,
        tp: Tp,
    },
    Closed {
        subject: String,
        tp: Tp,
        end: OwnershipEnd,
    },
}

/// One continuous ownership of `tp` by `subject`, in the subject's own view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnershipPeriod {
    pub subject: String,
    pub tp: Tp,
    pub start_ms: u64,
    pub start_seq: u64,
    /// `None` while still owned when the history ends.
    pub end_ms: Option<u64>,
    pub end_seq: Option<u64>,
    pub end: Option<OwnershipEnd>,
    /// Group-managed (`Assignment`) rather than manual (`ManualAssign`) or implicit.
    pub managed: bool,
    /// Opened by a delivery because the subject never reports assignments.
    pub implicit: bool,
}

#[derive(Clone, Debug, Default)]
struct SubjectState {
    /// The subject subscribed or reports `Assignment` / `ManualAssign`: it has an ownership
    /// view, so records outside it are not implicitly owned.
    tracks: bool,
    owned: BTreeMap<Tp, usize>,
}

/// Derives ownership periods entry by entry.
#[derive(Clone, Debug, Default)]
pub struct OwnershipTracker {
    subjects: BTreeMap<String, SubjectState>,
    periods: Vec<OwnershipPeriod>,
}

impl OwnershipTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `subject` has an ownership view (it subscribed, or reported an assignment);
    /// else ownership is implied by its deliveries.
    pub fn tracks(&self, subject: &str) -> bool {
        self.subjects.get(subject).is_some_and(|s| s.tracks)
    }

    /// Whether `subject` currently owns `tp`.
    pub fn owns(&self, subject: &str, tp: &Tp) -> bool {
        self.subjects
            .get(subject)
            .is_some_and(|s| s.owned.contains_key(tp))
    }

    /// The partitions `subject` currently owns.
    pub fn owned(&self, subject: &str) -> BTreeSet<Tp> {
        self.subjects
            .get(subject)
            .map(|s| s.owned.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The current period of `subject` on `tp`.
    pub fn current(&self, subject: &str, tp: &Tp) -> Option<&OwnershipPeriod> {
        let index = *self.subjects.get(subject)?.owned.get(tp)?;
        self.periods.get(index)
    }

    /// Every period so far, in opening order.
    pub fn periods(&self) -> &[OwnershipPeriod] {
        &self.periods
    }

    pub fn into_periods(self) -> Vec<OwnershipPeriod> {
        self.periods
    }

    fn open(
        &mut self,
        e: &Entry,
        tp: &Tp,
        managed: bool,
        implicit: bool,
        out: &mut Vec<OwnershipChange>,
    ) {
        let state = self.subjects.entry(e.subject.clone()).or_default();
        if state.owned.contains_key(tp) {
            return;
        }
        state.owned.insert(tp.clone(), self.periods.len());
        self.periods.push(OwnershipPeriod {
            subject: e.subject.clone(),
            tp: tp.clone(),
            start_ms: e.at_ms,
            start_seq: e.seq,
            end_ms: None,
            end_seq: None,
            end: None,
            managed,
            implicit,
        });
        out.push(OwnershipChange::Opened {
            subject: e.subject.clone(),
            tp: tp.clone(),
        });
    }

    fn close(&mut self, e: &Entry, tp: &Tp, end: OwnershipEnd, out: &mut Vec<OwnershipChange>) {
        let Some(state) = self.subjects.get_mut(&e.subject) else {
            return;
        };
        let Some(index) = state.owned.remove(tp) else {
            return;
        };
        if let Some(p) = self.periods.get_mut(index) {
            p.end_ms = Some(e.at_ms);
            p.end_seq = Some(e.seq);
            p.end = Some(end);
        }
        out.push(OwnershipChange::Closed {
            subject: e.subject.clone(),
            tp: tp.clone(),
            end,
        });
    }

    fn close_all(&mut self, e: &Entry, end: OwnershipEnd, out: &mut Vec<OwnershipChange>) {
        for tp in self.owned(&e.subject) {
            self.close(e, &tp, end, out);
        }
    }

    /// Applies one entry; returns the periods it opened and closed, closings first.
    pub fn apply(&mut self, e: &Entry) -> Vec<OwnershipChange> {
        let mut out = Vec::new();
        match &e.event {
            Event::Assignment {
                assigned,
                revoked,
                lost,
                ..
            } => {
                self.subjects.entry(e.subject.clone()).or_default().tracks = true;
                for tp in revoked {
                    self.close(e, tp, OwnershipEnd::Revoked, &mut out);
                }
                for tp in lost {
                    self.close(e, tp, OwnershipEnd::Lost, &mut out);
                }
                for tp in assigned {
                    self.open(e, tp, true, false, &mut out);
                }
            }
            Event::Subscribe { .. } => {
                self.subjects.entry(e.subject.clone()).or_default().tracks = true;
            }
            Event::ManualAssign { partitions } => {
                self.subjects.entry(e.subject.clone()).or_default().tracks = true;
                let keep: BTreeSet<&Tp> = partitions.iter().collect();
                for tp in self.owned(&e.subject) {
                    if !keep.contains(&tp) {
                        self.close(e, &tp, OwnershipEnd::Unassigned, &mut out);
                    }
                }
                for tp in partitions {
                    self.open(e, tp, false, false, &mut out);
                }
            }
            Event::MemberStart { .. } | Event::MemberCrash | Event::MemberRestart => {
                self.close_all(e, OwnershipEnd::Crash, &mut out);
            }
            Event::CloseEnd { .. } => self.close_all(e, OwnershipEnd::Closed, &mut out),
            Event::Delivered { tp, .. } if !self.tracks(&e.subject) => {
                self.open(e, tp, false, true, &mut out);
            }
            _ => {}
        }
        out
    }
}
