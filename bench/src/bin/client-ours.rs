//! Our consumer (`kafka-consumer`), as one benchmarked client process.

use std::time::Duration;

use kafka_bench::{client_main, len, ClientArgs, Mode, Stats};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};

fn main() {
    client_main("client-ours", |args| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(run(args))
    });
}

async fn run(args: ClientArgs) -> Result<Stats, String> {
    let config = ConsumerConfig::builder()
        .bootstrap_servers([&args.bootstrap])
        .client_id("bench-ours")
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .build()
        .map_err(|e| e.to_string())?;
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

/// Every partition of the topic, from the earliest offset (`auto.offset.reset`).
async fn assign(consumer: &mut Consumer, args: &ClientArgs) -> Result<(), String> {
    let partitions = (0..args.partitions).map(|p| TopicPartition::new(args.topic.as_str(), p));
    consumer.assign(partitions).await.map_err(|e| e.to_string())
}

/// Group subscription (single consumer and the 3-member group workload). `Consumer::subscribe`
/// has not landed on `main` yet: the driver reports this error text in the table instead of a
/// number.
async fn subscribe(_consumer: &mut Consumer, args: &ClientArgs) -> Result<(), String> {
    Err(format!(
        "not measured: Consumer::subscribe (group.protocol={}) has not landed",
        args.protocol.name()
    ))
}
