//! KAFKA-8104 on the legacy model following 2.3.0, in simulation mode: the heartbeat thread's
//! poll-timeout leave resets the generation between the join future's success and
//! `onJoinComplete`; every later `poll` throws.
#![cfg(madsim)]

use scenarios::jira::kafka_8104;
use scenarios::legacy::LegacyVersion;
use scenarios::runner::{assert_legacy_fails, run_in_runtime};
use scenarios::scenario::Scenario;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::Event;

#[test]
fn legacy_2_3_0_throws_from_every_poll_after_the_leave() {
    let result = assert_legacy_fails(
        kafka_8104::scenario,
        1,
        "poll-recovers",
        ViolationKind::PollKeepsFailing,
    );
    // The mechanism: c0 left on its poll timeout while idle, then every poll failed with the
    // IllegalStateException of onJoinComplete; c0 never got an assignment again.
    let c0: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0")
        .collect();
    let left_ms = c0
        .iter()
        .find(|e| matches!(&e.event, Event::Leave { reason } if reason.contains("poll timeout")))
        .map(|e| e.at_ms)
        .expect("c0 left on its poll timeout");
    let errors: Vec<&str> = c0
        .iter()
        .filter(|e| e.at_ms > left_ms)
        .filter_map(|e| match &e.event {
            Event::PollEnd {
                error: Some(err), ..
            } => Some(err.as_str()),
            _ => None,
        })
        .collect();
    assert!(errors.len() > 10, "{} failed polls", errors.len());
    assert!(errors
        .iter()
        .all(|e| e.contains("invalid assignment protocol: null")));
    assert!(!c0.iter().any(|e| e.at_ms > left_ms
        && matches!(&e.event, Event::Assignment { assigned, .. } if !assigned.is_empty())));
}

/// The same scenario on the legacy model's own release, 3.1.0 (KAFKA-8104's fix).
fn on_3_1_0() -> Scenario {
    Scenario {
        legacy_version: LegacyVersion::V3_1_0,
        ..kafka_8104::scenario()
    }
}

#[test]
fn legacy_3_1_0_rejoins_after_the_leave() {
    let result = run_in_runtime(on_3_1_0, 1, SubjectKind::Legacy).unwrap();
    let verdict = result
        .report
        .verdicts
        .iter()
        .find(|v| v.checker == "poll-recovers")
        .unwrap();
    assert!(verdict.is_ok(), "{}", result.report);
    assert!(result.history.entries().iter().any(|e| e.subject == "c0"
        && e.at_ms > 19_000
        && matches!(&e.event, Event::Assignment { assigned, .. } if !assigned.is_empty())));
}

#[test]
fn our_consumer_rejoins_on_the_same_seeds() {
    for seed in 1..=3 {
        let result = run_in_runtime(kafka_8104::scenario, seed, SubjectKind::Consumer).unwrap();
        assert!(result.report.is_ok(), "seed {seed}:\n{}", result.report);
    }
}
