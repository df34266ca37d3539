//! The golden trace of a run: its domain events on virtual time, the part of a history a
//! Kafka engineer reads to follow a rebalance — members starting, crashing and leaving,
//! assignments, rebalance callbacks, failed requests and commits, seeks and resets, faults.
//! Left out is what would bury them or churn on harmless changes: fetched records, successful
//! requests, polls, commit requests (auto-commits every few hundred ms) and free-text notes.
//! Every line is `{at_ms}ms {subject} {event}`: no task ids, no ports.

use sim::history::{Entry, Event, History};

/// Whether `entry` belongs in the golden trace.
pub fn is_domain_event(entry: &Entry) -> bool {
    match &entry.event {
        Event::MemberStart { .. }
        | Event::MemberCrash
        | Event::MemberRestart
        | Event::Subscribe { .. }
        | Event::ManualAssign { .. }
        | Event::Assignment { .. }
        | Event::CallbackStart { .. }
        | Event::CallbackEnd { .. }
        | Event::Seek { .. }
        | Event::PositionReset { .. }
        | Event::Leave { .. }
        | Event::CloseStart { .. }
        | Event::CloseEnd { .. }
        | Event::Fault { .. }
        | Event::Healed => true,
        Event::Response { error, .. }
        | Event::CommitCompleted { error, .. }
        | Event::PollEnd { error, .. } => error.is_some(),
        Event::Request { .. }
        | Event::CallbackNeeded { .. }
        | Event::CallbackCompleted { .. }
        | Event::PollStart { .. }
        | Event::Delivered { .. }
        | Event::CommitRequested { .. }
        | Event::ProduceAcked { .. }
        | Event::Note { .. } => false,
    }
}

/// The golden trace of `history`, one line per domain event.
pub fn domain_trace(history: &History) -> String {
    history.render_filtered(is_domain_event)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(event: Event) -> Entry {
        Entry {
            seq: 0,
            at_ms: 5,
            subject: "c0".to_owned(),
            event,
        }
    }

    #[test]
    fn keeps_group_changes_and_failures_drops_traffic() {
        assert!(is_domain_event(&entry(Event::Assignment {
            generation: 1,
            assigned: vec![],
            revoked: vec![],
            lost: vec![],
        })));
        assert!(is_domain_event(&entry(Event::CommitCompleted {
            id: 1,
            error: Some("REBALANCE_IN_PROGRESS".to_owned()),
        })));
        assert!(!is_domain_event(&entry(Event::CommitCompleted {
            id: 1,
            error: None
        })));
        assert!(!is_domain_event(&entry(Event::PollEnd {
            records: 3,
            error: None
        })));
        assert!(!is_domain_event(&entry(Event::Note {
            text: "loop-counters".to_owned()
        })));
    }
}
