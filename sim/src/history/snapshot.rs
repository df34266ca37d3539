//! [`History`]: a sorted snapshot of the log with the queries checkers and timelines need.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::coverage::Coverage;
use super::event::{CommitMode, Event, Tp};
use super::ownership::{OwnershipPeriod, OwnershipTracker};
use super::Entry;

/// A record handed to the application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub seq: u64,
    pub at_ms: u64,
    pub subject: String,
    pub group: String,
    pub tp: Tp,
    pub offset: i64,
    pub value: String,
}

/// An acknowledged produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProduceAck {
    pub seq: u64,
    pub at_ms: u64,
    pub subject: String,
    pub tp: Tp,
    pub offset: i64,
    pub value: String,
}

/// A commit request paired with its completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitOutcome {
    pub subject: String,
    pub group: String,
    pub id: u64,
    pub mode: CommitMode,
    pub generation: Option<i32>,
    pub offsets: Vec<(Tp, i64)>,
    pub requested_ms: u64,
    pub requested_seq: u64,
    /// `None` when the history ends (or the member crashes) before it completes.
    pub completed_ms: Option<u64>,
    pub completed_seq: Option<u64>,
    /// `None` with `completed_ms` set: success.
    pub error: Option<String>,
}

impl CommitOutcome {
    pub fn succeeded(&self) -> bool {
        self.completed_ms.is_some() && self.error.is_none()
    }
}

/// A snapshot of a run's log, sorted by virtual time (stable: same-millisecond events keep the
/// order they were recorded in).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    entries: Vec<Entry>,
    coverage: Coverage,
}

impl History {
    pub(super) fn from_recorded(mut entries: Vec<Entry>, coverage: Coverage) -> Self {
        entries.sort_by_key(|e| (e.at_ms, e.seq));
        for (i, e) in entries.iter_mut().enumerate() {
            e.seq = i as u64;
        }
        Self { entries, coverage }
    }

    /// Builds a history by hand (tests, tools): `(at_ms, subject, event)` in recording order.
    pub fn from_events<S: Into<String>>(events: impl IntoIterator<Item = (u64, S, Event)>) -> Self {
        let entries = events
            .into_iter()
            .enumerate()
            .map(|(i, (at_ms, subject, event))| Entry {
                seq: i as u64,
                at_ms,
                subject: subject.into(),
                event,
            })
            .collect();
        Self::from_recorded(entries, Coverage::default())
    }

    /// All entries, in time order; `seq` is the index.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn coverage(&self) -> &Coverage {
        &self.coverage
    }

    /// The time of the last entry (0 when empty).
    pub fn end_ms(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.at_ms)
    }

    /// Every subject that recorded anything.
    pub fn subjects(&self) -> BTreeSet<&str> {
        self.entries.iter().map(|e| e.subject.as_str()).collect()
    }

    /// One subject's entries.
    pub fn of_subject<'a>(&'a self, subject: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.subject == subject)
    }

    /// The group of every consumer: its latest `MemberStart`, or `""` for subjects that act as
    /// consumers (subscribe, assign, poll, deliver, commit) without one.
    pub fn groups(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for e in &self.entries {
            match &e.event {
                Event::MemberStart { group } => {
                    out.insert(e.subject.clone(), group.clone());
                }
                Event::Delivered { .. }
                | Event::CommitRequested { .. }
                | Event::Subscribe { .. }
                | Event::ManualAssign { .. }
                | Event::Assignment { .. }
                | Event::PollStart { .. } => {
                    out.entry(e.subject.clone()).or_insert_with(String::new);
                }
                _ => {}
            }
        }
        out
    }

    /// The group of `subject` (`""` if it never said).
    pub fn group_of(&self, subject: &str) -> String {
        self.entries
            .iter()
            .rev()
            .filter(|e| e.subject == subject)
            .find_map(|e| match &e.event {
                Event::MemberStart { group } => Some(group.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Every record handed to an application, in time order. The group is the subject's group
    /// at that time.
    pub fn deliveries(&self) -> Vec<Delivery> {
        let mut group: BTreeMap<&str, &str> = BTreeMap::new();
        let mut out = Vec::new();
        for e in &self.entries {
            match &e.event {
                Event::MemberStart { group: g } => {
                    group.insert(&e.subject, g);
                }
                Event::Delivered { tp, offset, value } => out.push(Delivery {
                    seq: e.seq,
                    at_ms: e.at_ms,
                    subject: e.subject.clone(),
                    group: group
                        .get(e.subject.as_str())
                        .copied()
                        .unwrap_or("")
                        .to_string(),
                    tp: tp.clone(),
                    offset: *offset,
                    value: value.clone(),
                }),
                _ => {}
            }
        }
        out
    }

    /// Every acknowledged produce, in time order.
    pub fn produce_acks(&self) -> Vec<ProduceAck> {
        self.entries
            .iter()
            .filter_map(|e| match &e.event {
                Event::ProduceAcked { tp, offset, value } => Some(ProduceAck {
                    seq: e.seq,
                    at_ms: e.at_ms,
                    subject: e.subject.clone(),
                    tp: tp.clone(),
                    offset: *offset,
                    value: value.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// Every commit request with its outcome, in request order. A completion pairs with the
    /// latest open request of the same id by the same subject; a crash abandons open requests.
    pub fn commits(&self) -> Vec<CommitOutcome> {
        let mut group: BTreeMap<&str, &str> = BTreeMap::new();
        let mut open: BTreeMap<(&str, u64), usize> = BTreeMap::new();
        let mut out: Vec<CommitOutcome> = Vec::new();
        for e in &self.entries {
            match &e.event {
                Event::MemberStart { group: g } => {
                    group.insert(&e.subject, g);
                    open.retain(|(s, _), _| *s != e.subject);
                }
                Event::MemberCrash | Event::MemberRestart => {
                    open.retain(|(s, _), _| *s != e.subject);
                }
                Event::CommitRequested {
                    id,
                    mode,
                    generation,
                    offsets,
                } => {
                    open.insert((&e.subject, *id), out.len());
                    out.push(CommitOutcome {
                        subject: e.subject.clone(),
                        group: group
                            .get(e.subject.as_str())
                            .copied()
                            .unwrap_or("")
                            .to_string(),
                        id: *id,
                        mode: *mode,
                        generation: *generation,
                        offsets: offsets.clone(),
                        requested_ms: e.at_ms,
                        requested_seq: e.seq,
                        completed_ms: None,
                        completed_seq: None,
                        error: None,
                    });
                }
                Event::CommitCompleted { id, error } => {
                    if let Some(index) = open.remove(&(e.subject.as_str(), *id)) {
                        if let Some(c) = out.get_mut(index) {
                            c.completed_ms = Some(e.at_ms);
                            c.completed_seq = Some(e.seq);
                            c.error = error.clone();
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Successful commits of `group` as `(completed_seq, completed_ms, tp, offset)`, in
    /// completion order: the sequence of values the group's committed offsets took.
    pub fn committed_sequence(&self, group: &str) -> Vec<(u64, u64, Tp, i64)> {
        let mut out: Vec<(u64, u64, Tp, i64)> = Vec::new();
        for c in self.commits() {
            if c.group != group || !c.succeeded() {
                continue;
            }
            let (Some(seq), Some(ms)) = (c.completed_seq, c.completed_ms) else {
                continue;
            };
            for (tp, offset) in &c.offsets {
                out.push((seq, ms, tp.clone(), *offset));
            }
        }
        out.sort_by_key(|(seq, ..)| *seq);
        out
    }

    /// The committed offset of `group` on `tp` just before entry `seq` (the last successful
    /// commit completed earlier), if any.
    pub fn committed_before(&self, group: &str, tp: &Tp, seq: u64) -> Option<i64> {
        self.committed_sequence(group)
            .into_iter()
            .filter(|(s, _, t, _)| *s < seq && t == tp)
            .map(|(_, _, _, offset)| offset)
            .next_back()
    }

    /// Every ownership period, in opening order (see [`OwnershipTracker`]).
    pub fn ownership_periods(&self) -> Vec<OwnershipPeriod> {
        let mut tracker = OwnershipTracker::new();
        for e in &self.entries {
            tracker.apply(e);
        }
        tracker.into_periods()
    }

    /// Faults applied, as `(at_ms, kind)`.
    pub fn faults(&self) -> Vec<(u64, &str)> {
        self.entries
            .iter()
            .filter_map(|e| match &e.event {
                Event::Fault { kind } => Some((e.at_ms, kind.as_str())),
                _ => None,
            })
            .collect()
    }

    /// Topic deletions by a `DeleteTopic` fault, as `(at_ms, topic)` in order (the fault is
    /// recorded in its `Debug` form, `DeleteTopic { topic: "u" }`).
    pub fn topic_deletions(&self) -> Vec<(u64, &str)> {
        self.faults()
            .into_iter()
            .filter_map(|(at_ms, kind)| {
                let topic = kind
                    .strip_prefix("DeleteTopic { topic: \"")?
                    .strip_suffix("\" }")?;
                Some((at_ms, topic))
            })
            .collect()
    }

    /// The time of the last `Healed` event.
    pub fn healed_at_ms(&self) -> Option<u64> {
        self.entries
            .iter()
            .rev()
            .find(|e| matches!(e.event, Event::Healed))
            .map(|e| e.at_ms)
    }

    /// The first entry matching `pred`.
    pub fn first(&self, mut pred: impl FnMut(&Entry) -> bool) -> Option<&Entry> {
        self.entries.iter().find(|e| pred(e))
    }

    /// The golden-trace rendering: one line per entry.
    pub fn render(&self) -> String {
        self.to_string()
    }

    /// The trace lines of the subjects accepted by `keep` (e.g. drop `broker-*` request noise).
    pub fn render_filtered(&self, mut keep: impl FnMut(&Entry) -> bool) -> String {
        let mut s = String::new();
        for e in self.entries.iter().filter(|e| keep(e)) {
            s.push_str(&e.to_string());
            s.push('\n');
        }
        s
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.entries {
            writeln!(f, "{e}")?;
        }
        Ok(())
    }
}
