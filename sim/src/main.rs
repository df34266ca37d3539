//! `sim serve --brokers 3 --port 9092 [--topic name:partitions]...`: a local in-memory Kafka on
//! 127.0.0.1, brokers on consecutive ports, with both group protocols. Group settings are those
//! of the repo's real-broker harness (`testing/kafka/run`), so the two answer alike: initial
//! rebalance delay 0, classic minimum session 1 s, KIP-848 heartbeat 500 ms and session 6 s.

#[cfg(not(madsim))]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::Arc;

    use sim::config::ClusterConfig;
    use sim::group::classic::ClassicGroupConfig;
    use sim::group::consumer::ConsumerGroupConfig;
    use sim::group::shard::GroupCoordinatorFactory;
    use sim::real::{LocalCluster, LocalClusterOptions};

    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("serve") {
        return Err(
            "usage: sim serve [--brokers N] [--port P] [--topic NAME:PARTITIONS]...".into(),
        );
    }
    let mut options = LocalClusterOptions {
        brokers: 1,
        base_port: 9092,
        config: ClusterConfig {
            auto_create_topics_enable: true,
            ..ClusterConfig::default()
        },
        group_shards: Some(Arc::new(GroupCoordinatorFactory {
            classic: ClassicGroupConfig {
                group_initial_rebalance_delay_ms: 0,
                group_min_session_timeout_ms: 1_000,
                ..ClassicGroupConfig::default()
            },
            consumer: ConsumerGroupConfig {
                heartbeat_interval_ms: 500,
                session_timeout_ms: 6_000,
                ..ConsumerGroupConfig::default()
            },
            seed: 0,
            ..GroupCoordinatorFactory::default()
        })),
    };
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--brokers" => options.brokers = value.parse()?,
            "--port" => options.base_port = value.parse()?,
            "--topic" => {
                let (name, partitions) = value.split_once(':').ok_or("--topic NAME:PARTITIONS")?;
                options
                    .config
                    .topics
                    .insert(name.to_owned(), partitions.parse()?);
            }
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    let cluster = LocalCluster::start(options).await?;
    println!("serving Kafka on {}", cluster.bootstrap_servers().join(","));
    // Runs until the process is interrupted (Ctrl-C's default action ends it).
    std::future::pending::<()>().await;
    drop(cluster);
    Ok(())
}

#[cfg(madsim)]
fn main() {}
