//! KAFKA-14196 on the legacy model following 3.2.1, in simulation mode: while the
//! pre-revocation auto-commit is in flight, `poll` goes on returning the partitions' records,
//! and the next owners consume them again.
#![cfg(madsim)]

use scenarios::jira::kafka_14196;
use scenarios::runner::assert_legacy_fails;
use sim::check::ViolationKind;
use sim::history::{CallbackKind, CommitMode, Event};

#[test]
fn legacy_3_2_1_delivers_past_the_pending_commit_then_revokes() {
    let result = assert_legacy_fails(
        kafka_14196::scenario,
        1,
        "handover-without-redelivery",
        ViolationKind::DuplicateBeyondBound,
    );
    // The mechanism: c0's auto-commit before the revocation is sent, then c0 receives records
    // of the same partitions before the revocation callback starts.
    let c0: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0" && e.at_ms > 8_000)
        .collect();
    let commit_ms = c0
        .iter()
        .find(|e| {
            matches!(
                &e.event,
                Event::CommitRequested {
                    mode: CommitMode::Auto,
                    ..
                }
            )
        })
        .map(|e| e.at_ms)
        .expect("c0 committed before revoking");
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
        .expect("c0 revoked");
    let delivered_between = c0
        .iter()
        .filter(|e| e.at_ms > commit_ms && e.at_ms < revoked_ms)
        .filter(|e| matches!(e.event, Event::Delivered { .. }))
        .count();
    assert!(
        revoked_ms - commit_ms >= 500,
        "the revocation waited for the held commit"
    );
    assert!(delivered_between > 10, "{delivered_between} records");
}
