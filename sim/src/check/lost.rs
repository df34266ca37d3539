//! Jepsen's `lost-write`: an acknowledged record the group has read past but never read.
//!
//! Jepsen (`jepsen.tests.kafka`) calls a write lost when it was acked at an offset below the
//! highest offset any consumer read in that partition, yet no consumer ever read it: the log
//! moved on without it. For a consumer this is the at-least-once break of KAFKA-2942 and
//! KAFKA-18641 (auto-commit of fetched-but-unreturned records, so the next owner starts past
//! them). We judge per consumer group, since each group must see every record.

use std::collections::{BTreeMap, BTreeSet};

use super::gaps::KnownGaps;
use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History, OwnershipChange, OwnershipTracker, Tp};

/// Configuration of the lost-write checker.
#[derive(Clone, Debug)]
pub struct LostWrites {
    /// Offsets that hold nothing consumable.
    pub gaps: KnownGaps,
    /// Don't count records a member jumped over on purpose: a `seek` or `auto.offset.reset`
    /// forward from its position (or, with no position yet, from the committed offset or 0).
    pub exempt_seek_skips: bool,
}

impl Default for LostWrites {
    fn default() -> Self {
        Self {
            gaps: KnownGaps::default(),
            exempt_seek_skips: true,
        }
    }
}

/// Per (group, tp): the times the highest consumed offset grew, as (max offset, at_ms, subject).
type MaxSteps = BTreeMap<(String, Tp), Vec<(i64, u64, String)>>;

impl LostWrites {
    /// Ranges skipped by seeks and resets, per (group, tp).
    fn seek_skips(history: &History) -> BTreeMap<(String, Tp), Vec<(i64, i64)>> {
        let mut out: BTreeMap<(String, Tp), Vec<(i64, i64)>> = BTreeMap::new();
        let mut tracker = OwnershipTracker::new();
        let mut groups: BTreeMap<String, String> = BTreeMap::new();
        // (subject, tp) → next offset after the last delivery in the current period.
        let mut position: BTreeMap<(String, Tp), i64> = BTreeMap::new();
        for e in history.entries() {
            for change in tracker.apply(e) {
                let (OwnershipChange::Opened { subject, tp }
                | OwnershipChange::Closed { subject, tp, .. }) = change;
                position.remove(&(subject, tp));
            }
            match &e.event {
                Event::MemberStart { group } => {
                    groups.insert(e.subject.clone(), group.clone());
                }
                Event::Delivered { tp, offset, .. } => {
                    position.insert((e.subject.clone(), tp.clone()), offset.saturating_add(1));
                }
                Event::Seek { tp, offset } | Event::PositionReset { tp, offset, .. } => {
                    let group = groups.get(&e.subject).cloned().unwrap_or_default();
                    let key = (e.subject.clone(), tp.clone());
                    let from = match position.get(&key) {
                        Some(p) => *p,
                        None => history.committed_before(&group, tp, e.seq).unwrap_or(0),
                    };
                    if *offset > from {
                        out.entry((group, tp.clone()))
                            .or_default()
                            .push((from, *offset));
                    }
                    position.insert(key, *offset);
                }
                _ => {}
            }
        }
        out
    }
}

impl Checker for LostWrites {
    fn name(&self) -> &'static str {
        "lost-writes"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let deliveries = history.deliveries();
        let mut consumed: BTreeSet<(String, Tp, i64)> = BTreeSet::new();
        let mut steps: MaxSteps = BTreeMap::new();
        for d in &deliveries {
            consumed.insert((d.group.clone(), d.tp.clone(), d.offset));
            let s = steps.entry((d.group.clone(), d.tp.clone())).or_default();
            if s.last().is_none_or(|(max, ..)| d.offset > *max) {
                s.push((d.offset, d.at_ms, d.subject.clone()));
            }
        }
        let skips = if self.exempt_seek_skips {
            Self::seek_skips(history)
        } else {
            BTreeMap::new()
        };
        let mut out = Vec::new();
        for ack in history.produce_acks() {
            for ((group, tp), s) in &steps {
                if *tp != ack.tp {
                    continue;
                }
                if consumed.contains(&(group.clone(), tp.clone(), ack.offset))
                    || self.gaps.covers(tp, ack.offset)
                {
                    continue;
                }
                let exempt = skips
                    .get(&(group.clone(), tp.clone()))
                    .is_some_and(|rs| rs.iter().any(|(a, b)| *a <= ack.offset && ack.offset < *b));
                if exempt {
                    continue;
                }
                // The first time the group's highest consumed offset passed the acked one.
                let i = s.partition_point(|(max, ..)| *max <= ack.offset);
                let Some((past, at_ms, subject)) = s.get(i) else {
                    continue;
                };
                out.push(
                    Violation::new(
                        ViolationKind::LostWrite,
                        *at_ms,
                        format!(
                            "{tp}@{} ({}) was acknowledged to {} at {}ms, but group '{group}' \
                             never consumed it although {subject} was handed {tp}@{past} at \
                             {at_ms}ms: the group read past an acknowledged record (Jepsen \
                             lost-write; e.g. KAFKA-2942/KAFKA-18641 committing records the \
                             application never saw). Expected every acked record below the \
                             highest consumed offset to be consumed, or declared a log gap.",
                            ack.offset, ack.value, ack.subject, ack.at_ms
                        ),
                    )
                    .subject(subject)
                    .tp(tp)
                    .offset(ack.offset),
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

    fn base() -> Vec<(u64, &'static str, Event)> {
        vec![
            (0, "c0", start()),
            (1, "producer", acked(0, 0)),
            (2, "producer", acked(0, 1)),
            (3, "producer", acked(0, 2)),
            (10, "c0", assigned(1, &[0])),
            (11, "c0", delivered(0, 0)),
        ]
    }

    #[test]
    fn clean_history_passes() {
        let mut h = base();
        h.push((12, "c0", delivered(0, 1)));
        h.push((13, "c0", delivered(0, 2)));
        assert!(LostWrites::default().check(&history(h)).is_ok());
    }

    #[test]
    fn unread_tail_is_not_lost() {
        // Offsets above the highest consumed are not lost (liveness judges those).
        assert!(LostWrites::default().check(&history(base())).is_ok());
    }

    #[test]
    fn skipped_acked_record_is_lost() {
        let mut h = base();
        h.push((12, "c0", delivered(0, 2)));
        let v = LostWrites::default().check(&history(h));
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::LostWrite);
        assert_eq!(first.offset, Some(1));
        assert_eq!(first.at_ms, 12);
        assert!(
            first.explanation.contains("t-0@1 (p0v1) was acknowledged"),
            "{first}"
        );
        assert!(
            first.explanation.contains("c0 was handed t-0@2 at 12ms"),
            "{first}"
        );
    }

    #[test]
    fn declared_gap_and_seek_are_not_lost() {
        let mut h = base();
        h.push((12, "c0", delivered(0, 2)));
        let gaps = KnownGaps::new().with(tp(0), 1, 2);
        let checker = LostWrites {
            gaps,
            ..LostWrites::default()
        };
        assert!(checker.check(&history(h)).is_ok());

        let mut h = base();
        h.push((12, "c0", seek(0, 2)));
        h.push((13, "c0", delivered(0, 2)));
        assert!(LostWrites::default().check(&history(h.clone())).is_ok());
        let strict = LostWrites {
            exempt_seek_skips: false,
            ..LostWrites::default()
        };
        assert!(!strict.check(&history(h)).is_ok());
    }

    #[test]
    fn each_group_must_read_everything() {
        let mut h = base();
        h.push((12, "c0", delivered(0, 1)));
        h.push((13, "c0", delivered(0, 2)));
        h.push((
            20,
            "d0",
            Event::MemberStart {
                group: "other".into(),
            },
        ));
        h.push((21, "d0", delivered(0, 0)));
        h.push((22, "d0", delivered(0, 2)));
        let v = LostWrites::default().check(&history(h));
        assert_eq!(v.violations.len(), 1, "{v}");
        assert!(v.violations[0].explanation.contains("group 'other'"));
    }
}
