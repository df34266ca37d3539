//! KAFKA-4160 on the legacy model following trunk before the fix, in simulation mode: the
//! listener holds the coordinator monitor, the heartbeat thread starves and the member is
//! expelled.
#![cfg(madsim)]

use scenarios::jira::kafka_4160;
use scenarios::runner::assert_legacy_fails;
use sim::check::ViolationKind;
use sim::history::{CallbackKind, Event};

#[test]
fn legacy_listener_holding_the_monitor_starves_heartbeats() {
    let result = assert_legacy_fails(
        kafka_4160::scenario,
        1,
        "no-spurious-loss",
        ViolationKind::SpuriousLoss,
    );
    // The mechanism: no heartbeat from c0 while its 12 s onPartitionsAssigned runs, then
    // UNKNOWN_MEMBER_ID on the first one after it.
    let c0: Vec<_> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0")
        .collect();
    let window = |kind_is_start: bool| {
        c0.iter()
            .find(|e| match &e.event {
                Event::CallbackStart {
                    kind: CallbackKind::Assigned,
                    ..
                } => kind_is_start,
                Event::CallbackEnd {
                    kind: CallbackKind::Assigned,
                    ..
                } => !kind_is_start,
                _ => false,
            })
            .map(|e| e.at_ms)
            .unwrap()
    };
    let (start_ms, end_ms) = (window(true), window(false));
    assert!(end_ms - start_ms >= 12_000);
    let heartbeats_inside = c0
        .iter()
        .filter(|e| e.at_ms > start_ms && e.at_ms < end_ms)
        .filter(|e| matches!(&e.event, Event::Request { api, .. } if api == "Heartbeat"))
        .count();
    assert_eq!(heartbeats_inside, 0);
    assert!(c0.iter().any(|e| e.at_ms >= end_ms
        && matches!(&e.event, Event::Response { api, error: Some(err), .. }
            if api == "Heartbeat" && err == "UNKNOWN_MEMBER_ID")));
}
