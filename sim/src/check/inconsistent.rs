//! Jepsen's `inconsistent-offsets` and `duplicate` (writes).
//!
//! A partition is a log: one offset holds one record forever. Two different values seen at one
//! (partition, offset), by producers' acks or consumers' reads, mean the log diverged (a
//! truncation after an unclean leader election in the broker model, or a consumer attributing a
//! record to the wrong offset — a batch-decoding or position bug). When producers write unique
//! values, one value at two offsets is Jepsen's `duplicate`: a retried send that was written
//! twice (idempotence broken).

use std::collections::BTreeMap;

use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History, Tp};

#[derive(Clone, Debug)]
pub struct InconsistentOffsets {
    /// Also flag one value at two offsets: only meaningful when producers send unique values.
    pub check_duplicate_writes: bool,
}

impl Default for InconsistentOffsets {
    fn default() -> Self {
        Self {
            check_duplicate_writes: true,
        }
    }
}

impl Checker for InconsistentOffsets {
    fn name(&self) -> &'static str {
        "inconsistent-offsets"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        // (tp, offset) → (value, who, at_ms); whether already reported.
        let mut at_offset: BTreeMap<(Tp, i64), (String, String, u64, bool)> = BTreeMap::new();
        let mut at_value: BTreeMap<(Tp, String), (i64, String, u64, bool)> = BTreeMap::new();
        for e in history.entries() {
            let (tp, offset, value, verb) = match &e.event {
                Event::ProduceAcked { tp, offset, value } => (tp, *offset, value, "acked to"),
                Event::Delivered { tp, offset, value } => (tp, *offset, value, "handed to"),
                _ => continue,
            };
            let seen = at_offset.entry((tp.clone(), offset)).or_insert_with(|| {
                (
                    value.clone(),
                    format!("{verb} {}", e.subject),
                    e.at_ms,
                    false,
                )
            });
            if seen.0 != *value && !seen.3 {
                seen.3 = true;
                out.push(
                    Violation::new(
                        ViolationKind::InconsistentOffset,
                        e.at_ms,
                        format!(
                            "{tp}@{offset} held {} when {} at {}ms, but {value} when {verb} {} \
                             at {}ms: one offset must hold one record (Jepsen \
                             inconsistent-offsets).",
                            seen.0, seen.1, seen.2, e.subject, e.at_ms
                        ),
                    )
                    .subject(&e.subject)
                    .tp(tp)
                    .offset(offset),
                );
            }
            if !self.check_duplicate_writes {
                continue;
            }
            let seen = at_value
                .entry((tp.clone(), value.clone()))
                .or_insert_with(|| (offset, format!("{verb} {}", e.subject), e.at_ms, false));
            if seen.0 != offset && !seen.3 {
                seen.3 = true;
                out.push(
                    Violation::new(
                        ViolationKind::DuplicateWrite,
                        e.at_ms,
                        format!(
                            "value {value} is at {tp}@{} ({} at {}ms) and at {tp}@{offset} ({verb} \
                             {} at {}ms): a unique value written twice (Jepsen duplicate; a \
                             retried produce appended again).",
                            seen.0, seen.1, seen.2, e.subject, e.at_ms
                        ),
                    )
                    .subject(&e.subject)
                    .tp(tp)
                    .offset(offset),
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

    #[test]
    fn consistent_history_passes() {
        let h = history(vec![
            (1, "producer", acked(0, 0)),
            (2, "c0", delivered(0, 0)),
            (3, "c1", delivered(0, 0)),
        ]);
        assert!(InconsistentOffsets::default().check(&h).is_ok());
    }

    #[test]
    fn two_values_at_one_offset() {
        let h = history(vec![
            (1, "producer", acked(0, 0)),
            (
                5,
                "c0",
                Event::Delivered {
                    tp: tp(0),
                    offset: 0,
                    value: "other".into(),
                },
            ),
        ]);
        let v = InconsistentOffsets::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::InconsistentOffset);
        assert_eq!(first.at_ms, 5);
        assert_eq!(
            first.explanation,
            "t-0@0 held p0v0 when acked to producer at 1ms, but other when handed to c0 at 5ms: \
             one offset must hold one record (Jepsen inconsistent-offsets)."
        );
    }

    #[test]
    fn one_value_at_two_offsets() {
        let h = history(vec![
            (1, "producer", acked(0, 0)),
            (
                2,
                "producer",
                Event::ProduceAcked {
                    tp: tp(0),
                    offset: 1,
                    value: value(0, 0),
                },
            ),
        ]);
        let v = InconsistentOffsets::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::DuplicateWrite);
        let lenient = InconsistentOffsets {
            check_duplicate_writes: false,
        };
        assert!(lenient.check(&h).is_ok());
    }
}
