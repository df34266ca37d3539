//! Every registered scenario on our consumer: where the legacy model shows the upstream bug,
//! our consumer passes every checker (`SCENARIO_SEEDS` seeds each, default 3; the seeds run
//! in this process one after the other, so a failure prints the scenario and seed to rerun
//! with `cargo sim run NAME --seed N --subject consumer`).
#![cfg(madsim)]

use scenarios::registry;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;

#[test]
fn our_consumer_passes_every_scenario() {
    let seeds: u64 = std::env::var("SCENARIO_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let mut failures = Vec::new();
    for info in registry() {
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
