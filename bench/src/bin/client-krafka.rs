//! `krafka` from crates.io (pure-Rust async client), as one benchmarked client process.

use std::time::Duration;

use kafka_bench::{
    client_main, len, wall_clock_us, ClientArgs, Mode, Protocol, Start, Stats, SASL_MECHANISM,
};
use krafka::auth::{AuthConfig, TlsConfig};
use krafka::consumer::{AutoOffsetReset, GroupProtocol};
use krafka::Kafka;

fn main() {
    client_main("client-krafka", |args| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(run(args))
    });
}

async fn run(args: ClientArgs) -> Result<Stats, String> {
    let mut kafka = Kafka::builder(args.bootstrap.clone()).client_id("bench-krafka");
    if let Some(sasl_ssl) = &args.sasl_ssl {
        // krafka takes SASL and TLS as code, not properties: SCRAM-SHA-512 over TLS with the
        // harness's CA (rustls, which verifies the host name).
        debug_assert_eq!(SASL_MECHANISM, "SCRAM-SHA-512");
        kafka = kafka.security(
            AuthConfig::sasl_scram_sha512(&sasl_ssl.username, &sasl_ssl.password)
                .with_tls(TlsConfig::new().with_ca_cert(&sasl_ssl.ca_location)),
        );
    }
    let kafka = kafka.connect().await.map_err(|e| e.to_string())?;
    let builder = match args.mode {
        Mode::Assign => kafka.consumer_without_group(),
        Mode::Subscribe => kafka
            .consumer(args.group.clone())
            .group_protocol(match args.protocol {
                Protocol::Classic => GroupProtocol::Classic,
                Protocol::Consumer => GroupProtocol::Consumer,
            }),
    };
    let builder = match args.max_buffered_records {
        Some(max) => builder.max_buffered_records(max),
        None => builder,
    };
    let consumer = builder
        .auto_offset_reset(match args.start {
            Start::Earliest => AutoOffsetReset::Earliest,
            Start::Latest => AutoOffsetReset::Latest,
        })
        .enable_auto_commit(false)
        .build()
        .await
        .map_err(|e| e.to_string())?;
    let mut stats = Stats::start(&args);
    match args.mode {
        Mode::Assign => {
            // krafka assigns one topic at a time; each call adds that topic's partitions.
            for topic in args.topics() {
                consumer
                    .assign(topic, (0..args.partitions).collect())
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        Mode::Subscribe => consumer
            .subscribe(args.topics())
            .await
            .map_err(|e| e.to_string())?,
    }
    loop {
        let records = consumer
            .poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?;
        if stats.assignment_due() {
            let assignment = consumer.assignment().await;
            stats.note_assignment(assignment.into_values().flatten());
        }
        let mut bytes = 0;
        for record in &records {
            bytes += len(record.key.as_deref()) + len(record.value.as_deref());
        }
        stats.delivered(records.len() as u64, bytes);
        if stats.tracks_partitions() {
            stats.note_partitions(records.iter().map(|r| r.partition));
        }
        if stats.measuring_latency() {
            let now = wall_clock_us();
            for record in &records {
                stats.record_latency(now, record.timestamp);
            }
        }
        if let Some(wait) = stats.pace() {
            tokio::time::sleep(wait).await;
        }
        if stats.done()? {
            break;
        }
    }
    consumer.close().await.map_err(|e| e.to_string())?;
    Ok(stats)
}
