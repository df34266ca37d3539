//! Shared by the sim test binaries: a client, record helpers and a tiny test-only group shard.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_consumer::network::{NetworkClient, NetworkConfig, Target};
use kafka_consumer::records::{FetchedRecords, NewRecord, ReadOptions, RecordBatchBuilder};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Request, StrBytes};
use sim::coordinator::{
    CoordinatorLog, GroupRequest, GroupRequestContext, GroupResponse, GroupShard, GroupShardFactory,
};
use sim::kafka_version::KafkaVersion;

pub fn client(bootstrap: Vec<String>) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: bootstrap,
        request_timeout_ms: 10_000,
        ..NetworkConfig::default()
    })
    .unwrap()
}

pub async fn send<R>(client: &mut NetworkClient, node: i32, request: R) -> R::Response
where
    R: Request + Send + 'static,
    R::Response: Send + 'static,
{
    client.send(Target::Node(node), request).await.unwrap().body
}

pub fn batch(values: &[&str]) -> Bytes {
    let mut builder = RecordBatchBuilder::new(0);
    for v in values {
        builder
            .append(&NewRecord {
                timestamp_ms: 1_000,
                key: None,
                value: Some(v.as_bytes()),
                headers: &[],
            })
            .unwrap();
    }
    builder.build().unwrap()
}

/// (offset, value) of every record in a fetch response partition's bytes.
pub fn values(records: Option<Bytes>) -> Vec<(i64, String)> {
    let Some(records) = records else {
        return Vec::new();
    };
    FetchedRecords::new(Arc::from("t"), 0, records, ReadOptions::default())
        .flat_map(|b| b.unwrap().records().unwrap())
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset(),
                String::from_utf8_lossy(r.value().unwrap_or_default()).into_owned(),
            )
        })
        .collect()
}

pub fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_owned()))
}

/// Names the topic both ways: by name (v<13) and by id (v13+).
pub fn produce_request(
    topic: (&str, uuid::Uuid),
    partition: i32,
    records: Bytes,
) -> ProduceRequest {
    let (topic, topic_id) = topic;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_topic_id(topic_id)
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}

/// Names the topic both ways: by name (v<13) and by id (v13+).
pub fn fetch_request(
    topic: (&str, uuid::Uuid),
    partition: i32,
    offset: i64,
    session: (i32, i32),
) -> FetchRequest {
    let (topic, topic_id) = topic;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(session.0)
        .with_session_epoch(session.1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_topic_id(topic_id)
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])])
}

/// A test-only shard: answers Heartbeat with NONE and stores OffsetCommits in its durable log
/// as `group/topic/partition` → offset, answering OffsetFetch v0–7 from what it replayed.
pub struct TestShard {
    log: CoordinatorLog,
    committed: BTreeMap<String, i64>,
    out: Vec<(u64, GroupResponse)>,
}

impl GroupShard for TestShard {
    fn handle(&mut self, now_ms: u64, context: GroupRequestContext, request: GroupRequest) {
        use kafka_protocol::messages::offset_commit_response::*;
        use kafka_protocol::messages::offset_fetch_response::*;
        let response = match request {
            GroupRequest::Heartbeat(_) => GroupResponse::Heartbeat(HeartbeatResponse::default()),
            GroupRequest::OffsetCommit(r) => {
                let mut records = Vec::new();
                let mut topics = Vec::new();
                for t in &r.topics {
                    let mut parts = Vec::new();
                    for p in &t.partitions {
                        let key = format!("{}/{}/{}", r.group_id.0, t.name.0, p.partition_index);
                        records.push((
                            Some(Bytes::from(key.clone())),
                            Some(Bytes::from(p.committed_offset.to_string())),
                        ));
                        self.committed.insert(key, p.committed_offset);
                        parts.push(
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index),
                        );
                    }
                    topics.push(
                        OffsetCommitResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_partitions(parts),
                    );
                }
                self.log.append(now_ms as i64, &records).unwrap();
                GroupResponse::OffsetCommit(OffsetCommitResponse::default().with_topics(topics))
            }
            GroupRequest::OffsetFetch(r) => {
                let topics = r
                    .topics
                    .iter()
                    .flatten()
                    .map(|t| {
                        let parts = t
                            .partition_indexes
                            .iter()
                            .map(|p| {
                                let key = format!("{}/{}/{}", r.group_id.0, t.name.0, p);
                                OffsetFetchResponsePartition::default()
                                    .with_partition_index(*p)
                                    .with_committed_offset(
                                        self.committed.get(&key).copied().unwrap_or(-1),
                                    )
                            })
                            .collect();
                        OffsetFetchResponseTopic::default()
                            .with_name(t.name.clone())
                            .with_partitions(parts)
                    })
                    .collect();
                GroupResponse::OffsetFetch(OffsetFetchResponse::default().with_topics(topics))
            }
            _ => return,
        };
        self.out.push((context.request_id, response));
    }
    fn take_responses(&mut self) -> Vec<(u64, GroupResponse)> {
        std::mem::take(&mut self.out)
    }
    fn poll(&mut self, _now_ms: u64) {}
    fn next_deadline_ms(&self) -> Option<u64> {
        None
    }
}

pub struct TestShards;

impl GroupShardFactory for TestShards {
    fn load(
        &self,
        _partition: i32,
        log: CoordinatorLog,
        _now_ms: u64,
        _version: KafkaVersion,
    ) -> Box<dyn GroupShard> {
        let committed = log
            .read_all()
            .into_iter()
            .filter_map(|r| {
                let key = String::from_utf8(r.key?.to_vec()).ok()?;
                let value = std::str::from_utf8(&r.value?).ok()?.parse().ok()?;
                Some((key, value))
            })
            .collect();
        Box::new(TestShard {
            log,
            committed,
            out: Vec::new(),
        })
    }
}

/// One broker with topic `t` of `partitions` partitions, each holding `per_partition` records
/// (values `"{partition}-{i}"`), and a classic group coordinator that starts rebalancing at
/// once (`group.initial.rebalance.delay.ms=0`): the usual stage of a consumer test.
#[cfg(madsim)]
pub async fn filled_cluster(partitions: i32, per_partition: usize) -> sim::cluster::Cluster {
    let factory = sim::group::shard::GroupCoordinatorFactory {
        classic: sim::group::classic::ClassicGroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..sim::group::classic::ClassicGroupConfig::default()
        },
        ..sim::group::shard::GroupCoordinatorFactory::default()
    };
    let cluster = sim::cluster::Cluster::builder()
        .brokers(1)
        .topic("t", partitions)
        .group_shards(Arc::new(factory))
        .build()
        .await;
    for p in 0..partitions {
        let values: Vec<String> = (0..per_partition).map(|i| format!("{p}-{i}")).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        cluster.controller().append("t", p, batch(&values)).unwrap();
    }
    cluster
}
