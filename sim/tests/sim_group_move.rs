//! Simulation mode: moving the group coordinator under a live classic group and a live KIP-848
//! consumer group. The new coordinator replays the group records from `__consumer_offsets`, so
//! both members carry on with their generation / member epoch, and its session timers start
//! when it finishes loading.
#![cfg(madsim)]

mod support;

use std::sync::Arc;

use bytes::Bytes;
use kafka_consumer::network::{MetadataScope, NetworkClient};
use kafka_consumer::rt::Duration;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::controller::OFFSETS_TOPIC;
use sim::coordinator::placement::offsets_partition_for;
use sim::fault::Fault;
use sim::group::classic::ClassicGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;
use support::*;

const CLASSIC: &str = "classic-app";
const CONSUMER: &str = "kip848-app";
const OFFSETS_PARTITIONS: i32 = 3;
const SESSION_MS: i32 = 10_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn coordinator(cluster: &Cluster, group: &str) -> i32 {
    let partition = offsets_partition_for(group, OFFSETS_PARTITIONS);
    cluster
        .controller()
        .read()
        .partition(OFFSETS_TOPIC, partition)
        .unwrap()
        .leader
}

async fn connected(cluster: &Cluster) -> NetworkClient {
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

fn join(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(CLASSIC)))
        .with_session_timeout_ms(SESSION_MS)
        .with_rebalance_timeout_ms(SESSION_MS)
        .with_member_id(s(member_id))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from_static(b"subscription"))])
}

async fn classic_heartbeat(client: &mut NetworkClient, node: i32, member: &str) -> i16 {
    let request = HeartbeatRequest::default()
        .with_group_id(GroupId(s(CLASSIC)))
        .with_generation_id(1)
        .with_member_id(s(member));
    send(client, node, request).await.error_code
}

fn consumer_heartbeat(epoch: i32, owned: Vec<TopicPartitions>) -> ConsumerGroupHeartbeatRequest {
    let mut request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(CONSUMER)))
        .with_member_id(s("member-1"))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(Some(owned));
    if epoch == 0 {
        request = request
            .with_rebalance_timeout_ms(60_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]));
    }
    request
}

#[madsim::test]
async fn live_groups_survive_a_coordinator_move() {
    let factory = GroupCoordinatorFactory {
        classic: ClassicGroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..ClassicGroupConfig::default()
        },
        ..GroupCoordinatorFactory::default()
    };
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(3)
            .topic("t", 4)
            .offsets_partitions(OFFSETS_PARTITIONS)
            .config(|c| c.coordinator_load_ms = 500)
            .group_shards(Arc::new(factory))
            .build()
            .await,
    );
    let c = cluster.clone();
    Handle::current()
        .create_node()
        .name("client")
        .ip("10.0.2.1".parse().unwrap())
        .build()
        .spawn(async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            let mut client = connected(&c).await;

            // A Stable classic group at generation 1.
            let classic_old = coordinator(&c, CLASSIC);
            let first = send(&mut client, classic_old, join("")).await;
            assert_eq!(first.error_code, ResponseError::MemberIdRequired.code());
            let member = first.member_id.to_string();
            let joined = send(&mut client, classic_old, join(&member)).await;
            assert_eq!((joined.error_code, joined.generation_id), (0, 1));
            let synced = send(
                &mut client,
                classic_old,
                SyncGroupRequest::default()
                    .with_group_id(GroupId(s(CLASSIC)))
                    .with_generation_id(1)
                    .with_member_id(s(&member))
                    .with_protocol_type(Some(s("consumer")))
                    .with_protocol_name(Some(s("range")))
                    .with_assignments(vec![SyncGroupRequestAssignment::default()
                        .with_member_id(s(&member))
                        .with_assignment(Bytes::from_static(b"t-0..3"))]),
            )
            .await;
            assert_eq!(synced.error_code, 0);

            // A consumer group whose one member owns all four partitions at epoch 1.
            let consumer_old = coordinator(&c, CONSUMER);
            let joined = send(&mut client, consumer_old, consumer_heartbeat(0, vec![])).await;
            assert_eq!((joined.error_code, joined.member_epoch), (0, 1));
            let owned: Vec<TopicPartitions> = joined
                .assignment
                .expect("the join is answered with the assignment")
                .topic_partitions
                .iter()
                .map(|tp| {
                    TopicPartitions::default()
                        .with_topic_id(tp.topic_id)
                        .with_partitions(tp.partitions.clone())
                })
                .collect();
            assert_eq!(owned[0].partitions, vec![0, 1, 2, 3]);

            // 8 s later, move both coordinators to another broker.
            tokio::time::sleep(Duration::from_secs(8)).await;
            let mut moved = Vec::new();
            for group in [CLASSIC, CONSUMER] {
                let offsets_partition = offsets_partition_for(group, OFFSETS_PARTITIONS);
                if moved.contains(&offsets_partition) {
                    continue;
                }
                moved.push(offsets_partition);
                let old = coordinator(&c, group);
                let to = c.node_ids().into_iter().find(|n| *n != old).unwrap();
                c.apply(&Fault::MoveCoordinator {
                    offsets_partition,
                    to: Some(to),
                });
            }
            let classic_new = coordinator(&c, CLASSIC);
            let consumer_new = coordinator(&c, CONSUMER);
            assert_ne!(classic_new, classic_old);
            assert_ne!(consumer_new, consumer_old);
            assert_eq!(
                classic_heartbeat(&mut client, classic_old, &member).await,
                ResponseError::NotCoordinator.code()
            );
            assert_eq!(
                classic_heartbeat(&mut client, classic_new, &member).await,
                ResponseError::CoordinatorLoadInProgress.code()
            );
            tokio::time::sleep(Duration::from_millis(600)).await;

            // Same generation and member epoch on the new coordinator, for 20 s of heartbeats
            // (twice the session timeout after the last heartbeat the old coordinator saw).
            for _ in 0..7 {
                assert_eq!(
                    classic_heartbeat(&mut client, classic_new, &member).await,
                    0,
                    "the classic member's generation is valid on the new coordinator"
                );
                let beat = send(
                    &mut client,
                    consumer_new,
                    consumer_heartbeat(1, owned.clone()),
                )
                .await;
                assert_eq!(
                    (beat.error_code, beat.member_epoch),
                    (0, 1),
                    "{:?}",
                    beat.error_message
                );
                assert!(beat.assignment.is_none(), "the assignment did not change");
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            let described = send(
                &mut client,
                classic_new,
                DescribeGroupsRequest::default().with_groups(vec![GroupId(s(CLASSIC))]),
            )
            .await;
            assert_eq!(described.groups[0].group_state.as_str(), "Stable");
            assert_eq!(described.groups[0].members.len(), 1);
            assert_eq!(
                described.groups[0].members[0].member_assignment,
                Bytes::from_static(b"t-0..3")
            );

            // The classic member falls silent: its session (restarted at load, kept alive by
            // the heartbeats since) expires on the new coordinator.
            tokio::time::sleep(Duration::from_millis(SESSION_MS as u64 + 1_000)).await;
            assert_eq!(
                classic_heartbeat(&mut client, classic_new, &member).await,
                ResponseError::UnknownMemberId.code()
            );
        })
        .await
        .unwrap();
}
