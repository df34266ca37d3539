//! Golden domain traces (`scenarios::golden`) of curated seeds of every Jira scenario, as
//! insta snapshots: our consumer on seeds 1 and 2, and the legacy model on seed 1 wherever a
//! saved legacy regression shows the scenario's bug on it. (The families draw their whole
//! fault plan from the seed; their traces are long and they are judged by `cargo sim explore`.) A behaviour change in the
//! consumer, the legacy model or the simulated cluster shows up here as a reviewable diff
//! (`cargo insta review`); an intended one is accepted with `INSTA_UPDATE=always`.
//!
//! Each run is `cargo sim run NAME --seed N --subject S --golden` in its own process: a seed
//! replays byte for byte only as the first simulation of a process (tokio's `select!` RNG).
#![cfg(madsim)]

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Mutex;

use scenarios::regression::{saved_dir, Regression};

/// Scenarios with a saved regression of the legacy model.
fn legacy_scenarios() -> BTreeSet<String> {
    let Ok(dir) = std::fs::read_dir(saved_dir()) else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "regression"))
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            let r = Regression::parse(&text).ok()?;
            (r.subject == "legacy").then_some(r.scenario)
        })
        .collect()
}

/// The stdout of `cargo sim run SCENARIO --seed N --subject S --FLAG` in a fresh process
/// (`golden`: header, fault plan, domain trace, checker report, verdict; `history`: the whole
/// history). A run that ends in neither a verdict pass (0) nor fail (1) fails the test.
fn sim_run(scenario: &str, seed: u64, subject: &str, flag: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sim"))
        .args(["run", scenario, "--seed", &seed.to_string()])
        .args(["--subject", subject, flag])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{scenario} seed {seed} {subject}: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn golden_traces_of_curated_seeds() {
    let legacy = legacy_scenarios();
    let mut runs: Vec<(&'static str, u64, &'static str)> = Vec::new();
    for info in scenarios::registry()
        .iter()
        .filter(|i| i.name.starts_with("kafka-"))
    {
        runs.push((info.name, 1, "consumer"));
        runs.push((info.name, 2, "consumer"));
        if legacy.contains(info.name) {
            runs.push((info.name, 1, "legacy"));
        }
    }
    // Two runs at a time (the CI machine has two cores), snapshots compared in order after.
    let next = Mutex::new(runs.iter());
    let traces = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let Some(&(scenario, seed, subject)) = next.lock().unwrap().next() else {
                    break;
                };
                let trace = sim_run(scenario, seed, subject, "--golden");
                traces
                    .lock()
                    .unwrap()
                    .push((format!("{scenario}-{subject}-seed-{seed}"), trace));
            });
        }
    });
    let mut traces = traces.into_inner().unwrap();
    traces.sort();
    assert_eq!(traces.len(), runs.len());
    for (name, trace) in traces {
        insta::assert_snapshot!(name, trace);
    }
}

/// The whole history (every request, record and poll, not only the domain events) of a sample
/// of scenarios, run twice in fresh processes: byte-identical, or a seed would not replay.
/// The sample takes every fourth scenario of the registry, seed 3, both subjects where the
/// legacy model runs the scenario.
#[test]
fn a_sample_of_scenarios_replays_byte_for_byte() {
    let legacy = legacy_scenarios();
    let history = |scenario: &str, subject: &str| sim_run(scenario, 3, subject, "--history");
    let mut compared = 0;
    for info in scenarios::registry().iter().step_by(4) {
        let mut subjects = vec!["consumer"];
        if legacy.contains(info.name) {
            subjects.push("legacy");
        }
        for subject in subjects {
            let (first, second) = std::thread::scope(|scope| {
                let a = scope.spawn(|| history(info.name, subject));
                let b = scope.spawn(|| history(info.name, subject));
                (a.join().unwrap(), b.join().unwrap())
            });
            assert!(
                first.len() > 1_000,
                "{} {subject}: a real history",
                info.name
            );
            assert!(
                first == second,
                "{} seed 3 {subject}: two runs of the same seed differ",
                info.name
            );
            compared += 1;
        }
    }
    assert!(compared >= 5, "sampled {compared} runs");
}
