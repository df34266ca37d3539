//! Real mode: the group coordinator shard (`sim::group::shard`) behind a `LocalCluster`, driven
//! over the wire by our `NetworkClient` — classic and KIP-848 groups, offsets that survive a
//! coordinator move.
#![cfg(not(madsim))]

mod support;

use std::sync::Arc;

use bytes::Bytes;
use kafka_consumer::network::{MetadataScope, NetworkClient};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sim::config::ClusterConfig;
use sim::coordinator::placement::offsets_partition_for;
use sim::group::classic::ClassicGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;
use sim::real::{LocalCluster, LocalClusterOptions};
use support::*;

async fn cluster(brokers: usize) -> LocalCluster {
    let mut config = ClusterConfig::default();
    config.topics.insert("t".to_owned(), 2);
    let factory = GroupCoordinatorFactory {
        classic: ClassicGroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..ClassicGroupConfig::default()
        },
        ..GroupCoordinatorFactory::default()
    };
    LocalCluster::start(LocalClusterOptions {
        brokers,
        base_port: 0,
        config,
        group_shards: Some(Arc::new(factory)),
    })
    .await
    .unwrap()
}

async fn connected_client(cluster: &LocalCluster) -> NetworkClient {
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

fn coordinator_of(cluster: &LocalCluster, group: &str) -> i32 {
    let state = cluster.controller().read();
    let partition = offsets_partition_for(group, state.config.offsets_partitions);
    state
        .partition("__consumer_offsets", partition)
        .unwrap()
        .leader
}

fn group_id(group: &str) -> GroupId {
    GroupId(StrBytes::from_string(group.to_owned()))
}

fn commit(group: &str, generation_or_epoch: i32, member: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group_id(group))
        .with_generation_id_or_member_epoch(generation_or_epoch)
        .with_member_id(StrBytes::from_string(member.to_owned()))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name("t"))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])])
}

fn fetch(group: &str, member: Option<&str>, epoch: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(group_id(group))
        .with_member_id(member.map(|m| StrBytes::from_string(m.to_owned())))
        .with_member_epoch(epoch)
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(name("t"))
            .with_partition_indexes(vec![0])]))])
}

#[tokio::test]
async fn classic_group_joins_syncs_commits_and_its_membership_and_offsets_survive_a_coordinator_move(
) {
    let mut cluster = cluster(2).await;
    let mut client = connected_client(&cluster).await;
    let group = "classic-app";
    let coordinator = coordinator_of(&cluster, group);

    let join = |member_id: &str| {
        JoinGroupRequest::default()
            .with_group_id(group_id(group))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(StrBytes::from_string(member_id.to_owned()))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from_static(b"subscription"))])
    };
    let first = send(&mut client, coordinator, join("")).await;
    assert_eq!(first.error_code, ResponseError::MemberIdRequired.code());
    let member_id = first.member_id.to_string();
    assert!(!member_id.is_empty());

    let joined = send(&mut client, coordinator, join(&member_id)).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader.as_str(), member_id);
    assert_eq!(joined.members.len(), 1, "the leader gets the member list");

    let without_protocol = send(
        &mut client,
        coordinator,
        SyncGroupRequest::default()
            .with_group_id(group_id(group))
            .with_generation_id(1)
            .with_member_id(StrBytes::from_string(member_id.clone())),
    )
    .await;
    assert_eq!(
        without_protocol.error_code,
        ResponseError::InconsistentGroupProtocol.code(),
        "SyncGroup v5+ requires ProtocolType and ProtocolName (KafkaApis)"
    );
    let synced = send(
        &mut client,
        coordinator,
        SyncGroupRequest::default()
            .with_group_id(group_id(group))
            .with_generation_id(1)
            .with_member_id(StrBytes::from_string(member_id.clone()))
            .with_protocol_type(Some(StrBytes::from_static_str("consumer")))
            .with_protocol_name(Some(StrBytes::from_static_str("range")))
            .with_assignments(vec![SyncGroupRequestAssignment::default()
                .with_member_id(StrBytes::from_string(member_id.clone()))
                .with_assignment(Bytes::from_static(b"t-0,t-1"))]),
    )
    .await;
    assert_eq!(synced.error_code, 0);
    assert_eq!(synced.assignment, Bytes::from_static(b"t-0,t-1"));

    let stale = send(&mut client, coordinator, commit(group, 7, &member_id, 1)).await;
    assert_eq!(
        stale.topics[0].partitions[0].error_code,
        ResponseError::IllegalGeneration.code()
    );
    let committed = send(&mut client, coordinator, commit(group, 1, &member_id, 42)).await;
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    let fetched = send(&mut client, coordinator, fetch(group, None, -1)).await;
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset,
        42
    );

    // Restarting the coordinator moves the shard to the other broker, which replays the log.
    cluster.restart_broker(coordinator).await.unwrap();
    let moved = coordinator_of(&cluster, group);
    assert_ne!(moved, coordinator);
    let mut client = connected_client(&cluster).await;
    let fetched = send(&mut client, moved, fetch(group, None, -1)).await;
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset, 42,
        "committed offsets survive the move"
    );
    let heartbeat = send(
        &mut client,
        moved,
        HeartbeatRequest::default()
            .with_group_id(group_id(group))
            .with_generation_id(1)
            .with_member_id(StrBytes::from_string(member_id.clone())),
    )
    .await;
    assert_eq!(
        heartbeat.error_code, 0,
        "membership is persisted: generation 1 is valid on the new coordinator"
    );
    let committed = send(&mut client, moved, commit(group, 1, &member_id, 43)).await;
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
}

#[tokio::test]
async fn consumer_group_heartbeat_assigns_and_commits_are_checked_by_member_epoch() {
    let cluster = cluster(1).await;
    let mut client = connected_client(&cluster).await;
    let group = "kip848-app";
    let coordinator = coordinator_of(&cluster, group);
    let topic_id = cluster.controller().read().topics["t"].topic_id;

    let joined = send(
        &mut client,
        coordinator,
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group_id(group))
            .with_member_id(StrBytes::from_static_str("member-a"))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![name("t")]))
            .with_topic_partitions(Some(Vec::<TopicPartitions>::new())),
    )
    .await;
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    assert_eq!(joined.member_epoch, 1);
    let assignment = joined.assignment.expect("an assignment on join");
    assert_eq!(assignment.topic_partitions.len(), 1);
    assert_eq!(assignment.topic_partitions[0].topic_id, topic_id);
    assert_eq!(assignment.topic_partitions[0].partitions, vec![0, 1]);

    let stale = send(&mut client, coordinator, commit(group, 0, "member-a", 5)).await;
    assert_eq!(
        stale.topics[0].partitions[0].error_code,
        ResponseError::StaleMemberEpoch.code()
    );
    let committed = send(&mut client, coordinator, commit(group, 1, "member-a", 5)).await;
    assert_eq!(committed.topics[0].partitions[0].error_code, 0);
    let fetched = send(&mut client, coordinator, fetch(group, Some("member-a"), 1)).await;
    assert_eq!(fetched.groups[0].error_code, 0);
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset,
        5
    );

    let classic_join = send(
        &mut client,
        coordinator,
        JoinGroupRequest::default()
            .with_group_id(group_id(group))
            .with_session_timeout_ms(10_000)
            .with_member_id(StrBytes::from_static_str("classic-member"))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default().with_name(StrBytes::from_static_str("range"))
            ]),
    )
    .await;
    // A classic member may join a consumer group (online migration), but this one's embedded
    // subscription is empty: Kafka 4.1.1's `deserializeSubscription` throws an
    // IllegalStateException for it, which answers UNKNOWN_SERVER_ERROR (later Kafka versions
    // answer INCONSISTENT_GROUP_PROTOCOL).
    assert_eq!(
        classic_join.error_code,
        ResponseError::UnknownServerError.code()
    );
}
