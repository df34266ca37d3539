//! Simulation mode: a seed replays exactly, for each group protocol. The same seed of a group
//! of our consumers under a seeded fault plan is run in two fresh processes (each its
//! process's first simulation, as a user's `SIM_GROUP_SEED=N` rerun is); what the members saw — every delivery with its count,
//! every listener call, every member's final view — must be identical.
//!
//! Two processes rather than madsim's in-process `check_determinism`: tokio draws the branch
//! order of an unbiased `select!` from a thread-local generator seeded once per process, so a
//! second simulation in the same process draws differently (see `sim_check_determinism.rs`).
#![cfg(madsim)]

mod consumer_group;
mod support;

use std::process::Command;

const SEED: u64 = 7;
const DUMP_ENV: &str = "SIM_GROUP_DUMP";

/// A text digest of what the members saw.
fn digest(outcome: &consumer_group::Outcome) -> String {
    let j = &outcome.journal;
    format!(
        "deliveries {:?}\ncallbacks {}\nviolations {:?}\nviews {:?}\nerrors {}\npanics {} stalls {}\n",
        j.deliveries,
        j.callbacks,
        j.violations,
        j.views
            .iter()
            .map(|(m, v)| (*m, v.0.clone(), v.1, v.3))
            .collect::<Vec<_>>(),
        j.errors.len(),
        j.panics,
        j.stalls
    )
}

#[test]
fn a_classic_seed_replays_exactly_in_a_fresh_process() {
    replays_exactly(
        consumer_group::Protocol::Classic,
        "a_classic_seed_replays_exactly_in_a_fresh_process",
    );
}

#[test]
fn a_kip848_seed_replays_exactly_in_a_fresh_process() {
    replays_exactly(
        consumer_group::Protocol::Consumer,
        "a_kip848_seed_replays_exactly_in_a_fresh_process",
    );
}

/// Runs `test` (this protocol's seed) twice, each in a fresh process of this binary, and
/// compares the digests; inside such a child, runs the simulation and writes its digest.
fn replays_exactly(protocol: consumer_group::Protocol, test: &str) {
    if let Ok(path) = std::env::var(DUMP_ENV) {
        let outcome =
            consumer_group::simulate(SEED, move || consumer_group::run_group(SEED, protocol));
        std::fs::write(path, digest(&outcome)).unwrap();
        return;
    }
    let runs: Vec<String> = (0..2)
        .map(|i| {
            let path = format!(
                "{}/group-digest-{}-{test}-{i}.txt",
                env!("CARGO_TARGET_TMPDIR"),
                std::process::id()
            );
            let status = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", test, "--test-threads", "1"])
                .env(DUMP_ENV, &path)
                .status()
                .unwrap();
            assert!(status.success(), "run {i} failed");
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::remove_file(&path).unwrap();
            text
        })
        .collect();
    assert!(
        runs[0].contains("callbacks") && runs[0].len() > 1_000,
        "a real run"
    );
    assert!(
        runs[0] == runs[1],
        "{protocol:?} seed {SEED} replayed differently:\n{}\n---\n{}",
        runs[0],
        runs[1]
    );
}
