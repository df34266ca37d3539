//! KAFKA-14729 on the legacy model, in simulation mode: the heartbeat thread dies of a
//! malformed response, its failure is rethrown once, and `poll` spins from then on.
#![cfg(madsim)]

use scenarios::jira::kafka_14729;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::Event;

#[test]
fn legacy_poll_spins_after_the_heartbeat_thread_died() {
    let result = run_in_runtime(kafka_14729::scenario, 1, SubjectKind::Legacy).unwrap();
    let verdict = result
        .report
        .verdicts
        .iter()
        .find(|v| v.checker == "app-wakeups")
        .unwrap();
    assert!(verdict.has(ViolationKind::BusyLoop), "{}", result.report);
    // The mechanism: the thread dies, poll rethrows its failure exactly once, and no
    // heartbeat is sent afterwards although the member goes on polling and committing.
    let entries = result.history.entries();
    let died_ms = entries
        .iter()
        .find(|e| matches!(&e.event, Event::Note { text } if text.starts_with("heartbeat thread failed")))
        .map(|e| e.at_ms)
        .expect("the heartbeat thread died");
    let rethrown = entries
        .iter()
        .filter(|e| {
            matches!(&e.event, Event::PollEnd { error: Some(err), .. } if err.starts_with("SchemaException"))
        })
        .count();
    assert_eq!(rethrown, 1, "pollHeartbeat rethrows the failure once");
    let heartbeats_after = entries
        .iter()
        .filter(|e| e.at_ms > died_ms)
        .filter(|e| matches!(&e.event, Event::Request { api, .. } if api == "Heartbeat"))
        .count();
    assert_eq!(heartbeats_after, 0);
    assert!(verdict.violations[0].at_ms > died_ms);
}
