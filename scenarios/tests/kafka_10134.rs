//! KAFKA-10134 on the legacy model following 2.5.0, in simulation mode: while the coordinator
//! is unavailable, `poll` looks for it with a zero timer and spins.
#![cfg(madsim)]

use scenarios::jira::kafka_10134;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::Event;

#[test]
fn legacy_2_5_0_spins_while_the_coordinator_is_gone() {
    let result = run_in_runtime(kafka_10134::scenario, 1, SubjectKind::Legacy).unwrap();
    let verdict = result
        .report
        .verdicts
        .iter()
        .find(|v| v.checker == "app-wakeups")
        .unwrap();
    assert!(verdict.has(ViolationKind::BusyLoop), "{}", result.report);
    // The spin lasts while the coordinator is gone, and stops once it is back.
    let from_ms = result.plan[0].0;
    let healed_ms = result.plan.last().unwrap().0;
    let first = verdict.violations[0].at_ms;
    assert!(first + 1_000 > from_ms && first < healed_ms, "{first}");
    let finds = result
        .history
        .entries()
        .iter()
        .filter(|e| e.at_ms > from_ms && e.at_ms < healed_ms)
        .filter(|e| matches!(&e.event, Event::Request { api, .. } if api == "FindCoordinator"))
        .count();
    assert!(finds > 10, "{finds} lookups while the coordinator was gone");
    let wakeups_after: u64 = result
        .history
        .entries()
        .iter()
        .filter(|e| e.at_ms > healed_ms + 2_000)
        .filter_map(|e| match &e.event {
            Event::Note { text } => text
                .strip_prefix("app-wakeups in poll: ")?
                .parse::<u64>()
                .ok(),
            _ => None,
        })
        .sum();
    let seconds_after = (result.history.end_ms() - healed_ms - 2_000) / 1_000;
    assert!(
        wakeups_after / seconds_after.max(1) < 100,
        "{wakeups_after}"
    );
}
