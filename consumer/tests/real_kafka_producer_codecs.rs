//! Batches written by Apache Kafka's own Java producer, with every codec, read back from a real
//! broker through our network client and record-batch reader.
//!
//! For each of none / gzip / snappy / lz4 / zstd: create a topic, pipe known records (duplicate
//! header keys, null header values, null keys, empty values, multi-byte UTF-8) through
//! `testing/kafka/run produce` (Kafka's ConsoleProducer, i.e. KafkaProducer), Fetch them from
//! offset 0, and require exactly the records sent, in order, in batches of that codec.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::sync::Arc;

use kafka_consumer::network::{NetworkClient, Target};
use kafka_consumer::protocol::ResponseError;
use kafka_consumer::records::{Compression, FetchedRecords, ReadOptions};
use kafka_consumer::rt::SeededRng;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::FetchRequest;
use rand::RngCore;
use support::real_broker::{bootstrap, client, create_topic, delete_topic, produce_with_java};
use tokio::time::{Duration, Instant};

const RECORDS_PER_CODEC: usize = 300;

/// One record as ConsoleProducer is asked to send it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    headers: Vec<(String, Option<String>)>,
    key: Option<String>,
    value: String,
}

/// Varied records; every shape the line format can carry appears many times.
fn records_to_send() -> Vec<Sent> {
    (0..RECORDS_PER_CODEC)
        .map(|i| {
            let headers = match i % 4 {
                0 => vec![],
                1 => vec![("h".to_owned(), Some(format!("{i}")))],
                // Duplicate keys, in order (KIP-82).
                2 => vec![
                    ("h".to_owned(), Some("1".to_owned())),
                    ("x".to_owned(), Some("2".to_owned())),
                    ("h".to_owned(), Some("3".to_owned())),
                ],
                _ => vec![("n".to_owned(), None)],
            };
            let key = (i % 5 != 0).then(|| format!("key-{i}-ключ"));
            let value = if i % 7 == 0 {
                String::new()
            } else {
                format!("value {i} ").repeat(1 + i % 13)
            };
            Sent {
                headers,
                key,
                value,
            }
        })
        .collect()
}

/// `HEADERS<TAB>KEY<TAB>VALUE` with `\N` as the null marker (see `testing/kafka/run help`).
fn console_line(record: &Sent) -> String {
    let headers = if record.headers.is_empty() {
        "\\N".to_owned()
    } else {
        record
            .headers
            .iter()
            .map(|(k, v)| format!("{k}:{}", v.as_deref().unwrap_or("\\N")))
            .collect::<Vec<_>>()
            .join(",")
    };
    let key = record.key.as_deref().unwrap_or("\\N");
    format!("{headers}\t{key}\t{}", record.value)
}

/// Fetches partition 0 of `topic` from offset 0 until `expected` records arrived, decoding
/// every batch; returns what was read and the codecs of the batches.
async fn fetch_all(
    client: &mut NetworkClient,
    topic: &str,
    expected: usize,
) -> (Vec<Sent>, Vec<Compression>) {
    let topic_id = client.metadata().topic_id(topic).unwrap();
    let leader = client
        .metadata()
        .partition(topic, 0)
        .and_then(|p| p.leader_id)
        .unwrap();
    let name: Arc<str> = Arc::from(topic);
    let (mut read, mut codecs) = (Vec::new(), Vec::new());
    let mut fetch_offset = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while read.len() < expected {
        assert!(
            Instant::now() < deadline,
            "only {} of {expected} records arrived",
            read.len()
        );
        let request = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(16 * 1024 * 1024)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic_id(topic_id)
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(fetch_offset)
                    .with_partition_max_bytes(1024 * 1024)])]);
        let response = client.send(Target::Node(leader), request).await.unwrap();
        assert!(response.version >= 13, "fetch by topic id needs v13+");
        assert_eq!(ResponseError::try_from_code(response.body.error_code), None);
        let partition = &response.body.responses[0].partitions[0];
        assert_eq!(
            ResponseError::try_from_code(partition.error_code),
            None,
            "fetch {topic}-0 at {fetch_offset}"
        );
        let bytes = partition.records.clone().unwrap_or_default();
        let mut batches = FetchedRecords::new(name.clone(), 0, bytes, ReadOptions::default());
        for batch in &mut batches {
            let batch = batch.unwrap();
            codecs.push(batch.compression());
            for record in batch.records().unwrap() {
                let record = record.unwrap();
                assert_eq!(record.offset(), read.len() as i64, "offsets are dense");
                read.push(decode(&record));
            }
            fetch_offset = batch.next_offset();
        }
    }
    (read, codecs)
}

fn decode(record: &kafka_consumer::records::Record) -> Sent {
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
    Sent {
        headers: record
            .headers()
            .iter()
            .map(|h| (h.key_str().unwrap().to_owned(), h.value().map(text)))
            .collect(),
        key: record.key().map(text),
        value: text(
            record
                .value()
                .expect("ConsoleProducer never sends a null value here"),
        ),
    }
}

#[tokio::test]
async fn java_producer_batches_decode_with_every_codec() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut client = client(bootstrap.clone());
    let sent = records_to_send();
    let run_id = SeededRng::from_runtime().next_u64();
    for (codec_name, codec) in [
        ("none", Compression::None),
        ("gzip", Compression::Gzip),
        ("snappy", Compression::Snappy),
        ("lz4", Compression::Lz4),
        ("zstd", Compression::Zstd),
    ] {
        let topic = format!("codec-{codec_name}-{run_id:016x}");
        create_topic(&mut client, &topic, 1).await;
        let lines: Vec<String> = sent.iter().map(console_line).collect();
        produce_with_java(&bootstrap, &topic, codec_name, &lines);
        let (read, codecs) = fetch_all(&mut client, &topic, sent.len()).await;
        assert_eq!(read.len(), sent.len(), "{codec_name}: record count");
        for (i, (got, want)) in read.iter().zip(&sent).enumerate() {
            assert_eq!(got, want, "{codec_name}: record at offset {i}");
        }
        assert!(
            codecs.iter().all(|c| *c == codec),
            "{codec_name}: batches were written with {codecs:?}"
        );
        assert!(
            codecs.len() < sent.len(),
            "{codec_name}: the producer batched records ({} batches for {} records)",
            codecs.len(),
            sent.len()
        );
        delete_topic(&mut client, &topic).await;
    }
}
