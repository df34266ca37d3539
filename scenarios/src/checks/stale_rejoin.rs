//! Leaving on poll-timer expiry, then rejoining (KAFKA-16165, KAFKA-16258): *the member state
//! machine never makes an illegal transition* (16165: the poll timer expiring while the member
//! was already LEAVING forced LEAVING→STALE and threw), and *a member that left while still
//! owning partitions reports them lost before it joins again* (16258: the STALE member must run
//! `onPartitionsLost` before rejoining).
//!
//! Judged per subject: any call that returned a background-task failure (our consumer reports
//! a refused transition as `background task failed: invalid member state transition …`) breaks
//! the first rule. For the second, the member's ownership is tracked from its `Assignment`
//! events; after a `Leave` seen at the coordinator outside `close`, the next join heartbeat
//! (`ConsumerGroupHeartbeat` with epoch 0) must come after the partitions still owned at the
//! leave were revoked or lost.

use std::collections::BTreeSet;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, Tp};

/// Errors that mean the background task refused a transition or failed outright.
const INTERNAL: &[&str] = &["invalid member state transition", "background task failed"];

#[derive(Clone, Debug, Default)]
pub struct StaleMemberRejoin {}

fn internal(error: &Option<String>) -> Option<&str> {
    error
        .as_deref()
        .filter(|e| INTERNAL.iter().any(|needle| e.contains(needle)))
}

impl Checker for StaleMemberRejoin {
    fn name(&self) -> &'static str {
        "stale-member-rejoin"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            let mut owned: BTreeSet<Tp> = BTreeSet::new();
            // Partitions owned when the member left, not yet given up.
            let mut left_owning: Option<(u64, BTreeSet<Tp>)> = None;
            let mut closing = false;
            for e in history.of_subject(subject) {
                match &e.event {
                    Event::PollEnd { error, .. } | Event::CloseEnd { error } => {
                        if let Some(error) = internal(error) {
                            out.push(
                                Violation::new(
                                    ViolationKind::CallbackNotCompleted,
                                    e.at_ms,
                                    format!(
                                        "{subject}'s consumer failed internally: {error} \
                                         (KAFKA-16165: poll-timer expiry while leaving must \
                                         not force an illegal transition)"
                                    ),
                                )
                                .subject(subject),
                            );
                        }
                    }
                    Event::CloseStart { .. } => closing = true,
                    Event::Assignment {
                        assigned,
                        revoked,
                        lost,
                        ..
                    } => {
                        for tp in revoked.iter().chain(lost) {
                            owned.remove(tp);
                            if let Some((_, held)) = left_owning.as_mut() {
                                held.remove(tp);
                            }
                        }
                        owned.extend(assigned.iter().cloned());
                    }
                    Event::Leave { .. } if !closing && !owned.is_empty() => {
                        left_owning = Some((e.at_ms, owned.clone()));
                    }
                    Event::Request {
                        api,
                        generation: Some(0),
                        ..
                    } if api == "ConsumerGroupHeartbeat" => {
                        let Some((left_ms, held)) = left_owning.take() else {
                            continue;
                        };
                        if held.is_empty() {
                            continue;
                        }
                        let tps: Vec<String> = held.iter().map(ToString::to_string).collect();
                        out.push(
                            Violation::new(
                                ViolationKind::RevokedNotOwned,
                                e.at_ms,
                                format!(
                                    "{subject} left the group at {left_ms}ms owning [{}] and \
                                     rejoined at {}ms without revoking or losing them first: \
                                     a stale member must run onPartitionsLost before it \
                                     rejoins (KAFKA-16258)",
                                    tps.join(","),
                                    e.at_ms
                                ),
                            )
                            .subject(subject),
                        );
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(assigned: &[i32], revoked: &[i32], lost: &[i32]) -> Event {
        let tps = |ps: &[i32]| ps.iter().map(|p| Tp::new("t", *p)).collect();
        Event::Assignment {
            generation: 1,
            assigned: tps(assigned),
            revoked: tps(revoked),
            lost: tps(lost),
        }
    }

    fn join() -> Event {
        Event::Request {
            api: "ConsumerGroupHeartbeat".into(),
            correlation: 0,
            node: "coordinator".into(),
            member_id: Some("m".into()),
            generation: Some(0),
        }
    }

    fn leave() -> Event {
        Event::Leave {
            reason: "heartbeat epoch -1".into(),
        }
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        StaleMemberRejoin::default().violations(&history)
    }

    #[test]
    fn rejoining_while_still_owning_breaks_it() {
        let v = check(vec![
            (0, join()),
            (100, assignment(&[0, 1], &[], &[])),
            (5_000, leave()),
            (5_200, assignment(&[], &[0], &[])),
            (6_000, join()),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("[t-1]"), "{}", v[0]);
    }

    #[test]
    fn an_illegal_transition_breaks_it() {
        let v = check(vec![(
            9_000,
            Event::CloseEnd {
                error: Some(
                    "background task failed: invalid member state transition from Leaving to Stale"
                        .into(),
                ),
            },
        )]);
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn losing_before_rejoining_or_leaving_on_close_passes() {
        assert!(check(vec![
            (0, join()),
            (100, assignment(&[0, 1], &[], &[])),
            (5_000, leave()),
            (5_200, assignment(&[], &[0], &[1])),
            (6_000, join()),
            (6_100, assignment(&[0], &[], &[])),
            (9_000, Event::CloseStart { timeout_ms: 5_000 }),
            (9_100, leave()),
            (9_200, Event::CloseEnd { error: None }),
        ])
        .is_empty());
    }
}
