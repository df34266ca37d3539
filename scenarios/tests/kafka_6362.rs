//! KAFKA-6362 on the legacy model following 1.0.0, in simulation mode: after the coordinator
//! moves, assign-mode auto-commit skips itself forever and nothing looks for the coordinator.
#![cfg(madsim)]

use scenarios::jira::kafka_6362;
use scenarios::legacy::LegacyVersion;
use scenarios::runner::{assert_legacy_fails, run_in_runtime};
use scenarios::scenario::Scenario;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::{CommitMode, Event};

#[test]
fn legacy_1_0_0_auto_commit_never_rediscovers_the_coordinator() {
    let result = assert_legacy_fails(
        kafka_6362::scenario,
        1,
        "liveness",
        ViolationKind::NotCommitted,
    );
    // The mechanism: a NOT_COORDINATOR after the move, then no FindCoordinator and no
    // auto-commit request at all for the rest of the run.
    let move_ms = result.plan[1].0;
    let c0: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0" && e.at_ms > move_ms)
        .collect();
    let lost_ms = c0
        .iter()
        .find(|e| {
            matches!(&e.event, Event::Response { api, error: Some(err), .. }
                if api == "OffsetCommit" && err == "NOT_COORDINATOR")
        })
        .map(|e| e.at_ms)
        .expect("an auto-commit hit the old coordinator");
    assert!(!c0.iter().any(|e| e.at_ms > lost_ms
        && matches!(&e.event, Event::Request { api, .. } if api == "FindCoordinator")));
    assert!(!c0.iter().any(|e| e.at_ms > lost_ms + 100
        && matches!(
            &e.event,
            Event::CommitRequested {
                mode: CommitMode::Auto,
                ..
            }
        )));
}

#[test]
fn our_consumer_resumes_auto_commits_on_the_same_seeds() {
    for seed in 1..=3 {
        let result = run_in_runtime(kafka_6362::scenario, seed, SubjectKind::Consumer).unwrap();
        assert!(result.report.is_ok(), "seed {seed}:\n{}", result.report);
    }
}

/// The same scenario on the legacy model's own release, 3.1.0 (one coordinator loss only:
/// the second would be KAFKA-13563).
fn on_3_1_0() -> Scenario {
    Scenario {
        legacy_version: LegacyVersion::V3_1_0,
        ..kafka_6362::scenario()
    }
}

#[test]
fn legacy_3_1_0_auto_commit_looks_the_coordinator_up() {
    let result = run_in_runtime(on_3_1_0, 1, SubjectKind::Legacy).unwrap();
    assert!(result.report.is_ok(), "{}", result.report);
}
