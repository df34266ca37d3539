//! Simulation mode: one test per fault kind, each asserting what a client sees on the wire
//! (through `NetworkClient`), with timings measured on virtual time.
//!
//! Every test holds for any madsim seed (the default seed is the clock), so timing assertions
//! carry the network's default 1–10 ms per message as slack.
#![cfg(madsim)]

mod support;

use std::future::Future;
use std::sync::Arc;

use kafka_consumer::network::{
    CloseReason, MetadataScope, NetworkClient, NetworkError, RequestOptions, Target,
};
use kafka_consumer::rt::{Duration, Instant};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::controller::OFFSETS_TOPIC;
use sim::coordinator::placement::offsets_partition_for;
use sim::fault::{Direction, Fault, ResponseAction, ResponseRule, Trigger};
use support::*;

const FIND_COORDINATOR: i16 = 10;
const PRODUCE: i16 = 0;
const OFFSET_COMMIT: i16 = 8;

/// Runs `body` on a fresh client node (`name` at 10.0.2.`ip`), as a client process would.
async fn on_client<F, Fut, T>(name: &str, ip: u8, body: F) -> T
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    Handle::current()
        .create_node()
        .name(name)
        .ip(format!("10.0.2.{ip}").parse().unwrap())
        .build()
        .spawn(body())
        .await
        .unwrap()
}

/// A cluster with topic `t` and the test group shard (so FindCoordinator, the probe most tests
/// use because every broker answers it, succeeds).
async fn cluster(brokers: usize, partitions: i32) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder()
            .brokers(brokers)
            .topic("t", partitions)
            .offsets_partitions(3)
            .group_shards(Arc::new(TestShards))
            .build()
            .await,
    )
}

fn topic(cluster: &Cluster) -> (&'static str, uuid::Uuid) {
    ("t", cluster.controller().read().topics["t"].topic_id)
}

fn leader(cluster: &Cluster, topic: &str, partition: i32) -> (i32, i32) {
    let state = cluster.controller().read();
    let p = state.partition(topic, partition).unwrap();
    (p.leader, p.leader_epoch)
}

fn log_end(cluster: &Cluster, partition: i32) -> i64 {
    let state = cluster.controller().read();
    state
        .partition("t", partition)
        .unwrap()
        .log
        .log_end_offset()
}

/// A client that knows the brokers by id (Metadata loaded).
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

fn find_coordinator_request() -> FindCoordinatorRequest {
    FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![StrBytes::from_static_str("g")])
}

/// FindCoordinator for group `g` at `node`: (error code, coordinator id), or the network error.
async fn find_coordinator(
    client: &mut NetworkClient,
    node: i32,
) -> Result<(i16, i32), NetworkError> {
    let response = client
        .send(Target::Node(node), find_coordinator_request())
        .await?;
    let c = &response.body.coordinators[0];
    Ok((c.error_code, c.node_id.0))
}

fn rule(api_key: i16, broker: Option<i32>, trigger: Trigger, action: ResponseAction) -> Fault {
    Fault::Response(ResponseRule {
        api_key,
        broker,
        trigger,
        action,
    })
}

fn is_closed(result: &Result<impl std::fmt::Debug, NetworkError>) -> bool {
    matches!(result, Err(NetworkError::ConnectionClosed { .. }))
}

const NOT_AVAILABLE: i16 = 15; // COORDINATOR_NOT_AVAILABLE

#[madsim::test]
async fn error_injection_next_n_then_the_real_answer() {
    let cluster = cluster(1, 1).await;
    cluster.apply(&rule(
        FIND_COORDINATOR,
        None,
        Trigger::Next(2),
        ResponseAction::Error(NOT_AVAILABLE),
    ));
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let mut codes = Vec::new();
        for _ in 0..4 {
            codes.push(find_coordinator(&mut client, -1).await.unwrap().0);
        }
        assert_eq!(codes, [NOT_AVAILABLE, NOT_AVAILABLE, 0, 0]);
    })
    .await;
}

#[madsim::test]
async fn error_injection_by_probability_mixes_errors_and_answers() {
    let cluster = cluster(1, 1).await;
    cluster.apply(&rule(
        FIND_COORDINATOR,
        None,
        Trigger::Probability(0.5),
        ResponseAction::Error(NOT_AVAILABLE),
    ));
    let c = cluster.clone();
    let codes = on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let mut codes = Vec::new();
        for _ in 0..64 {
            codes.push(find_coordinator(&mut client, -1).await.unwrap().0);
        }
        codes
    })
    .await;
    let errors = codes.iter().filter(|c| **c == NOT_AVAILABLE).count();
    // Binomial(64, 0.5): outside 12..=52 has probability below 1e-6.
    assert!((12..=52).contains(&errors), "{errors} errors in {codes:?}");
    assert!(codes.iter().all(|c| *c == 0 || *c == NOT_AVAILABLE));
}

#[madsim::test]
async fn error_injection_until_cleared_on_one_broker_only() {
    let cluster = cluster(2, 1).await;
    cluster.apply(&rule(
        FIND_COORDINATOR,
        Some(2),
        Trigger::UntilCleared,
        ResponseAction::Error(NOT_AVAILABLE),
    ));
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = connected(&c).await;
        for _ in 0..5 {
            assert_eq!(find_coordinator(&mut client, 1).await.unwrap().0, 0);
            assert_eq!(
                find_coordinator(&mut client, 2).await.unwrap().0,
                NOT_AVAILABLE
            );
        }
        c.apply(&Fault::ClearResponses {
            api_key: Some(FIND_COORDINATOR),
        });
        assert_eq!(find_coordinator(&mut client, 2).await.unwrap().0, 0);
    })
    .await;
}

#[madsim::test]
async fn held_response_arrives_only_after_the_hold() {
    let cluster = cluster(1, 1).await;
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let started = Instant::now();
        find_coordinator(&mut client, -1).await.unwrap();
        let normal = started.elapsed();
        c.apply(&rule(
            FIND_COORDINATOR,
            None,
            Trigger::Next(1),
            ResponseAction::Hold { delay_ms: 3_000 },
        ));
        let started = Instant::now();
        assert_eq!(find_coordinator(&mut client, -1).await.unwrap().0, 0);
        let held = started.elapsed();
        assert!(normal < Duration::from_millis(100), "{normal:?}");
        assert!(
            held >= Duration::from_millis(3_000) && held < Duration::from_millis(3_050),
            "{held:?}"
        );
    })
    .await;
}

#[madsim::test]
async fn lost_produce_is_applied_but_unanswered_and_the_connection_closes() {
    let cluster = cluster(1, 1).await;
    cluster.apply(&rule(PRODUCE, None, Trigger::Next(1), ResponseAction::Lose));
    let c = cluster.clone();
    let t = topic(&cluster);
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let lost = client
            .send(Target::Node(-1), produce_request(t, 0, batch(&["x"])))
            .await;
        assert!(is_closed(&lost), "{lost:?}");
        // The next request reconnects and sees the record the lost Produce appended.
        let fetched = send(&mut client, -1, fetch_request(t, 0, 0, (0, -1))).await;
        assert_eq!(
            values(fetched.responses[0].partitions[0].records.clone()),
            [(0, "x".into())]
        );
    })
    .await;
}

#[madsim::test]
async fn lost_offset_commit_is_applied_but_unanswered() {
    use kafka_protocol::messages::offset_commit_request::*;
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(1)
            .topic("t", 1)
            .offsets_partitions(1)
            .group_shards(Arc::new(TestShards))
            .build()
            .await,
    );
    cluster.apply(&rule(
        OFFSET_COMMIT,
        None,
        Trigger::Next(1),
        ResponseAction::Lose,
    ));
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let group = GroupId(StrBytes::from_static_str("g"));
        let commit = OffsetCommitRequest::default()
            .with_group_id(group.clone())
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(42)])]);
        let lost = client.send(Target::Node(-1), commit).await;
        assert!(is_closed(&lost), "{lost:?}");
        let fetched = client
            .send_with(
                Target::Node(-1),
                OffsetFetchRequest::default()
                    .with_group_id(group)
                    .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                        .with_name(name("t"))
                        .with_partition_indexes(vec![0])])),
                RequestOptions {
                    version: Some(7),
                    timeout_ms: None,
                },
            )
            .await
            .unwrap()
            .body;
        assert_eq!(fetched.topics[0].partitions[0].committed_offset, 42);
    })
    .await;
}

#[madsim::test]
async fn malformed_response_is_a_protocol_error_and_the_client_reconnects() {
    let cluster = cluster(1, 1).await;
    cluster.apply(&rule(
        FIND_COORDINATOR,
        None,
        Trigger::Next(1),
        ResponseAction::Malform,
    ));
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let malformed = find_coordinator(&mut client, -1).await;
        assert!(
            matches!(malformed, Err(NetworkError::Protocol { .. })),
            "{malformed:?}"
        );
        assert!(
            !client.is_connected(-1),
            "a bad frame closes the connection"
        );
        assert_eq!(find_coordinator(&mut client, -1).await.unwrap().0, 0);
        assert!(client.is_connected(-1));
    })
    .await;
}

#[madsim::test]
async fn connection_reset_closes_in_flight_requests_without_an_error_code() {
    let cluster = cluster(1, 1).await;
    let c = cluster.clone();
    let t = topic(&cluster);
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        find_coordinator(&mut client, -1).await.unwrap();
        let long_poll = client.send(
            Target::Node(-1),
            fetch_request(t, 0, 0, (0, -1)).with_max_wait_ms(5_000),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        c.apply(&Fault::ResetConnections { broker: 1 });
        let reset = long_poll.await;
        assert!(
            matches!(
                &reset,
                Err(NetworkError::ConnectionClosed {
                    reason: CloseReason::PeerClosed,
                    ..
                })
            ),
            "{reset:?}"
        );
        assert!(started.elapsed() < Duration::from_millis(50));
        assert_eq!(find_coordinator(&mut client, -1).await.unwrap().0, 0);
    })
    .await;
}

#[madsim::test]
async fn broker_kill_gives_peers_eof_and_moves_leadership() {
    let cluster = cluster(3, 1).await;
    let t = topic(&cluster);
    let (old_leader, old_epoch) = leader(&cluster, "t", 0);
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = connected(&c).await;
        let long_poll = client.send(
            Target::Node(old_leader),
            fetch_request(t, 0, 0, (0, -1)).with_max_wait_ms(5_000),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.apply(&Fault::KillBroker { broker: old_leader });
        let killed = long_poll.await;
        assert!(is_closed(&killed), "{killed:?}");
        // Nobody listens there any more.
        let refused = find_coordinator(&mut client, old_leader).await;
        assert!(
            matches!(refused, Err(NetworkError::ConnectFailed { .. })),
            "{refused:?}"
        );
        let survivor = c.node_ids().into_iter().find(|n| *n != old_leader).unwrap();
        let metadata = send(
            &mut client,
            survivor,
            MetadataRequest::default().with_topics(None),
        )
        .await;
        let p = &metadata
            .topics
            .iter()
            .find(|x| x.name.as_ref().is_some_and(|n| n.0.as_str() == "t"))
            .unwrap()
            .partitions[0];
        assert_ne!(p.leader_id.0, old_leader);
        assert_eq!(p.leader_epoch, old_epoch + 1);
        assert!(!p.isr_nodes.iter().any(|b| b.0 == old_leader));
        assert_eq!(metadata.brokers.len(), 2, "a killed broker is fenced");
    })
    .await;
}

#[madsim::test]
async fn restart_keeps_the_log_and_loses_fetch_sessions() {
    let cluster = cluster(1, 1).await;
    let t = topic(&cluster);
    cluster.controller().append("t", 0, batch(&["a"])).unwrap();
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let opened = send(&mut client, -1, fetch_request(t, 0, 0, (0, 0))).await;
        assert_ne!(opened.session_id, 0);
        c.apply(&Fault::RestartBroker { broker: 1 });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let gone = send(
            &mut client,
            -1,
            fetch_request(t, 0, 1, (opened.session_id, 1)),
        )
        .await;
        assert_eq!(
            gone.error_code,
            ResponseError::FetchSessionIdNotFound.code()
        );
        let full = send(&mut client, -1, fetch_request(t, 0, 0, (0, -1))).await;
        assert_eq!(
            values(full.responses[0].partitions[0].records.clone()),
            [(0, "a".into())],
            "the durable log survived"
        );
    })
    .await;
}

#[madsim::test]
async fn pause_stalls_requests_until_resume_and_timeouts_run_on_virtual_time() {
    let cluster = cluster(1, 1).await;
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        find_coordinator(&mut client, -1).await.unwrap();
        c.apply(&Fault::PauseBroker { broker: 1 });
        let started = Instant::now();
        let timed_out = client
            .send_with(
                Target::Node(-1),
                find_coordinator_request(),
                RequestOptions {
                    version: None,
                    timeout_ms: Some(1_000),
                },
            )
            .await;
        let waited = started.elapsed();
        assert!(
            matches!(timed_out, Err(NetworkError::RequestTimedOut { .. })),
            "{timed_out:?}"
        );
        assert!(
            waited >= Duration::from_millis(1_000) && waited < Duration::from_millis(1_100),
            "{waited:?}"
        );
        // A request sent while paused is answered once the broker resumes.
        let started = Instant::now();
        let stalled = client.send(Target::Node(-1), find_coordinator_request());
        let resumer = c.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2_000)).await;
            resumer.apply(&Fault::ResumeBroker { broker: 1 });
        });
        let answered = stalled.await.unwrap();
        assert_eq!(answered.body.coordinators[0].error_code, 0);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(2_000) && waited < Duration::from_millis(2_100),
            "{waited:?}"
        );
    })
    .await;
}

#[madsim::test]
async fn one_way_clog_delays_requests_until_unclog_and_refuses_new_connections() {
    let cluster = cluster(1, 1).await;
    let t = topic(&cluster);
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        find_coordinator(&mut client, -1).await.unwrap();
        c.apply(&Fault::ClogLink {
            from: "client".into(),
            to: "broker-1".into(),
        });
        let started = Instant::now();
        let produced = client.send(Target::Node(-1), produce_request(t, 0, batch(&["x"])));
        tokio::time::sleep(Duration::from_millis(2_000)).await;
        assert_eq!(log_end(&c, 0), 0, "the request has not arrived");
        let mut fresh = support::client(c.bootstrap_servers());
        let refused = find_coordinator(&mut fresh, -1).await;
        assert!(
            matches!(refused, Err(NetworkError::ConnectFailed { .. })),
            "{refused:?}"
        );
        c.apply(&Fault::UnclogLink {
            from: "client".into(),
            to: "broker-1".into(),
        });
        let produced = produced.await.unwrap();
        assert_eq!(
            produced.body.responses[0].partition_responses[0].error_code,
            0
        );
        // TCP over a clogged link is delayed, not broken: delivery retries with backoff.
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(2_000) && waited < Duration::from_millis(4_200),
            "{waited:?}"
        );
        assert_eq!(log_end(&c, 0), 1);
    })
    .await;
}

#[madsim::test]
async fn reverse_clog_applies_the_request_but_delays_its_response() {
    let cluster = cluster(1, 1).await;
    let t = topic(&cluster);
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        find_coordinator(&mut client, -1).await.unwrap();
        c.apply(&Fault::ClogLink {
            from: "broker-1".into(),
            to: "client".into(),
        });
        let started = Instant::now();
        let produced = client.send(Target::Node(-1), produce_request(t, 0, batch(&["x"])));
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        assert_eq!(log_end(&c, 0), 1, "the request was applied");
        c.apply(&Fault::UnclogLink {
            from: "broker-1".into(),
            to: "client".into(),
        });
        assert!(produced.await.is_ok());
        assert!(started.elapsed() >= Duration::from_millis(1_000));
    })
    .await;
}

#[madsim::test]
async fn node_clog_both_ways_stalls_traffic_and_refuses_connections_until_unclogged() {
    let cluster = cluster(1, 1).await;
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        find_coordinator(&mut client, -1).await.unwrap();
        let clog = Fault::ClogNode {
            node: "broker-1".into(),
            direction: Direction::Both,
        };
        c.apply(&clog);
        let started = Instant::now();
        let stalled = client.send(Target::Node(-1), find_coordinator_request());
        let mut fresh = support::client(c.bootstrap_servers());
        let refused = find_coordinator(&mut fresh, -1).await;
        assert!(
            matches!(refused, Err(NetworkError::ConnectFailed { .. })),
            "{refused:?}"
        );
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        c.apply(&Fault::UnclogNode {
            node: "broker-1".into(),
            direction: Direction::Both,
        });
        assert!(stalled.await.is_ok());
        assert!(started.elapsed() >= Duration::from_millis(1_500));
        // Give the fresh client's reconnect backoff time to pass; then it connects.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(find_coordinator(&mut fresh, -1).await.unwrap().0, 0);
    })
    .await;
}

#[madsim::test]
async fn latency_slows_round_trips_by_the_configured_range() {
    let cluster = cluster(1, 1).await;
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        find_coordinator(&mut client, -1).await.unwrap();
        let round_trip = |client: &mut NetworkClient| {
            let response = client.send(Target::Node(-1), find_coordinator_request());
            async move {
                let started = Instant::now();
                response.await.unwrap();
                started.elapsed()
            }
        };
        let before = round_trip(&mut client).await;
        c.apply(&Fault::Latency {
            min_ms: 100,
            max_ms: 150,
        });
        let mut slow = Vec::new();
        for _ in 0..10 {
            slow.push(round_trip(&mut client).await);
        }
        assert!(before < Duration::from_millis(25), "{before:?}");
        // A round trip is two messages, each delayed by 100–150 ms.
        for rtt in &slow {
            assert!(
                *rtt >= Duration::from_millis(200) && *rtt < Duration::from_millis(302),
                "{slow:?}"
            );
        }
    })
    .await;
}

/// A Heartbeat for group `g` (the test shard answers NONE): the coordinator-level error code.
async fn beat(client: &mut NetworkClient, node: i32) -> i16 {
    let heartbeat = HeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g")))
        .with_member_id(StrBytes::from_static_str("m"));
    send(client, node, heartbeat).await.error_code
}

#[madsim::test]
async fn coordinator_move_changes_find_coordinator_and_the_new_one_loads_first() {
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(3)
            .topic("t", 1)
            .offsets_partitions(3)
            .config(|c| c.coordinator_load_ms = 500)
            .group_shards(Arc::new(TestShards))
            .build()
            .await,
    );
    let offsets_partition = offsets_partition_for("g", 3);
    let (old, _) = leader(&cluster, OFFSETS_TOPIC, offsets_partition);
    let new = cluster.node_ids().into_iter().find(|n| *n != old).unwrap();
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = connected(&c).await;
        assert_eq!(
            beat(&mut client, old).await,
            ResponseError::CoordinatorLoadInProgress.code(),
            "shards load for 500 ms at start too"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(find_coordinator(&mut client, -1).await.unwrap(), (0, old));
        assert_eq!(beat(&mut client, old).await, 0);
        c.apply(&Fault::MoveCoordinator {
            offsets_partition,
            to: Some(new),
        });
        assert_eq!(find_coordinator(&mut client, -1).await.unwrap(), (0, new));
        assert_eq!(
            beat(&mut client, old).await,
            ResponseError::NotCoordinator.code()
        );
        assert_eq!(
            beat(&mut client, new).await,
            ResponseError::CoordinatorLoadInProgress.code()
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(beat(&mut client, new).await, 0);
    })
    .await;
}

#[madsim::test]
async fn move_leader_redirects_produce_to_the_new_leader() {
    let cluster = cluster(3, 1).await;
    let t = topic(&cluster);
    let (old, old_epoch) = leader(&cluster, "t", 0);
    let new = cluster.node_ids().into_iter().find(|n| *n != old).unwrap();
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = connected(&c).await;
        c.apply(&Fault::MoveLeader {
            topic: "t".into(),
            partition: 0,
            to: Some(new),
        });
        let refused = send(&mut client, old, produce_request(t, 0, batch(&["x"]))).await;
        let p = &refused.responses[0].partition_responses[0];
        assert_eq!(p.error_code, ResponseError::NotLeaderOrFollower.code());
        assert_eq!(
            (p.current_leader.leader_id.0, p.current_leader.leader_epoch),
            (new, old_epoch + 1)
        );
        let accepted = send(&mut client, new, produce_request(t, 0, batch(&["x"]))).await;
        assert_eq!(accepted.responses[0].partition_responses[0].error_code, 0);
    })
    .await;
}

#[madsim::test]
async fn delete_records_advances_the_log_start_offset() {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let cluster = cluster(1, 1).await;
    let t = topic(&cluster);
    for values in [["a", "b"], ["c", "d"], ["e", "f"]] {
        cluster.controller().append("t", 0, batch(&values)).unwrap();
    }
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let earliest = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-2)])]);
        let before = send(&mut client, -1, earliest.clone()).await;
        assert_eq!(before.topics[0].partitions[0].offset, 0);
        c.apply(&Fault::DeleteRecords {
            topic: "t".into(),
            partition: 0,
            before_offset: 3,
        });
        let after = send(&mut client, -1, earliest).await;
        assert_eq!(after.topics[0].partitions[0].offset, 3);
        let below = send(&mut client, -1, fetch_request(t, 0, 1, (0, -1))).await;
        assert_eq!(
            below.responses[0].partitions[0].error_code,
            ResponseError::OffsetOutOfRange.code()
        );
        let at = send(&mut client, -1, fetch_request(t, 0, 3, (0, -1))).await;
        let p = &at.responses[0].partitions[0];
        assert_eq!(p.log_start_offset, 3);
        // Whole batches: the one holding offset 3 starts at 2.
        let offsets: Vec<i64> = values(p.records.clone()).iter().map(|r| r.0).collect();
        assert_eq!(offsets, [2, 3, 4, 5]);
    })
    .await;
}

#[madsim::test]
async fn created_topics_and_partitions_show_in_metadata_and_take_writes() {
    let cluster = cluster(2, 2).await;
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = client(c.bootstrap_servers());
        let partitions = |metadata: &MetadataResponse, topic: &str| {
            metadata
                .topics
                .iter()
                .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == topic))
                .map(|t| t.partitions.len())
        };
        let all = MetadataRequest::default().with_topics(None);
        let before = send(&mut client, -1, all.clone()).await;
        assert_eq!(partitions(&before, "t"), Some(2));
        assert_eq!(partitions(&before, "u"), None);
        c.apply(&Fault::CreatePartitions {
            topic: "t".into(),
            count: 5,
        });
        c.apply(&Fault::CreateTopic {
            topic: "u".into(),
            partitions: 3,
        });
        // Neither shrinks a topic nor replaces one.
        c.apply(&Fault::CreatePartitions {
            topic: "t".into(),
            count: 4,
        });
        c.apply(&Fault::CreateTopic {
            topic: "u".into(),
            partitions: 1,
        });
        let after = send(&mut client, -1, all).await;
        assert_eq!(partitions(&after, "t"), Some(5));
        assert_eq!(partitions(&after, "u"), Some(3));
        for (topic, partition) in [("t", 4), ("u", 2)] {
            let appended = c.controller().append(topic, partition, batch(&["x"]));
            assert!(appended.is_ok(), "{topic}-{partition}: {appended:?}");
        }
    })
    .await;
}

#[madsim::test]
async fn fault_plan_applies_each_fault_at_its_virtual_time() {
    let cluster = cluster(2, 1).await;
    let plan = vec![
        (
            200,
            rule(
                FIND_COORDINATOR,
                Some(1),
                Trigger::UntilCleared,
                ResponseAction::Error(NOT_AVAILABLE),
            ),
        ),
        (400, Fault::ClearResponses { api_key: None }),
        (600, Fault::KillBroker { broker: 2 }),
        (900, Fault::RestartBroker { broker: 2 }),
    ];
    let c = cluster.clone();
    let node = Handle::current()
        .create_node()
        .name("client")
        .ip("10.0.2.1".parse().unwrap())
        .build();
    // Probes every 100 ms, 50 ms off the plan's times: (ms, broker 1's answer, broker 2 up).
    // Broker 2 is probed by a fresh client each time, so no reconnect backoff carries over.
    let probes = node.spawn(async move {
        let start = Instant::now();
        let mut client = connected(&c).await;
        let mut seen = Vec::new();
        for n in 0..12u64 {
            let at = 50 + 100 * n;
            tokio::time::sleep_until(start + Duration::from_millis(at)).await;
            let code = find_coordinator(&mut client, 1).await.unwrap().0;
            let mut fresh = support::client(vec!["10.0.1.2:9092".to_owned()]);
            let up = find_coordinator(&mut fresh, -1).await.is_ok();
            seen.push((at, code, up));
        }
        seen
    });
    cluster.run_plan(&plan).await;
    for (at, code, up) in probes.await.unwrap() {
        let injected = (200..400).contains(&at);
        assert_eq!(code == NOT_AVAILABLE, injected, "at {at} ms: {code}");
        let down = (600..900).contains(&at);
        assert_eq!(up, !down, "broker 2 at {at} ms");
    }
}

/// KIP-320 on the wire: with lagging followers an acks=1 produce leaves a tail above the high
/// watermark; a leader change truncates it, and both OffsetForLeaderEpoch and Fetch's
/// diverging epoch tell a client positioned in the lost tail where the log now ends.
#[madsim::test]
async fn acks_one_tail_is_truncated_by_a_leader_change_and_clients_see_the_divergence() {
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    let cluster = Arc::new(
        Cluster::builder()
            .brokers(3)
            .topic("t", 1)
            .config(|c| c.lagging_followers = true)
            .build()
            .await,
    );
    let t = topic(&cluster);
    let (old, epoch0) = leader(&cluster, "t", 0);
    let new = cluster.node_ids().into_iter().find(|n| *n != old).unwrap();
    let c = cluster.clone();
    on_client("client", 1, move || async move {
        let mut client = connected(&c).await;
        let replicated = send(&mut client, old, produce_request(t, 0, batch(&["a", "b"]))).await;
        assert_eq!(
            replicated.responses[0].partition_responses[0].base_offset,
            0
        );
        let leader_only = send(
            &mut client,
            old,
            produce_request(t, 0, batch(&["c", "d", "e"])).with_acks(1),
        )
        .await;
        assert_eq!(
            leader_only.responses[0].partition_responses[0].base_offset,
            2
        );
        let tail = send(&mut client, old, fetch_request(t, 0, 0, (0, -1))).await;
        let p = &tail.responses[0].partitions[0];
        assert_eq!(p.high_watermark, 2, "the acks=1 records are not replicated");
        assert_eq!(
            values(p.records.clone()).len(),
            2,
            "consumers read below the HW"
        );
        assert_eq!(log_end(&c, 0), 5, "the leader holds the tail");

        c.apply(&Fault::MoveLeader {
            topic: "t".into(),
            partition: 0,
            to: Some(new),
        });
        let epoch1 = epoch0 + 1;
        assert_eq!(log_end(&c, 0), 2, "the new leader's log ends at the HW");
        let end_of = |epoch| {
            OffsetForLeaderEpochRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![OffsetForLeaderTopic::default()
                    .with_topic(name("t"))
                    .with_partitions(vec![OffsetForLeaderPartition::default()
                        .with_partition(0)
                        .with_current_leader_epoch(epoch1)
                        .with_leader_epoch(epoch)])])
        };
        let answer = send(&mut client, new, end_of(epoch0)).await;
        let p = &answer.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.leader_epoch, p.end_offset),
            (0, epoch0, 2),
            "epoch {epoch0} ends at the truncation point, below the client's position 5"
        );
        // A consumer at position 5 that last fetched epoch 0 is told to truncate to 2.
        let mut diverged = fetch_request(t, 0, 5, (0, -1));
        diverged.topics[0].partitions[0].current_leader_epoch = epoch1;
        diverged.topics[0].partitions[0].last_fetched_epoch = epoch0;
        let diverged = send(&mut client, new, diverged).await;
        let p = &diverged.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        assert_eq!(
            (p.diverging_epoch.epoch, p.diverging_epoch.end_offset),
            (epoch0, 2)
        );
        // The next append reuses the truncated offsets under the new epoch.
        let next = send(&mut client, new, produce_request(t, 0, batch(&["f"]))).await;
        assert_eq!(next.responses[0].partition_responses[0].base_offset, 2);
        let answer = send(&mut client, new, end_of(epoch1)).await;
        let p = &answer.topics[0].partitions[0];
        assert_eq!((p.leader_epoch, p.end_offset), (epoch1, 3));
        let read = send(&mut client, new, fetch_request(t, 0, 0, (0, -1))).await;
        let read: Vec<String> = values(read.responses[0].partitions[0].records.clone())
            .into_iter()
            .map(|r| r.1)
            .collect();
        assert_eq!(read, ["a", "b", "f"]);
    })
    .await;
}
