//! No partition owned by two members at once.
//!
//! The consumer group's core promise. Classic protocol: within one generation, the leader's
//! assignment gives each partition to one member; a member that claims a partition in a
//! generation it did not get it in (KAFKA-13419's stale `ownedPartitions` carried across
//! generations, KAFKA-14639's "revoked and assigned in a single round") breaks it. KIP-848: the
//! coordinator hands a partition to a new owner only after the old one acknowledged its
//! revocation (`CurrentAssignmentBuilder`), so ownership windows (assigned → revoked/lost, per
//! the members' own views) must not overlap. Also checks the cooperative rule "revoked ⊆ owned".
//!
//! The one tolerance (`tolerate_fenced`): a *zombie*, whose partition the coordinator gave away
//! because it had fenced or removed the member, may still believe it owns it until it hears so
//! — Java's consumer too keeps the assignment until a heartbeat answer reaches it
//! (`AbstractMembershipManager.transitionToFenced`), and a member whose requests no longer get
//! through never hears it. The overlap is excused only when the simulation observed the
//! fencing ([`crate::history::Fence`]: the coordinator expelled the member, a fencing error
//! answered it, or it left and then reported the partition lost) inside the old owner's period
//! and *before* the new owner got the partition: the coordinator moves a partition only after
//! that. How the old owner's view ended (lost, crash, revoked) is never evidence on its own.
//! The zombie's commits must still be refused, which `zombie-commits-refused` checks.
//!
//! Not ownership at all: a *late notice* ([`History::late_assignment_notices`]), an
//! `onPartitionsAssigned` the application ran only after its member had left or been fenced,
//! followed by `onPartitionsLost` with nothing delivered or committed in between — Java's
//! consumer queues both callbacks the same way.

use std::collections::{BTreeMap, BTreeSet};

use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History, OwnershipTracker, Tp};

/// How ownership conflicts are judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OwnershipMode {
    /// Classic protocol: two members must not own a partition in the same generation.
    Generation,
    /// KIP-848 (and a stricter check of classic): ownership windows must not overlap in time.
    #[default]
    Windows,
}

#[derive(Clone, Debug)]
pub struct ExclusiveOwnership {
    pub mode: OwnershipMode,
    /// In `Windows` mode, allow the earlier owner's window to overlap the later one's from an
    /// observed fencing of the earlier owner on (a zombie; see the module doc).
    pub tolerate_fenced: bool,
    /// Flag revoking or losing a partition the member did not own.
    pub check_revoked_subset: bool,
}

impl Default for ExclusiveOwnership {
    fn default() -> Self {
        Self {
            mode: OwnershipMode::Windows,
            tolerate_fenced: true,
            check_revoked_subset: true,
        }
    }
}

impl ExclusiveOwnership {
    fn by_generation(history: &History, out: &mut Vec<Violation>) {
        let groups = history.groups();
        let mut tracker = OwnershipTracker::new();
        // (group, generation, tp) → (subject, at_ms).
        let mut claims: BTreeMap<(String, i32, Tp), (String, u64)> = BTreeMap::new();
        let mut reported: BTreeSet<(String, i32, Tp)> = BTreeSet::new();
        for e in history.entries() {
            tracker.apply(e);
            let Event::Assignment { generation, .. } = &e.event else {
                continue;
            };
            let group = groups.get(&e.subject).cloned().unwrap_or_default();
            for tp in tracker.owned(&e.subject) {
                let key = (group.clone(), *generation, tp.clone());
                let (owner, since) = claims
                    .entry(key.clone())
                    .or_insert_with(|| (e.subject.clone(), e.at_ms));
                if *owner != e.subject && reported.insert(key) {
                    out.push(
                        Violation::new(
                            ViolationKind::DoubleOwnership,
                            e.at_ms,
                            format!(
                                "{} owns {tp} in generation {generation} from {}ms, but {owner} \
                                 already owned it in that generation since {since}ms: one \
                                 generation gives each partition to one member (KAFKA-13419, \
                                 KAFKA-14639).",
                                e.subject, e.at_ms
                            ),
                        )
                        .subject(&e.subject)
                        .tp(&tp),
                    );
                }
            }
        }
    }

    fn by_windows(&self, history: &History, out: &mut Vec<Violation>) {
        let groups = history.groups();
        let fences = history.fences();
        let mut by_tp: BTreeMap<(String, Tp), Vec<_>> = BTreeMap::new();
        for p in history
            .ownership_periods()
            .into_iter()
            .filter(|p| p.managed && !history.is_late_notice(p, &fences))
        {
            let group = groups.get(&p.subject).cloned().unwrap_or_default();
            by_tp.entry((group, p.tp.clone())).or_default().push(p);
        }
        for ((group, tp), periods) in by_tp {
            for (i, a) in periods.iter().enumerate() {
                for b in periods.iter().skip(i + 1) {
                    // Periods are in opening order: `a` opened first.
                    if a.subject == b.subject {
                        continue;
                    }
                    let overlaps = a.end_ms.is_none_or(|end| b.start_ms < end);
                    if !overlaps {
                        continue;
                    }
                    let fenced = fences.iter().any(|f| f.excuses(a, b.start_seq));
                    if self.tolerate_fenced && fenced {
                        continue;
                    }
                    let until = match (a.end_ms, a.end) {
                        (Some(ms), Some(end)) => format!("until {ms}ms ({end:?})"),
                        _ => "to the end of the run".to_string(),
                    };
                    out.push(
                        Violation::new(
                            ViolationKind::DoubleOwnership,
                            b.start_ms,
                            format!(
                                "{} was assigned {tp} at {}ms while {} owned it from {}ms \
                                 {until} (group '{group}'): a partition may move only after its \
                                 owner revoked it or was fenced, and no fencing of {} was \
                                 observed before the move.",
                                b.subject, b.start_ms, a.subject, a.start_ms, a.subject
                            ),
                        )
                        .subject(&b.subject)
                        .tp(&tp),
                    );
                }
            }
        }
    }

    fn revoked_subset(history: &History, out: &mut Vec<Violation>) {
        let mut tracker = OwnershipTracker::new();
        for e in history.entries() {
            if let Event::Assignment {
                generation,
                revoked,
                lost,
                ..
            } = &e.event
            {
                for (verb, tp) in revoked
                    .iter()
                    .map(|tp| ("revoked", tp))
                    .chain(lost.iter().map(|tp| ("lost", tp)))
                {
                    if !tracker.owns(&e.subject, tp) {
                        out.push(
                            Violation::new(
                                ViolationKind::RevokedNotOwned,
                                e.at_ms,
                                format!(
                                    "{} {verb} {tp} in generation {generation} at {}ms without \
                                     owning it: a member can only give back what it owns \
                                     (cooperative rule revoked ⊆ owned).",
                                    e.subject, e.at_ms
                                ),
                            )
                            .subject(&e.subject)
                            .tp(tp),
                        );
                    }
                }
            }
            tracker.apply(e);
        }
    }
}

impl Checker for ExclusiveOwnership {
    fn name(&self) -> &'static str {
        "exclusive-ownership"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        match self.mode {
            OwnershipMode::Generation => Self::by_generation(history, &mut out),
            OwnershipMode::Windows => self.by_windows(history, &mut out),
        }
        if self.check_revoked_subset {
            Self::revoked_subset(history, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::history::CallbackKind;

    fn generation() -> ExclusiveOwnership {
        ExclusiveOwnership {
            mode: OwnershipMode::Generation,
            ..ExclusiveOwnership::default()
        }
    }

    fn clean() -> History {
        history(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(1, &[0, 1])),
            (10, "c0", revoked(1, &[1])),
            (11, "c0", assigned(2, &[])),
            (12, "c1", assigned(2, &[1])),
        ])
    }

    /// The coordinator answering a member's commit `UNKNOWN_MEMBER_ID`: it was fenced.
    fn unknown_member() -> Event {
        Event::Response {
            api: "OffsetCommit".into(),
            correlation: 7,
            node: "coordinator".into(),
            error: Some("UNKNOWN_MEMBER_ID".into()),
            member_id: None,
            generation: None,
        }
    }

    #[test]
    fn handover_passes_both_modes() {
        assert!(ExclusiveOwnership::default().check(&clean()).is_ok());
        let v = generation().check(&clean());
        assert!(v.is_ok(), "{v}");
    }

    #[test]
    fn two_owners_in_one_generation() {
        let h = history(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(2, &[0])),
            (2, "c1", assigned(2, &[0])),
        ]);
        let v = generation().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.kind, ViolationKind::DoubleOwnership);
        assert!(
            first.explanation.contains("c1 owns t-0 in generation 2"),
            "{first}"
        );

        let v = ExclusiveOwnership::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert!(v.violations[0]
            .explanation
            .contains("to the end of the run"));
    }

    #[test]
    fn carried_over_stale_ownership_in_new_generation() {
        // c0 keeps t-0 into generation 3 (stale ownedPartitions) while c1 got it in 3.
        let h = history(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(2, &[0])),
            (5, "c1", assigned(3, &[0])),
            (6, "c0", assigned(3, &[])),
        ]);
        assert!(generation().check(&h).has(ViolationKind::DoubleOwnership));
    }

    fn expelled() -> Event {
        Event::Expelled {
            member_id: "m0".into(),
            reason: "session expired".into(),
        }
    }

    fn leave() -> Event {
        Event::Leave {
            reason: "poll timer expired".into(),
        }
    }

    /// c0 owns t-0 from generation 2; c1 gets it at 5; c0's view ends at 9 with `end`; `fence`
    /// (if any) is added to c0's history at its time.
    fn moved_while_owned(fence: Option<(u64, Event)>, end: Event) -> History {
        let mut h = vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(2, &[0])),
            (5, "c1", assigned(4, &[0])),
            (9, "c0", end),
        ];
        if let Some((at, event)) = fence {
            h.push((at, "c0", event));
        }
        h.sort_by_key(|(at, ..)| *at);
        history(h)
    }

    /// The old excuse counted every period ending in `lost` (or a crash) as fenced: a consumer
    /// that keeps partitions that moved and only later reports them lost passed.
    #[test]
    fn a_period_ending_lost_or_in_a_crash_is_no_evidence_of_fencing() {
        for end in [lost(2, &[0]), Event::MemberCrash] {
            let v = ExclusiveOwnership::default().check(&moved_while_owned(None, end));
            assert!(v.has(ViolationKind::DoubleOwnership), "{v}");
            assert!(
                v.violations[0].explanation.contains("no fencing of c0"),
                "{v}"
            );
        }
    }

    #[test]
    fn a_zombie_expelled_before_the_move_is_tolerated_until_it_learns() {
        let h = moved_while_owned(Some((4, expelled())), lost(2, &[0]));
        assert!(ExclusiveOwnership::default().check(&h).is_ok());
        let strict = ExclusiveOwnership {
            tolerate_fenced: false,
            ..ExclusiveOwnership::default()
        };
        assert!(strict.check(&h).has(ViolationKind::DoubleOwnership));
    }

    #[test]
    fn a_fence_after_the_move_excuses_nothing() {
        for fence in [expelled(), unknown_member()] {
            let h = moved_while_owned(Some((6, fence)), lost(2, &[0]));
            assert!(ExclusiveOwnership::default()
                .check(&h)
                .has(ViolationKind::DoubleOwnership));
        }
    }

    #[test]
    fn a_zombie_told_unknown_member_before_revoking_on_close_is_tolerated() {
        let h = moved_while_owned(Some((4, unknown_member())), revoked(2, &[0]));
        assert!(ExclusiveOwnership::default().check(&h).is_ok());
    }

    /// Java's consumer leaves on an expired poll timer and then reports its partitions lost
    /// (`AbstractMembershipManager.transitionToStale`); a member that leaves and then revokes
    /// (a close that leaves first) gave its partitions away before its application finished.
    #[test]
    fn a_leave_excuses_only_a_period_then_reported_lost() {
        let lost_after = moved_while_owned(Some((4, leave())), lost(2, &[0]));
        assert!(ExclusiveOwnership::default().check(&lost_after).is_ok());
        let revoked_after = moved_while_owned(Some((4, leave())), revoked(2, &[0]));
        assert!(ExclusiveOwnership::default()
            .check(&revoked_after)
            .has(ViolationKind::DoubleOwnership));
    }

    #[test]
    fn another_members_fencing_excuses_nothing() {
        let mut h = vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(2, &[0])),
            (4, "c1", expelled()),
            (5, "c1", assigned(4, &[0])),
            (9, "c0", lost(2, &[0])),
        ];
        h.sort_by_key(|(at, ..)| *at);
        assert!(ExclusiveOwnership::default()
            .check(&history(h))
            .has(ViolationKind::DoubleOwnership));
    }

    /// c0 owns t-0 from generation 2; the coordinator gives it to c1 at 5; c0 revokes it at 9
    /// in a callback that returns at 12 — with `fence` added to c0's history at its time.
    fn zombie_revoking(fence: Option<(u64, Event)>) -> History {
        let mut h = vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(2, &[0])),
            (5, "c1", assigned(4, &[0])),
            (9, "c0", cb_start(CallbackKind::Revoked, &[0])),
            (9, "c0", revoked(2, &[0])),
            (12, "c0", cb_end(CallbackKind::Revoked, &[0])),
        ];
        if let Some((at, event)) = fence {
            h.push((at, "c0", event));
        }
        h.sort_by_key(|(at, ..)| *at);
        history(h)
    }

    /// lost-commits seed 789: a KIP-848 member whose heartbeats were starved is fenced in
    /// silence; the commit its `onPartitionsRevoked` makes is the first to hear so. The answer
    /// inside the callback proves the member was fenced *by then*, not before the move: only
    /// the coordinator's expulsion before the move excuses the overlap.
    #[test]
    fn a_fence_heard_inside_on_partitions_revoked_excuses_only_from_before_the_move() {
        let told_at = |at: u64| zombie_revoking(Some((at, unknown_member())));
        for after_move in [10, 13] {
            assert!(ExclusiveOwnership::default()
                .check(&told_at(after_move))
                .has(ViolationKind::DoubleOwnership));
        }
        assert!(ExclusiveOwnership::default().check(&told_at(4)).is_ok());
    }

    /// close-outage seed 443: a KIP-848 member whose requests never reach the coordinator any
    /// more is expelled when its session expires and never hears it; only the coordinator's
    /// record says it was fenced before it revoked on close.
    #[test]
    fn a_zombie_the_coordinator_expelled_in_silence_is_tolerated() {
        let expelled_at = |at: Option<u64>| zombie_revoking(at.map(|at| (at, expelled())));
        assert!(ExclusiveOwnership::default()
            .check(&expelled_at(Some(4)))
            .is_ok());
        for not_before in [None, Some(10), Some(13)] {
            assert!(ExclusiveOwnership::default()
                .check(&expelled_at(not_before))
                .has(ViolationKind::DoubleOwnership));
        }
    }

    /// A fence answer during a later revocation of the same partition says nothing about an
    /// earlier ownership period.
    #[test]
    fn a_later_revocation_does_not_extend_an_earlier_period() {
        let h = history(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(2, &[0])),
            (5, "c1", assigned(4, &[0])),
            (9, "c0", cb_start(CallbackKind::Revoked, &[0])),
            (9, "c0", cb_end(CallbackKind::Revoked, &[0])),
            (9, "c0", revoked(2, &[0])),
            (9, "c1", revoked(4, &[0])),
            (20, "c0", assigned(5, &[0])),
            (30, "c0", cb_start(CallbackKind::Revoked, &[0])),
            (30, "c0", revoked(5, &[0])),
            (35, "c0", unknown_member()),
            (40, "c0", cb_end(CallbackKind::Revoked, &[0])),
        ]);
        assert!(ExclusiveOwnership::default()
            .check(&h)
            .has(ViolationKind::DoubleOwnership));
    }

    /// family-zombie seed 1034: c0 left on an expired poll timer with `t-0`'s assigned callback
    /// queued; c1 got `t-0`; c0's application then ran assigned and lost for it. Nothing was
    /// delivered in between: a late notice, no second owner. A record delivered makes it one.
    #[test]
    fn an_assignment_heard_after_leaving_and_then_lost_is_no_second_owner() {
        let told_late = |between: Option<Event>| {
            let mut h = vec![
                (0, "c0", start()),
                (0, "c1", start()),
                (20, "c0", leave()),
                (22, "c1", assigned(6, &[0])),
                (30, "c0", assigned(-1, &[0])),
            ];
            h.extend(between.map(|e| (30, "c0", e)));
            h.push((30, "c0", lost(-1, &[0])));
            history(h)
        };
        let v = ExclusiveOwnership::default().check(&told_late(None));
        assert!(v.is_ok(), "{v}");
        assert!(ExclusiveOwnership::default()
            .check(&told_late(Some(delivered(0, 0))))
            .has(ViolationKind::DoubleOwnership));
    }

    #[test]
    fn revoking_what_is_not_owned() {
        let h = history(vec![(0, "c0", start()), (1, "c0", revoked(1, &[3]))]);
        let v = ExclusiveOwnership::default().check(&h);
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::RevokedNotOwned);
    }
}
