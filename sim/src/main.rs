//! `sim serve --brokers 3 --port 9092 [--topic name:partitions]...`: a local in-memory Kafka on
//! 127.0.0.1, brokers on consecutive ports, with both group protocols and the admin APIs Kafka's
//! command-line tools use. The settings are `LocalClusterOptions::serve`'s (shared with the tests
//! that drive Kafka's tools against it).

#[cfg(not(madsim))]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use sim::real::{LocalCluster, LocalClusterOptions};

    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("serve") {
        return Err(
            "usage: sim serve [--brokers N] [--port P] [--topic NAME:PARTITIONS]...".into(),
        );
    }
    let mut options = LocalClusterOptions::serve(1, 9092);
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
