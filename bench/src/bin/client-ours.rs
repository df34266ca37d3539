//! Our consumer (`kafka-consumer`), as one benchmarked client process.

use std::time::Duration;

use kafka_bench::{client_main, len, wall_clock_us, ClientArgs, Mode, Start, Stats};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};

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
    client_main("client-ours", |args| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(run(args))
    });
}

async fn run(args: ClientArgs) -> Result<Stats, String> {
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
    let mut consumer = Consumer::new(config).map_err(|e| e.to_string())?;
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
