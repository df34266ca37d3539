//! Pattern subscription follows the cluster's topics: *within a bound of a topic being created
//! or grown — and of the cluster's last change, since every change restarts the group's
//! rebalancing — every partition it then has is owned by some member, if the group's pattern
//! matches it; and no member ever owns a partition of a topic the pattern does not match.*
//!
//! Judged from the `CreateTopic` / `CreatePartitions` faults (recorded in their `Debug` form),
//! the heal, and the members' ownership periods. A topic deleted before the bound, a history
//! ending before it, or a deadline after the final closes began (the first `close` after the
//! heal: a member that gave up and closed early excuses nothing) excuses the growth.

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, Tp};

#[derive(Clone, Debug)]
pub struct PatternCoverage {
    /// The group's pattern, as a predicate on topic names.
    pub matches: fn(&str) -> bool,
    /// How long after a topic grew its partitions may still be unowned.
    pub within_ms: u64,
}

/// `CreateTopic { topic: "u", partitions: 4 }` or `CreatePartitions { topic: "u", count: 4 }`
/// → `("u", 4)`: the partitions the topic has after the fault.
fn growth(kind: &str) -> Option<(&str, i32)> {
    let (rest, field) = match kind.strip_prefix("CreateTopic { topic: \"") {
        Some(rest) => (rest, "\", partitions: "),
        None => (
            kind.strip_prefix("CreatePartitions { topic: \"")?,
            "\", count: ",
        ),
    };
    let (topic, count) = rest.split_once(field)?;
    Some((topic, count.strip_suffix(" }")?.parse().ok()?))
}

impl Checker for PatternCoverage {
    fn name(&self) -> &'static str {
        "pattern-coverage"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let periods = history.ownership_periods();
        let mut out = Vec::new();
        for p in periods.iter().filter(|p| !(self.matches)(&p.tp.topic)) {
            out.push(
                Violation::new(
                    ViolationKind::DoubleOwnership,
                    p.start_ms,
                    format!(
                        "{} was assigned {}, a partition of a topic its pattern does not match",
                        p.subject, p.tp
                    ),
                )
                .subject(&p.subject)
                .tp(&p.tp),
            );
        }
        let end_ms = history.end_ms();
        let deletions = history.topic_deletions();
        let healed_ms = history.healed_at_ms().unwrap_or(0);
        let closing_ms = history
            .entries()
            .iter()
            .find(|e| e.at_ms >= healed_ms && matches!(e.event, Event::CloseStart { .. }))
            .map_or(u64::MAX, |e| e.at_ms);
        for (at_ms, kind) in history.faults() {
            let Some((topic, count)) = growth(kind) else {
                continue;
            };
            let deadline = at_ms.max(healed_ms) + self.within_ms;
            let deleted = deletions
                .iter()
                .any(|(d, t)| *t == topic && *d >= at_ms && *d <= deadline);
            if !(self.matches)(topic) || deleted || deadline > end_ms || deadline > closing_ms {
                continue;
            }
            let unowned: Vec<String> = (0..count)
                .map(|partition| Tp::new(topic, partition))
                .filter(|tp| {
                    !periods.iter().any(|p| {
                        p.tp == *tp
                            && p.start_ms <= deadline
                            && p.end_ms.is_none_or(|e| e > deadline)
                    })
                })
                .map(|tp| tp.to_string())
                .collect();
            if !unowned.is_empty() {
                out.push(Violation::new(
                    ViolationKind::GroupNotStable,
                    deadline,
                    format!(
                        "{kind} at {at_ms}ms: no member owned [{}] at {deadline}ms, {}ms after \
                         the later of the change and the heal at {healed_ms}ms, though the \
                         group's pattern matches {topic}",
                        unowned.join(","),
                        self.within_ms
                    ),
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sim::fault::Fault;

    use super::*;

    fn starts_with_t(topic: &str) -> bool {
        topic.starts_with("t-")
    }

    fn check(entries: Vec<(u64, &'static str, Event)>) -> Vec<Violation> {
        PatternCoverage {
            matches: starts_with_t,
            within_ms: 1_000,
        }
        .violations(&History::from_events(entries))
    }

    fn assigned(tps: &[(&str, i32)]) -> Event {
        Event::Assignment {
            generation: 1,
            assigned: tps.iter().map(|(t, p)| Tp::new(*t, *p)).collect(),
            revoked: Vec::new(),
            lost: Vec::new(),
        }
    }

    /// A fault as the runner records it.
    fn fault(fault: Fault) -> Event {
        Event::Fault {
            kind: format!("{fault:?}"),
        }
    }

    fn kind(f: Fault) -> String {
        format!("{f:?}")
    }

    #[test]
    fn growth_is_read_from_both_faults() {
        let created = kind(Fault::CreateTopic {
            topic: "t-c".into(),
            partitions: 4,
        });
        assert_eq!(growth(&created), Some(("t-c", 4)));
        let grown = kind(Fault::CreatePartitions {
            topic: "t-a".into(),
            count: 9,
        });
        assert_eq!(growth(&grown), Some(("t-a", 9)));
        let deleted = kind(Fault::DeleteTopic {
            topic: "t-a".into(),
        });
        assert_eq!(growth(&deleted), None);
    }

    #[test]
    fn new_partitions_must_be_owned_within_the_bound_after_the_heal() {
        let subscribe = Event::Subscribe { topics: Vec::new() };
        let grown = |owned_at: u64, healed_at: u64| {
            let mut entries = vec![
                (0, "c0", subscribe.clone()),
                (10, "c0", assigned(&[("t-a", 0)])),
                (
                    100,
                    "faults",
                    fault(Fault::CreatePartitions {
                        topic: "t-a".into(),
                        count: 2,
                    }),
                ),
                (healed_at, "faults", Event::Healed),
                (owned_at, "c1", assigned(&[("t-a", 1)])),
                (9_000, "faults", Event::Note { text: "end".into() }),
            ];
            entries.sort_by_key(|(at, ..)| *at);
            check(entries)
        };
        assert!(grown(900, 100).is_empty());
        let late = grown(1_500, 100);
        assert_eq!(late.len(), 1, "{late:?}");
        assert!(late[0].explanation.contains("t-a-1"), "{}", late[0]);
        // A later change (the heal) restarts the clock.
        assert!(grown(1_500, 800).is_empty());
    }

    #[test]
    fn a_partition_outside_the_pattern_is_never_owned() {
        let v = check(vec![
            (0, "c0", Event::Subscribe { topics: Vec::new() }),
            (10, "c0", assigned(&[("t-a", 0), ("x", 0)])),
            (5_000, "faults", Event::Healed),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].tp, Some(Tp::new("x", 0)));
    }
}
