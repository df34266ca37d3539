//! A `kcat -C`-like consumer: prints records until Ctrl-C (or `--count`), then closes cleanly.
//! With `--group`, it joins that consumer group (subscribe; the group shares the partitions
//! and close commits what was printed and leaves the group); without, it assigns every
//! partition of the topics.
//!
//! ```text
//! cargo run -p kafka-consumer --example consume -- \
//!     --bootstrap 127.0.0.1:9092 --topic orders [--topic more] [--group G] \
//!     [--from-beginning] [--count N]
//! ```

#[cfg(madsim)]
fn main() {}

#[cfg(not(madsim))]
#[tokio::main]
async fn main() {
    // Warnings (an unreachable broker, a refused login) show unless RUST_LOG says otherwise.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(error) = real::run().await {
        eprintln!("consume: {error}");
        std::process::exit(1);
    }
}

#[cfg(not(madsim))]
mod real {
    use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, ConsumerRecord};
    use tokio::time::Duration;

    const TIMEOUT: Duration = Duration::from_secs(30);

    struct Args {
        bootstrap: String,
        topics: Vec<String>,
        group: Option<String>,
        from_beginning: bool,
        count: Option<usize>,
    }

    fn parse_args() -> Result<Args, String> {
        let mut args = Args {
            bootstrap: "127.0.0.1:9092".to_owned(),
            topics: Vec::new(),
            group: None,
            from_beginning: false,
            count: None,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "--bootstrap" | "-b" => args.bootstrap = value()?,
                "--topic" | "-t" => args.topics.extend(value()?.split(',').map(str::to_owned)),
                "--group" | "-G" => args.group = Some(value()?),
                "--from-beginning" => args.from_beginning = true,
                "--count" | "-c" => {
                    args.count = Some(value()?.parse().map_err(|e| format!("--count: {e}"))?)
                }
                "--help" | "-h" => {
                    return Err("usage: consume --bootstrap H:P --topic T [--topic T2] \
                                [--group G] [--from-beginning] [--count N]"
                        .to_owned())
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if args.topics.is_empty() {
            return Err("at least one --topic is required".to_owned());
        }
        Ok(args)
    }

    fn show(bytes: Option<&[u8]>) -> String {
        bytes.map_or("NULL".to_owned(), |b| {
            String::from_utf8_lossy(b).into_owned()
        })
    }

    fn print(record: &ConsumerRecord) {
        let headers: Vec<String> = record
            .headers
            .iter()
            .map(|h| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(&h.key),
                    show(h.value.as_deref())
                )
            })
            .collect();
        println!(
            "{}/{}@{} ts={} key={} headers=[{}] {}",
            record.topic,
            record.partition,
            record.offset,
            record.timestamp_ms,
            show(record.key.as_deref()),
            headers.join(","),
            show(record.value.as_deref()),
        );
    }

    pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
        let args = parse_args()?;
        let mut config = ConsumerConfig::builder()
            .bootstrap_servers([&args.bootstrap])
            .client_id("consume-example")
            .auto_offset_reset(if args.from_beginning {
                AutoOffsetReset::Earliest
            } else {
                AutoOffsetReset::Latest
            });
        if let Some(group) = &args.group {
            config = config.group_id(group);
        }
        let mut consumer = Consumer::new(config.build()?)?;
        if let Some(group) = &args.group {
            consumer.subscribe(args.topics.iter().cloned()).await?;
            eprintln!("consume: joining group {group}");
        } else {
            let mut partitions = Vec::new();
            for topic in &args.topics {
                let found = consumer.partitions_for(topic, TIMEOUT).await?;
                if found.is_empty() {
                    return Err(format!("topic {topic} does not exist").into());
                }
                partitions.extend(found.into_iter().map(|p| p.partition));
            }
            eprintln!("consume: assigned {} partitions", partitions.len());
            consumer.assign(partitions).await?;
        }

        let mut printed = 0usize;
        let outcome = loop {
            if args.count.is_some_and(|n| printed >= n) {
                break Ok(());
            }
            tokio::select! {
                // recv is cancellation-safe: a record is consumed only when it is returned.
                record = consumer.recv() => match record {
                    Ok(record) => {
                        print(&record);
                        printed += 1;
                    }
                    Err(error) => break Err(error),
                },
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("consume: interrupted");
                    break Ok(());
                }
            }
        };
        // With a group, close commits the position after the last printed record and leaves.
        consumer.close(TIMEOUT).await?;
        eprintln!("consume: {printed} records");
        outcome.map_err(Into::into)
    }
}
