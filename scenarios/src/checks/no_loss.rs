//! No spurious loss: *a member that nothing cuts off from the group, and whose application
//! polls within `max.poll.interval.ms`, keeps its membership — it is never told it lost its
//! partitions.* KAFKA-4160: the rebalance listener ran holding the coordinator monitor, the
//! heartbeat thread could not send, and a slow callback got the member expelled.
//!
//! Judged from the application's own events: any `Assignment` with lost partitions breaks it.
//! Assert it only in scenarios whose faults cannot fence a member (latency, slow callbacks
//! within the poll interval), where every loss is the consumer's own doing.

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

#[derive(Clone, Debug, Default)]
pub struct NoSpuriousLoss {}

impl Checker for NoSpuriousLoss {
    fn name(&self) -> &'static str {
        "no-spurious-loss"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            let Some((at_ms, lost)) = history.of_subject(subject).find_map(|e| match &e.event {
                Event::Assignment { lost, .. } if !lost.is_empty() => Some((e.at_ms, lost)),
                _ => None,
            }) else {
                continue;
            };
            let names: Vec<String> = lost.iter().map(ToString::to_string).collect();
            out.push(
                Violation::new(
                    ViolationKind::SpuriousLoss,
                    at_ms,
                    format!(
                        "{subject} lost [{}] although no fault could fence it: the coordinator \
                         expired a member that was still polling (heartbeats starved, \
                         KAFKA-4160)",
                        names.join(",")
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

    fn assignment(lost: Vec<Tp>) -> Event {
        Event::Assignment {
            generation: 1,
            assigned: Vec::new(),
            revoked: Vec::new(),
            lost,
        }
    }

    #[test]
    fn a_loss_breaks_it_once_per_member() {
        let history = History::from_events(vec![
            (10, "c0", assignment(vec![Tp::new("t", 0)])),
            (20, "c0", assignment(vec![Tp::new("t", 1)])),
            (30, "c1", assignment(Vec::new())),
        ]);
        let v = NoSpuriousLoss::default().violations(&history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::SpuriousLoss);
        assert_eq!((v[0].at_ms, v[0].subject.as_deref()), (10, Some("c0")));
    }

    #[test]
    fn orderly_revocations_satisfy_it() {
        let history = History::from_events(vec![(
            10,
            "c0",
            Event::Assignment {
                generation: 1,
                assigned: Vec::new(),
                revoked: vec![Tp::new("t", 0)],
                lost: Vec::new(),
            },
        )]);
        assert!(NoSpuriousLoss::default().violations(&history).is_empty());
    }
}
