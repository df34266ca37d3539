//! Revocation finishes after a topic deletion: *a member owning partitions of a topic that is
//! deleted gives them up (revoked or lost) within a bound*, however the commit before the
//! revocation fares (KAFKA-16224: the revocation auto-commit retried
//! `UNKNOWN_TOPIC_OR_PARTITION` for the deleted partitions until the rebalance timeout, so the
//! reconciliation — and the member's next assignment — waited that long; KAFKA-13310 is its
//! classic twin).
//!
//! Judged per subject from its `Assignment` events: at each `DeleteTopic` fault, the partitions
//! of that topic it owns must appear in a later `revoked` or `lost` set within `within_ms`.
//! Our consumer records the revoked set when `onPartitionsRevoked` starts, which our design runs
//! only after the revocation commit finished or gave up. Closing, crashing or a history that
//! ends before the bound excuse it.

use std::collections::BTreeSet;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, Tp};

#[derive(Clone, Debug)]
pub struct RevocationFinishes {
    /// How long after the deletion the partitions may still be held.
    pub within_ms: u64,
}

impl Checker for RevocationFinishes {
    fn name(&self) -> &'static str {
        "revocation-finishes"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let deletions = history.topic_deletions();
        let end_ms = history.end_ms();
        let mut out = Vec::new();
        for subject in history.subjects() {
            for (deleted_ms, topic) in &deletions {
                let deadline = deleted_ms + self.within_ms;
                if deadline > end_ms {
                    continue;
                }
                let mut held: BTreeSet<Tp> = BTreeSet::new();
                let mut excused = false;
                for e in history.of_subject(subject) {
                    if e.at_ms > deadline {
                        break;
                    }
                    match &e.event {
                        Event::Assignment {
                            assigned,
                            revoked,
                            lost,
                            ..
                        } => {
                            for tp in revoked.iter().chain(lost) {
                                held.remove(tp);
                            }
                            if e.at_ms < *deleted_ms {
                                held.extend(
                                    assigned.iter().filter(|tp| tp.topic == *topic).cloned(),
                                );
                            }
                        }
                        Event::CloseStart { .. } | Event::MemberCrash => excused = true,
                        _ => {}
                    }
                }
                if excused || held.is_empty() {
                    continue;
                }
                let tps: Vec<String> = held.iter().map(ToString::to_string).collect();
                out.push(
                    Violation::new(
                        ViolationKind::GroupNotStable,
                        deadline,
                        format!(
                            "topic {topic} was deleted at {deleted_ms}ms and {subject} still \
                             held [{}] {}ms later: the revocation must finish even when the \
                             commit before it cannot succeed (KAFKA-16224)",
                            tps.join(","),
                            self.within_ms
                        ),
                    )
                    .subject(subject),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(assigned: &[&str], revoked: &[&str]) -> Event {
        let tps = |ps: &[&str]| {
            ps.iter()
                .map(|s| {
                    let (t, p) = s.split_once('-').unwrap();
                    Tp::new(t, p.parse().unwrap())
                })
                .collect()
        };
        Event::Assignment {
            generation: 1,
            assigned: tps(assigned),
            revoked: tps(revoked),
            lost: Vec::new(),
        }
    }

    fn deletion(at_ms: u64) -> (u64, &'static str, Event) {
        (
            at_ms,
            "faults",
            Event::Fault {
                kind: format!("{:?}", sim::fault::Fault::DeleteTopic { topic: "u".into() }),
            },
        )
    }

    fn check(events: Vec<(u64, &'static str, Event)>) -> Vec<Violation> {
        RevocationFinishes { within_ms: 5_000 }.violations(&History::from_events(events))
    }

    #[test]
    fn holding_a_deleted_topic_past_the_bound_breaks_it() {
        let v = check(vec![
            (100, "c0", assignment(&["t-0", "u-0"], &[])),
            deletion(1_000),
            (9_000, "c0", assignment(&[], &["u-0"])),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 6_000);
        assert!(v[0].explanation.contains("[u-0]"), "{}", v[0]);
    }

    #[test]
    fn a_prompt_revocation_or_an_early_end_passes() {
        assert!(check(vec![
            (100, "c0", assignment(&["t-0", "u-0"], &[])),
            deletion(1_000),
            (1_500, "c0", assignment(&[], &["u-0"])),
            (9_000, "faults", Event::Healed),
        ])
        .is_empty());
        assert!(check(vec![
            (100, "c0", assignment(&["u-0"], &[])),
            deletion(1_000),
            (2_000, "faults", Event::Healed),
        ])
        .is_empty());
    }
}
