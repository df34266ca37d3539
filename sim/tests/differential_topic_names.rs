//! Differential test of illegal topic names (Kafka's `Topic.validate`: 1–249 characters of
//! `[a-zA-Z0-9._-]`, not `.` or `..`): every API of the simulated broker that takes a topic
//! name is sent illegal names, a legal 249-character name that does not exist, and (for
//! Metadata) both with auto-creation allowed and not, against a simulated single-broker cluster
//! and against the real broker (`KAFKA_BOOTSTRAP`). Per topic and partition, the error code and
//! message are compared; the run's unique names are masked.
//!
//! Kafka answers an illegal name in Metadata with INVALID_TOPIC_EXCEPTION whether or not the
//! request allows auto-creation (KafkaApis validates the names it cannot find;
//! AutoTopicCreationManager refuses to create them), and CreateTopics with
//! INVALID_TOPIC_EXCEPTION and the validation message; the data and offset APIs do not validate
//! names and answer UNKNOWN_TOPIC_OR_PARTITION for them as for any missing topic.
#![cfg(not(madsim))]

mod differential_support;

use std::fmt::Write as _;

use differential_support::*;
use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::{MetadataScope, NetworkClient, RequestOptions, Target};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

/// The illegal names tried everywhere: each of Kafka's reasons.
fn illegal_names() -> Vec<String> {
    vec![
        "bad!topic".to_owned(),
        "with space".to_owned(),
        ".".to_owned(),
        "..".to_owned(),
        "a".repeat(250),
    ]
}

/// What one conversation sees, plus the run's names.
struct Side {
    names: Vec<String>,
    /// A legal name the auto-creating Metadata request creates.
    auto: String,
    group: String,
    masks: Masks,
    transcript: Transcript,
}

impl Side {
    fn new(unique_prefix: &str) -> Self {
        let mut masks = Masks::default();
        // Legal and absent, at the longest legal length.
        let mut missing = format!("{unique_prefix}-missing-");
        while missing.len() < 249 {
            missing.push('x');
        }
        masks.name(&missing, "missing-249");
        let auto = format!("{unique_prefix}-auto");
        masks.name(&auto, "auto");
        let group = format!("{unique_prefix}-group");
        masks.name(&group, "group");
        let mut names = illegal_names();
        names.push(missing);
        Self {
            names,
            auto,
            group,
            masks,
            transcript: Transcript::default(),
        }
    }

    /// Records one line per (name, error code, message), sorted: Kafka answers from hash sets.
    fn record(&mut self, label: &str, mut lines: Vec<(String, i16, Option<String>)>) {
        lines.sort();
        let mut text = String::new();
        for (name, code, message) in lines {
            let name = self.masks.text(&name);
            let message = message.map(|m| self.masks.text(&m));
            let _ = writeln!(text, "{name}: error {code}, message {message:?}");
        }
        self.transcript.note(label, text);
    }
}

fn name(s: &str) -> TopicName {
    topic_name(s)
}

fn message(m: &Option<StrBytes>) -> Option<String> {
    m.as_ref().map(|m| m.to_string())
}

/// Metadata of every name; with `auto_create`, the illegal ones and a legal one that the
/// broker then creates (the 249-character name must stay absent for the later steps: a
/// deletion reaches a broker's metadata cache only eventually).
async fn metadata(client: &mut NetworkClient, s: &mut Side, auto_create: bool) {
    let names: Vec<String> = if auto_create {
        let mut names = illegal_names();
        names.push(s.auto.clone());
        names
    } else {
        s.names.clone()
    };
    let request = MetadataRequest::default()
        .with_topics(Some(
            names
                .iter()
                .map(|n| MetadataRequestTopic::default().with_name(Some(name(n))))
                .collect(),
        ))
        .with_allow_auto_topic_creation(auto_create);
    let r = client
        .send(Target::LeastLoaded, request)
        .await
        .unwrap()
        .body;
    let lines = r
        .topics
        .iter()
        .map(|t| {
            let n = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            let detail = format!(
                "{n} internal={} partitions={} id-nil={}",
                t.is_internal,
                t.partitions.len(),
                t.topic_id.is_nil()
            );
            (detail, t.error_code, None)
        })
        .collect();
    s.record(&format!("metadata, auto-create {auto_create}"), lines);
}

async fn create_topics(client: &mut NetworkClient, s: &mut Side, validate_only: bool) {
    // Only the illegal names: the legal one would be created.
    let request = CreateTopicsRequest::default()
        .with_topics(
            illegal_names()
                .iter()
                .map(|n| {
                    CreatableTopic::default()
                        .with_name(name(n))
                        .with_num_partitions(1)
                        .with_replication_factor(1)
                })
                .collect(),
        )
        .with_timeout_ms(15_000)
        .with_validate_only(validate_only);
    let r = client
        .send(Target::LeastLoaded, request)
        .await
        .unwrap()
        .body;
    let lines = r
        .topics
        .iter()
        .map(|t| {
            let detail = format!(
                "{} partitions={} rf={}",
                t.name.0, t.num_partitions, t.replication_factor
            );
            (detail, t.error_code, message(&t.error_message))
        })
        .collect();
    s.record(
        &format!("create topics, validate only {validate_only}"),
        lines,
    );
}

async fn delete_topics(client: &mut NetworkClient, s: &mut Side) {
    let request = DeleteTopicsRequest::default()
        .with_topics(
            s.names
                .iter()
                .map(|n| DeleteTopicState::default().with_name(Some(name(n))))
                .collect(),
        )
        .with_topic_names(s.names.iter().map(|n| name(n)).collect())
        .with_timeout_ms(15_000);
    let r = client
        .send(Target::LeastLoaded, request)
        .await
        .unwrap()
        .body;
    let lines = r
        .responses
        .iter()
        .map(|t| {
            let n = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            (n, t.error_code, message(&t.error_message))
        })
        .collect();
    s.record("delete topics", lines);
}

async fn create_partitions(client: &mut NetworkClient, s: &mut Side) {
    let request = CreatePartitionsRequest::default()
        .with_topics(
            s.names
                .iter()
                .map(|n| {
                    CreatePartitionsTopic::default()
                        .with_name(name(n))
                        .with_count(2)
                })
                .collect(),
        )
        .with_timeout_ms(15_000);
    let r = client
        .send(Target::LeastLoaded, request)
        .await
        .unwrap()
        .body;
    let lines = r
        .results
        .iter()
        .map(|t| {
            (
                t.name.0.to_string(),
                t.error_code,
                message(&t.error_message),
            )
        })
        .collect();
    s.record("create partitions", lines);
}

async fn produce(client: &mut NetworkClient, s: &mut Side, node: i32) {
    let records = {
        let mut builder = kafka_consumer::records::RecordBatchBuilder::new(0);
        builder
            .append(&kafka_consumer::records::NewRecord {
                timestamp_ms: 1_000,
                key: None,
                value: Some(b"v"),
                headers: &[],
            })
            .unwrap();
        builder.build().unwrap()
    };
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(
            s.names
                .iter()
                .map(|n| {
                    TopicProduceData::default()
                        .with_name(name(n))
                        .with_partition_data(vec![PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(records.clone()))])
                })
                .collect(),
        );
    // By name: Produce v13 (KIP-516) addresses topics by id only.
    let r = client
        .send_with(
            Target::Node(node),
            request,
            RequestOptions {
                version: Some(12),
                timeout_ms: None,
            },
        )
        .await
        .unwrap()
        .body;
    let lines = r
        .responses
        .iter()
        .flat_map(|t| {
            t.partition_responses.iter().map(move |p| {
                (
                    format!("{}-{}", t.name.0, p.index),
                    p.error_code,
                    message(&p.error_message),
                )
            })
        })
        .collect();
    s.record("produce", lines);
}

async fn list_offsets(client: &mut NetworkClient, s: &mut Side, node: i32) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(
            s.names
                .iter()
                .map(|n| {
                    ListOffsetsTopic::default()
                        .with_name(name(n))
                        .with_partitions(vec![ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(-1)])
                })
                .collect(),
        );
    let r = send(client, node, request).await;
    let lines = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    format!("{}-{} offset={}", t.name.0, p.partition_index, p.offset),
                    p.error_code,
                    None,
                )
            })
        })
        .collect();
    s.record("list offsets", lines);
}

async fn fetch(client: &mut NetworkClient, s: &mut Side, node: i32) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            s.names
                .iter()
                .map(|n| {
                    FetchTopic::default()
                        .with_topic(name(n))
                        .with_partitions(vec![FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(0)
                            .with_partition_max_bytes(1 << 20)])
                })
                .collect(),
        );
    // By name: Fetch v13+ addresses topics by id only.
    let r = client
        .send_with(
            Target::Node(node),
            request,
            RequestOptions {
                version: Some(12),
                timeout_ms: None,
            },
        )
        .await
        .unwrap()
        .body;
    let lines = r
        .responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    format!(
                        "{}-{} hw={}",
                        t.topic.0, p.partition_index, p.high_watermark
                    ),
                    p.error_code,
                    None,
                )
            })
        })
        .collect();
    s.record("fetch", lines);
}

async fn offset_for_leader_epoch(client: &mut NetworkClient, s: &mut Side, node: i32) {
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(
            s.names
                .iter()
                .map(|n| {
                    OffsetForLeaderTopic::default()
                        .with_topic(name(n))
                        .with_partitions(vec![OffsetForLeaderPartition::default()
                            .with_partition(0)
                            .with_current_leader_epoch(-1)
                            .with_leader_epoch(0)])
                })
                .collect(),
        );
    let r = send(client, node, request).await;
    let lines = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    format!("{}-{} end={}", t.topic.0, p.partition, p.end_offset),
                    p.error_code,
                    None,
                )
            })
        })
        .collect();
    s.record("offset for leader epoch", lines);
}

async fn offset_commit_and_fetch(client: &mut NetworkClient, s: &mut Side) {
    let coordinator = find_coordinator(client, &s.group).await;
    let request = OffsetCommitRequest::default()
        .with_group_id(group_id(&s.group))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(str(""))
        .with_topics(
            s.names
                .iter()
                .map(|n| {
                    OffsetCommitRequestTopic::default()
                        .with_name(name(n))
                        .with_partitions(vec![OffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(5)])
                })
                .collect(),
        );
    let r = send(client, coordinator, request).await;
    let lines = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    format!("{}-{}", t.name.0, p.partition_index),
                    p.error_code,
                    None,
                )
            })
        })
        .collect();
    s.record("offset commit", lines);
    let request =
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(group_id(&s.group))
            .with_topics(Some(
                s.names
                    .iter()
                    .map(|n| {
                        OffsetFetchRequestTopics::default()
                            .with_name(name(n))
                            .with_partition_indexes(vec![0])
                    })
                    .collect(),
            ))]);
    let r = send(client, coordinator, request).await;
    let mut lines = Vec::new();
    for group in &r.groups {
        lines.push(("group".to_owned(), group.error_code, None));
        for t in &group.topics {
            for p in &t.partitions {
                lines.push((
                    format!(
                        "{}-{} offset={}",
                        t.name.0, p.partition_index, p.committed_offset
                    ),
                    p.error_code,
                    None,
                ));
            }
        }
    }
    s.record("offset fetch", lines);
}

async fn conversation(bootstrap: String, prefix: String) -> Transcript {
    let mut client = client(&bootstrap);
    let mut s = Side::new(&prefix);
    metadata(&mut client, &mut s, false).await;
    metadata(&mut client, &mut s, true).await;
    create_topics(&mut client, &mut s, true).await;
    create_topics(&mut client, &mut s, false).await;
    delete_topics(&mut client, &mut s).await;
    create_partitions(&mut client, &mut s).await;
    // The data APIs go to a broker; any will do, none leads these names.
    let brokers = client
        .send(Target::LeastLoaded, metadata_request_for_topics([], false))
        .await
        .unwrap();
    client.update_metadata(&brokers.body, MetadataScope::ListedTopics);
    let node = client
        .metadata()
        .brokers()
        .next()
        .map(|b| b.node_id)
        .expect("a broker");
    produce(&mut client, &mut s, node).await;
    list_offsets(&mut client, &mut s, node).await;
    fetch(&mut client, &mut s, node).await;
    offset_for_leader_epoch(&mut client, &mut s, node).await;
    offset_commit_and_fetch(&mut client, &mut s).await;
    // Nothing was created by any of it.
    metadata(&mut client, &mut s, false).await;
    s.transcript
}

#[tokio::test]
async fn illegal_topic_names_are_answered_like_kafka() {
    let Some(real) = real_bootstrap() else {
        return;
    };
    let sim_cluster = harness_cluster(1, &[], real_kafka_version(&real).await).await;
    let prefix = unique("names");
    let sim = conversation(sim_cluster.bootstrap_servers()[0].clone(), prefix.clone()).await;
    let kafka = conversation(real, prefix).await;
    assert_same("illegal topic names", &sim, &kafka);
}
