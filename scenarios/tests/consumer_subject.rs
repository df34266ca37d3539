//! Every registered scenario on our consumer: where the legacy model shows the upstream bug,
//! our consumer passes every checker (`SCENARIO_SEEDS` seeds each, default 3; the seeds run
//! in this process one after the other, so a failure prints the scenario and seed to rerun
//! with `cargo sim run NAME --seed N --subject consumer`).
//!
//! Known bugs of our consumer are saved as regressions (`regressions/saved/*.regression` with
//! `subject = consumer` and `expect = fails <checker> <kind>`, replayed by
//! `cargo stest -p regressions`); here, the seed of such a regression may fail *that*
//! checker and no other, so its remaining invariants stay guarded until the fix lands (then
//! the regression's `expect` becomes `passes` and this exemption disappears with it).
#![cfg(madsim)]

use scenarios::registry;
use scenarios::regression::known_consumer_failures;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;

#[test]
fn our_consumer_passes_every_scenario() {
    let seeds: u64 = std::env::var("SCENARIO_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let known = known_consumer_failures().unwrap();
    let mut failures = Vec::new();
    for info in registry() {
        for seed in 1..=seeds {
            let excused = known
                .get(&(info.name.to_owned(), seed))
                .cloned()
                .unwrap_or_default();
            let result = run_in_runtime(info.build, seed, SubjectKind::Consumer)
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", info.name));
            let unexpected = result
                .report
                .verdicts
                .iter()
                .any(|v| !v.is_ok() && !excused.contains(v.checker));
            if unexpected {
                failures.push(format!(
                    "{} seed {seed} ({}):\n{}",
                    info.name,
                    result.repro(),
                    result.report
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The runner's coordinator-side observer (`runner/observer.rs`) is what lets the group
/// checkers judge our consumer: heartbeats of both protocols, the leave on close and the
/// auto-commits must all be in the history.
#[test]
fn the_coordinator_reports_our_consumers_group_traffic() {
    use sim::history::{CommitMode, Event};

    let info = scenarios::find("kafka-16243").unwrap();
    let result = run_in_runtime(info.build, 1, SubjectKind::Consumer).unwrap();
    let of = |subject: &str, wanted: &dyn Fn(&Event) -> bool| {
        result.history.of_subject(subject).any(|e| wanted(&e.event))
    };
    for (subject, heartbeat) in [("c0", "ConsumerGroupHeartbeat"), ("c2", "JoinGroup")] {
        assert!(
            of(
                subject,
                &|e| matches!(e, Event::Request { api, .. } if api == heartbeat)
            ),
            "{subject}: no {heartbeat} observed"
        );
        assert!(
            of(subject, &|e| matches!(e, Event::Leave { .. })),
            "{subject}: no leave observed on close"
        );
        assert!(
            of(subject, &|e| matches!(
                e,
                Event::CommitRequested {
                    mode: CommitMode::Auto,
                    ..
                }
            )),
            "{subject}: no auto-commit observed"
        );
    }
}
