//! Simulation mode: a 3-broker madsim cluster, kill/restart, fault wire effects.
#![cfg(madsim)]

mod support;

use kafka_consumer::network::MetadataScope;
use kafka_consumer::rt::Duration;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};
use support::*;

fn topic(cluster: &Cluster, name: &str) -> (&'static str, uuid::Uuid) {
    let id = cluster.controller().read().topics[name].topic_id;
    (if name == "t" { "t" } else { "other" }, id)
}

fn leader(cluster: &Cluster, name: &str, partition: i32) -> (i32, i32) {
    let state = cluster.controller().read();
    let p = state.partition(name, partition).unwrap();
    (p.leader, p.leader_epoch)
}

#[madsim::test]
async fn kill_moves_leadership_with_epoch_bump_and_restart_keeps_the_log() {
    let cluster = Cluster::builder()
        .brokers(3)
        .topic("t", 3)
        .offsets_partitions(3)
        .build()
        .await;
    let t = topic(&cluster, "t");
    cluster
        .controller()
        .append("t", 0, batch(&["a", "b"]))
        .unwrap();
    let (old_leader, old_epoch) = leader(&cluster, "t", 0);
    let client_node = Handle::current()
        .create_node()
        .name("client")
        .ip("10.0.2.1".parse().unwrap())
        .build();
    let bootstrap = cluster.bootstrap_servers();
    let mut client = client_node
        .spawn(async move {
            let mut client = client(bootstrap);
            let metadata = send(
                &mut client,
                -1,
                MetadataRequest::default().with_topics(None),
            )
            .await;
            client.update_metadata(&metadata, MetadataScope::AllTopics);
            client
        })
        .await
        .unwrap();
    cluster.apply(&Fault::KillBroker { broker: old_leader });
    let (new_leader, new_epoch) = leader(&cluster, "t", 0);
    assert_ne!(new_leader, old_leader);
    assert_eq!(new_epoch, old_epoch + 1);
    client = client_node
        .spawn(async move {
            // A fetch pinned to the old epoch is fenced; with the new epoch it reads the log.
            let mut stale = fetch_request(t, 0, 0, (0, -1));
            stale.topics[0].partitions[0].current_leader_epoch = old_epoch;
            let fenced = send(&mut client, new_leader, stale).await;
            assert_eq!(
                fenced.responses[0].partitions[0].error_code,
                ResponseError::FencedLeaderEpoch.code()
            );
            let ok = send(&mut client, new_leader, fetch_request(t, 0, 0, (0, -1))).await;
            assert_eq!(
                values(ok.responses[0].partitions[0].records.clone()).len(),
                2
            );
            client
        })
        .await
        .unwrap();
    cluster.apply(&Fault::RestartBroker { broker: old_leader });
    tokio::time::sleep(Duration::from_millis(50)).await;
    cluster.apply(&Fault::MoveLeader {
        topic: "t".into(),
        partition: 0,
        to: Some(old_leader),
    });
    client_node
        .spawn(async move {
            let metadata = send(
                &mut client,
                new_leader,
                MetadataRequest::default().with_topics(None),
            )
            .await;
            client.update_metadata(&metadata, MetadataScope::AllTopics);
            let moved = send(&mut client, new_leader, fetch_request(t, 0, 0, (0, -1))).await;
            assert_eq!(
                moved.responses[0].partitions[0].error_code,
                ResponseError::NotLeaderOrFollower.code()
            );
            let back = send(&mut client, old_leader, fetch_request(t, 0, 0, (0, -1))).await;
            assert_eq!(
                values(back.responses[0].partitions[0].records.clone()).len(),
                2,
                "durable log survived"
            );
        })
        .await
        .unwrap();
}

#[madsim::test]
async fn injected_error_then_lost_response_on_the_wire() {
    let cluster = Cluster::builder()
        .brokers(1)
        .topic("t", 1)
        .offsets_partitions(1)
        .build()
        .await;
    let t = topic(&cluster, "t");
    cluster.apply(&Fault::Response(ResponseRule {
        api_key: 0,
        broker: None,
        trigger: Trigger::Next(1),
        action: ResponseAction::Error(ResponseError::NotLeaderOrFollower.code()),
    }));
    cluster.apply(&Fault::Response(ResponseRule {
        api_key: 1,
        broker: None,
        trigger: Trigger::Next(1),
        action: ResponseAction::Lose,
    }));
    let bootstrap = cluster.bootstrap_servers();
    let node = Handle::current()
        .create_node()
        .name("client")
        .ip("10.0.2.1".parse().unwrap())
        .build();
    node.spawn(async move {
        let mut client = client(bootstrap);
        let injected = send(&mut client, -1, produce_request(t, 0, batch(&["x"]))).await;
        assert_eq!(
            injected.responses[0].partition_responses[0].error_code,
            ResponseError::NotLeaderOrFollower.code()
        );
        let lost = client
            .send(
                kafka_consumer::network::Target::Node(-1),
                fetch_request(t, 0, 0, (0, 0)),
            )
            .await;
        assert!(
            lost.is_err(),
            "lost response closes the connection: {lost:?}"
        );
    })
    .await
    .unwrap();
    // The injected Produce was not applied; the lost Fetch opened no visible data change.
    assert_eq!(
        cluster
            .controller()
            .read()
            .partition("t", 0)
            .unwrap()
            .log
            .log_end_offset(),
        0
    );
}
