//! The golden trace of a run: its domain events on virtual time, the part of a history a
//! Kafka engineer reads to follow a rebalance — members starting, crashing and leaving,
//! assignments, rebalance callbacks, failed requests and commits, seeks and resets, faults.
//! Left out is what would bury them or churn on harmless changes: fetched records, successful
//! requests, polls, commit requests (auto-commits every few hundred ms) and free-text notes.
//! Every line is `{at_ms}ms {subject} {event}`: no task ids, no ports.

use std::collections::BTreeMap;

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
        | Event::Expelled { .. }
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

/// The golden trace of `history`, one line per domain event. Repeats of a subject's previous
/// event (a request failing the same way on every retry, a `poll` rethrowing), whatever the
/// other subjects did meanwhile, fold into that line as a count, so the trace stays readable
/// and a change in the number of retries still shows.
pub fn domain_trace(history: &History) -> String {
    struct Line {
        text: String,
        repeats: u64,
        last_ms: u64,
    }
    let mut lines: Vec<Line> = Vec::new();
    // Per subject: its last line's index and that event without correlation ids.
    let mut last: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    for entry in history.entries().iter().filter(|e| is_domain_event(e)) {
        let key = without_correlation(&entry.event.to_string());
        match last.get(entry.subject.as_str()) {
            Some((index, previous)) if *previous == key => {
                let line = &mut lines[*index];
                line.repeats += 1;
                line.last_ms = entry.at_ms;
            }
            _ => {
                last.insert(&entry.subject, (lines.len(), key));
                lines.push(Line {
                    text: entry.to_string(),
                    repeats: 0,
                    last_ms: entry.at_ms,
                });
            }
        }
    }
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.text);
        if line.repeats > 0 {
            out.push_str(&format!(
                "  (and {} more until {}ms)",
                line.repeats, line.last_ms
            ));
        }
        out.push('\n');
    }
    out
}

/// An event line without its request correlation ids (`#17`), which differ on every retry.
fn without_correlation(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
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
    fn correlation_ids_do_not_tell_retries_apart() {
        assert_eq!(
            without_correlation("<- FindCoordinator#17 broker-1 err=X"),
            "<- FindCoordinator broker-1 err=X"
        );
        assert_eq!(without_correlation("a # b #x"), "a # b #x");
    }

    #[test]
    fn a_subjects_repeats_fold_into_one_line_across_other_subjects() {
        let recorder = sim::history::Recorder::new();
        let failed = |correlation| Event::Response {
            api: "FindCoordinator".to_owned(),
            correlation,
            node: "broker-1".to_owned(),
            error: Some("COORDINATOR_NOT_AVAILABLE".to_owned()),
            member_id: None,
            generation: None,
        };
        recorder.record(10, "c0", failed(1));
        recorder.record(11, "c1", Event::MemberCrash);
        recorder.record(20, "c0", failed(2));
        recorder.record(30, "c0", failed(3));
        recorder.record(40, "c0", Event::Healed);
        recorder.record(50, "c0", failed(4));
        let trace = domain_trace(&recorder.snapshot());
        let lines: Vec<&str> = trace.lines().collect();
        assert_eq!(lines.len(), 4, "{trace}");
        assert!(lines[0].ends_with("(and 2 more until 30ms)"), "{trace}");
        assert!(lines[1].contains("crash"), "{trace}");
        assert!(
            !lines[3].contains("more"),
            "a repeat after another event: {trace}"
        );
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
