//! KAFKA-13840 on the legacy model, in simulation mode: after a rolling restart, checkpoint
//! commits fail forever and no FindCoordinator is sent.
#![cfg(madsim)]

use scenarios::jira::kafka_13840;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::Event;

#[test]
fn legacy_checkpoint_commits_never_recover_after_a_rolling_restart() {
    let result = run_in_runtime(kafka_13840::scenario, 1, SubjectKind::Legacy).unwrap();
    for (checker, kind) in [
        ("coordinator-rediscovery", ViolationKind::NotCommitted),
        ("liveness", ViolationKind::NotCommitted),
    ] {
        assert!(
            result
                .report
                .verdicts
                .iter()
                .any(|v| v.checker == checker && v.has(kind)),
            "{checker} should report {kind:?}\n{}",
            result.report
        );
    }
    let last_restart = result.plan.last().unwrap().0;
    let entries = result.history.entries();
    let finds_after = entries
        .iter()
        .filter(|e| e.at_ms > last_restart)
        .filter(|e| matches!(&e.event, Event::Request { api, .. } if api == "FindCoordinator"))
        .count();
    let failed_after = entries
        .iter()
        .filter(|e| e.at_ms > last_restart + 1_000)
        .filter(|e| {
            matches!(&e.event, Event::CommitCompleted { error: Some(err), .. }
                if err == "COORDINATOR_NOT_AVAILABLE")
        })
        .count();
    let ok_after = entries
        .iter()
        .filter(|e| e.at_ms > last_restart + 1_000)
        .filter(|e| matches!(&e.event, Event::CommitCompleted { error: None, .. }))
        .count();
    assert_eq!(finds_after, 0);
    assert!(
        failed_after > 10,
        "{failed_after} failed checkpoint commits"
    );
    assert_eq!(ok_after, 0);
}
