//! Jepsen's `nonmonotonic-poll` and `poll-skip`, per ownership period, plus records of
//! partitions the member did not own.
//!
//! Within one continuous ownership of a partition, a consumer must hand out offsets in order
//! and without holes: position only moves forward by what was returned, unless the application
//! seeks or `auto.offset.reset` fires. Across a rebalance going back is allowed (the next period
//! starts at the committed offset), as in Jepsen's `allowed-error-types` under `subscribe`.
//! Records of a partition outside any ownership period are what KAFKA-14196 produced (fetches
//! of partitions pending revocation kept returning data) and what "drop buffered and in-flight
//! data of revoked partitions" in the reconciliation order exists to prevent.

use std::collections::{BTreeMap, BTreeSet};

use super::gaps::KnownGaps;
use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History, OwnershipChange, OwnershipTracker, Tp};

/// What counts as a skip.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SkipMode {
    /// Every offset between two consecutive deliveries must be a declared gap.
    #[default]
    Strict,
    /// Jepsen's rule: a skip jumps over an offset known to hold a record (acked to a producer
    /// or delivered to anyone) that is not a declared gap. Tolerates undeclared control records.
    KnownOffsets,
}

#[derive(Clone, Debug)]
pub struct DeliveryOrder {
    pub gaps: KnownGaps,
    pub skip_mode: SkipMode,
    /// Flag records of a partition the member does not own (only for members with an
    /// ownership view: they subscribed, or report `Assignment` / `ManualAssign`).
    pub check_ownership: bool,
}

impl Default for DeliveryOrder {
    fn default() -> Self {
        Self {
            gaps: KnownGaps::default(),
            skip_mode: SkipMode::Strict,
            check_ownership: true,
        }
    }
}

/// The expected next offset of a (subject, tp) in its current period, and why.
#[derive(Clone, Debug)]
struct Position {
    next: i64,
    /// `seek`/`reset` set it (else: the last delivery).
    by_seek: bool,
    at_ms: u64,
}

impl DeliveryOrder {
    fn known_offsets(history: &History) -> BTreeSet<(Tp, i64)> {
        history
            .entries()
            .iter()
            .filter_map(|e| match &e.event {
                Event::ProduceAcked { tp, offset, .. } | Event::Delivered { tp, offset, .. } => {
                    Some((tp.clone(), *offset))
                }
                _ => None,
            })
            .collect()
    }

    /// The first offset in `[from, to)` whose omission is a skip.
    fn first_skipped(
        &self,
        known: &BTreeSet<(Tp, i64)>,
        tp: &Tp,
        from: i64,
        to: i64,
    ) -> Option<i64> {
        match self.skip_mode {
            SkipMode::Strict => self.gaps.first_uncovered(tp, from, to),
            SkipMode::KnownOffsets => known
                .range((tp.clone(), from)..(tp.clone(), to))
                .map(|(_, o)| *o)
                .find(|o| !self.gaps.covers(tp, *o)),
        }
    }
}

impl Checker for DeliveryOrder {
    fn name(&self) -> &'static str {
        "delivery-order"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let known = match self.skip_mode {
            SkipMode::Strict => BTreeSet::new(),
            SkipMode::KnownOffsets => Self::known_offsets(history),
        };
        let mut out = Vec::new();
        let mut tracker = OwnershipTracker::new();
        let mut positions: BTreeMap<(String, Tp), Position> = BTreeMap::new();
        for e in history.entries() {
            for change in tracker.apply(e) {
                let (OwnershipChange::Opened { subject, tp }
                | OwnershipChange::Closed { subject, tp, .. }) = change;
                positions.remove(&(subject, tp));
            }
            match &e.event {
                Event::Seek { tp, offset } | Event::PositionReset { tp, offset, .. } => {
                    let position = Position {
                        next: *offset,
                        by_seek: true,
                        at_ms: e.at_ms,
                    };
                    positions.insert((e.subject.clone(), tp.clone()), position);
                }
                Event::Delivered { tp, offset, .. } => {
                    let key = (e.subject.clone(), tp.clone());
                    if self.check_ownership
                        && tracker.tracks(&e.subject)
                        && !tracker.owns(&e.subject, tp)
                    {
                        out.push(
                            Violation::new(
                                ViolationKind::DeliveredWhileNotOwned,
                                e.at_ms,
                                format!(
                                    "{} was handed {tp}@{offset} at {}ms while it did not own \
                                     {tp} (owned: [{}]). Records of revoked or lost partitions \
                                     must be dropped before the revocation (KAFKA-14196).",
                                    e.subject,
                                    e.at_ms,
                                    tracker
                                        .owned(&e.subject)
                                        .iter()
                                        .map(Tp::to_string)
                                        .collect::<Vec<_>>()
                                        .join(",")
                                ),
                            )
                            .subject(&e.subject)
                            .tp(tp)
                            .offset(*offset),
                        );
                    }
                    if let Some(p) = positions.get(&key) {
                        let why = if p.by_seek {
                            format!("a seek/reset to {} at {}ms", p.next, p.at_ms)
                        } else {
                            format!("{tp}@{} at {}ms", p.next - 1, p.at_ms)
                        };
                        if *offset < p.next {
                            out.push(
                                Violation::new(
                                    ViolationKind::NonMonotonicDelivery,
                                    e.at_ms,
                                    format!(
                                        "{} was handed {tp}@{offset} at {}ms after {why}, within \
                                         one ownership of {tp}: expected offset {} or later \
                                         (Jepsen nonmonotonic-poll).",
                                        e.subject, e.at_ms, p.next
                                    ),
                                )
                                .subject(&e.subject)
                                .tp(tp)
                                .offset(*offset),
                            );
                        } else if let Some(skipped) =
                            self.first_skipped(&known, tp, p.next, *offset)
                        {
                            out.push(
                                Violation::new(
                                    ViolationKind::SkippedOffsets,
                                    e.at_ms,
                                    format!(
                                        "{} was handed {tp}@{offset} at {}ms after {why}, within \
                                         one ownership of {tp}: offset {skipped} was skipped with \
                                         no seek, reset or declared log gap to explain it (Jepsen \
                                         poll-skip).",
                                        e.subject, e.at_ms
                                    ),
                                )
                                .subject(&e.subject)
                                .tp(tp)
                                .offset(skipped),
                            );
                        }
                    }
                    let position = Position {
                        next: offset.saturating_add(1),
                        by_seek: false,
                        at_ms: e.at_ms,
                    };
                    positions.insert(key, position);
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

    fn owned(deliveries: &[i64]) -> Vec<(u64, &'static str, Event)> {
        let mut h = vec![(0, "c0", start()), (1, "c0", assigned(1, &[0]))];
        for (i, o) in deliveries.iter().enumerate() {
            h.push((10 + i as u64, "c0", delivered(0, *o)));
        }
        h
    }

    #[test]
    fn in_order_passes_and_rebalance_may_go_back() {
        let mut h = owned(&[0, 1, 2]);
        h.push((20, "c0", revoked(1, &[0])));
        h.push((21, "c0", assigned(2, &[0])));
        h.push((22, "c0", delivered(0, 1)));
        let v = DeliveryOrder::default().check(&history(h));
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn going_backwards_within_an_assignment() {
        let v = DeliveryOrder::default().check(&history(owned(&[0, 1, 2, 1])));
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::NonMonotonicDelivery);
        assert_eq!(first.at_ms, 13);
        assert!(first.explanation.contains("after t-0@2 at 12ms"), "{first}");
    }

    #[test]
    fn skip_within_an_assignment() {
        let v = DeliveryOrder::default().check(&history(owned(&[0, 1, 3])));
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::SkippedOffsets);
        assert_eq!(first.offset, Some(2));
    }

    #[test]
    fn skip_explained_by_gap_or_seek() {
        let checker = DeliveryOrder {
            gaps: KnownGaps::new().with(tp(0), 2, 3),
            ..DeliveryOrder::default()
        };
        assert!(checker.check(&history(owned(&[0, 1, 3]))).is_ok());

        let mut h = owned(&[0, 1]);
        h.push((15, "c0", seek(0, 7)));
        h.push((16, "c0", delivered(0, 7)));
        h.push((17, "c0", seek(0, 0)));
        h.push((18, "c0", delivered(0, 0)));
        assert!(DeliveryOrder::default().check(&history(h)).is_ok());
    }

    #[test]
    fn known_offsets_mode_tolerates_holes_without_records() {
        let checker = DeliveryOrder {
            skip_mode: SkipMode::KnownOffsets,
            ..DeliveryOrder::default()
        };
        assert!(checker.check(&history(owned(&[0, 1, 3]))).is_ok());
        let mut h = owned(&[0, 1, 3]);
        h.push((30, "producer", acked(0, 2)));
        assert!(checker
            .check(&history(h))
            .has(ViolationKind::SkippedOffsets));
    }

    #[test]
    fn delivery_after_revocation() {
        let mut h = owned(&[0]);
        h.push((20, "c0", revoked(1, &[0])));
        h.push((21, "c0", delivered(0, 1)));
        let v = DeliveryOrder::default().check(&history(h));
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::DeliveredWhileNotOwned);
    }
}
