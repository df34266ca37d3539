//! KAFKA-2942 on the legacy model following 0.9.0.0, in simulation mode: the pipelining
//! `client.poll(0)` runs the due auto-commit with positions past the batch being returned.
#![cfg(madsim)]

use scenarios::jira::kafka_2942;
use scenarios::legacy::LegacyVersion;
use scenarios::runner::{assert_legacy_fails, run_in_runtime};
use scenarios::scenario::Scenario;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::{CommitMode, Event};

#[test]
fn legacy_0_9_0_0_auto_commits_records_not_yet_returned() {
    let result = assert_legacy_fails(
        kafka_2942::scenario,
        1,
        "auto-commit-bound",
        ViolationKind::LostWrite,
    );
    // The mechanism: an auto-commit requested inside a poll (after its PollStart, before its
    // PollEnd) that returned records, covering the last of them.
    let entries: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0")
        .collect();
    let mut inside = 0;
    let mut in_poll = false;
    for e in &entries {
        match &e.event {
            Event::PollStart { .. } => in_poll = true,
            Event::PollEnd { .. } => in_poll = false,
            Event::CommitRequested {
                mode: CommitMode::Auto,
                ..
            } if in_poll => inside += 1,
            _ => {}
        }
    }
    assert!(inside > 0, "no auto-commit inside a poll");
}

#[test]
fn our_consumer_never_commits_ahead_on_the_same_seeds() {
    for seed in 1..=3 {
        let result = run_in_runtime(kafka_2942::scenario, seed, SubjectKind::Consumer).unwrap();
        assert!(result.report.is_ok(), "seed {seed}:\n{}", result.report);
    }
}

/// The same scenario on the legacy model's own release, 3.1.0.
fn on_3_1_0() -> Scenario {
    Scenario {
        legacy_version: LegacyVersion::V3_1_0,
        ..kafka_2942::scenario()
    }
}

#[test]
fn legacy_3_1_0_commits_only_what_was_moved_past() {
    let result = run_in_runtime(on_3_1_0, 1, SubjectKind::Legacy).unwrap();
    let verdict = result
        .report
        .verdicts
        .iter()
        .find(|v| v.checker == "auto-commit-bound")
        .unwrap();
    assert!(verdict.is_ok(), "{}", result.report);
}
