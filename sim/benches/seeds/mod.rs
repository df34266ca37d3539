//! The seed loop the simulation-speed benches share: each seed in a fresh madsim runtime on a
//! fresh OS thread (as madsim's runner does), its virtual and wall time measured, one row per
//! seed and the totals printed. `SIM_SPEED_SEEDS` (default 5) sets how many seeds run.

use std::future::Future;

/// Runs `workload` once per seed and prints `columns` / `row(outcome)` beside the timings.
pub fn measure<T, Fut>(columns: &str, workload: fn() -> Fut, row: fn(&T) -> String)
where
    T: Send + 'static,
    Fut: Future<Output = T> + 'static,
{
    let seeds: u64 = std::env::var("SIM_SPEED_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let (mut wall_total, mut virtual_total) = (0.0, 0.0);
    println!("seed  virtual_s  wall_s  virtual/wall  {columns}");
    for seed in 1..=seeds {
        // Outside the simulation: real time and a real thread are what is being measured.
        #[allow(clippy::disallowed_methods)]
        let started = std::time::Instant::now();
        #[allow(clippy::disallowed_methods)]
        let thread = std::thread::spawn(move || {
            let runtime =
                madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
            runtime.block_on(async move {
                let start = tokio::time::Instant::now();
                let outcome = workload().await;
                (outcome, start.elapsed().as_secs_f64())
            })
        });
        let (outcome, virtual_s) = thread.join().expect("the workload panicked");
        let wall_s = started.elapsed().as_secs_f64();
        wall_total += wall_s;
        virtual_total += virtual_s;
        println!(
            "{seed:>4}  {virtual_s:>9.1}  {wall_s:>6.3}  {:>12.1}  {}",
            virtual_s / wall_s,
            row(&outcome)
        );
    }
    println!(
        "total: {seeds} seeds, {virtual_total:.1} virtual s in {wall_total:.2} wall s: \
         {:.1} virtual s per wall s, {:.1} seeds per minute",
        virtual_total / wall_total,
        seeds as f64 * 60.0 / wall_total
    );
}
