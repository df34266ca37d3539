//! Simulation speed with group traffic: 3 brokers hosting the real group coordinator
//! (`GroupCoordinatorFactory`), one 12-partition topic, and 4 protocol-level classic group
//! members that join (MEMBER_ID_REQUIRED, JoinGroup, SyncGroup with the leader's range
//! assignment), heartbeat every second, commit every two seconds, and take turns leaving and
//! rejoining, so the group rebalances over and over for 60 virtual seconds. They stand in for
//! the consumer until it runs in the simulation. Prints virtual seconds per wall second, seeds
//! per minute and the rebalances each seed went through.
//!
//! `SIM_SPEED_SEEDS` (default 5). Only meaningful under `--cfg madsim` (BENCHMARKS.md).

#[cfg(madsim)]
mod member {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use bytes::Bytes;
    use kafka_consumer::network::{NetworkClient, NetworkConfig, Target};
    use kafka_consumer::rt::{Duration, Instant};
    use kafka_protocol::error::ResponseError;
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    use madsim::runtime::Handle;
    use sim::cluster::Cluster;
    use sim::group::classic::ClassicGroupConfig;
    use sim::group::shard::GroupCoordinatorFactory;

    const GROUP: &str = "speed-group";
    const PARTITIONS: i32 = 12;

    /// What one seed did: virtual seconds run and generations completed by the members.
    pub struct Outcome {
        pub generations: BTreeSet<i32>,
        pub joins: u64,
    }

    pub async fn run(members: usize, duration_ms: u64) -> Outcome {
        let cluster = Cluster::builder()
            .brokers(3)
            .topic("t", PARTITIONS)
            .offsets_partitions(3)
            .group_shards(Arc::new(GroupCoordinatorFactory {
                classic: ClassicGroupConfig {
                    group_initial_rebalance_delay_ms: 0,
                    ..ClassicGroupConfig::default()
                },
                ..GroupCoordinatorFactory::default()
            }))
            .build()
            .await;
        let deadline = Instant::now() + Duration::from_millis(duration_ms);
        let mut tasks = Vec::new();
        for index in 0..members {
            let bootstrap = cluster.bootstrap_servers();
            let node = Handle::current()
                .create_node()
                .name(format!("member-{index}"))
                .ip(format!("10.0.2.{}", index + 1).parse().unwrap())
                .build();
            tasks.push(node.spawn(member(index, bootstrap, deadline)));
        }
        let mut outcome = Outcome {
            generations: BTreeSet::new(),
            joins: 0,
        };
        for task in tasks {
            let (generations, joins) = task.await.expect("a member panicked");
            outcome.generations.extend(generations);
            outcome.joins += joins;
        }
        outcome
    }

    async fn send<R>(client: &mut NetworkClient, node: i32, request: R) -> Option<R::Response>
    where
        R: kafka_protocol::protocol::Request + Send + 'static,
        R::Response: Send + 'static,
    {
        client
            .send(Target::Node(node), request)
            .await
            .ok()
            .map(|r| r.body)
    }

    /// One member: join, sync, heartbeat and commit until the deadline; member `index` leaves
    /// at `10 s + index × 12 s` and rejoins 3 s later.
    async fn member(
        index: usize,
        bootstrap: Vec<String>,
        deadline: Instant,
    ) -> (BTreeSet<i32>, u64) {
        let mut client = NetworkClient::new(NetworkConfig {
            bootstrap_servers: bootstrap,
            client_id: format!("member-{index}"),
            request_timeout_ms: 30_000,
            ..NetworkConfig::default()
        })
        .unwrap();
        let start = Instant::now();
        let leave_at = start + Duration::from_millis(10_000 + index as u64 * 12_000);
        let mut left = false;
        let mut generations = BTreeSet::new();
        let mut joins = 0;
        let group = GroupId(StrBytes::from_static_str(GROUP));
        'rejoin: while Instant::now() < deadline {
            let found = send(
                &mut client,
                -1,
                FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(vec![StrBytes::from_static_str(GROUP)]),
            )
            .await;
            let Some(coordinator) = found
                .and_then(|f| f.coordinators.into_iter().next())
                .filter(|c| c.error_code == 0)
            else {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let node = coordinator.node_id.0;
            let (host, port) = (coordinator.host.to_string(), coordinator.port as u16);
            client.register_node(node, &host, port);
            let mut member_id = StrBytes::default();
            let joined = loop {
                let join = JoinGroupRequest::default()
                    .with_group_id(group.clone())
                    .with_session_timeout_ms(10_000)
                    .with_rebalance_timeout_ms(10_000)
                    .with_member_id(member_id.clone())
                    .with_protocol_type(StrBytes::from_static_str("consumer"))
                    .with_protocols(vec![JoinGroupRequestProtocol::default()
                        .with_name(StrBytes::from_static_str("range"))
                        .with_metadata(Bytes::from_static(b"t"))]);
                let Some(response) = send(&mut client, node, join).await else {
                    continue 'rejoin;
                };
                match ResponseError::try_from_code(response.error_code) {
                    None => break response,
                    Some(ResponseError::MemberIdRequired) => member_id = response.member_id,
                    Some(_) => continue 'rejoin,
                }
            };
            joins += 1;
            member_id = joined.member_id.clone();
            let generation = joined.generation_id;
            let assignments = if joined.leader == member_id {
                range_assign(joined.members.iter().map(|m| m.member_id.clone()).collect())
            } else {
                Vec::new()
            };
            let synced = send(
                &mut client,
                node,
                SyncGroupRequest::default()
                    .with_group_id(group.clone())
                    .with_generation_id(generation)
                    .with_member_id(member_id.clone())
                    .with_protocol_type(Some(StrBytes::from_static_str("consumer")))
                    .with_protocol_name(Some(StrBytes::from_static_str("range")))
                    .with_assignments(assignments),
            )
            .await;
            if synced.is_none_or(|s| s.error_code != 0) {
                continue 'rejoin;
            }
            generations.insert(generation);
            let mut beat: u64 = 0;
            while Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1_000)).await;
                beat += 1;
                if !left && Instant::now() >= leave_at {
                    left = true;
                    let leave = LeaveGroupRequest::default()
                        .with_group_id(group.clone())
                        .with_member_id(member_id.clone());
                    let _ = send(&mut client, node, leave).await;
                    tokio::time::sleep(Duration::from_millis(3_000)).await;
                    continue 'rejoin;
                }
                if beat % 2 == 0 {
                    let commit = OffsetCommitRequest::default()
                        .with_group_id(group.clone())
                        .with_generation_id_or_member_epoch(generation)
                        .with_member_id(member_id.clone())
                        .with_topics(vec![OffsetCommitRequestTopic::default()
                            .with_name(TopicName(StrBytes::from_static_str("t")))
                            .with_partitions(vec![OffsetCommitRequestPartition::default()
                                .with_partition_index(index as i32)
                                .with_committed_offset(beat as i64)])]);
                    let _ = send(&mut client, node, commit).await;
                }
                let heartbeat = HeartbeatRequest::default()
                    .with_group_id(group.clone())
                    .with_generation_id(generation)
                    .with_member_id(member_id.clone());
                match send(&mut client, node, heartbeat).await {
                    Some(h) if h.error_code == 0 => {}
                    _ => continue 'rejoin,
                }
            }
        }
        (generations, joins)
    }

    /// Range over the partitions of `t` by sorted member id; each assignment is the partition
    /// list as text (the coordinator treats it as opaque bytes).
    fn range_assign(mut members: Vec<StrBytes>) -> Vec<SyncGroupRequestAssignment> {
        members.sort();
        let count = members.len() as i32;
        members
            .into_iter()
            .enumerate()
            .map(|(i, member_id)| {
                let partitions: Vec<String> = (0..PARTITIONS)
                    .filter(|p| p % count == i as i32)
                    .map(|p| p.to_string())
                    .collect();
                SyncGroupRequestAssignment::default()
                    .with_member_id(member_id)
                    .with_assignment(Bytes::from(partitions.join(",")))
            })
            .collect()
    }
}

#[cfg(madsim)]
mod seeds;

#[cfg(madsim)]
fn main() {
    seeds::measure(
        "generations  joins",
        || member::run(4, 60_000),
        |outcome| format!("{:>11}  {:>5}", outcome.generations.len(), outcome.joins),
    );
}

#[cfg(not(madsim))]
fn main() {
    eprintln!(
        "sim_speed_groups measures simulation mode; run it with --cfg madsim (see BENCHMARKS.md)"
    );
}
