//! No partitions lost: *in a scenario whose faults never justify it, no member is fenced or
//! expired*, i.e. no `onPartitionsLost` runs. A member that keeps polling and heartbeating
//! loses its partitions only if its consumer stopped telling the group it is alive
//! (KAFKA-16243: the poll timer expired inside a long `poll`; KAFKA-16026: no poll events;
//! KAFKA-17293: heartbeats kept going to a coordinator that was gone until the session expired).
//!
//! Judged from the application's callbacks (`CallbackStart` of kind `Lost`) and the member's
//! own `Assignment` events with a non-empty `lost`. Closing is excused: a consumer may report
//! its partitions lost while closing after an outage.

use std::collections::BTreeSet;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{CallbackKind, Event, History};

#[derive(Clone, Debug, Default)]
pub struct NoPartitionsLost {}

impl Checker for NoPartitionsLost {
    fn name(&self) -> &'static str {
        "no-partitions-lost"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut closing: BTreeSet<&str> = BTreeSet::new();
        for e in history.entries() {
            let subject = e.subject.as_str();
            let lost = match &e.event {
                Event::CloseStart { .. } => {
                    closing.insert(subject);
                    continue;
                }
                Event::CallbackStart {
                    kind: CallbackKind::Lost,
                    partitions,
                } if !partitions.is_empty() => partitions,
                _ => continue,
            };
            if closing.contains(subject) {
                continue;
            }
            let tps: Vec<String> = lost.iter().map(ToString::to_string).collect();
            out.push(
                Violation::new(
                    ViolationKind::GroupNotStable,
                    e.at_ms,
                    format!(
                        "{subject} lost [{}] at {}ms: it was fenced or expired although it \
                         kept polling and nothing in the scenario cut it off for a session \
                         timeout (KAFKA-16243, KAFKA-17293)",
                        tps.join(","),
                        e.at_ms
                    ),
                )
                .subject(subject),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sim::history::Tp;

    use super::*;

    fn lost(partitions: Vec<Tp>) -> Event {
        Event::CallbackStart {
            kind: CallbackKind::Lost,
            partitions,
        }
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        NoPartitionsLost::default().violations(&history)
    }

    #[test]
    fn a_lost_callback_breaks_it() {
        let v = check(vec![
            (10, Event::PollStart { timeout_ms: 30_000 }),
            (6_000, lost(vec![Tp::new("t", 0)])),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 6_000);
        assert!(v[0].explanation.contains("t-0"), "{}", v[0]);
    }

    #[test]
    fn empty_or_closing_lost_callbacks_pass() {
        assert!(check(vec![
            (10, lost(Vec::new())),
            (20, Event::CloseStart { timeout_ms: 5_000 }),
            (30, lost(vec![Tp::new("t", 1)])),
        ])
        .is_empty());
    }
}
