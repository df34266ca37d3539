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
fn main() {
    let seeds: u64 = std::env::var("SIM_SPEED_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let (mut wall_total, mut virtual_total) = (0.0, 0.0);
    println!("seed  virtual_s  wall_s  virtual/wall  produced  fetched  error_rounds");
    for seed in 1..=seeds {
        // Outside the simulation: real time and a real thread are what is being measured.
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now();
        #[allow(clippy::disallowed_methods)]
        let thread = std::thread::spawn(move || {
            let runtime =
                madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
            runtime.block_on(async {
                let start = tokio::time::Instant::now();
                let outcome = workload::run(workload::Load {
                    brokers: 3,
                    partitions: 12,
                    clients: 4,
                    batch_records: 10,
                    duration_ms: 60_000,
                    plan: Vec::new(),
                    record_wire: false,
                })
                .await;
                (outcome, start.elapsed().as_secs_f64())
            })
        });
        let (outcome, virtual_s) = thread.join().expect("the workload panicked");
        let wall_s = started.elapsed().as_secs_f64();
        wall_total += wall_s;
        virtual_total += virtual_s;
        println!(
            "{seed:>4}  {virtual_s:>9.1}  {wall_s:>6.2}  {:>12.1}  {:>8}  {:>7}  {:>12}",
            virtual_s / wall_s,
            outcome.produced,
            outcome.fetched,
            outcome.errors
        );
        // Without a wire trace, the trace holds just the client summaries.
        for line in &outcome.trace {
            println!("      {line}");
        }
    }
    println!(
        "total: {seeds} seeds, {virtual_total:.1} virtual s in {wall_total:.2} wall s: \
         {:.1} virtual s per wall s, {:.1} seeds per minute",
        virtual_total / wall_total,
        seeds as f64 * 60.0 / wall_total
    );
}

#[cfg(not(madsim))]
fn main() {
    eprintln!("sim_speed measures simulation mode; run it with --cfg madsim (see BENCHMARKS.md)");
}
