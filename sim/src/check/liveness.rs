//! Liveness after heal: once faults stop, the group settles and catches up.
//!
//! Safety checkers pass on a consumer that does nothing. Many Jira issues are liveness bugs:
//! KAFKA-10793 and KAFKA-13563 (coordinator never rediscovered, commits fail forever),
//! KAFKA-14024 (member never rejoins), KAFKA-18160 (reconciliation stuck), KAFKA-16203
//! (auto-commit silently stops). madsim §4.4: "after faults heal, all records consumed and
//! committed within T virtual seconds" (TigerBeetle's VOPR liveness mode). From the heal time
//! (the last `Healed` event, or configured), each group must stop changing its assignment
//! within `within_ms` and stay unchanged for `stable_for_ms`, and every record acked to a
//! producer must be consumed (and committed, if required) by the group within `within_ms` of
//! the later of its ack and the heal. Only topics the group subscribed to, was assigned or
//! consumed count.

use std::collections::{BTreeMap, BTreeSet};

use super::gaps::KnownGaps;
use super::{Checker, Violation, ViolationKind};
use crate::history::{Event, History, Tp};

#[derive(Clone, Debug)]
pub struct Liveness {
    /// When faults healed; default: the last `Healed` event, else 0.
    pub healed_at_ms: Option<u64>,
    /// How long after the heal (or a later ack) the group has to get there.
    pub within_ms: u64,
    /// How long the assignment must stay unchanged to count as stable.
    pub stable_for_ms: u64,
    /// Also require every acked record to be committed.
    pub require_committed: bool,
    /// Groups to judge; default: every group seen.
    pub groups: Option<BTreeSet<String>>,
    /// Offsets that hold nothing consumable.
    pub gaps: KnownGaps,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            healed_at_ms: None,
            within_ms: 60_000,
            stable_for_ms: 10_000,
            require_committed: false,
            groups: None,
            gaps: KnownGaps::default(),
        }
    }
}

/// What one group touched and did.
#[derive(Debug, Default)]
struct GroupView {
    topics: BTreeSet<String>,
    last_assignment_ms: Option<u64>,
    changes: Vec<u64>,
    /// (tp, offset) → first delivery time.
    consumed: BTreeMap<(Tp, i64), u64>,
}

impl Liveness {
    fn views(history: &History) -> BTreeMap<String, GroupView> {
        let groups = history.groups();
        let mut views: BTreeMap<String, GroupView> = BTreeMap::new();
        for e in history.entries() {
            let Some(group) = groups.get(&e.subject) else {
                continue;
            };
            let view = views.entry(group.clone()).or_default();
            match &e.event {
                Event::Subscribe { topics } => view.topics.extend(topics.iter().cloned()),
                Event::ManualAssign { partitions } => {
                    view.topics
                        .extend(partitions.iter().map(|tp| tp.topic.clone()));
                }
                Event::Assignment {
                    assigned,
                    revoked,
                    lost,
                    ..
                } => {
                    let all = assigned.iter().chain(revoked).chain(lost);
                    view.topics.extend(all.map(|tp| tp.topic.clone()));
                    view.last_assignment_ms = Some(e.at_ms);
                    view.changes.push(e.at_ms);
                }
                Event::Delivered { tp, offset, .. } => {
                    view.topics.insert(tp.topic.clone());
                    view.consumed
                        .entry((tp.clone(), *offset))
                        .or_insert(e.at_ms);
                }
                _ => {}
            }
        }
        views
    }

    fn stability(
        &self,
        group: &str,
        view: &GroupView,
        healed: u64,
        end: u64,
        out: &mut Vec<Violation>,
    ) {
        let Some(last) = view.last_assignment_ms else {
            return;
        };
        let deadline = healed.saturating_add(self.within_ms);
        if last > deadline {
            let late = view.changes.iter().filter(|t| **t > deadline).count();
            out.push(Violation::new(
                ViolationKind::GroupNotStable,
                deadline,
                format!(
                    "group '{group}' was still changing its assignment at {last}ms ({late} \
                     change(s) after {deadline}ms): expected it stable within {}ms of the heal \
                     at {healed}ms.",
                    self.within_ms
                ),
            ));
        } else if end < last.saturating_add(self.stable_for_ms).max(deadline) {
            out.push(Violation::new(
                ViolationKind::LivenessInconclusive,
                end,
                format!(
                    "the history ends at {end}ms, too early to see group '{group}' stable for \
                     {}ms after its last assignment change at {last}ms (bound {deadline}ms).",
                    self.stable_for_ms
                ),
            ));
        }
    }
}

impl Checker for Liveness {
    fn name(&self) -> &'static str {
        "liveness"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let healed = self.healed_at_ms.or(history.healed_at_ms()).unwrap_or(0);
        let end = history.end_ms();
        let acks = history.produce_acks();
        let deletions = history.topic_deletions();
        // A record whose topic was deleted after it was acked is gone: nobody can consume it.
        let deleted_after = |tp: &Tp, acked_ms: u64| {
            deletions
                .iter()
                .any(|(at_ms, topic)| *topic == tp.topic && *at_ms >= acked_ms)
        };
        let mut out = Vec::new();
        for (group, view) in Self::views(history) {
            if self.groups.as_ref().is_some_and(|g| !g.contains(&group)) {
                continue;
            }
            self.stability(&group, &view, healed, end, &mut out);
            // tp → (running max committed offset, when it was reached): increasing steps, so
            // "first committed past o" is a binary search.
            let mut committed: BTreeMap<Tp, Vec<(i64, u64)>> = BTreeMap::new();
            if self.require_committed {
                for (_, ms, tp, offset) in history.committed_sequence(&group) {
                    let steps = committed.entry(tp).or_default();
                    if steps.last().is_none_or(|(max, _)| offset > *max) {
                        steps.push((offset, ms));
                    }
                }
            }
            // (kind, tp) → (first violation, count).
            let mut misses: BTreeMap<(ViolationKind, Tp), (Violation, usize)> = BTreeMap::new();
            let mut miss = |kind: ViolationKind, tp: &Tp, v: Violation| {
                misses.entry((kind, tp.clone())).or_insert((v, 0)).1 += 1;
            };
            for ack in &acks {
                if !view.topics.contains(&ack.tp.topic)
                    || self.gaps.covers(&ack.tp, ack.offset)
                    || deleted_after(&ack.tp, ack.at_ms)
                {
                    continue;
                }
                let deadline = ack.at_ms.max(healed).saturating_add(self.within_ms);
                let what = || {
                    format!(
                        "{}@{} ({}, acked at {}ms)",
                        ack.tp, ack.offset, ack.value, ack.at_ms
                    )
                };
                let consumed_at = view.consumed.get(&(ack.tp.clone(), ack.offset)).copied();
                let consumed_in_time = consumed_at.is_some_and(|t| t <= deadline);
                if !consumed_in_time {
                    let (kind, text) = if consumed_at.is_none() && end < deadline {
                        (
                            ViolationKind::LivenessInconclusive,
                            format!(
                                "group '{group}' had not consumed {} when the history \
                                 ended at {end}ms, before its bound {deadline}ms.",
                                what()
                            ),
                        )
                    } else {
                        let when =
                            consumed_at.map_or("never".to_string(), |t| format!("only at {t}ms"));
                        (
                            ViolationKind::NotAllConsumed,
                            format!(
                                "group '{group}' consumed {} {when}: expected by {deadline}ms \
                                 ({}ms after the later of the ack and the heal at {healed}ms).",
                                what(),
                                self.within_ms
                            ),
                        )
                    };
                    let v = Violation::new(kind, deadline.min(end.max(ack.at_ms)), text)
                        .tp(&ack.tp)
                        .offset(ack.offset);
                    miss(kind, &ack.tp, v);
                }
                if !self.require_committed {
                    continue;
                }
                let committed_at = committed.get(&ack.tp).and_then(|steps| {
                    let i = steps.partition_point(|(max, _)| *max <= ack.offset);
                    steps.get(i).map(|(_, ms)| *ms)
                });
                if committed_at.is_some_and(|t| t <= deadline) {
                    continue;
                }
                let (kind, text) = if committed_at.is_none() && end < deadline {
                    (
                        ViolationKind::LivenessInconclusive,
                        format!(
                            "group '{group}' had not committed past {} when the history \
                             ended at {end}ms, before its bound {deadline}ms.",
                            what()
                        ),
                    )
                } else {
                    let when =
                        committed_at.map_or("never".to_string(), |t| format!("only at {t}ms"));
                    (
                        ViolationKind::NotCommitted,
                        format!(
                            "group '{group}' committed past {} {when}: expected by \
                             {deadline}ms ({}ms after the later of the ack and the heal at \
                             {healed}ms).",
                            what(),
                            self.within_ms
                        ),
                    )
                };
                let v = Violation::new(kind, deadline.min(end.max(ack.at_ms)), text)
                    .tp(&ack.tp)
                    .offset(ack.offset);
                miss(kind, &ack.tp, v);
            }
            for ((_, _), (mut v, count)) in misses {
                if count > 1 {
                    v.explanation
                        .push_str(&format!(" ({} more such records.)", count - 1));
                }
                out.push(v);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn config() -> Liveness {
        Liveness {
            within_ms: 1_000,
            stable_for_ms: 500,
            require_committed: true,
            ..Liveness::default()
        }
    }

    fn run(consume_at: u64, assignment_changes: &[u64], end: u64) -> History {
        run_with(consume_at, assignment_changes, end, Vec::new())
    }

    /// [`run`] with `extra` entries added in time order.
    fn run_with(
        consume_at: u64,
        assignment_changes: &[u64],
        end: u64,
        extra: Vec<(u64, &'static str, Event)>,
    ) -> History {
        let mut h = vec![
            (0, "c0", start()),
            (
                0,
                "c0",
                Event::Subscribe {
                    topics: vec!["t".into()],
                },
            ),
            (1, "producer", acked(0, 0)),
            (2, "producer", acked(0, 1)),
            (
                100,
                "faults",
                Event::Fault {
                    kind: "clog c0".into(),
                },
            ),
            (2_000, "faults", Event::Healed),
        ];
        for t in assignment_changes {
            h.push((*t, "c0", assigned(1, &[0])));
        }
        h.push((consume_at, "c0", delivered(0, 0)));
        h.push((consume_at, "c0", delivered(0, 1)));
        h.push((consume_at + 1, "c0", commit(1, 0, 2)));
        h.push((consume_at + 2, "c0", commit_ok(1)));
        h.push((end, "faults", Event::Note { text: "end".into() }));
        h.extend(extra);
        h.sort_by_key(|(at, ..)| *at);
        history(h)
    }

    #[test]
    fn catching_up_after_heal_passes() {
        let v = config().check(&run(2_500, &[2_100], 4_000));
        assert!(v.is_ok(), "{v}");
    }

    /// A record acked and then deleted with its topic cannot be consumed; one acked after the
    /// deletion (a topic recreated) still must be.
    #[test]
    fn records_of_a_deleted_topic_are_not_owed() {
        let deleted_at = |at_ms: u64| {
            let deletion = Event::Fault {
                kind: "DeleteTopic { topic: \"t\" }".into(),
            };
            run_with(3_500, &[2_100], 4_000, vec![(at_ms, "faults", deletion)])
        };
        let v = config().check(&deleted_at(50));
        assert!(v.is_ok(), "{v}");
        let v = config().check(&deleted_at(0));
        assert!(v.has(ViolationKind::NotAllConsumed), "{v}");
    }

    #[test]
    fn consumption_too_late() {
        let v = config().check(&run(3_500, &[2_100], 4_000));
        assert!(v.has(ViolationKind::NotAllConsumed), "{v}");
        assert!(v.has(ViolationKind::NotCommitted), "{v}");
        let first = v.first().unwrap();
        assert_eq!(first.at_ms, 3_000);
        assert!(first.explanation.contains("only at 3500ms"), "{first}");
        assert!(
            first.explanation.contains("(1 more such records.)"),
            "{first}"
        );
    }

    #[test]
    fn group_never_settles() {
        let v = config().check(&run(2_500, &[2_100, 3_200, 3_900], 4_000));
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::GroupNotStable);
        assert!(v.violations[0]
            .explanation
            .contains("2 change(s) after 3000ms"));
    }

    #[test]
    fn subscriber_without_member_start_that_never_consumes() {
        let h = history(vec![
            (
                0,
                "c0",
                Event::Subscribe {
                    topics: vec!["t".into()],
                },
            ),
            (1, "producer", acked(0, 0)),
            (5_000, "faults", Event::Note { text: "end".into() }),
        ]);
        let v = config().check(&h);
        assert_eq!(v.violations.len(), 2, "{v}");
        assert!(v.has(ViolationKind::NotAllConsumed), "{v}");
        assert!(v.violations[0].explanation.contains("never"), "{v}");
        // A topic the group never touched is not its business.
        let h = history(vec![
            (
                0,
                "c0",
                Event::Subscribe {
                    topics: vec!["u".into()],
                },
            ),
            (1, "producer", acked(0, 0)),
            (5_000, "faults", Event::Note { text: "end".into() }),
        ]);
        assert!(config().check(&h).is_ok());
    }

    #[test]
    fn early_end_is_inconclusive() {
        let mut h = run(2_500, &[2_100], 2_600).entries().to_vec();
        h.retain(|e| !matches!(e.event, Event::Delivered { .. }));
        let h = History::from_events(h.into_iter().map(|e| (e.at_ms, e.subject, e.event)));
        let v = config().check(&h);
        assert!(v.has(ViolationKind::LivenessInconclusive), "{v}");
        assert!(!v.has(ViolationKind::NotAllConsumed), "{v}");
    }
}
