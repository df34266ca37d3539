//! `confluent-kafka` from crates.io (Confluent's Rust translation of the Java client's
//! `AsyncKafkaConsumer`), as one benchmarked client process. It supports only
//! `group.protocol=consumer`; zero-copy `BytesDeserializer` for keys and values.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use confluent_kafka::common::serialization::BytesDeserializer;
use confluent_kafka::common::TopicPartition;
use confluent_kafka::consumer::{Consumer, ConsumerConfig, KafkaConsumer};
use kafka_bench::{client_main, len, wall_clock_us, ClientArgs, Mode, Stats};

fn main() {
    client_main("client-confluent", |args| {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        runtime.block_on(run(args))
    });
}

async fn run(args: ClientArgs) -> Result<Stats, String> {
    let mut props = HashMap::new();
    props.insert("bootstrap.servers".to_owned(), args.bootstrap.clone());
    props.insert("client.id".to_owned(), "bench-confluent".to_owned());
    props.insert("auto.offset.reset".to_owned(), args.start.name().to_owned());
    props.insert("enable.auto.commit".to_owned(), "false".to_owned());
    props.insert("group.protocol".to_owned(), args.protocol.name().to_owned());
    for (key, value) in args.sasl_ssl.iter().flat_map(|s| s.java_properties()) {
        props.insert(key.to_owned(), value);
    }
    if args.mode == Mode::Subscribe {
        props.insert("group.id".to_owned(), args.group.clone());
    }
    let config = ConsumerConfig::new(&props).map_err(|e| e.to_string())?;
    let mut consumer: KafkaConsumer<Bytes, Bytes> =
        KafkaConsumer::new(config, BytesDeserializer::new(), BytesDeserializer::new())
            .map_err(|e| e.to_string())?;
    let mut stats = Stats::start(&args);
    match args.mode {
        Mode::Assign => {
            let partitions = args
                .topic_partitions()
                .into_iter()
                .map(|(t, p)| TopicPartition::new(t, p))
                .collect();
            consumer
                .assign(partitions)
                .await
                .map_err(|e| e.to_string())?;
        }
        Mode::Subscribe => consumer
            .subscribe_with_topics(args.topics().into_iter().map(str::to_owned).collect())
            .await
            .map_err(|e| e.to_string())?,
    }
    loop {
        let records = consumer
            .poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?;
        if stats.assignment_due() {
            let assignment = Consumer::assignment(&mut consumer);
            stats.note_assignment(assignment.iter().map(|tp| tp.partition()));
        }
        let mut bytes = 0;
        for record in &records {
            bytes += len(record.key().map(|k| &k[..])) + len(record.value().map(|v| &v[..]));
        }
        stats.delivered(records.count() as u64, bytes);
        if stats.tracks_partitions() {
            stats.note_partitions((&records).into_iter().map(|r| r.partition()));
        }
        if stats.measuring_latency() {
            let now = wall_clock_us();
            for record in &records {
                stats.record_latency(now, record.timestamp());
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
