//! KAFKA-10337 on the legacy model, in simulation mode: `commitSync(emptyMap)` returns before
//! the callback of the `commitAsync` sent just before it.
#![cfg(madsim)]

use scenarios::jira::kafka_10337;
use scenarios::runner::assert_legacy_fails;
use sim::check::ViolationKind;
use sim::history::{CommitMode, Event};

#[test]
fn legacy_commit_sync_without_offsets_does_not_wait_for_async_callbacks() {
    let result = assert_legacy_fails(
        kafka_10337::scenario,
        1,
        "commit-callback-order",
        ViolationKind::CommitCallbackOrder,
    );
    // The mechanism: the barrier returns in zero virtual time, sending nothing.
    let entries = result.history.entries();
    let barriers: Vec<(u64, u64)> = entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::CommitRequested {
                id,
                mode: CommitMode::Sync,
                ..
            } => Some((*id, e.at_ms)),
            _ => None,
        })
        .collect();
    assert!(barriers.len() >= 10, "{} barriers", barriers.len());
    for (id, at) in barriers {
        let done = entries
            .iter()
            .find(|e| matches!(&e.event, Event::CommitCompleted { id: d, error: None } if *d == id))
            .unwrap_or_else(|| panic!("barrier {id} did not complete"));
        assert_eq!(done.at_ms, at, "barrier {id} waited");
    }
    // Every async commit still succeeds: the order, not the commits, is what breaks.
    assert!(result
        .report
        .verdicts
        .iter()
        .filter(|v| v.checker != "commit-callback-order")
        .all(|v| v.is_ok()));
}
