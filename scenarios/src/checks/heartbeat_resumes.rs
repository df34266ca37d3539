//! Heartbeats resume after a coordinator disconnect: *a member whose coordinator connection was
//! reset (no error code) is heartbeating at the live coordinator again within a bound*
//! (KAFKA-17293: the new consumer treated the `DisconnectException` as a plain retriable
//! failure, backed off and retried the same, dead coordinator node, never looking it up again,
//! until the session expired).
//!
//! A `ResetConnections` fault opens a window; every member that had heartbeated before it
//! (`Request` of `Heartbeat` or `ConsumerGroupHeartbeat`) and is not closing must record another
//! heartbeat request within `within_ms`. The runner records requests *as the coordinator saw
//! them*, so a heartbeat sent to a node that is not (or no longer) the coordinator does not
//! count. A history that ends before the bound is not judged.

use std::collections::BTreeSet;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

const HEARTBEATS: &[&str] = &["Heartbeat", "ConsumerGroupHeartbeat"];

#[derive(Clone, Debug)]
pub struct HeartbeatResumes {
    /// How long after the reset the next heartbeat may take.
    pub within_ms: u64,
}

impl Checker for HeartbeatResumes {
    fn name(&self) -> &'static str {
        "heartbeat-resumes"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let resets: Vec<(u64, String)> = history
            .entries()
            .iter()
            .filter_map(|e| match &e.event {
                Event::Fault { kind } if kind.starts_with("ResetConnections") => {
                    Some((e.at_ms, kind.clone()))
                }
                _ => None,
            })
            .collect();
        let end_ms = history.end_ms();
        let mut out = Vec::new();
        for subject in history.subjects() {
            let heartbeats: Vec<u64> = history
                .of_subject(subject)
                .filter(|e| {
                    matches!(&e.event, Event::Request { api, .. } if HEARTBEATS.contains(&api.as_str()))
                })
                .map(|e| e.at_ms)
                .collect();
            let closing_at = history.of_subject(subject).find_map(|e| match e.event {
                Event::CloseStart { .. } => Some(e.at_ms),
                _ => None,
            });
            let mut judged = BTreeSet::new();
            for (reset_ms, kind) in &resets {
                let deadline = reset_ms + self.within_ms;
                let member = heartbeats.iter().any(|t| t < reset_ms);
                let closing = closing_at.is_some_and(|c| c <= deadline);
                if !member || closing || deadline > end_ms || !judged.insert(*reset_ms) {
                    continue;
                }
                if !heartbeats.iter().any(|t| t >= reset_ms && *t <= deadline) {
                    out.push(
                        Violation::new(
                            ViolationKind::GroupNotStable,
                            deadline,
                            format!(
                                "{subject} heartbeated before the coordinator connection was \
                                 reset at {reset_ms}ms ({kind}) but the coordinator saw no \
                                 heartbeat from it within {}ms: a disconnect must mark the \
                                 coordinator unknown and trigger rediscovery (KAFKA-17293)",
                                self.within_ms
                            ),
                        )
                        .subject(subject),
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heartbeat(at_ms: u64) -> (u64, &'static str, Event) {
        (
            at_ms,
            "c0",
            Event::Request {
                api: "ConsumerGroupHeartbeat".into(),
                correlation: 0,
                node: "coordinator".into(),
                member_id: Some("m".into()),
                generation: Some(1),
            },
        )
    }

    fn reset(at_ms: u64) -> (u64, &'static str, Event) {
        (
            at_ms,
            "faults",
            Event::Fault {
                kind: "ResetConnections { broker: 2 }".into(),
            },
        )
    }

    fn check(events: Vec<(u64, &'static str, Event)>) -> Vec<Violation> {
        HeartbeatResumes { within_ms: 3_000 }.violations(&History::from_events(events))
    }

    #[test]
    fn silence_after_a_reset_breaks_it() {
        let v = check(vec![
            heartbeat(1_000),
            heartbeat(6_000),
            reset(7_000),
            heartbeat(11_000),
            (20_000, "faults", Event::Healed),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 10_000);
        assert_eq!(v[0].subject.as_deref(), Some("c0"));
    }

    #[test]
    fn a_prompt_heartbeat_a_non_member_or_an_early_end_pass() {
        assert!(check(vec![
            heartbeat(1_000),
            reset(7_000),
            heartbeat(8_500),
            (20_000, "faults", Event::Healed),
        ])
        .is_empty());
        assert!(check(vec![reset(7_000), (20_000, "faults", Event::Healed)]).is_empty());
        assert!(check(vec![
            heartbeat(1_000),
            reset(7_000),
            (8_000, "faults", Event::Healed)
        ])
        .is_empty());
    }
}
