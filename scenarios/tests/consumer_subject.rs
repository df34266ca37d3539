//! Every registered scenario on our consumer: where the legacy model shows the upstream bug,
//! our consumer passes every checker (`SCENARIO_SEEDS` seeds each, default 3; the seeds run
//! in this process one after the other, so a failure prints the scenario and seed to rerun
//! with `cargo sim run NAME --seed N --subject consumer`). Scenarios that found a bug in our
//! consumer not fixed yet are skipped here: a saved regression with `subject = consumer` and
//! an expected failure tracks each, and replays it.
#![cfg(madsim)]

use scenarios::registry;
use scenarios::regression::{saved_dir, Expectation, Regression};
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;

/// The scenarios with a saved, still-failing regression of our consumer.
fn known_consumer_bugs() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(saved_dir()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let Ok(r) = Regression::parse(&text) else {
            continue;
        };
        if r.subject == "consumer" && r.expect != Expectation::Passes {
            names.push(r.scenario);
        }
    }
    names
}

#[test]
fn our_consumer_passes_every_scenario() {
    let seeds: u64 = std::env::var("SCENARIO_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let known = known_consumer_bugs();
    let mut failures = Vec::new();
    for info in registry() {
        if known.iter().any(|k| k == info.name) {
            eprintln!(
                "{}: skipped, a known bug of our consumer (regressions/saved)",
                info.name
            );
            continue;
        }
        for seed in 1..=seeds {
            let result = run_in_runtime(info.build, seed, SubjectKind::Consumer)
                .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", info.name));
            if !result.report.is_ok() {
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
