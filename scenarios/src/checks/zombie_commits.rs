//! Zombie commits refused: *once another member has taken a partition over, a commit of that
//! partition by its previous owner never succeeds* — until the previous owner is assigned it
//! again. A member whose poll loop stalled past its session timeout or `max.poll.interval.ms`
//! (a zombie) comes back with records in hand and commits them; the coordinator must refuse the
//! commit (classic: `ILLEGAL_GENERATION` / `UNKNOWN_MEMBER_ID`; KIP-848: `STALE_MEMBER_EPOCH`
//! / `UNKNOWN_MEMBER_ID`), and the consumer must not get around that (a commit without
//! generation, a retry after rejoining with the stale offsets) — else the group's committed
//! offset jumps over or under the new owner's progress.
//!
//! Judged from the members' own views (`Assignment` events, tracked per subject): a commit
//! requested by M for `tp` while the most recent ownership of `tp` to open in M's group is
//! another member's, opened after M's own, and completed without error, breaks it.
//! `CommittedOffsetsMonotonic` catches the same accepted commit only when it moves the offset
//! back; this one catches it either way. A late notice (`History::late_assignment_notices`: an
//! assignment the application heard of after its member left, then lost, nothing done in
//! between) opens no ownership here either, so it does not make the real owner look stale.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, OwnershipChange, OwnershipTracker, Tp};

#[derive(Clone, Debug, Default)]
pub struct ZombieCommitsRefused {}

/// A partition committed while another member owned it: the partition, that owner, since when.
type Stale = (Tp, String, u64);

impl Checker for ZombieCommitsRefused {
    fn name(&self) -> &'static str {
        "zombie-commits-refused"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let groups = history.groups();
        let late = history.late_assignment_notices();
        let mut tracker = OwnershipTracker::new();
        // (group, tp) → (the member whose ownership opened last, when).
        let mut latest: BTreeMap<(String, Tp), (String, u64)> = BTreeMap::new();
        // (subject, tp) → when its own latest ownership opened.
        let mut own: BTreeMap<(String, Tp), u64> = BTreeMap::new();
        // (subject, commit id) → (tps that had a newer owner at the request, that owner).
        let mut pending: BTreeMap<(String, u64), Vec<Stale>> = BTreeMap::new();
        let mut out = Vec::new();
        for e in history.entries() {
            let group = groups.get(&e.subject).cloned().unwrap_or_default();
            for change in tracker.apply(e) {
                if let OwnershipChange::Opened { subject, tp } = change {
                    if late.contains(&(subject.clone(), tp.clone(), e.seq)) {
                        continue;
                    }
                    latest.insert((group.clone(), tp.clone()), (subject.clone(), e.at_ms));
                    own.insert((subject, tp), e.at_ms);
                }
            }
            match &e.event {
                Event::CommitRequested { id, offsets, .. } => {
                    let stale: Vec<Stale> = offsets
                        .iter()
                        .filter_map(|(tp, _)| {
                            let (owner, since) = latest.get(&(group.clone(), tp.clone()))?;
                            let mine = own.get(&(e.subject.clone(), tp.clone()));
                            (*owner != e.subject && mine.is_none_or(|m| m <= since))
                                .then(|| (tp.clone(), owner.clone(), *since))
                        })
                        .collect();
                    if !stale.is_empty() {
                        pending.insert((e.subject.clone(), *id), stale);
                    }
                }
                Event::CommitCompleted { id, error } => {
                    let Some(stale) = pending.remove(&(e.subject.clone(), *id)) else {
                        continue;
                    };
                    if error.is_some() {
                        continue;
                    }
                    for (tp, owner, since) in stale {
                        out.push(
                            Violation::new(
                                ViolationKind::StaleCommitAccepted,
                                e.at_ms,
                                format!(
                                    "{}'s commit {id} of {tp} succeeded although {owner} had \
                                     owned {tp} since {since}ms: a previous owner's (zombie's) \
                                     commit must be refused once the partition moved on.",
                                    e.subject
                                ),
                            )
                            .subject(&e.subject)
                            .tp(&tp),
                        );
                    }
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sim::history::CommitMode;

    use super::*;

    fn assigned(tp: &Tp) -> Event {
        Event::Assignment {
            generation: 1,
            assigned: vec![tp.clone()],
            revoked: Vec::new(),
            lost: Vec::new(),
        }
    }

    fn commit(id: u64, tp: &Tp) -> Event {
        Event::CommitRequested {
            id,
            mode: CommitMode::Async,
            generation: None,
            offsets: vec![(tp.clone(), 5)],
        }
    }

    fn done(id: u64, error: Option<&str>) -> Event {
        Event::CommitCompleted {
            id,
            error: error.map(str::to_owned),
        }
    }

    fn start() -> Event {
        Event::MemberStart { group: "g".into() }
    }

    #[test]
    fn a_zombie_commit_accepted_after_the_handover_breaks_it() {
        let tp = Tp::new("t", 0);
        let history = History::from_events(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (10, "c0", assigned(&tp)),
            (20, "c1", assigned(&tp)),
            (30, "c0", commit(1, &tp)),
            (31, "c0", done(1, None)),
            (40, "c0", commit(2, &tp)),
            (41, "c0", done(2, Some("ILLEGAL_GENERATION"))),
            (50, "c1", commit(1, &tp)),
            (51, "c1", done(1, None)),
        ]);
        let v = ZombieCommitsRefused::default().violations(&history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::StaleCommitAccepted);
        assert_eq!((v[0].at_ms, v[0].subject.as_deref()), (31, Some("c0")));
    }

    #[test]
    fn reacquiring_the_partition_allows_commits_again() {
        let tp = Tp::new("t", 0);
        let history = History::from_events(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (10, "c0", assigned(&tp)),
            (20, "c1", assigned(&tp)),
            (
                22,
                "c0",
                Event::Assignment {
                    generation: -1,
                    assigned: Vec::new(),
                    revoked: Vec::new(),
                    lost: vec![tp.clone()],
                },
            ),
            (25, "c0", assigned(&tp)),
            (30, "c0", commit(1, &tp)),
            (31, "c0", done(1, None)),
        ]);
        assert!(ZombieCommitsRefused::default()
            .violations(&history)
            .is_empty());
    }

    /// family-zombie seed 1034: c0 left, c1 got `t-0`, then c0's application heard of its old
    /// assignment of `t-0` and lost it at once. c1's commits afterwards are the owner's; had
    /// c0 consumed from `t-0` in that window, c1 would rightly look like the stale one.
    #[test]
    fn a_late_notice_to_a_member_that_left_does_not_make_the_owner_stale() {
        let tp = Tp::new("t", 0);
        let notice = |generation| Event::Assignment {
            generation,
            assigned: vec![tp.clone()],
            revoked: Vec::new(),
            lost: Vec::new(),
        };
        let lost = Event::Assignment {
            generation: -1,
            assigned: Vec::new(),
            revoked: Vec::new(),
            lost: vec![tp.clone()],
        };
        let run = |between: Option<Event>| {
            let mut h = vec![
                (0, "c0", start()),
                (0, "c1", start()),
                (
                    20,
                    "c0",
                    Event::Leave {
                        reason: "heartbeat epoch -1".into(),
                    },
                ),
                (22, "c1", assigned(&tp)),
                (30, "c0", notice(-1)),
            ];
            h.extend(between.map(|e| (30, "c0", e)));
            h.extend([
                (30, "c0", lost.clone()),
                (40, "c1", commit(1, &tp)),
                (41, "c1", done(1, None)),
            ]);
            ZombieCommitsRefused::default().violations(&History::from_events(h))
        };
        assert!(run(None).is_empty());
        let delivered = Event::Delivered {
            tp: tp.clone(),
            offset: 0,
            value: "v".into(),
        };
        assert_eq!(run(Some(delivered)).len(), 1);
    }
}
