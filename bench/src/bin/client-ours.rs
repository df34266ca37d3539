//! Our consumer (`kafka-consumer`), as one benchmarked client process; with `--members N`
//! (the members workload, in one process) N consumers of one group, each its own task on the
//! process's runtime, their background tasks on dedicated threads or on that runtime
//! (`--runtime dedicated|shared`), each printing its own `BENCH` line (the last one leaves).

use std::time::Duration;

use kafka_bench::{client_main, len, wall_clock_us, ClientArgs, Mode, RuntimeChoice, Start, Stats};
use kafka_consumer::{
    AutoOffsetReset, BackgroundRuntime, Consumer, ConsumerConfig, TopicPartition,
};

fn main() {
    // `BENCH_LOG=kafka_consumer=info`: the consumer's own log on stderr, timestamped, to see
    // where a run's time goes (the driver keeps stderr only for errors).
    if let Ok(filter) = std::env::var("BENCH_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    if members_in_one_process() {
        members_main();
        return;
    }
    client_main("client-ours", |args| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(run(args, BackgroundRuntime::Dedicated))
    });
}

/// Whether the command line asks for several members in this process (`--members N`, N > 1).
fn members_in_one_process() -> bool {
    ClientArgs::parse().is_ok_and(|args| args.members > 1)
}

/// The members workload in one process: `--members` consumers, each on its own task; the
/// last stops at the leave moment. One `BENCH member=<i> ...` line per member, in member
/// order; any member's error fails the process (exit status 1).
fn members_main() {
    let outcome = ClientArgs::parse().and_then(|args| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(run_members(args))
    });
    match outcome {
        Ok(reports) => {
            for (member, report) in reports.iter().enumerate() {
                let fields = report.strip_prefix("BENCH ").unwrap_or(report);
                println!("BENCH member={member} {fields}");
            }
        }
        Err(error) => {
            eprintln!("client-ours: {error}");
            std::process::exit(1);
        }
    }
}

/// Starts every member at once and waits for them all; the reports in member order.
async fn run_members(args: ClientArgs) -> Result<Vec<String>, String> {
    let mut tasks = Vec::new();
    for member in 0..args.members {
        let mut member_args = args.clone();
        if member == args.members - 1 {
            // The leaver stops (closes) at the leave moment.
            member_args.until_epoch_ms = args.leave_at_epoch_ms;
        }
        let placement = match args.runtime {
            RuntimeChoice::Dedicated => BackgroundRuntime::Dedicated,
            RuntimeChoice::Shared => BackgroundRuntime::current().ok_or("not inside a runtime")?,
        };
        tasks.push(tokio::spawn(run(member_args, placement)));
    }
    let mut reports = Vec::new();
    for (member, task) in tasks.into_iter().enumerate() {
        let stats = task
            .await
            .map_err(|e| format!("member {member}: {e}"))?
            .map_err(|e| format!("member {member}: {e}"))?;
        reports.push(stats.report());
    }
    Ok(reports)
}

async fn run(args: ClientArgs, placement: BackgroundRuntime) -> Result<Stats, String> {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers([&args.bootstrap])
        .client_id("bench-ours")
        .auto_offset_reset(match args.start {
            Start::Earliest => AutoOffsetReset::Earliest,
            Start::Latest => AutoOffsetReset::Latest,
        })
        .set("enable.auto.commit", "false");
    for (key, value) in args.sasl_ssl.iter().flat_map(|s| s.java_properties()) {
        builder = builder.set(key, value);
    }
    if args.mode == Mode::Subscribe {
        builder = builder
            .group_id(&args.group)
            .set("group.protocol", args.protocol.name());
    }
    let config = builder.build().map_err(|e| e.to_string())?;
    let mut consumer = Consumer::with_runtime(config, placement).map_err(|e| e.to_string())?;
    let mut stats = Stats::start(&args);
    match args.mode {
        Mode::Assign => assign(&mut consumer, &args).await?,
        Mode::Subscribe => subscribe(&mut consumer, &args).await?,
    }
    loop {
        let records = consumer
            .poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?;
        if stats.assignment_due() {
            stats.note_assignment(consumer.assignment().iter().map(|tp| tp.partition));
        }
        let mut bytes = 0;
        for record in &records {
            bytes += len(record.key.as_deref()) + len(record.value.as_deref());
        }
        stats.delivered(records.count() as u64, bytes);
        if stats.tracks_partitions() {
            stats.note_partitions(records.iter().map(|r| r.partition));
        }
        if stats.measuring_latency() {
            let now = wall_clock_us();
            for record in &records {
                stats.record_latency(now, record.timestamp_ms);
            }
        }
        if let Some(wait) = stats.pace() {
            tokio::time::sleep(wait).await;
        }
        if stats.done()? {
            break;
        }
    }
    consumer
        .close(Duration::from_secs(30))
        .await
        .map_err(|e| e.to_string())?;
    Ok(stats)
}

/// Every partition of the topic, from `--start` (`auto.offset.reset`).
async fn assign(consumer: &mut Consumer, args: &ClientArgs) -> Result<(), String> {
    let partitions = args
        .topic_partitions()
        .into_iter()
        .map(|(t, p)| TopicPartition::new(t, p));
    consumer.assign(partitions).await.map_err(|e| e.to_string())
}

/// Group subscription (the single-consumer subscribe workload and each member of the group
/// workload); the group assigns the partitions on the next `poll`.
async fn subscribe(consumer: &mut Consumer, args: &ClientArgs) -> Result<(), String> {
    consumer
        .subscribe(args.topics())
        .await
        .map_err(|e| e.to_string())
}
