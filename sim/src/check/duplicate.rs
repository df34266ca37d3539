//! Re-deliveries beyond the at-least-once bound.
//!
//! At-least-once allows one kind of duplicate: records handed to the previous owner after the
//! group's last successful commit of that partition, re-delivered to the next owner after a
//! rebalance or crash (madsim §4.4: "replayed ≤ last processed − last committed"). Anything the
//! group had already committed past must never come back, unless the application asked for it
//! with a seek or a reset. KAFKA-14196 (fetching continued for partitions pending revocation,
//! progress lost) and KAFKA-14024 (revocation before the pre-revoke commit finished) show up
//! here as re-deliveries at offsets the group had committed past, or as commits that should
//! have been fenced.
//!
//! The bound is the highest offset the group committed since the last seek or reset of the
//! partition by any of its members: a commit that moves the offset back without one (a late,
//! reordered commit; `committed-offsets-monotonic` reports it with its cause) does not lower
//! the bound, so the records it makes the next owner read again are reported here too.
//!
//! One re-delivery is not the consumer's to prevent: a member fenced while it could not hear
//! the coordinator (cut off, paused) keeps handing out records of its old partitions until it
//! learns, as Java's consumer does (it keeps its assignment until a heartbeat answer says
//! `FENCED_MEMBER_EPOCH` / `UNKNOWN_MEMBER_ID`: `AbstractMembershipManager.transitionToFenced`,
//! `AbstractCoordinator.resetGenerationOnResponseError`); by then the new owner may have
//! committed past them. Such a zombie's delivery is excused only when the simulation observed
//! its fencing ([`crate::history::Fence`]) inside its ownership period, the partition then moved
//! to another member, and the bound it would break was set by a commit of another member made
//! after that fencing — the same zombie window `exclusive-ownership` tolerates. Its own
//! commits must still be refused (`zombie-commits-refused`), so nothing it consumed moves the
//! group's offsets.

use std::collections::BTreeMap;

use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History, OwnershipChange, OwnershipPeriod, OwnershipTracker, Tp};

/// Flags a record delivered again (in the same group) at an offset below the group's committed
/// bound at the time of the re-delivery, unless the re-delivering member sought or was reset
/// to at or below it during its current ownership period.
#[derive(Clone, Debug, Default)]
pub struct DuplicateDeliveries {}

/// Where a commit came from, for explanations.
#[derive(Clone, Debug)]
struct CommitSource {
    offset: i64,
    subject: String,
    id: u64,
    at_ms: u64,
    /// Its completion entry.
    seq: u64,
}

impl Checker for DuplicateDeliveries {
    fn name(&self) -> &'static str {
        "duplicate-deliveries"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut tracker = OwnershipTracker::new();
        let mut groups: BTreeMap<String, String> = BTreeMap::new();
        let fences = history.fences();
        let periods: BTreeMap<(String, Tp, u64), OwnershipPeriod> = history
            .ownership_periods()
            .into_iter()
            .map(|p| ((p.subject.clone(), p.tp.clone(), p.start_seq), p))
            .collect();
        // (subject, tp) → start seq of its current ownership period.
        let mut own_start: BTreeMap<(String, Tp), u64> = BTreeMap::new();
        // (group, tp) → start seq of the most recently opened ownership period, and its owner.
        let mut latest: BTreeMap<(String, Tp), (u64, String)> = BTreeMap::new();
        // (subject, tp) → lowest seek/reset target in the current period.
        let mut sought: BTreeMap<(String, Tp), i64> = BTreeMap::new();
        // (group, tp) → seq of the latest seek/reset by any member of the group.
        let mut group_sought: BTreeMap<(String, Tp), u64> = BTreeMap::new();
        // (subject, commit id) → offsets of the open request.
        let mut open: BTreeMap<(String, u64), Vec<(Tp, i64)>> = BTreeMap::new();
        let mut committed: BTreeMap<(String, Tp), CommitSource> = BTreeMap::new();
        // (group, tp, offset) → first delivery (subject, at_ms).
        let mut first: BTreeMap<(String, Tp, i64), (String, u64)> = BTreeMap::new();
        for e in history.entries() {
            let group = groups.get(&e.subject).cloned().unwrap_or_default();
            for change in tracker.apply(e) {
                if let OwnershipChange::Opened { subject, tp } = &change {
                    own_start.insert((subject.clone(), tp.clone()), e.seq);
                    latest.insert((group.clone(), tp.clone()), (e.seq, subject.clone()));
                }
                let (OwnershipChange::Opened { subject, tp }
                | OwnershipChange::Closed { subject, tp, .. }) = change;
                sought.remove(&(subject, tp));
            }
            match &e.event {
                Event::MemberStart { group } => {
                    groups.insert(e.subject.clone(), group.clone());
                    open.retain(|(s, _), _| *s != e.subject);
                }
                Event::MemberCrash | Event::MemberRestart => {
                    open.retain(|(s, _), _| *s != e.subject);
                }
                Event::Seek { tp, offset } | Event::PositionReset { tp, offset, .. } => {
                    let s = sought
                        .entry((e.subject.clone(), tp.clone()))
                        .or_insert(*offset);
                    *s = (*s).min(*offset);
                    group_sought.insert((group.clone(), tp.clone()), e.seq);
                }
                Event::CommitRequested { id, offsets, .. } => {
                    open.insert((e.subject.clone(), *id), offsets.clone());
                }
                Event::CommitCompleted { id, error } => {
                    let Some(offsets) = open.remove(&(e.subject.clone(), *id)) else {
                        continue;
                    };
                    if error.is_some() {
                        continue;
                    }
                    for (tp, offset) in offsets {
                        let key = (group.clone(), tp);
                        let backward_unasked = committed.get(&key).is_some_and(|mark| {
                            offset < mark.offset
                                && group_sought.get(&key).is_none_or(|s| *s < mark.seq)
                        });
                        if backward_unasked {
                            continue;
                        }
                        let source = CommitSource {
                            offset,
                            subject: e.subject.clone(),
                            id: *id,
                            at_ms: e.at_ms,
                            seq: e.seq,
                        };
                        committed.insert(key, source);
                    }
                }
                Event::Delivered { tp, offset, value } => {
                    let key = (group.clone(), tp.clone(), *offset);
                    let Some((first_subject, first_ms)) = first.get(&key) else {
                        first.insert(key, (e.subject.clone(), e.at_ms));
                        continue;
                    };
                    let replay_asked = sought
                        .get(&(e.subject.clone(), tp.clone()))
                        .is_some_and(|s| *s <= *offset);
                    if replay_asked {
                        continue;
                    }
                    let Some(c) = committed.get(&(group.clone(), tp.clone())) else {
                        continue;
                    };
                    if *offset >= c.offset {
                        continue;
                    }
                    let period = own_start
                        .get(&(e.subject.clone(), tp.clone()))
                        .and_then(|start| periods.get(&(e.subject.clone(), tp.clone(), *start)));
                    let moved_to =
                        latest
                            .get(&(group.clone(), tp.clone()))
                            .filter(|(since, owner)| {
                                *owner != e.subject && period.is_some_and(|p| *since > p.start_seq)
                            });
                    let fenced_zombie = period.zip(moved_to).is_some_and(|(p, (since, _))| {
                        fences.iter().any(|f| {
                            f.excuses(p, *since)
                                && f.seq < e.seq
                                && c.subject != e.subject
                                && c.seq > f.seq
                        })
                    });
                    if fenced_zombie {
                        continue;
                    }
                    out.push(
                        Violation::new(
                            ViolationKind::DuplicateBeyondBound,
                            e.at_ms,
                            format!(
                                "{tp}@{offset} ({value}) was handed to {first_subject} at \
                                 {first_ms}ms and again to {} at {}ms, but group '{group}' had \
                                 committed {tp} up to {} (commit#{} by {}, done at {}ms). \
                                 At-least-once allows re-delivering only records after the last \
                                 successful commit (or after a seek/reset by the consumer); this \
                                 one was committed as consumed.",
                                e.subject, e.at_ms, c.offset, c.id, c.subject, c.at_ms
                            ),
                        )
                        .subject(&e.subject)
                        .tp(tp)
                        .offset(*offset),
                    );
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

    /// c0 reads 0..=3, commits 2 (offsets 0 and 1 consumed), then a rebalance moves t-0 to c1.
    fn handover(c1_starts_at: i64) -> History {
        let mut h = vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(1, &[0])),
        ];
        for o in 0..4 {
            h.push((2 + o as u64, "c0", delivered(0, o)));
        }
        h.push((10, "c0", commit(1, 0, 2)));
        h.push((11, "c0", commit_ok(1)));
        h.push((20, "c0", revoked(1, &[0])));
        h.push((21, "c1", assigned(2, &[0])));
        for o in c1_starts_at..5 {
            h.push((22 + o as u64, "c1", delivered(0, o)));
        }
        history(h)
    }

    #[test]
    fn redelivering_uncommitted_work_is_allowed() {
        // c1 starts at the committed offset 2: offsets 2 and 3 come again, as at-least-once allows.
        let v = DuplicateDeliveries::default().check(&handover(2));
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn redelivering_committed_records_is_a_violation() {
        let v = DuplicateDeliveries::default().check(&handover(1));
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::DuplicateBeyondBound);
        assert_eq!(first.offset, Some(1));
        assert_eq!(first.subject.as_deref(), Some("c1"));
        assert!(
            first
                .explanation
                .contains("committed t-0 up to 2 (commit#1 by c0"),
            "{first}"
        );
    }

    fn expelled() -> Event {
        Event::Expelled {
            member_id: "m0".into(),
            reason: "session expired".into(),
        }
    }

    /// c0 owns t-0 from gen 1; `fence_at` (if any) the coordinator expels it; c1 gets t-0 in
    /// gen 2 at 3, reads 0..=3 and commits 4; c0 then hands out its buffered 0..=1 before it
    /// learns (`lost` at 14).
    fn zombie(fence_at: Option<u64>) -> History {
        let mut h = vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(1, &[0])),
            (3, "c1", assigned(2, &[0])),
        ];
        for o in 0..4 {
            h.push((4 + o as u64, "c1", delivered(0, o)));
        }
        h.push((10, "c1", commit(1, 0, 4)));
        h.push((11, "c1", commit_ok(1)));
        h.push((12, "c0", delivered(0, 0)));
        h.push((13, "c0", delivered(0, 1)));
        h.push((14, "c0", lost(3, &[0])));
        if let Some(at) = fence_at {
            h.push((at, "c0", expelled()));
        }
        h.sort_by_key(|(at, ..)| *at);
        history(h)
    }

    #[test]
    fn a_zombie_fenced_before_the_move_handing_out_old_records_is_tolerated() {
        let v = DuplicateDeliveries::default().check(&zombie(Some(2)));
        assert!(v.is_ok(), "{v}");
    }

    /// The old excuse took a period ending in `lost` as proof of fencing.
    #[test]
    fn a_zombie_whose_fencing_was_never_observed_is_not_excused() {
        let v = DuplicateDeliveries::default().check(&zombie(None));
        assert_eq!(v.violations.len(), 2, "{v}");
        assert_eq!(v.first().unwrap().subject.as_deref(), Some("c0"));
    }

    #[test]
    fn a_fence_after_the_move_excuses_nothing() {
        // Expelled at 12, after c1 got the partition at 3: both re-deliveries are reported.
        let v = DuplicateDeliveries::default().check(&zombie(Some(12)));
        assert_eq!(v.violations.len(), 2, "{v}");
    }

    /// A zombie's own progress is no new owner's: c0 committed 4 itself, then (fenced, the
    /// partition moved) hands out 0 again — its own rewind, not the zombie window.
    #[test]
    fn a_zombie_rewinding_below_its_own_commit_is_not_excused() {
        let h = history(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(1, &[0])),
            (2, "c0", delivered(0, 0)),
            (3, "c0", commit(1, 0, 4)),
            (4, "c0", commit_ok(1)),
            (5, "c0", expelled()),
            (6, "c1", assigned(2, &[0])),
            (7, "c0", delivered(0, 0)),
            (8, "c0", lost(3, &[0])),
        ]);
        let v = DuplicateDeliveries::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert!(
            v.violations[0].explanation.contains("commit#1 by c0"),
            "{v}"
        );
    }

    /// network-partition seed 27: a late commit moved t-0 back from 10 to 5; c1, the next
    /// owner, reads 5..=9 again. The bound stays 10: the old checker took 5 as its new mark.
    #[test]
    fn a_backward_commit_does_not_lower_the_bound() {
        let h = |seek_first: bool| {
            let mut h = vec![(0, "c0", start()), (0, "c1", start())];
            h.push((1, "c0", assigned(1, &[0])));
            for o in 0..10 {
                h.push((2 + o as u64, "c0", delivered(0, o)));
            }
            h.push((20, "c0", commit(1, 0, 10)));
            h.push((21, "c0", commit_ok(1)));
            if seek_first {
                h.push((22, "c0", seek(0, 5)));
            }
            h.push((23, "c0", commit(2, 0, 5)));
            h.push((24, "c0", commit_ok(2)));
            h.push((30, "c0", revoked(1, &[0])));
            h.push((31, "c1", assigned(2, &[0])));
            for o in 5..12 {
                h.push((32 + o as u64, "c1", delivered(0, o)));
            }
            history(h)
        };
        let v = DuplicateDeliveries::default().check(&h(false));
        assert_eq!(v.violations.len(), 5, "{v}");
        assert!(v.violations[0].explanation.contains("up to 10"), "{v}");
        // After a seek, the application asked for the lower offset: it is the new bound.
        let v = DuplicateDeliveries::default().check(&h(true));
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn failed_commit_does_not_bound_and_seek_allows_replay() {
        let h = vec![
            (0, "c0", start()),
            (1, "c0", assigned(1, &[0])),
            (2, "c0", delivered(0, 0)),
            (3, "c0", commit(1, 0, 1)),
            (4, "c0", commit_err(1, "REBALANCE_IN_PROGRESS")),
            (5, "c0", Event::MemberCrash),
            (6, "c0", start()),
            (7, "c0", assigned(2, &[0])),
            (8, "c0", delivered(0, 0)),
            (9, "c0", commit(2, 0, 1)),
            (10, "c0", commit_ok(2)),
            (11, "c0", seek(0, 0)),
            (12, "c0", delivered(0, 0)),
        ];
        assert!(DuplicateDeliveries::default().check(&history(h)).is_ok());
    }
}
