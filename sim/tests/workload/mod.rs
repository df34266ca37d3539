//! A fixed produce/fetch workload against a simulated cluster, driven by protocol-level test
//! clients (they stand in for the consumer until it runs in simulation): each client node runs
//! a producer that produces round-robin to every partition of `t`, one batch at a time with
//! acks=all, and a fetcher that long-polls its share of the partitions from their leaders; both
//! refresh metadata and back off after any error.
//!
//! Shared by the determinism test (`sim_determinism.rs`) and the speed bench
//! (`benches/sim_speed.rs`, which includes this file by path).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_consumer::network::{MetadataScope, NetworkClient, NetworkConfig, Target};
use kafka_consumer::records::{FetchedRecords, NewRecord, ReadOptions, RecordBatchBuilder};
use kafka_consumer::rt::{Duration, Instant};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::fault::FaultPlan;

/// What to run.
pub struct Load {
    /// Brokers in the cluster.
    pub brokers: usize,
    /// Partitions of topic `t`.
    pub partitions: i32,
    /// Test clients, each on its own node.
    pub clients: usize,
    /// Records per produced batch.
    pub batch_records: usize,
    /// How long the clients run, in virtual milliseconds.
    pub duration_ms: u64,
    /// Faults applied while they run.
    pub plan: FaultPlan,
    /// Whether to keep the wire trace (the speed bench leaves it off).
    pub record_wire: bool,
}

/// What happened.
pub struct Outcome {
    /// One line per frame the brokers saw (if recorded), then one summary per client.
    pub trace: Vec<String>,
    /// Records acknowledged by Produce.
    pub produced: u64,
    /// Records returned by Fetch.
    pub fetched: u64,
    /// Client rounds that met an error (network error or error code).
    pub errors: u64,
}

/// Runs `load` in the current madsim runtime.
pub async fn run(load: Load) -> Outcome {
    let mut builder = Cluster::builder()
        .brokers(load.brokers)
        .topic("t", load.partitions);
    if load.record_wire {
        builder = builder.record_wire();
    }
    let cluster = Arc::new(builder.build().await);
    let topic_id = cluster.controller().read().topics["t"].topic_id;
    let deadline = Instant::now() + Duration::from_millis(load.duration_ms);
    let mut clients = Vec::new();
    for index in 0..load.clients {
        let spec = ClientSpec {
            index,
            clients: load.clients,
            partitions: load.partitions,
            batch_records: load.batch_records,
            topic_id,
            bootstrap: cluster.bootstrap_servers(),
            deadline,
        };
        let node = Handle::current()
            .create_node()
            .name(format!("client-{index}"))
            .ip(format!("10.0.2.{}", index + 1).parse().unwrap())
            .build();
        clients.push(node.spawn(spec.run()));
    }
    cluster.run_plan(&load.plan).await;
    let mut trace: Vec<String> = Vec::new();
    let (mut produced, mut fetched, mut errors) = (0, 0, 0);
    let mut summaries = Vec::new();
    for client in clients {
        let stats = client.await.unwrap();
        produced += stats.produced;
        fetched += stats.fetched;
        errors += stats.errors;
        summaries.push(format!(
            "client-{} produced {} fetched {} errors {} positions {:?}",
            stats.client, stats.produced, stats.fetched, stats.errors, stats.positions
        ));
    }
    trace.extend(cluster.wire_events().iter().map(ToString::to_string));
    trace.extend(summaries);
    Outcome {
        trace,
        produced,
        fetched,
        errors,
    }
}

struct ClientSpec {
    index: usize,
    clients: usize,
    partitions: i32,
    batch_records: usize,
    topic_id: uuid::Uuid,
    bootstrap: Vec<String>,
    deadline: Instant,
}

#[derive(Default)]
struct Stats {
    client: usize,
    produced: u64,
    fetched: u64,
    errors: u64,
    positions: BTreeMap<i32, i64>,
}

impl ClientSpec {
    /// A producer loop and a fetcher loop, each with its own connection(s), side by side.
    async fn run(self) -> Stats {
        let spec = Arc::new(self);
        let producer = tokio::spawn(spec.clone().produce_loop());
        let mut stats = spec.clone().fetch_loop().await;
        let produced = producer.await.unwrap();
        stats.produced = produced.produced;
        stats.errors += produced.errors;
        stats
    }

    fn client(&self) -> NetworkClient {
        NetworkClient::new(NetworkConfig {
            bootstrap_servers: self.bootstrap.clone(),
            request_timeout_ms: 2_000,
            ..NetworkConfig::default()
        })
        .unwrap()
    }

    /// Produces one batch at a time, round-robin over every partition, until the deadline.
    async fn produce_loop(self: Arc<Self>) -> Stats {
        let mut client = self.client();
        let mut stats = Stats::default();
        let mut next = self.index as i32;
        let mut fresh = refresh(&mut client).await;
        while Instant::now() < self.deadline {
            let partition = next % self.partitions;
            next += 1;
            match self.produce(&mut client, partition).await {
                Some(n) if fresh => stats.produced += n,
                _ => {
                    stats.errors += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    fresh = refresh(&mut client).await;
                }
            }
        }
        stats
    }

    /// Fetches this client's share of the partitions from their leaders until the deadline.
    async fn fetch_loop(self: Arc<Self>) -> Stats {
        let mut client = self.client();
        let mine: Vec<i32> = (0..self.partitions)
            .filter(|p| *p as usize % self.clients == self.index)
            .collect();
        let mut stats = Stats {
            client: self.index,
            positions: mine.iter().map(|p| (*p, 0)).collect(),
            ..Stats::default()
        };
        let mut fresh = refresh(&mut client).await;
        while Instant::now() < self.deadline {
            let mut failed = !fresh;
            for (leader, partitions) in leaders(&client, &stats.positions) {
                match self.fetch(&mut client, leader, &partitions).await {
                    Some(read) => {
                        for (partition, next_offset, count) in read {
                            stats.fetched += count;
                            stats.positions.insert(partition, next_offset);
                        }
                    }
                    None => failed = true,
                }
            }
            if failed {
                stats.errors += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                fresh = refresh(&mut client).await;
            }
        }
        stats
    }

    /// Produces one batch to `partition`'s leader; the records acknowledged, or `None`.
    async fn produce(&self, client: &mut NetworkClient, partition: i32) -> Option<u64> {
        let leader = client.metadata().partition("t", partition)?.leader_id?;
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(1_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_topic_id(self.topic_id)
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(self.batch()))])]);
        let response = client.send(Target::Node(leader), request).await.ok()?;
        let p = &response
            .body
            .responses
            .first()?
            .partition_responses
            .first()?;
        (p.error_code == 0).then_some(self.batch_records as u64)
    }

    fn batch(&self) -> Bytes {
        let value = [b'v'; 100];
        let mut builder = RecordBatchBuilder::new(0);
        for _ in 0..self.batch_records {
            builder
                .append(&NewRecord {
                    timestamp_ms: 0,
                    key: None,
                    value: Some(&value),
                    headers: &[],
                })
                .unwrap();
        }
        builder.build().unwrap()
    }

    /// Fetches `partitions` (with their positions) from `leader`: per partition, the next
    /// position and the records read; `None` on any error.
    async fn fetch(
        &self,
        client: &mut NetworkClient,
        leader: i32,
        partitions: &[(i32, i64)],
    ) -> Option<Vec<(i32, i64, u64)>> {
        let request = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_topic_id(self.topic_id)
                .with_partitions(
                    partitions
                        .iter()
                        .map(|(partition, offset)| {
                            FetchPartition::default()
                                .with_partition(*partition)
                                .with_fetch_offset(*offset)
                                .with_partition_max_bytes(64 << 10)
                        })
                        .collect(),
                )]);
        let response = client.send(Target::Node(leader), request).await.ok()?;
        if response.body.error_code != 0 {
            return None;
        }
        let mut read = Vec::new();
        for topic in &response.body.responses {
            for p in &topic.partitions {
                if p.error_code != 0 {
                    return None;
                }
                let position = partitions
                    .iter()
                    .find(|(index, _)| *index == p.partition_index)?
                    .1;
                let (next, count) = scan(p.records.clone(), position);
                read.push((p.partition_index, next, count));
            }
        }
        Some(read)
    }
}

/// Reloads metadata from any broker; whether it worked.
async fn refresh(client: &mut NetworkClient) -> bool {
    let request = MetadataRequest::default().with_topics(None);
    match client.send(Target::LeastLoaded, request).await {
        Ok(response) => {
            client.update_metadata(&response.body, MetadataScope::AllTopics);
            true
        }
        Err(_) => false,
    }
}

/// This client's partitions grouped by their leader, with positions.
fn leaders(
    client: &NetworkClient,
    positions: &BTreeMap<i32, i64>,
) -> BTreeMap<i32, Vec<(i32, i64)>> {
    let mut by_leader: BTreeMap<i32, Vec<(i32, i64)>> = BTreeMap::new();
    for (partition, offset) in positions {
        let leader = client
            .metadata()
            .partition("t", *partition)
            .and_then(|p| p.leader_id);
        if let Some(leader) = leader {
            by_leader
                .entry(leader)
                .or_default()
                .push((*partition, *offset));
        }
    }
    by_leader
}

/// The position after the records in `records` at or past `position`, and how many there were.
fn scan(records: Option<Bytes>, position: i64) -> (i64, u64) {
    let Some(records) = records else {
        return (position, 0);
    };
    let mut next = position;
    let mut count = 0;
    let reader = FetchedRecords::new(Arc::from("t"), 0, records, ReadOptions::default());
    for batch in reader.flatten() {
        for record in batch.records().into_iter().flatten().flatten() {
            if record.offset() >= next {
                next = record.offset() + 1;
                count += 1;
            }
        }
    }
    (next, count)
}

/// The determinism tests' load: produce/fetch with probabilistic NOT_LEADER_OR_FOLLOWER on
/// Fetch, broker 2 killed at 500 ms and restarted at 1.2 s, every frame recorded.
#[allow(dead_code)] // the speed bench includes this module for `run` only
pub fn faulty_load() -> Load {
    use kafka_protocol::error::ResponseError;
    use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};
    Load {
        brokers: 3,
        partitions: 3,
        clients: 2,
        batch_records: 5,
        duration_ms: 2_000,
        plan: vec![
            (
                0,
                Fault::Response(ResponseRule {
                    api_key: 1,
                    broker: None,
                    trigger: Trigger::Probability(0.1),
                    action: ResponseAction::Error(ResponseError::NotLeaderOrFollower.code()),
                }),
            ),
            (500, Fault::KillBroker { broker: 2 }),
            (1_200, Fault::RestartBroker { broker: 2 }),
        ],
        record_wire: true,
    }
}
