//! Threads and memory of N consumers in one process, each in a group of its own (one per
//! tenant), with their background tasks on dedicated threads (the default) or on the
//! application's runtime (`BackgroundRuntime::Shared`). Every consumer subscribes, joins and
//! polls; once all own their partitions and a settle time has passed, it prints the process's
//! thread count and resident memory from `/proc/self/status` (Linux), then closes them all.
//!
//! ```text
//! cargo run -p kafka-consumer --example many_consumers -- \
//!     --bootstrap 127.0.0.1:9092 --topic bench --consumers 100 --runtime shared
//! ```
//!
//! `bench/runtime_footprint.sh` runs the 1/10/100 × dedicated/shared table of BENCHMARKS.md.

#[cfg(madsim)]
fn main() {}

#[cfg(not(madsim))]
fn main() {
    // Warnings (an unreachable broker, a refused login) show unless RUST_LOG says otherwise.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(error) = real::run() {
        eprintln!("many_consumers: {error}");
        std::process::exit(1);
    }
}

#[cfg(not(madsim))]
mod real {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use kafka_consumer::{AutoOffsetReset, BackgroundRuntime, Consumer, ConsumerConfig};
    use tokio::time::{Duration, Instant};

    struct Args {
        bootstrap: String,
        topic: String,
        consumers: usize,
        shared: bool,
        settle: Duration,
        worker_threads: usize,
    }

    fn parse_args() -> Result<Args, String> {
        let mut args = Args {
            bootstrap: String::new(),
            topic: String::new(),
            consumers: 1,
            shared: false,
            settle: Duration::from_secs(5),
            worker_threads: 2,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--bootstrap" => args.bootstrap = value()?,
                "--topic" => args.topic = value()?,
                "--consumers" => {
                    args.consumers = value()?.parse().map_err(|e| format!("--consumers: {e}"))?
                }
                "--runtime" => {
                    args.shared = match value()?.as_str() {
                        "shared" => true,
                        "dedicated" => false,
                        other => {
                            return Err(format!(
                                "--runtime must be dedicated or shared, not {other:?}"
                            ))
                        }
                    }
                }
                "--settle-secs" => {
                    args.settle = Duration::from_secs(
                        value()?
                            .parse()
                            .map_err(|e| format!("--settle-secs: {e}"))?,
                    )
                }
                "--worker-threads" => {
                    args.worker_threads = value()?
                        .parse()
                        .map_err(|e| format!("--worker-threads: {e}"))?
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if args.bootstrap.is_empty() || args.topic.is_empty() {
            return Err("--bootstrap and --topic are required".to_owned());
        }
        if args.consumers == 0 || args.worker_threads == 0 {
            return Err("--consumers and --worker-threads must be at least 1".to_owned());
        }
        Ok(args)
    }

    /// `Threads:` and `VmRSS:` (KiB) of this process.
    fn footprint() -> Result<(u64, u64), String> {
        let status = std::fs::read_to_string("/proc/self/status")
            .map_err(|e| format!("cannot read /proc/self/status (Linux only): {e}"))?;
        let field = |name: &str| -> Result<u64, String> {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("no {name} in /proc/self/status"))
        };
        Ok((field("Threads:")?, field("VmRSS:")?))
    }

    pub fn run() -> Result<(), String> {
        let args = parse_args()?;
        // The application's runtime, the same in both modes; `shared` puts the consumers'
        // background tasks on it too.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.worker_threads)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot build the runtime: {e}"))?;
        runtime.block_on(measure(args))
    }

    async fn measure(args: Args) -> Result<(), String> {
        let (threads_before, rss_before_kib) = footprint()?;
        let placement = if args.shared {
            BackgroundRuntime::current().ok_or("not inside a runtime")?
        } else {
            BackgroundRuntime::Dedicated
        };
        let stop = Arc::new(AtomicBool::new(false));
        let joined = Arc::new(AtomicUsize::new(0));
        let run_id = format!("footprint-{}", std::process::id());
        let mut tasks = Vec::new();
        for i in 0..args.consumers {
            let config = ConsumerConfig::builder()
                .bootstrap_servers([args.bootstrap.as_str()])
                .group_id(format!("{run_id}-tenant-{i}"))
                .auto_offset_reset(AutoOffsetReset::Earliest)
                .build()
                .map_err(|e| e.to_string())?;
            let mut consumer =
                Consumer::with_runtime(config, placement.clone()).map_err(|e| e.to_string())?;
            let (topic, stop, joined) = (args.topic.clone(), stop.clone(), joined.clone());
            tasks.push(tokio::spawn(async move {
                consumer.subscribe([topic]).await?;
                let mut counted = false;
                while !stop.load(Ordering::SeqCst) {
                    consumer.poll(Duration::from_millis(100)).await?;
                    if !counted && !consumer.assignment().is_empty() {
                        counted = true;
                        joined.fetch_add(1, Ordering::SeqCst);
                    }
                }
                consumer.close(Duration::from_secs(10)).await
            }));
        }
        let started = Instant::now();
        while joined.load(Ordering::SeqCst) < args.consumers
            && started.elapsed() < Duration::from_secs(120)
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let joined_in = started.elapsed();
        tokio::time::sleep(args.settle).await;
        let (threads, rss_kib) = footprint()?;
        println!(
            "consumers={} runtime={} worker_threads={} joined={}/{} in {:.1}s threads={} \
             (before: {}) rss_mib={:.1} (before: {:.1})",
            args.consumers,
            if args.shared { "shared" } else { "dedicated" },
            args.worker_threads,
            joined.load(Ordering::SeqCst),
            args.consumers,
            joined_in.as_secs_f64(),
            threads,
            threads_before,
            rss_kib as f64 / 1024.0,
            rss_before_kib as f64 / 1024.0,
        );
        stop.store(true, Ordering::SeqCst);
        for task in tasks {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => eprintln!("many_consumers: a consumer failed: {error}"),
                Err(error) => eprintln!("many_consumers: a consumer task failed: {error}"),
            }
        }
        Ok(())
    }
}
