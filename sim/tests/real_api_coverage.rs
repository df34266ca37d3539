//! Real mode: end-to-end coverage of the admin and produce/fetch variants the other tests skip
//! (DeleteTopics, CreatePartitions, auto-creation, read_committed, LogAppendTime, acks=0), and a
//! sweep that exchanges every advertised API at every advertised version over raw TCP, so a
//! response field that does not exist at an old version (which closes the connection) or a body
//! that does not round-trip is caught.
#![cfg(not(madsim))]

mod support;

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_consumer::network::{MetadataScope, NetworkClient};
use kafka_consumer::records::{
    end_txn_marker_batch, ControlRecord, FetchedRecords, NewRecord, ReadOptions,
    RecordBatchBuilder, TimestampType,
};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use sim::config::ClusterConfig;
use sim::fault::{ResponseAction, ResponseRule, Trigger};
use sim::real::{LocalCluster, LocalClusterOptions};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn start(brokers: usize, config: impl FnOnce(&mut ClusterConfig)) -> LocalCluster {
    let mut settings = ClusterConfig::default();
    settings.topics.insert("t".to_owned(), 2);
    config(&mut settings);
    LocalCluster::start(LocalClusterOptions {
        brokers,
        base_port: 0,
        config: settings,
        group_shards: Some(Arc::new(TestShards)),
    })
    .await
    .unwrap()
}

fn topic_id(cluster: &LocalCluster, topic: &str) -> uuid::Uuid {
    cluster.controller().read().topics[topic].topic_id
}

async fn connected(cluster: &LocalCluster) -> NetworkClient {
    let mut client = client(cluster.bootstrap_servers());
    let metadata = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    client.update_metadata(&metadata, MetadataScope::AllTopics);
    client
}

fn metadata_for(topic: &str, auto_create: bool) -> MetadataRequest {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    MetadataRequest::default()
        .with_allow_auto_topic_creation(auto_create)
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name(topic)))
        ]))
}

#[tokio::test]
async fn delete_topics_removes_the_topic_and_its_log() {
    use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
    let cluster = start(3, |_| {}).await;
    let mut client = connected(&cluster).await;
    let delete = DeleteTopicsRequest::default()
        .with_timeout_ms(1_000)
        .with_topics(vec![DeleteTopicState::default().with_name(Some(name("t")))]);
    let deleted = send(&mut client, -1, delete.clone()).await;
    assert_eq!(deleted.responses[0].error_code, 0);
    let again = send(&mut client, -1, delete).await;
    assert_eq!(
        again.responses[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let described = send(&mut client, -1, metadata_for("t", false)).await;
    assert_eq!(
        described.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let internal = send(
        &mut client,
        -1,
        DeleteTopicsRequest::default().with_topics(vec![
            DeleteTopicState::default().with_name(Some(name("__consumer_offsets")))
        ]),
    )
    .await;
    assert_ne!(internal.responses[0].error_code, 0, "internal topics stay");
}

#[tokio::test]
async fn create_partitions_grows_the_topic_in_metadata() {
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    let cluster = start(3, |_| {}).await;
    let mut client = connected(&cluster).await;
    let grow = |count| {
        CreatePartitionsRequest::default()
            .with_timeout_ms(1_000)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(name("t"))
                .with_count(count)
                .with_assignments(None)])
    };
    let grown = send(&mut client, -1, grow(5)).await;
    assert_eq!(grown.results[0].error_code, 0);
    let described = send(&mut client, -1, metadata_for("t", false)).await;
    let partitions = &described.topics[0].partitions;
    assert_eq!(partitions.len(), 5);
    assert!(partitions.iter().all(|p| p.leader_id.0 > 0));
    let shrink = send(&mut client, -1, grow(3)).await;
    assert_eq!(
        shrink.results[0].error_code,
        ResponseError::InvalidPartitions.code()
    );
    client.update_metadata(&described, MetadataScope::ListedTopics);
    let leader = described.topics[0].partitions[4].leader_id.0;
    let produced = send(
        &mut client,
        leader,
        produce_request(("t", topic_id(&cluster, "t")), 4, batch(&["new"])),
    )
    .await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
}

#[tokio::test]
async fn metadata_auto_creates_a_topic_when_enabled_and_allowed() {
    let cluster = start(1, |c| {
        c.auto_create_topics_enable = true;
        c.num_partitions = 3;
    })
    .await;
    let mut client = client(cluster.bootstrap_servers());
    let refused = send(&mut client, -1, metadata_for("manual", false)).await;
    assert_eq!(
        refused.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let creating = send(&mut client, -1, metadata_for("auto", true)).await;
    assert_eq!(
        creating.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code(),
        "a KRaft broker answers the creating request before the controller has created it \
         (differential_topic_names checks this against the real broker)"
    );
    let created = send(&mut client, -1, metadata_for("auto", true)).await;
    assert_eq!(created.topics[0].error_code, 0);
    assert_eq!(created.topics[0].partitions.len(), 3);
}

fn transactional(producer_id: i64, values: &[&str]) -> Bytes {
    let mut builder = RecordBatchBuilder::new(0)
        .producer(producer_id, 0, 0)
        .transactional(true);
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

#[tokio::test]
async fn read_committed_stops_at_the_lso_and_lists_aborted_transactions() {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let cluster = start(1, |_| {}).await;
    let controller = cluster.controller();
    controller
        .append("t", 0, transactional(7, &["a1", "a2"]))
        .unwrap();
    let abort = ControlRecord::Abort {
        coordinator_epoch: 0,
    };
    controller
        .append(
            "t",
            0,
            end_txn_marker_batch(0, 7, 0, 1_000, &abort).unwrap(),
        )
        .unwrap();
    controller.append("t", 0, batch(&["plain"])).unwrap();
    controller
        .append("t", 0, transactional(8, &["open"]))
        .unwrap();
    let mut client = client(cluster.bootstrap_servers());
    let t = ("t", topic_id(&cluster, "t"));
    let committed = send(
        &mut client,
        -1,
        fetch_request(t, 0, 0, (0, -1)).with_isolation_level(1),
    )
    .await;
    let p = &committed.responses[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset), (5, 4));
    let aborted: Vec<(i64, i64)> = p
        .aborted_transactions
        .iter()
        .flatten()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    assert_eq!(aborted, [(7, 0)]);
    let offsets: Vec<i64> = values(p.records.clone()).iter().map(|r| r.0).collect();
    // The abort marker (2) is returned too, as Kafka does; the open transaction at 4 is not.
    assert_eq!(
        offsets,
        [0, 1, 2, 3],
        "the open transaction at 4 is past the LSO"
    );
    let uncommitted = send(&mut client, -1, fetch_request(t, 0, 0, (0, -1))).await;
    let p = &uncommitted.responses[0].partitions[0];
    assert_eq!(values(p.records.clone()).len(), 5);
    assert!(p.aborted_transactions.as_ref().is_none_or(Vec::is_empty));
    let latest = |isolation| {
        ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(isolation)
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])])
    };
    let lso = send(&mut client, -1, latest(1)).await;
    assert_eq!(lso.topics[0].partitions[0].offset, 4);
    let hw = send(&mut client, -1, latest(0)).await;
    assert_eq!(hw.topics[0].partitions[0].offset, 5);
}

#[tokio::test]
async fn log_append_time_topics_stamp_the_broker_time() {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let cluster = start(1, |_| {}).await;
    let mut client = client(cluster.bootstrap_servers());
    let create = |topic: &str, timestamp_type: &str| {
        CreateTopicsRequest::default()
            .with_timeout_ms(1_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(1)
                .with_replication_factor(1)
                .with_configs(vec![CreatableTopicConfig::default()
                    .with_name(StrBytes::from_static_str("message.timestamp.type"))
                    .with_value(Some(StrBytes::from_string(
                        timestamp_type.to_owned(),
                    )))])])
    };
    let created = send(&mut client, -1, create("lat", "LogAppendTime")).await;
    assert_eq!(created.topics[0].error_code, 0);
    let invalid = send(&mut client, -1, create("bad", "Sometime")).await;
    assert_eq!(
        invalid.topics[0].error_code,
        ResponseError::InvalidConfig.code()
    );
    let lat = ("lat", topic_id(&cluster, "lat"));
    let produced = send(&mut client, -1, produce_request(lat, 0, batch(&["x"]))).await;
    let stamped = produced.responses[0].partition_responses[0].log_append_time_ms;
    assert!(stamped > 1_577_836_800_000, "a broker wall-clock time");
    let fetched = send(&mut client, -1, fetch_request(lat, 0, 0, (0, -1))).await;
    let records = fetched.responses[0].partitions[0].records.clone().unwrap();
    let stored = FetchedRecords::new(Arc::from("lat"), 0, records, ReadOptions::default())
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(stored.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(stored.max_timestamp_ms(), stamped);
    let t = ("t", topic_id(&cluster, "t"));
    let create_time = send(&mut client, -1, produce_request(t, 0, batch(&["y"]))).await;
    assert_eq!(
        create_time.responses[0].partition_responses[0].log_append_time_ms,
        -1
    );
}

/// A raw Kafka connection: frames written and read by hand, so nothing between the test and the
/// broker negotiates, retries or hides a closed connection.
struct Raw {
    stream: TcpStream,
    correlation_id: i32,
}

impl Raw {
    async fn connect(address: &str) -> Self {
        Self {
            stream: TcpStream::connect(address).await.unwrap(),
            correlation_id: 0,
        }
    }

    /// Writes `request` at `version`; its correlation id.
    async fn write<R: Request>(&mut self, version: i16, request: &R) -> i32 {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("sweep")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .unwrap();
        request
            .encode(&mut body, version)
            .unwrap_or_else(|e| panic!("api {} v{version}: {e}", R::KEY));
        let mut frame = BytesMut::with_capacity(4 + body.len());
        frame.put_i32(body.len() as i32);
        frame.put_slice(&body);
        self.stream.write_all(&frame).await.unwrap();
        self.correlation_id
    }

    /// Sends `request` at `version` and decodes the answer; checks the correlation id and that
    /// the body re-encodes to the same bytes. `Err` says what went wrong (a close included).
    async fn exchange<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, String> {
        let correlation_id = self.write(version, request).await;
        let mut length = [0u8; 4];
        self.stream
            .read_exact(&mut length)
            .await
            .map_err(|e| format!("connection closed: {e}"))?;
        let mut frame = vec![0u8; i32::from_be_bytes(length) as usize];
        self.stream
            .read_exact(&mut frame)
            .await
            .map_err(|e| format!("connection closed mid-frame: {e}"))?;
        let mut buf = Bytes::from(frame);
        let header = ResponseHeader::decode(&mut buf, R::Response::header_version(version))
            .map_err(|e| format!("header: {e}"))?;
        if header.correlation_id != correlation_id {
            return Err(format!("correlation id {}", header.correlation_id));
        }
        let body = buf.clone();
        let response = R::Response::decode(&mut buf, version).map_err(|e| format!("body: {e}"))?;
        if buf.has_remaining() {
            return Err(format!("{} bytes left after the body", buf.remaining()));
        }
        let mut again = BytesMut::new();
        response
            .encode(&mut again, version)
            .map_err(|e| format!("re-encode: {e}"))?;
        if again.freeze() != body {
            return Err("the body does not re-encode to the same bytes".to_owned());
        }
        Ok(response)
    }
}

/// ApiVersions with the client software name and version v3+ requires (KIP-511); without them
/// Kafka — and the sim — answer INVALID_REQUEST.
fn api_versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("sim-tests"))
        .with_client_software_version(StrBytes::from_static_str("1.0"))
}

#[tokio::test]
async fn acks_zero_appends_without_answering_and_an_error_closes_the_connection() {
    let cluster = start(1, |_| {}).await;
    let address = cluster.bootstrap_servers()[0].clone();
    let t = ("t", topic_id(&cluster, "t"));
    let mut raw = Raw::connect(&address).await;
    raw.write(9, &produce_request(t, 0, batch(&["x"])).with_acks(0))
        .await;
    // The next frame on the connection answers the next request: nothing came for the Produce.
    let versions = raw.exchange(3, &api_versions_request()).await;
    assert_eq!(versions.unwrap().error_code, 0);
    let log_end = || {
        let state = cluster.controller().read();
        state.partition("t", 0).unwrap().log.log_end_offset()
    };
    assert_eq!(log_end(), 1);
    raw.write(9, &produce_request(t, 9, batch(&["y"])).with_acks(0))
        .await;
    let closed = raw.exchange(3, &api_versions_request()).await;
    assert!(
        closed.as_ref().is_err_and(|e| e.contains("closed")),
        "an acks=0 error closes the connection: {:?}",
        closed.map(|r| r.error_code)
    );
}

/// One request per API, valid at `version`, naming topic `t` (by name, or by id where the
/// version has ids) and group `g`; `seq` keeps created and deleted topic names apart.
async fn exchange_any(
    raw: &mut Raw,
    api: ApiKey,
    version: i16,
    topic: uuid::Uuid,
    seq: usize,
) -> Result<String, String> {
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
    use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest as Describe;
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::offset_commit_request::*;
    use kafka_protocol::messages::offset_fetch_request::*;
    use kafka_protocol::messages::offset_for_leader_epoch_request::*;
    let group = GroupId(StrBytes::from_static_str("g"));
    let named = |base: &str| name(&format!("{base}-{seq}"));
    macro_rules! go {
        ($request:expr) => {
            raw.exchange(version, &$request)
                .await
                .map(|response| format!("{response:?}"))
        };
    }
    match api {
        ApiKey::Produce => {
            let mut request = produce_request(("t", topic), 0, batch(&["s"]));
            if version < 13 {
                request.topic_data[0].topic_id = uuid::Uuid::nil();
            } else {
                request.topic_data[0].name = TopicName::default();
            }
            go!(request)
        }
        ApiKey::Fetch => {
            let mut request = fetch_request(("t", topic), 0, 0, (0, -1));
            if version < 13 {
                request.topics[0].topic_id = uuid::Uuid::nil();
            } else {
                request.topics[0].topic = TopicName::default();
            }
            if version < 7 {
                request.session_epoch = -1;
            }
            go!(request)
        }
        ApiKey::ListOffsets => go!(ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])])),
        ApiKey::Metadata => go!(MetadataRequest::default()
            .with_allow_auto_topic_creation(version < 4)
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name("t")))
            ]))),
        ApiKey::OffsetForLeaderEpoch => go!(OffsetForLeaderEpochRequest::default()
            .with_replica_id(BrokerId(if version >= 3 { -1 } else { -2 }))
            .with_topics(vec![OffsetForLeaderTopic::default()
                .with_topic(name("t"))
                .with_partitions(vec![OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_leader_epoch(0)])])),
        ApiKey::FindCoordinator if version < 4 => {
            go!(FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g")))
        }
        ApiKey::FindCoordinator => go!(FindCoordinatorRequest::default()
            .with_coordinator_keys(vec![StrBytes::from_static_str("g")])),
        ApiKey::ApiVersions => go!(api_versions_request()),
        ApiKey::InitProducerId => go!(InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)),
        ApiKey::CreateTopics => go!(CreateTopicsRequest::default()
            .with_timeout_ms(1_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(named("created"))
                .with_num_partitions(1)
                .with_replication_factor(1)])),
        ApiKey::DeleteTopics if version < 6 => go!(DeleteTopicsRequest::default()
            .with_timeout_ms(1_000)
            .with_topic_names(vec![named("doomed")])),
        ApiKey::DeleteTopics => go!(DeleteTopicsRequest::default()
            .with_timeout_ms(1_000)
            .with_topics(vec![
                DeleteTopicState::default().with_name(Some(named("doomed")))
            ])),
        ApiKey::CreatePartitions => go!(CreatePartitionsRequest::default()
            .with_timeout_ms(1_000)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(named("growing"))
                .with_count(2)
                .with_assignments(None)])),
        ApiKey::OffsetCommit => go!(OffsetCommitRequest::default()
            .with_group_id(group)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(1)])])),
        ApiKey::OffsetFetch if version < 8 => go!(OffsetFetchRequest::default()
            .with_group_id(group)
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(name("t"))
                .with_partition_indexes(vec![0])]))),
        ApiKey::OffsetFetch => {
            go!(
                OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                    .with_group_id(group)
                    .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                        .with_name(name("t"))
                        .with_partition_indexes(vec![0])]))])
            )
        }
        ApiKey::Heartbeat => go!(HeartbeatRequest::default()
            .with_group_id(group)
            .with_member_id(StrBytes::from_static_str("m"))),
        ApiKey::JoinGroup => go!(JoinGroupRequest::default()
            .with_group_id(group)
            .with_session_timeout_ms(10_000)
            .with_protocol_type(StrBytes::from_static_str("consumer"))),
        ApiKey::SyncGroup => go!(SyncGroupRequest::default().with_group_id(group)),
        ApiKey::LeaveGroup => go!(LeaveGroupRequest::default().with_group_id(group)),
        ApiKey::DescribeGroups => go!(Describe::default().with_groups(vec![group])),
        ApiKey::ListGroups => go!(ListGroupsRequest::default()),
        ApiKey::DeleteGroups => go!(DeleteGroupsRequest::default().with_groups_names(vec![group])),
        ApiKey::ConsumerGroupHeartbeat => {
            go!(ConsumerGroupHeartbeatRequest::default().with_group_id(group))
        }
        ApiKey::ConsumerGroupDescribe => {
            go!(ConsumerGroupDescribeRequest::default().with_group_ids(vec![group]))
        }
        // On this PLAINTEXT listener both are KafkaApis' ILLEGAL_SASL_STATE answers.
        ApiKey::SaslHandshake => {
            go!(SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")))
        }
        ApiKey::SaslAuthenticate => go!(SaslAuthenticateRequest::default()),
        ApiKey::DescribeConfigs => go!(DescribeConfigsRequest::default()
            .with_include_synonyms(version >= 1)
            .with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("t"))
                    .with_configuration_keys(None)
            ])),
        ApiKey::AlterConfigs => {
            use kafka_protocol::messages::alter_configs_request::*;
            go!(
                AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default(
                )
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("t"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(StrBytes::from_static_str("retention.ms"))
                    .with_value(Some(StrBytes::from_static_str("1000")))])])
            )
        }
        ApiKey::IncrementalAlterConfigs => {
            use kafka_protocol::messages::incremental_alter_configs_request::*;
            go!(
                IncrementalAlterConfigsRequest::default().with_resources(vec![
                    AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(StrBytes::from_static_str("t"))
                        .with_configs(vec![AlterableConfig::default()
                            .with_name(StrBytes::from_static_str("retention.ms"))
                            .with_value(Some(StrBytes::from_static_str("2000")))])
                ])
            )
        }
        ApiKey::DescribeCluster => go!(DescribeClusterRequest::default()),
        ApiKey::DeleteRecords => {
            use kafka_protocol::messages::delete_records_request::*;
            go!(DeleteRecordsRequest::default()
                .with_timeout_ms(1_000)
                .with_topics(vec![DeleteRecordsTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(0)])]))
        }
        ApiKey::OffsetDelete => {
            use kafka_protocol::messages::offset_delete_request::*;
            go!(OffsetDeleteRequest::default()
                .with_group_id(group)
                .with_topics(vec![OffsetDeleteRequestTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![
                        OffsetDeleteRequestPartition::default().with_partition_index(0)
                    ])]))
        }
        other => Err(format!("no request built for {other:?}")),
    }
}

/// The (api, min, max) the broker advertises.
async fn advertised(raw: &mut Raw) -> Vec<(ApiKey, i16, i16)> {
    let versions = raw.exchange(3, &api_versions_request()).await.unwrap();
    versions
        .api_keys
        .iter()
        .map(|k| {
            (
                ApiKey::try_from(k.api_key).unwrap(),
                k.min_version,
                k.max_version,
            )
        })
        .collect()
}

/// The group APIs the test shard leaves unanswered (it parks them); swept with injected errors.
fn answered_by_test_shard(api: ApiKey) -> bool {
    !matches!(
        api,
        ApiKey::JoinGroup
            | ApiKey::SyncGroup
            | ApiKey::LeaveGroup
            | ApiKey::DescribeGroups
            | ApiKey::ListGroups
            | ApiKey::DeleteGroups
            | ApiKey::OffsetDelete
            | ApiKey::ConsumerGroupHeartbeat
            | ApiKey::ConsumerGroupDescribe
    )
}

#[tokio::test]
async fn every_advertised_api_answers_at_every_advertised_version() {
    let cluster = start(1, |_| {}).await;
    let address = cluster.bootstrap_servers()[0].clone();
    let topic = topic_id(&cluster, "t");
    cluster.controller().append("t", 0, batch(&["a"])).unwrap();
    let mut raw = Raw::connect(&address).await;
    let apis = advertised(&mut raw).await;
    assert!(apis.len() >= 20, "{apis:?}");
    let mut failures = Vec::new();
    let mut exchanged = 0;
    for (seq, (api, min, max)) in apis.iter().enumerate() {
        if !answered_by_test_shard(*api) {
            continue;
        }
        for version in *min..=*max {
            let seq = seq * 100 + version as usize;
            // Each version deletes and grows topics of its own.
            for base in ["doomed", "growing"] {
                cluster.controller().update(|s| {
                    s.create_topic(&format!("{base}-{seq}"), 1, 1, None)
                        .unwrap()
                });
            }
            match exchange_any(&mut raw, *api, version, topic, seq).await {
                Ok(_) => exchanged += 1,
                Err(error) => {
                    failures.push(format!("{api:?} v{version}: {error}"));
                    raw = Raw::connect(&address).await;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(exchanged > 100, "{exchanged} exchanges");
}

#[tokio::test]
async fn every_advertised_api_encodes_its_error_response_at_every_advertised_version() {
    let cluster = start(1, |_| {}).await;
    let address = cluster.bootstrap_servers()[0].clone();
    let topic = topic_id(&cluster, "t");
    let mut raw = Raw::connect(&address).await;
    let apis = advertised(&mut raw).await;
    let mut failures = Vec::new();
    for (seq, (api, min, max)) in apis.iter().enumerate() {
        if *api == ApiKey::ApiVersions {
            continue; // its error answer is the UNSUPPORTED_VERSION path, tested elsewhere
        }
        cluster.faults().add(ResponseRule {
            api_key: *api as i16,
            broker: None,
            trigger: Trigger::UntilCleared,
            action: ResponseAction::Error(ResponseError::RequestTimedOut.code()),
        });
        for version in *min..=*max {
            match exchange_any(&mut raw, *api, version, topic, seq * 100 + version as usize).await {
                Ok(debug) if debug.contains("error_code: 7") => {}
                Ok(debug) => failures.push(format!("{api:?} v{version}: no error in {debug}")),
                Err(error) => {
                    failures.push(format!("{api:?} v{version}: {error}"));
                    raw = Raw::connect(&address).await;
                }
            }
        }
        cluster.faults().clear(None);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
