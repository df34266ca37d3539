//! KAFKA-14024 on the legacy model following 3.2.0, in simulation mode: the partitions are
//! revoked while the pre-revocation auto-commit is in flight; it fails retriably and is never
//! retried, so the next owners start over.
#![cfg(madsim)]

use scenarios::jira::kafka_14024;
use scenarios::runner::assert_legacy_fails;
use sim::check::ViolationKind;
use sim::history::{CallbackKind, CommitMode, Event};

#[test]
fn legacy_3_2_0_revokes_before_its_commit_fails_and_never_retries_it() {
    let result = assert_legacy_fails(
        kafka_14024::scenario,
        1,
        "handover-without-redelivery",
        ViolationKind::DuplicateBeyondBound,
    );
    let c0: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0")
        .collect();
    let auto_commits: Vec<u64> = c0
        .iter()
        .filter_map(|e| match &e.event {
            Event::CommitRequested {
                id,
                mode: CommitMode::Auto,
                offsets,
                ..
            } if !offsets.is_empty() => Some(*id),
            _ => None,
        })
        .collect();
    let first = auto_commits[0];
    let revoked_ms = c0
        .iter()
        .find(|e| {
            matches!(
                &e.event,
                Event::CallbackStart {
                    kind: CallbackKind::Revoked,
                    ..
                }
            )
        })
        .map(|e| e.at_ms)
        .unwrap();
    let failed_ms = c0
        .iter()
        .find(|e| matches!(&e.event, Event::CommitCompleted { id, error: Some(_) } if *id == first))
        .map(|e| e.at_ms)
        .expect("the pre-revocation commit failed");
    assert!(
        revoked_ms < failed_ms,
        "revoked before the commit completed"
    );
    // Only the commit at close follows: nothing retried the failed one.
    assert_eq!(auto_commits.len(), 2, "{auto_commits:?}");
}
