//! The golden coordinator trace of KAFKA-13563 on the legacy model. Its own test binary, so
//! the run is the first simulation of its process and replays exactly (see
//! `kafka_13563.rs::same_seed_same_history`).
#![cfg(madsim)]

use scenarios::jira::kafka_13563;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::history::{Entry, Event};

/// The coordinator path of seed 1: faults, discovery, coordinator requests, failed commits —
/// up to 300 ms after the second loss. No deliveries, no fetches, no ports or task ids.
#[test]
fn golden_coordinator_trace_seed_1() {
    let result = run_in_runtime(kafka_13563::scenario, 1, SubjectKind::Legacy).unwrap();
    let until = result.plan.last().unwrap().0 + 300;
    let coordinator_path = |e: &Entry| {
        e.at_ms <= until
            && match &e.event {
                Event::Request { api, .. } => api == "FindCoordinator" || api == "OffsetFetch",
                Event::Response { api, error, .. } => {
                    api == "FindCoordinator"
                        || api == "OffsetFetch"
                        || (api == "OffsetCommit" && error.is_some())
                }
                Event::CommitCompleted { error, .. } => error.is_some(),
                Event::Fault { .. } | Event::Healed | Event::Note { .. } => true,
                Event::MemberStart { .. } | Event::ManualAssign { .. } => true,
                _ => false,
            }
    };
    insta::assert_snapshot!(result.history.render_filtered(coordinator_path));
}
