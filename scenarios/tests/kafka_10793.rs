//! KAFKA-10793 on the legacy model following 2.6.1, in simulation mode: during a full cluster
//! bounce the heartbeat thread stores a FindCoordinator future that has already failed; no
//! FindCoordinator is sent again and commits fail forever.
#![cfg(madsim)]

use scenarios::jira::kafka_10793;
use scenarios::legacy::LegacyVersion;
use scenarios::runner::{assert_legacy_fails, run_in_runtime};
use scenarios::scenario::Scenario;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::Event;

#[test]
fn legacy_2_6_1_never_looks_for_the_coordinator_again() {
    let result = assert_legacy_fails(
        kafka_10793::scenario,
        1,
        "coordinator-rediscovery",
        ViolationKind::NotCommitted,
    );
    let healed_ms = result.history.healed_at_ms().expect("the plan heals");
    let c0: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0")
        .collect();
    // The mechanism: the last FindCoordinator went out during the outage and failed; after
    // it, none at all — also once every broker is back — and every commit fails.
    let last_find_ms = c0
        .iter()
        .filter(|e| matches!(&e.event, Event::Request { api, .. } if api == "FindCoordinator"))
        .map(|e| e.at_ms)
        .max()
        .expect("c0 looked for its coordinator");
    assert!(
        last_find_ms < healed_ms,
        "a FindCoordinator at {last_find_ms}ms"
    );
    assert!(c0.iter().any(|e| e.at_ms >= last_find_ms
        && matches!(&e.event, Event::Response { api, error: Some(_), .. } if api == "FindCoordinator")));
    let outcomes: Vec<Option<&str>> = c0
        .iter()
        .filter(|e| e.at_ms > healed_ms)
        .filter_map(|e| match &e.event {
            Event::CommitCompleted { error, .. } => Some(error.as_deref()),
            _ => None,
        })
        .collect();
    assert!(
        outcomes.len() > 100,
        "{} commits after the heal",
        outcomes.len()
    );
    assert!(outcomes.iter().all(Option::is_some), "a commit succeeded");
}

/// The same scenario on the legacy model's own release, 3.1.0 (KAFKA-10793's fix: the future
/// is cleared by `ensureCoordinatorReady` and the heartbeat thread, not by its handler).
fn on_3_1_0() -> Scenario {
    Scenario {
        legacy_version: LegacyVersion::V3_1_0,
        ..kafka_10793::scenario()
    }
}

#[test]
fn legacy_3_1_0_finds_the_coordinator_after_the_bounce() {
    let result = run_in_runtime(on_3_1_0, 1, SubjectKind::Legacy).unwrap();
    assert!(result.report.is_ok(), "{}", result.report);
}

#[test]
fn our_consumer_finds_the_coordinator_on_the_same_seeds() {
    for seed in 1..=3 {
        let result = run_in_runtime(kafka_10793::scenario, seed, SubjectKind::Consumer).unwrap();
        assert!(result.report.is_ok(), "seed {seed}:\n{}", result.report);
    }
}
