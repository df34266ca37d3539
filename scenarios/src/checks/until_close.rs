//! A checker judged on the history up to the first `close` in each group.
//!
//! `close` revokes every partition of a subscribed member (and our consumer records that, as
//! its listener sees it), and hands them to the members still running: `sim::check::Liveness`
//! would count that as the group's assignment still changing at the end of every run. A member
//! leaving is not instability: [`UntilClose`] drops the events of every member of a group from
//! the group's first `CloseStart` on before handing the history to the wrapped checker;
//! producers, faults and other groups stay.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation};
use sim::history::{Event, History};

#[derive(Clone, Debug)]
pub struct UntilClose<C> {
    pub inner: C,
}

impl<C: Checker> Checker for UntilClose<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let groups = history.groups();
        // Group → the seq of its first CloseStart.
        let mut closed: BTreeMap<&str, u64> = BTreeMap::new();
        for e in history.entries() {
            if let (Event::CloseStart { .. }, Some(group)) = (&e.event, groups.get(&e.subject)) {
                closed.entry(group.as_str()).or_insert(e.seq);
            }
        }
        let kept = history
            .entries()
            .iter()
            .filter(|e| {
                groups
                    .get(&e.subject)
                    .and_then(|group| closed.get(group.as_str()))
                    .is_none_or(|close_seq| e.seq < *close_seq)
            })
            .map(|e| (e.at_ms, e.subject.clone(), e.event.clone()));
        self.inner.violations(&History::from_events(kept))
    }
}

/// [`UntilClose`] for groups whose members also leave early (by `close`) while faults are
/// active: only the closes at or after the heal (the history's last `Healed` event) cut the
/// group's history, so an early leave is judged as part of the run, and liveness after the heal
/// is still judged up to the final closes.
#[derive(Clone, Debug)]
pub struct UntilFinalClose<C> {
    pub inner: C,
}

impl<C: Checker> Checker for UntilFinalClose<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let healed = history.healed_at_ms().unwrap_or(0);
        let groups = history.groups();
        let mut closed: BTreeMap<&str, u64> = BTreeMap::new();
        for e in history.entries() {
            if let (Event::CloseStart { .. }, Some(group)) = (&e.event, groups.get(&e.subject)) {
                if e.at_ms >= healed {
                    closed.entry(group.as_str()).or_insert(e.seq);
                }
            }
        }
        let kept = history
            .entries()
            .iter()
            .filter(|e| {
                groups
                    .get(&e.subject)
                    .and_then(|group| closed.get(group.as_str()))
                    .is_none_or(|close_seq| e.seq < *close_seq)
            })
            .map(|e| (e.at_ms, e.subject.clone(), e.event.clone()));
        self.inner.violations(&History::from_events(kept))
    }
}

#[cfg(test)]
mod tests {
    use sim::check::{Liveness, ViolationKind};
    use sim::history::Tp;

    use super::*;

    fn assigned(tps: Vec<Tp>, revoked: Vec<Tp>) -> Event {
        Event::Assignment {
            generation: 1,
            assigned: tps,
            revoked,
            lost: Vec::new(),
        }
    }

    fn history(close_ms: u64) -> History {
        let tp = Tp::new("t", 0);
        History::from_events(vec![
            (0, "c0", Event::MemberStart { group: "g".into() }),
            (10, "c0", assigned(vec![tp.clone()], Vec::new())),
            // Time goes on outside the group.
            (
                close_ms - 1,
                "faults",
                Event::Note {
                    text: "tick".into(),
                },
            ),
            (close_ms, "c0", Event::CloseStart { timeout_ms: 100 }),
            (close_ms + 5, "c0", assigned(Vec::new(), vec![tp])),
            (close_ms + 10, "c0", Event::CloseEnd { error: None }),
            // The member still running takes the partition over.
            (0, "c1", Event::MemberStart { group: "g".into() }),
            (
                close_ms + 2_000,
                "c1",
                assigned(vec![Tp::new("t", 0)], Vec::new()),
            ),
        ])
    }

    fn liveness() -> Liveness {
        Liveness {
            within_ms: 1_000,
            stable_for_ms: 500,
            ..Liveness::default()
        }
    }

    #[test]
    fn closing_and_the_hand_over_it_causes_are_not_instability() {
        assert!(UntilClose { inner: liveness() }
            .violations(&history(5_000))
            .is_empty());
        let bare = liveness().violations(&history(5_000));
        assert!(
            bare.iter().any(|v| v.kind == ViolationKind::GroupNotStable),
            "{bare:?}"
        );
    }

    #[test]
    fn changes_before_close_are_still_judged() {
        let mut events: Vec<_> = history(5_000)
            .entries()
            .iter()
            .map(|e| (e.at_ms, e.subject.clone(), e.event.clone()))
            .collect();
        events.push((
            3_000,
            "c0".to_owned(),
            assigned(vec![Tp::new("t", 1)], Vec::new()),
        ));
        let v = UntilClose { inner: liveness() }.violations(&History::from_events(events));
        assert!(
            v.iter().any(|v| v.kind == ViolationKind::GroupNotStable),
            "{v:?}"
        );
    }
}
