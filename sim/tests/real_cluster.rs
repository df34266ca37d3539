//! Real mode: a `LocalCluster` on loopback driven by our `NetworkClient`.
#![cfg(not(madsim))]

mod support;

use std::sync::Arc;

use bytes::BufMut;
use kafka_consumer::network::MetadataScope;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sim::config::ClusterConfig;
use sim::coordinator::placement::offsets_partition_for;
use sim::real::{LocalCluster, LocalClusterOptions};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn cluster(brokers: usize, with_groups: bool) -> LocalCluster {
    let mut config = ClusterConfig::default();
    config.topics.insert("t".to_owned(), 2);
    LocalCluster::start(LocalClusterOptions {
        brokers,
        base_port: 0,
        config,
        group_shards: with_groups.then(|| Arc::new(TestShards) as _),
    })
    .await
    .unwrap()
}

fn topic_id(cluster: &LocalCluster, topic: &str) -> uuid::Uuid {
    cluster.controller().read().topics[topic].topic_id
}

fn leader(cluster: &LocalCluster, topic: &str, partition: i32) -> (i32, i32) {
    let state = cluster.controller().read();
    let p = state.partition(topic, partition).unwrap();
    (p.leader, p.leader_epoch)
}

#[tokio::test]
async fn metadata_describes_brokers_topics_and_leaders() {
    let cluster = cluster(3, false).await;
    let mut client = client(cluster.bootstrap_servers());
    let response = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    assert_eq!(response.brokers.len(), 3);
    assert_eq!(
        response.cluster_id.as_deref(),
        Some("sim-cluster-0000000000")
    );
    let t = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().unwrap().0.as_str() == "t")
        .unwrap();
    assert_eq!(t.partitions.len(), 2);
    assert!(!t.topic_id.is_nil());
    assert_eq!(t.partitions[0].replica_nodes.len(), 3);
    assert!(response.topics.iter().any(|t| t.is_internal));
    let missing = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(Some(vec![
            kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                .with_name(Some(name("nope"))),
        ])),
    )
    .await;
    assert_eq!(
        missing.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

#[tokio::test]
async fn create_topic_produce_fetch_and_list_offsets() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let cluster = cluster(3, false).await;
    let mut client = client(cluster.bootstrap_servers());
    let created = send(
        &mut client,
        -1,
        CreateTopicsRequest::default()
            .with_timeout_ms(1000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(name("orders"))
                .with_num_partitions(3)
                .with_replication_factor(2)]),
    )
    .await;
    assert_eq!(created.topics[0].error_code, 0);
    let again = send(
        &mut client,
        -1,
        CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
            .with_name(name("orders"))
            .with_num_partitions(3)
            .with_replication_factor(2)]),
    )
    .await;
    assert_eq!(
        again.topics[0].error_code,
        ResponseError::TopicAlreadyExists.code()
    );
    let metadata = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    client.update_metadata(&metadata, MetadataScope::AllTopics);
    let (leader_id, _) = leader(&cluster, "orders", 1);
    let not_leader = cluster
        .node_ids()
        .into_iter()
        .find(|n| *n != leader_id)
        .unwrap();
    let refused = send(
        &mut client,
        not_leader,
        produce_request(("orders", topic_id(&cluster, "orders")), 1, batch(&["x"])),
    )
    .await;
    assert_eq!(
        refused.responses[0].partition_responses[0].error_code,
        ResponseError::NotLeaderOrFollower.code()
    );
    for values in [&["a", "b"][..], &["c"][..]] {
        let produced = send(
            &mut client,
            leader_id,
            produce_request(("orders", topic_id(&cluster, "orders")), 1, batch(values)),
        )
        .await;
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    }
    let fetched = send(
        &mut client,
        leader_id,
        fetch_request(("orders", topic_id(&cluster, "orders")), 1, 1, (0, -1)),
    )
    .await;
    let p = &fetched.responses[0].partitions[0];
    assert_eq!(p.high_watermark, 3);
    // The batch holding offset 1 starts at 0: Kafka returns whole batches.
    assert_eq!(
        values(p.records.clone()),
        [(0, "a".into()), (1, "b".into()), (2, "c".into())]
    );
    let out_of_range = send(
        &mut client,
        leader_id,
        fetch_request(("orders", topic_id(&cluster, "orders")), 1, 9, (0, -1)),
    )
    .await;
    assert_eq!(
        out_of_range.responses[0].partitions[0].error_code,
        ResponseError::OffsetOutOfRange.code()
    );
    // One query per request: Kafka answers a partition named twice with INVALID_REQUEST.
    let mut offsets = Vec::new();
    for timestamp in [-2i64, -1, -3, 1_000] {
        let listed = send(
            &mut client,
            leader_id,
            ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![ListOffsetsTopic::default()
                    .with_name(name("orders"))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(1)
                        .with_timestamp(timestamp)])]),
        )
        .await;
        offsets.push(listed.topics[0].partitions[0].offset);
    }
    // All records share timestamp 1000: max timestamp (-3) ties resolve to the first, as Kafka.
    assert_eq!(offsets, [0, 3, 0, 0]);
}

#[tokio::test]
async fn fetch_session_full_incremental_then_not_found_after_restart() {
    let mut cluster = cluster(1, false).await;
    let mut client = client(cluster.bootstrap_servers());
    cluster.controller().append("t", 0, batch(&["a"])).unwrap();
    let full = send(
        &mut client,
        -1,
        fetch_request(("t", topic_id(&cluster, "t")), 0, 0, (0, 0)),
    )
    .await;
    assert_ne!(full.session_id, 0);
    assert_eq!(
        values(full.responses[0].partitions[0].records.clone()).len(),
        1
    );
    // Incremental with the advanced position, nothing new: the partition is left out.
    let quiet = fetch_request(("t", topic_id(&cluster, "t")), 0, 1, (full.session_id, 1));
    let quiet = send(&mut client, -1, quiet).await;
    assert_eq!(quiet.error_code, 0);
    assert!(quiet.responses.is_empty(), "{quiet:?}");
    cluster.controller().append("t", 0, batch(&["b"])).unwrap();
    // Naming no partition: the session remembers position 1.
    let mut news = fetch_request(("t", topic_id(&cluster, "t")), 0, 1, (full.session_id, 2));
    news.topics.clear();
    let news = send(&mut client, -1, news).await;
    assert_eq!(news.responses.len(), 1, "new data must be included");
    let stale = send(
        &mut client,
        -1,
        fetch_request(("t", topic_id(&cluster, "t")), 0, 1, (full.session_id, 2)),
    )
    .await;
    assert_eq!(
        stale.error_code,
        ResponseError::InvalidFetchSessionEpoch.code()
    );
    cluster.restart_broker(1).await.unwrap();
    let mut client = support::client(cluster.bootstrap_servers());
    let lost = send(
        &mut client,
        -1,
        fetch_request(("t", topic_id(&cluster, "t")), 0, 1, (full.session_id, 3)),
    )
    .await;
    assert_eq!(
        lost.error_code,
        ResponseError::FetchSessionIdNotFound.code()
    );
    // The log survived the restart.
    let again = send(
        &mut client,
        -1,
        fetch_request(("t", topic_id(&cluster, "t")), 0, 0, (0, -1)),
    )
    .await;
    assert_eq!(
        values(again.responses[0].partitions[0].records.clone()).len(),
        2
    );
}

#[tokio::test]
async fn long_poll_wakes_on_produce() {
    let cluster = cluster(1, false).await;
    let mut client = client(cluster.bootstrap_servers());
    let waiting = client.send(
        kafka_consumer::network::Target::Node(-1),
        fetch_request(("t", topic_id(&cluster, "t")), 0, 0, (0, -1)).with_max_wait_ms(5_000),
    );
    tokio::time::sleep(kafka_consumer::rt::Duration::from_millis(100)).await;
    let started = kafka_consumer::rt::Instant::now();
    cluster
        .controller()
        .append("t", 0, batch(&["late"]))
        .unwrap();
    let response = waiting.await.unwrap().body;
    assert!(started.elapsed() < kafka_consumer::rt::Duration::from_secs(2));
    assert_eq!(
        values(response.responses[0].partitions[0].records.clone()),
        [(0, "late".into())]
    );
}

#[tokio::test]
async fn offset_for_leader_epoch_after_leader_change() {
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    let cluster = cluster(3, false).await;
    let mut client = client(cluster.bootstrap_servers());
    let metadata = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    client.update_metadata(&metadata, MetadataScope::AllTopics);
    cluster
        .controller()
        .append("t", 0, batch(&["a", "b"]))
        .unwrap();
    let (old_leader, old_epoch) = leader(&cluster, "t", 0);
    cluster.controller().update(|s| s.move_leader("t", 0, None));
    cluster.controller().append("t", 0, batch(&["c"])).unwrap();
    let (new_leader, new_epoch) = leader(&cluster, "t", 0);
    assert_ne!(old_leader, new_leader);
    assert_eq!(new_epoch, old_epoch + 1);
    let request = |epoch, current| {
        OffsetForLeaderEpochRequest::default()
            .with_replica_id(BrokerId(-2))
            .with_topics(vec![OffsetForLeaderTopic::default()
                .with_topic(name("t"))
                .with_partitions(vec![OffsetForLeaderPartition::default()
                    .with_partition(0)
                    .with_current_leader_epoch(current)
                    .with_leader_epoch(epoch)])])
    };
    let answer = send(&mut client, new_leader, request(old_epoch, new_epoch)).await;
    let p = &answer.topics[0].partitions[0];
    assert_eq!(
        (p.error_code, p.leader_epoch, p.end_offset),
        (0, old_epoch, 2)
    );
    let fenced = send(&mut client, new_leader, request(old_epoch, old_epoch)).await;
    assert_eq!(
        fenced.topics[0].partitions[0].error_code,
        ResponseError::FencedLeaderEpoch.code()
    );
    let ahead = send(&mut client, new_leader, request(old_epoch, new_epoch + 1)).await;
    assert_eq!(
        ahead.topics[0].partitions[0].error_code,
        ResponseError::UnknownLeaderEpoch.code()
    );
    let old = send(&mut client, old_leader, request(old_epoch, -1)).await;
    assert_eq!(
        old.topics[0].partitions[0].error_code,
        ResponseError::NotLeaderOrFollower.code()
    );
}

#[tokio::test]
async fn find_coordinator_places_groups_by_java_hash_code_and_routes_group_apis() {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    let mut cluster = cluster(3, true).await;
    let mut client = client(cluster.bootstrap_servers());
    let metadata = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    client.update_metadata(&metadata, MetadataScope::AllTopics);
    for group in ["hello", "polygenelubricants", "orders-app"] {
        let partition = offsets_partition_for(group, 3);
        let (expected, _) = leader(&cluster, "__consumer_offsets", partition);
        let found = send(
            &mut client,
            -1,
            FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![StrBytes::from_static_str(group)]),
        )
        .await;
        assert_eq!(found.coordinators[0].node_id.0, expected, "{group}");
        let single = client
            .send_with(
                kafka_consumer::network::Target::Node(-1),
                FindCoordinatorRequest::default().with_key(StrBytes::from_static_str(group)),
                kafka_consumer::network::RequestOptions {
                    version: Some(3),
                    timeout_ms: None,
                },
            )
            .await
            .unwrap()
            .body;
        assert_eq!(single.node_id.0, expected);
    }
    let group = "orders-app";
    let (coordinator, _) = leader(
        &cluster,
        "__consumer_offsets",
        offsets_partition_for(group, 3),
    );
    let other = cluster
        .node_ids()
        .into_iter()
        .find(|n| *n != coordinator)
        .unwrap();
    let heartbeat =
        HeartbeatRequest::default().with_group_id(GroupId(StrBytes::from_static_str(group)));
    assert_eq!(
        send(&mut client, other, heartbeat.clone()).await.error_code,
        ResponseError::NotCoordinator.code()
    );
    assert_eq!(
        send(&mut client, coordinator, heartbeat).await.error_code,
        0
    );
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(group)))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name("t"))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(42)])]);
    let committed = send(&mut client, coordinator, commit).await;
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    // Move the coordinator by restarting it: the committed offset survives in the log.
    cluster.restart_broker(coordinator).await.unwrap();
    let (moved, _) = leader(
        &cluster,
        "__consumer_offsets",
        offsets_partition_for(group, 3),
    );
    assert_ne!(moved, coordinator);
    let mut client = support::client(cluster.bootstrap_servers());
    let metadata = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    client.update_metadata(&metadata, MetadataScope::AllTopics);
    let fetched = client
        .send_with(
            kafka_consumer::network::Target::Node(moved),
            OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str(group)))
                .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                    .with_name(name("t"))
                    .with_partition_indexes(vec![0])])),
            kafka_consumer::network::RequestOptions {
                version: Some(7),
                timeout_ms: None,
            },
        )
        .await
        .unwrap()
        .body;
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, 42);
}

/// Raw bytes: an ApiVersions request at a version we do not know gets UNSUPPORTED_VERSION with a
/// v0 body listing our ranges; an unknown API key closes the connection.
#[tokio::test]
async fn unsupported_api_versions_version_and_unknown_api() {
    let cluster = cluster(1, false).await;
    let address = cluster.bootstrap_servers()[0].clone();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut frame = Vec::new();
    frame.put_i32(10);
    frame.put_i16(18); // ApiVersions
    frame.put_i16(99);
    frame.put_i32(7); // correlation id
    frame.put_i16(-1); // null client id
    stream.write_all(&frame).await.unwrap();
    stream.flush().await.unwrap();
    let size = stream.read_i32().await.unwrap();
    let mut body = vec![0; size as usize];
    stream.read_exact(&mut body).await.unwrap();
    let (response, version) =
        kafka_consumer::protocol::codec::decode_api_versions_response(bytes::Bytes::from(body), 4)
            .unwrap();
    assert_eq!(version, 0);
    assert_eq!(
        response.error_code,
        ResponseError::UnsupportedVersion.code()
    );
    assert!(response
        .api_keys
        .iter()
        .any(|k| k.api_key == 1 && k.max_version == 18));
    let mut unknown = Vec::new();
    unknown.put_i32(10);
    unknown.put_i16(999);
    unknown.put_i16(0);
    unknown.put_i32(8);
    unknown.put_i16(-1);
    stream.write_all(&unknown).await.unwrap();
    stream.flush().await.unwrap();
    let mut rest = Vec::new();
    assert_eq!(
        stream.read_to_end(&mut rest).await.unwrap(),
        0,
        "closed without a response"
    );
}

/// A response rewriter replaces the body of the responses it picks and leaves the header, so
/// the client reads the lie as the answer to its request; without one the broker is honest
/// again.
#[tokio::test]
async fn response_rewriter_replaces_bodies_it_picks() {
    let cluster = cluster(1, false).await;
    let mut client = client(cluster.bootstrap_servers());
    let honest = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    // The same response with another cluster id: a lie that still decodes.
    let lie = honest
        .clone()
        .with_cluster_id(Some(StrBytes::from_static_str("liar")));
    let rewriter: sim::fault::ResponseRewriter = Arc::new(move |response| {
        (response.api_key == ApiKey::Metadata as i16).then(|| {
            let mut body = bytes::BytesMut::new();
            kafka_protocol::protocol::Encodable::encode(&lie, &mut body, response.version).unwrap();
            body.freeze()
        })
    });
    cluster.faults().set_response_rewriter(Some(rewriter));
    let lied = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    assert_eq!(lied.cluster_id.as_deref(), Some("liar"));
    // Other APIs are left alone.
    let versions = send(
        &mut client,
        -1,
        ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("test"))
            .with_client_software_version(StrBytes::from_static_str("1")),
    )
    .await;
    assert_eq!(versions.error_code, 0);
    assert!(!versions.api_keys.is_empty());
    cluster.faults().set_response_rewriter(None);
    let again = send(
        &mut client,
        -1,
        MetadataRequest::default().with_topics(None),
    )
    .await;
    assert_eq!(again.cluster_id, honest.cluster_id);
}
