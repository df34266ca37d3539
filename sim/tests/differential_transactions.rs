//! Differential test of the transactional data path: the same transactions written into the
//! simulated broker (batches and markers appended as the scenario producers and Kafka's
//! transaction coordinator write them) and into the real broker (by Kafka's own transactional
//! `KafkaProducer`, `testing/kafka/run txn-produce`), then probed with the same Fetch and
//! ListOffsets requests under both isolation levels, while a transaction is open and after it
//! commits. Responses are compared as decoded views — per batch its offsets, whether it is a
//! transaction marker (and which), its values; per partition the error, high watermark, last
//! stable offset, log start and the aborted transactions — with producer ids masked: the
//! Java producer batches and timestamps its records its own way, so raw bytes cannot match.
//!
//! Every Fetch has `max_wait_ms` 0, so no answer depends on timing.
#![cfg(not(madsim))]

mod differential_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use bytes::Bytes;
use differential_support::*;
use kafka_consumer::network::NetworkClient;
use kafka_consumer::records::{
    end_txn_marker_batch, ControlRecord, FetchedRecords, NewRecord, ReadOptions, RecordBatchBuilder,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;

const PARTITIONS: i32 = 2;
/// The simulated side's producer id (the real one's is the broker's; both are masked).
const SIM_PRODUCER_ID: i64 = 4_242;

/// One step of the script both sides run.
#[derive(Debug, Clone, Copy)]
enum Step {
    Begin,
    Send(i32, &'static str),
    Commit,
    Abort,
    /// The probes run here, with the transaction still open.
    Hold,
}

/// A committed transaction over both partitions, an aborted one, a committed one on partition
/// 1 only, then one left open on partition 0 while the probes run, then committed.
const SCRIPT: &[Step] = &[
    Step::Begin,
    Step::Send(0, "a0"),
    Step::Send(1, "a1"),
    Step::Send(0, "a2"),
    Step::Commit,
    Step::Begin,
    Step::Send(0, "b0"),
    Step::Send(1, "b1"),
    Step::Abort,
    Step::Begin,
    Step::Send(1, "c0"),
    Step::Commit,
    Step::Begin,
    Step::Send(0, "d0"),
    Step::Send(0, "d1"),
    Step::Hold,
    Step::Commit,
];

/// Where the records go: straight into the simulated logs, or through Kafka's producer.
trait Writer {
    fn step(&mut self, step: Step);
    /// Lets a held transaction go on (after [`Step::Hold`]).
    fn release(&mut self) {}
}

/// The simulated side: batches appended as the transaction coordinator has them written.
struct SimWriter<'a> {
    controller: &'a sim::controller::Controller,
    topic: String,
    touched: Vec<i32>,
    sequences: BTreeMap<i32, i32>,
}

impl Writer for SimWriter<'_> {
    fn step(&mut self, step: Step) {
        match step {
            Step::Begin | Step::Hold => {}
            Step::Send(partition, value) => {
                let sequence = self.sequences.entry(partition).or_insert(0);
                let mut builder = RecordBatchBuilder::new(0)
                    .producer(SIM_PRODUCER_ID, 0, *sequence)
                    .transactional(true);
                *sequence += 1;
                builder
                    .append(&NewRecord {
                        timestamp_ms: 1_000,
                        key: None,
                        value: Some(value.as_bytes()),
                        headers: &[],
                    })
                    .unwrap();
                self.controller
                    .append(&self.topic, partition, builder.build().unwrap())
                    .unwrap();
                if !self.touched.contains(&partition) {
                    self.touched.push(partition);
                }
            }
            Step::Commit | Step::Abort => {
                let marker = if matches!(step, Step::Commit) {
                    ControlRecord::Commit {
                        coordinator_epoch: 0,
                    }
                } else {
                    ControlRecord::Abort {
                        coordinator_epoch: 0,
                    }
                };
                for partition in std::mem::take(&mut self.touched) {
                    let batch =
                        end_txn_marker_batch(0, SIM_PRODUCER_ID, 0, 2_000, &marker).unwrap();
                    self.controller
                        .append(&self.topic, partition, batch)
                        .unwrap();
                }
            }
        }
    }
}

/// The real side: Kafka's transactional producer, one stdin line per step, one answer line
/// each (`testing/kafka/java/TxnProducer.java`).
struct JavaWriter {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl JavaWriter {
    fn start(bootstrap: &str, topic: &str) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");
        let mut child = Command::new("bash")
            .args([script, "txn-produce", "--topic", topic])
            .args(["--bootstrap", bootstrap])
            .args(["--transactional-id", &unique("txn-differential")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run testing/kafka/run txn-produce");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut writer = Self {
            child,
            stdin,
            stdout,
        };
        let first = writer.answer();
        assert!(first.starts_with("INITIALIZED"), "{first:?}");
        writer
    }

    fn answer(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim_end().to_owned()
    }

    fn say(&mut self, line: &str, expect: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let answer = self.answer();
        assert!(answer.starts_with(expect), "{line}: {answer:?}");
    }

    fn finish(mut self) {
        self.stdin = None;
        assert_eq!(self.answer(), "CLOSED");
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for JavaWriter {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Writer for JavaWriter {
    fn step(&mut self, step: Step) {
        match step {
            Step::Begin => self.say("begin", "BEGUN"),
            Step::Send(partition, value) => self.say(&format!("send {partition} {value}"), "SENT"),
            Step::Commit => self.say("commit", "COMMITTED"),
            Step::Abort => self.say("abort", "ABORTED"),
            Step::Hold => self.say("wait-line", "READY"),
        }
    }

    fn release(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "go").unwrap();
        stdin.flush().unwrap();
    }
}

/// One batch as both brokers must serve it.
#[derive(Debug, PartialEq)]
enum BatchView {
    Data {
        offsets: (i64, i64),
        transactional: bool,
        values: Vec<String>,
    },
    Marker {
        offsets: (i64, i64),
        commit: bool,
    },
}

/// One partition of a Fetch response, decoded.
#[derive(Debug, PartialEq)]
struct PartitionView {
    partition: i32,
    error_code: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// (first offset) of each aborted transaction listed; `None`: the field was null.
    aborted: Option<Vec<i64>>,
    batches: Vec<BatchView>,
}

fn decode(records: Option<Bytes>) -> Vec<BatchView> {
    let Some(records) = records else {
        return Vec::new();
    };
    FetchedRecords::new(Arc::from("t"), 0, records, ReadOptions::default())
        .map(|batch| {
            let batch = batch.unwrap();
            let offsets = (batch.base_offset(), batch.last_offset());
            if batch.is_control() {
                let commit = matches!(
                    batch.control_record().unwrap(),
                    Some(ControlRecord::Commit { .. })
                );
                return BatchView::Marker { offsets, commit };
            }
            let values = batch
                .records()
                .unwrap()
                .map(|r| {
                    let r = r.unwrap();
                    String::from_utf8_lossy(r.value().unwrap_or_default()).into_owned()
                })
                .collect();
            BatchView::Data {
                offsets,
                transactional: batch.is_transactional(),
                values,
            }
        })
        .collect()
}

fn fetch(topic: &str, topic_id: uuid::Uuid, isolation: i8) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(isolation)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_topic_id(topic_id)
            .with_partitions(
                (0..PARTITIONS)
                    .map(|p| {
                        FetchPartition::default()
                            .with_partition(p)
                            .with_fetch_offset(0)
                            .with_partition_max_bytes(1 << 20)
                    })
                    .collect(),
            )])
}

fn fetch_view(response: FetchResponse) -> Vec<PartitionView> {
    assert_eq!(response.error_code, 0);
    response
        .responses
        .into_iter()
        .flat_map(|t| t.partitions)
        .map(|p| PartitionView {
            partition: p.partition_index,
            error_code: p.error_code,
            high_watermark: p.high_watermark,
            last_stable_offset: p.last_stable_offset,
            log_start_offset: p.log_start_offset,
            aborted: p
                .aborted_transactions
                .map(|list| list.iter().map(|a| a.first_offset).collect()),
            batches: decode(p.records),
        })
        .collect()
}

fn list_latest(topic: &str, isolation: i8) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(isolation)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name(topic))
            .with_partitions(
                (0..PARTITIONS)
                    .map(|p| {
                        ListOffsetsPartition::default()
                            .with_partition_index(p)
                            .with_timestamp(-1)
                    })
                    .collect(),
            )])
}

/// (partition, error, offset), by partition (Kafka answers in no fixed order).
fn offsets_view(response: ListOffsetsResponse) -> Vec<(i32, i16, i64)> {
    let mut view: Vec<(i32, i16, i64)> = response
        .topics
        .into_iter()
        .flat_map(|t| t.partitions)
        .map(|p| (p.partition_index, p.error_code, p.offset))
        .collect();
    view.sort();
    view
}

/// Fetch under both isolation levels and ListOffsets latest under both, recorded as `label`.
async fn probe(client: &mut NetworkClient, topic: &str, transcript: &mut Transcript, label: &str) {
    let info = client.metadata().topic(topic).unwrap();
    let (topic_id, leader) = (info.topic_id, info.partitions[&0].leader_id.unwrap());
    for (isolation, name) in [(0, "read_uncommitted"), (1, "read_committed")] {
        let r = send(client, leader, fetch(topic, topic_id, isolation)).await;
        transcript.record(format!("{label}: fetch {name}"), fetch_view(r));
        let r = send(client, leader, list_latest(topic, isolation)).await;
        transcript.record(format!("{label}: latest {name}"), offsets_view(r));
    }
}

/// Waits until the last stable offset of every partition is its high watermark. Kafka answers
/// EndTxn once the transaction is prepared and has the leaders write the markers after that
/// (`TransactionMarkerChannelManager`), so a probe right after `commitTransaction` can find a
/// marker not yet written; with no transaction open, the markers are all in once the two
/// offsets agree. The simulated side writes its markers at once.
async fn markers_written(client: &mut NetworkClient, topic: &str) {
    let leader = client.metadata().topic(topic).unwrap().partitions[&0]
        .leader_id
        .unwrap();
    let deadline = tokio::time::Instant::now() + tokio::time::Duration::from_secs(15);
    loop {
        let stable = offsets_view(send(client, leader, list_latest(topic, 1)).await);
        let high = offsets_view(send(client, leader, list_latest(topic, 0)).await);
        if stable == high {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "markers never written: stable {stable:?}, high watermarks {high:?}"
        );
        tokio::time::sleep(tokio::time::Duration::from_millis(50)).await;
    }
}

/// Creates `topic` on the broker at `bootstrap` (the client then knows its metadata).
async fn client_with_topic(bootstrap: &str, topic: &str) -> NetworkClient {
    let mut client = client(bootstrap);
    create_topic(&mut client, topic, PARTITIONS).await;
    client
}

/// Runs the script through `writer`, probing through `client` while the last transaction is
/// held open and after it commits.
async fn conversation(
    mut client: NetworkClient,
    topic: &str,
    writer: &mut dyn Writer,
) -> Transcript {
    let mut transcript = Transcript::default();
    for step in SCRIPT {
        writer.step(*step);
        if matches!(step, Step::Commit | Step::Abort) {
            markers_written(&mut client, topic).await;
        }
        if matches!(step, Step::Hold) {
            probe(&mut client, topic, &mut transcript, "open transaction").await;
            writer.release();
        }
    }
    probe(&mut client, topic, &mut transcript, "after its commit").await;
    transcript
}

#[tokio::test]
async fn transactions_on_the_data_path_match_kafka() {
    let Some(real) = real_bootstrap() else {
        return;
    };
    let topic = unique("txn-differential");

    let cluster = harness_cluster(1, &[], real_kafka_version(&real).await).await;
    let sim_client = client_with_topic(&cluster.bootstrap_servers()[0], &topic).await;
    let mut sim_writer = SimWriter {
        controller: cluster.controller(),
        topic: topic.clone(),
        touched: Vec::new(),
        sequences: BTreeMap::new(),
    };
    let sim = conversation(sim_client, &topic, &mut sim_writer).await;

    let real_client = client_with_topic(&real, &topic).await;
    let mut java = JavaWriter::start(&real, &topic);
    let kafka = conversation(real_client, &topic, &mut java).await;
    java.finish();

    assert_same("transactions", &sim, &kafka);
}
