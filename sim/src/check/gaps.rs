//! Offsets a log legitimately has no record at.

use std::collections::BTreeMap;

use crate::history::Tp;

/// Offset ranges known to hold no consumable record: transaction control markers, aborted
/// transactions under `read_committed`, compaction, retention. Without them a checker cannot
/// tell a legitimate gap from a skipped record (Jepsen's poll-skip and lost-write both need the
/// log's true shape).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownGaps {
    /// Half-open `[from, to)` ranges per partition.
    ranges: BTreeMap<Tp, Vec<(i64, i64)>>,
}

impl KnownGaps {
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares `[from, to)` on `tp` as holding no consumable record.
    pub fn add(&mut self, tp: Tp, from: i64, to: i64) -> &mut Self {
        if from < to {
            self.ranges.entry(tp).or_default().push((from, to));
        }
        self
    }

    /// Builder form of [`Self::add`].
    pub fn with(mut self, tp: Tp, from: i64, to: i64) -> Self {
        self.add(tp, from, to);
        self
    }

    /// Whether `offset` on `tp` is inside a declared gap.
    pub fn covers(&self, tp: &Tp, offset: i64) -> bool {
        self.ranges
            .get(tp)
            .is_some_and(|rs| rs.iter().any(|(a, b)| *a <= offset && offset < *b))
    }

    /// The first offset of `[from, to)` on `tp` that no declared gap covers.
    pub fn first_uncovered(&self, tp: &Tp, from: i64, to: i64) -> Option<i64> {
        let mut o = from;
        while o < to {
            // Jump to the end of the covering range with the furthest reach.
            let reach = self.ranges.get(tp).and_then(|rs| {
                rs.iter()
                    .filter(|(a, b)| *a <= o && o < *b)
                    .map(|(_, b)| *b)
                    .max()
            });
            match reach {
                Some(b) => o = b,
                None => return Some(o),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_half_open() {
        let tp = Tp::new("t", 0);
        let gaps = KnownGaps::new()
            .with(tp.clone(), 3, 5)
            .with(tp.clone(), 5, 7);
        assert!(!gaps.covers(&tp, 2));
        assert!(gaps.covers(&tp, 3));
        assert!(gaps.covers(&tp, 6));
        assert!(!gaps.covers(&tp, 7));
        assert_eq!(gaps.first_uncovered(&tp, 3, 7), None);
        assert_eq!(gaps.first_uncovered(&tp, 2, 7), Some(2));
        assert_eq!(gaps.first_uncovered(&tp, 3, 9), Some(7));
        assert_eq!(gaps.first_uncovered(&Tp::new("u", 0), 3, 4), Some(3));
    }
}
