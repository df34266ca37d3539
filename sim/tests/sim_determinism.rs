//! Simulation mode: a run is a pure function of its seed. A fixed produce/fetch workload with a
//! kill, a restart and probabilistic error injection is run twice per seed, each run in its own
//! madsim runtime on a fresh OS thread (as madsim's own runner does, so std's hash seeds start
//! clean); the traces of every frame, with virtual timestamps, must be byte-identical, and must
//! differ for another seed.
#![cfg(madsim)]

mod workload;

use workload::{faulty_load as load, Outcome};

/// Runs the workload under `seed` in a fresh runtime on a fresh thread.
fn run(seed: u64) -> Outcome {
    #[allow(clippy::disallowed_methods)] // outside the simulation: one OS thread per runtime
    let thread = std::thread::spawn(move || {
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        runtime.block_on(workload::run(load()))
    });
    thread.join().unwrap()
}

#[test]
fn a_seed_replays_to_a_byte_identical_trace() {
    let first = run(7);
    let second = run(7);
    eprintln!(
        "{} trace lines; {} records produced, {} fetched, {} failed rounds",
        first.trace.len(),
        first.produced,
        first.fetched,
        first.errors
    );
    assert!(first.produced > 0 && first.fetched > 0, "the workload ran");
    assert!(
        first.errors > 0,
        "the kill and the injected errors were felt"
    );
    let kinds = ["Request", "Response", "Closed"];
    for kind in kinds {
        assert!(
            first.trace.iter().any(|line| line.contains(kind)),
            "no {kind} in the trace"
        );
    }
    assert_eq!(first.trace.len(), second.trace.len());
    for (a, b) in first.trace.iter().zip(&second.trace) {
        assert_eq!(a, b, "the runs diverge here");
    }
    assert_eq!(
        first.trace.join("\n").into_bytes(),
        second.trace.join("\n").into_bytes()
    );
    let other = run(8);
    assert_ne!(
        first.trace, other.trace,
        "another seed draws other latencies and faults"
    );
}
