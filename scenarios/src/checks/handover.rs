//! Handover without re-delivery: *after a member gives a partition back in an orderly way
//! (revoked, not lost), whoever owns it next — another member or the same one — starts after
//! the last record the previous owner's application received.* That is the eager protocol's
//! contract under `enable.auto.commit`: `onJoinPrepare` commits `allConsumed()` before
//! revoking. KAFKA-14196 broke it in 3.2.1–3.2.2 (fetching went on while the pre-revocation
//! commit was in flight), KAFKA-14024 in 3.2.0 (revocation without waiting for that commit,
//! whose retriable failure was never retried).
//!
//! Judged from what the application sees: deliveries and `Assignment` events. A loss
//! (`Assignment.lost`), a crash or a restart excuses the records before it. Assert it only
//! where auto-commit is on and the commit before revocation can succeed within the rebalance
//! timeout.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, Tp};

#[derive(Clone, Debug, Default)]
pub struct HandoverWithoutRedelivery {}

/// A partition given back: by whom, the last offset its application had received, and when.
struct Handover {
    from: String,
    last: i64,
    at_ms: u64,
}

impl Checker for HandoverWithoutRedelivery {
    fn name(&self) -> &'static str {
        "handover-without-redelivery"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        // (subject, tp) → the highest offset delivered in its current ownership.
        let mut delivered: BTreeMap<(String, Tp), i64> = BTreeMap::new();
        let mut handed: BTreeMap<Tp, Handover> = BTreeMap::new();
        for e in history.entries() {
            let subject = e.subject.as_str();
            match &e.event {
                Event::Delivered { tp, offset, .. } => {
                    if let Some(h) = handed.remove(tp) {
                        if *offset <= h.last {
                            out.push(
                                Violation::new(
                                    ViolationKind::DuplicateBeyondBound,
                                    e.at_ms,
                                    format!(
                                        "{subject} started {tp} at offset {offset} although \
                                         {} had received up to {} before revoking it at \
                                         {}ms: {} record(s) delivered again after an orderly \
                                         handover with auto-commit (KAFKA-14196, KAFKA-14024)",
                                        h.from,
                                        h.last,
                                        h.at_ms,
                                        h.last - offset + 1
                                    ),
                                )
                                .subject(subject)
                                .tp(tp)
                                .offset(*offset),
                            );
                        }
                    }
                    let max = delivered
                        .entry((subject.to_owned(), tp.clone()))
                        .or_insert(*offset);
                    *max = (*max).max(*offset);
                }
                Event::Assignment { revoked, lost, .. } => {
                    for tp in revoked {
                        if let Some(last) = delivered.remove(&(subject.to_owned(), tp.clone())) {
                            handed.insert(
                                tp.clone(),
                                Handover {
                                    from: subject.to_owned(),
                                    last,
                                    at_ms: e.at_ms,
                                },
                            );
                        }
                    }
                    for tp in lost {
                        delivered.remove(&(subject.to_owned(), tp.clone()));
                    }
                }
                Event::MemberCrash | Event::MemberRestart => {
                    delivered.retain(|(s, _), _| s != subject);
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deliver(offset: i64) -> Event {
        Event::Delivered {
            tp: Tp::new("t", 0),
            offset,
            value: format!("v{offset}"),
        }
    }

    fn give_back(revoked: bool) -> Event {
        let tps = vec![Tp::new("t", 0)];
        Event::Assignment {
            generation: 1,
            assigned: Vec::new(),
            revoked: if revoked { tps.clone() } else { Vec::new() },
            lost: if revoked { Vec::new() } else { tps },
        }
    }

    fn check(events: Vec<(u64, &str, Event)>) -> Vec<Violation> {
        HandoverWithoutRedelivery::default().violations(&History::from_events(events))
    }

    #[test]
    fn the_next_owner_starting_below_the_last_delivery_breaks_it() {
        let v = check(vec![
            (10, "c0", deliver(0)),
            (11, "c0", deliver(1)),
            (12, "c0", deliver(2)),
            (20, "c0", give_back(true)),
            (30, "c1", deliver(1)),
            (31, "c1", deliver(2)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::DuplicateBeyondBound);
        assert_eq!((v[0].at_ms, v[0].offset), (30, Some(1)));
        assert!(v[0].explanation.contains("2 record(s)"), "{}", v[0]);
    }

    #[test]
    fn a_clean_handover_or_a_loss_satisfies_it() {
        assert!(check(vec![
            (10, "c0", deliver(0)),
            (20, "c0", give_back(true)),
            (30, "c0", deliver(1)),
        ])
        .is_empty());
        assert!(check(vec![
            (10, "c0", deliver(4)),
            (20, "c0", give_back(false)),
            (30, "c1", deliver(2)),
        ])
        .is_empty());
    }
}
