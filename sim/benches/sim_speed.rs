//! Simulation speed: 3 brokers, one 12-partition topic and 4 protocol-level test clients doing
//! produce/fetch load for 60 virtual seconds, once per seed, each seed in a fresh madsim
//! runtime on a fresh thread (as madsim's runner does). Prints virtual seconds per wall second
//! and seeds per minute.
//!
//! `SIM_SPEED_SEEDS` (default 5) sets how many seeds run. Only meaningful under `--cfg madsim`
//! (see BENCHMARKS.md for the command); a plain build prints how to run it.

#[cfg(madsim)]
#[path = "../tests/workload/mod.rs"]
mod workload;

#[cfg(madsim)]
mod seeds;

#[cfg(madsim)]
fn main() {
    seeds::measure(
        "produced  fetched  error_rounds",
        || {
            workload::run(workload::Load {
                brokers: 3,
                partitions: 12,
                clients: 4,
                batch_records: 10,
                duration_ms: 60_000,
                plan: Vec::new(),
                record_wire: false,
            })
        },
        // Without a wire trace, the trace holds just the client summaries.
        |outcome| {
            let mut row = format!(
                "{:>8}  {:>7}  {:>12}",
                outcome.produced, outcome.fetched, outcome.errors
            );
            for line in &outcome.trace {
                row.push_str(&format!("\n      {line}"));
            }
            row
        },
    );
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("sim_speed measures simulation mode; run it with --cfg madsim (see BENCHMARKS.md)");
}
