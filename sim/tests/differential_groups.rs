//! Differential tests of group coordination: the same protocol conversation, driven by our
//! `NetworkClient`, against a simulated single-broker cluster and against the real broker
//! (`KAFKA_BOOTSTRAP`), comparing every response field by field. Member ids, topic ids, the
//! run's unique group and topic names, client hosts and throttle times are masked; error codes,
//! generations, epochs, leaders, assignments and offsets are kept.
//!
//! Timing: Kafka's group timers run on wall time, so every session and rebalance timeout here is
//! far longer than the conversation, and no step waits for a timer to expire. Where a step must
//! wait for the broker to have seen another connection's request (a parked JoinGroup), it polls
//! with Heartbeat until the answer changes and records only the final answer.
//!
//! Lists of members are sorted by masked id: Kafka iterates hash maps there.
#![cfg(not(madsim))]

mod differential_support;

use std::collections::BTreeSet;
use std::future::Future;

use bytes::Bytes;
use differential_support::*;
use kafka_consumer::assignor::protocol::{encode_assignment, encode_subscription};
use kafka_consumer::assignor::{Assignment, Subscription, TopicPartition};
use kafka_consumer::network::NetworkClient;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as AckedPartitions;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use sim::kafka_version::{decodable, KafkaVersion};
use tokio::time::{sleep, Duration, Instant};

/// One side of the comparison: where to connect, plus the run's group and topic names.
struct Side {
    bootstrap: String,
    group: String,
    topic: String,
    masks: Masks,
    transcript: Transcript,
}

impl Side {
    fn new(bootstrap: &str, group: String, topic: String) -> Self {
        let mut masks = Masks::default();
        masks.name(&group, "group");
        masks.name(&topic, "topic");
        Self {
            bootstrap: bootstrap.to_owned(),
            group,
            topic,
            masks,
            transcript: Transcript::default(),
        }
    }

    /// A connected client (one per member: a parked JoinGroup blocks its connection) and the
    /// group's coordinator.
    async fn member(&mut self) -> (NetworkClient, i32) {
        let mut client = client(&self.bootstrap);
        let coordinator = find_coordinator(&mut client, &self.group).await;
        (client, coordinator)
    }
}

/// When a conversation's consumer group computes target assignments on Kafka 4.4.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AssignmentInterval {
    /// On every heartbeat that finds the group epoch ahead (the group's
    /// `consumer.assignment.interval.ms` set to 0 on the real broker, and in the simulator):
    /// what a conversation sees then does not depend on how fast each side answers.
    Immediate,
    /// At most once a second, 4.4's default (`group.consumer.assignment.interval.ms`).
    Default,
}

/// Runs `conversation` against the simulated cluster and the real broker and compares their
/// transcripts, with target assignments computed at once. Returns without comparing (after a
/// SKIPPED line) when there is no real broker.
async fn differential<F, Fut>(name: &str, conversation: F)
where
    F: Fn(Side) -> Fut,
    Fut: Future<Output = Side>,
{
    differential_with(name, AssignmentInterval::Immediate, conversation).await;
}

/// [`differential`] with the given assignment interval on a 4.4 broker.
async fn differential_with<F, Fut>(name: &str, interval: AssignmentInterval, conversation: F)
where
    F: Fn(Side) -> Fut,
    Fut: Future<Output = Side>,
{
    let Some(real) = real_bootstrap() else {
        return;
    };
    let version = real_kafka_version(&real).await;
    let mut groups = harness_groups();
    let group = unique(&format!("{name}-group"));
    if interval == AssignmentInterval::Immediate {
        groups.consumer.assignment_interval_ms = 0;
        if version.batches_consumer_group_assignments() {
            set_group_assignment_interval_to_zero(&real, &group).await;
        }
    }
    let sim_cluster = harness_cluster_with_groups(1, &[], version, groups).await;
    let sim_bootstrap = sim_cluster.bootstrap_servers()[0].clone();
    let topic = unique(&format!("{name}-topic"));
    let sim = conversation(Side::new(&sim_bootstrap, group.clone(), topic.clone())).await;
    let kafka = conversation(Side::new(&real, group, topic)).await;
    assert_same(name, &sim.transcript, &kafka.transcript);
}

/// Sets group `group`'s `consumer.assignment.interval.ms` (Kafka 4.4's GroupConfig) to 0 on
/// the real broker (IncrementalAlterConfigs of a GROUP resource, type 32).
async fn set_group_assignment_interval_to_zero(bootstrap: &str, group: &str) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let mut admin = client(bootstrap);
    let r = send(
        &mut admin,
        -1,
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(str(group))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(str("consumer.assignment.interval.ms"))
                    .with_config_operation(0)
                    .with_value(Some(str("0")))]),
        ]),
    )
    .await;
    let errors: Vec<_> = r
        .responses
        .iter()
        .filter(|resource| resource.error_code != 0)
        .map(|resource| (resource.error_code, resource.error_message.clone()))
        .collect();
    assert!(
        errors.is_empty(),
        "set {group}'s assignment interval: {errors:?}"
    );
}

fn join(side: &Side, member_id: &str, instance: Option<&str>) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(group_id(&side.group))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(str(member_id))
        .with_group_instance_id(instance.map(str))
        .with_protocol_type(str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(str("range"))
            .with_metadata(subscription(side))])
}

/// Real ConsumerProtocol subscription bytes: Kafka parses them for groups of protocol type
/// "consumer" (made-up bytes make its join timer fail, and the JoinGroup never completes).
fn subscription(side: &Side) -> Bytes {
    encode_subscription(&Subscription::new([side.topic.clone()]), 3).unwrap()
}

fn assignment(side: &Side, partitions: &[i32]) -> Bytes {
    let partitions = partitions
        .iter()
        .map(|p| TopicPartition {
            topic: side.topic.as_str().into(),
            partition: *p,
        })
        .collect();
    encode_assignment(
        &Assignment {
            partitions,
            user_data: None,
        },
        3,
    )
    .unwrap()
}

fn sync(
    side: &Side,
    generation: i32,
    member_id: &str,
    instance: Option<&str>,
    assignments: &[(&str, &[i32])],
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(group_id(&side.group))
        .with_generation_id(generation)
        .with_member_id(str(member_id))
        .with_group_instance_id(instance.map(str))
        .with_protocol_type(Some(str("consumer")))
        .with_protocol_name(Some(str("range")))
        .with_assignments(
            assignments
                .iter()
                .map(|(member, partitions)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(str(member))
                        .with_assignment(assignment(side, partitions))
                })
                .collect(),
        )
}

fn heartbeat(
    side: &Side,
    generation: i32,
    member_id: &str,
    instance: Option<&str>,
) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(group_id(&side.group))
        .with_generation_id(generation)
        .with_member_id(str(member_id))
        .with_group_instance_id(instance.map(str))
}

fn commit(
    side: &Side,
    generation_or_epoch: i32,
    member_id: &str,
    instance: Option<&str>,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group_id(&side.group))
        .with_generation_id_or_member_epoch(generation_or_epoch)
        .with_member_id(str(member_id))
        .with_group_instance_id(instance.map(str))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic_name(&side.topic))
            .with_partitions(vec![
                OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(offset),
                OffsetCommitRequestPartition::default()
                    .with_partition_index(1)
                    .with_committed_offset(offset + 1),
            ])])
}

/// A commit of one partition of the run's topic.
fn commit_partition(
    side: &Side,
    member_epoch: i32,
    member_id: &str,
    partition: i32,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group_id(&side.group))
        .with_generation_id_or_member_epoch(member_epoch)
        .with_member_id(str(member_id))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic_name(&side.topic))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)])])
}

fn offset_fetch(side: &Side, member: Option<&str>, epoch: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(group_id(&side.group))
        .with_member_id(member.map(str))
        .with_member_epoch(epoch)
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(topic_name(&side.topic))
            .with_partition_indexes(vec![0, 1, 2])]))])
}

fn leave(side: &Side, members: &[(&str, Option<&str>)]) -> LeaveGroupRequest {
    LeaveGroupRequest::default()
        .with_group_id(group_id(&side.group))
        .with_members(
            members
                .iter()
                .map(|(member, instance)| {
                    MemberIdentity::default()
                        .with_member_id(str(member))
                        .with_group_instance_id(instance.map(str))
                })
                .collect(),
        )
}

fn describe(side: &Side) -> DescribeGroupsRequest {
    DescribeGroupsRequest::default().with_groups(vec![group_id(&side.group)])
}

// Masking: one function per response type, applied before the response is recorded.

fn mask_join(m: &mut Masks, mut r: JoinGroupResponse) -> JoinGroupResponse {
    r.throttle_time_ms = 0;
    m.mask_str("member", &mut r.member_id);
    m.mask_str("member", &mut r.leader);
    for member in &mut r.members {
        m.mask_str("member", &mut member.member_id);
    }
    r.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    r
}

fn mask_sync(mut r: SyncGroupResponse) -> SyncGroupResponse {
    r.throttle_time_ms = 0;
    r
}

fn mask_heartbeat(mut r: HeartbeatResponse) -> HeartbeatResponse {
    r.throttle_time_ms = 0;
    r
}

fn mask_leave(m: &mut Masks, mut r: LeaveGroupResponse) -> LeaveGroupResponse {
    r.throttle_time_ms = 0;
    for member in &mut r.members {
        m.mask_str("member", &mut member.member_id);
    }
    r
}

fn mask_commit(m: &mut Masks, mut r: OffsetCommitResponse) -> OffsetCommitResponse {
    r.throttle_time_ms = 0;
    for topic in &mut r.topics {
        m.mask_str("name", &mut topic.name.0);
    }
    r
}

fn mask_offset_fetch(m: &mut Masks, mut r: OffsetFetchResponse) -> OffsetFetchResponse {
    r.throttle_time_ms = 0;
    for group in &mut r.groups {
        m.mask_str("name", &mut group.group_id.0);
        for topic in &mut group.topics {
            m.mask_str("name", &mut topic.name.0);
            m.uuid(&mut topic.topic_id);
        }
    }
    r
}

fn mask_describe(m: &mut Masks, mut r: DescribeGroupsResponse) -> DescribeGroupsResponse {
    r.throttle_time_ms = 0;
    for group in &mut r.groups {
        if let Some(message) = &mut group.error_message {
            *message = str(&m.text(message));
        }
        m.mask_str("name", &mut group.group_id.0);
        for member in &mut group.members {
            m.mask_str("member", &mut member.member_id);
            member.client_host = str("<host>");
        }
        group.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    }
    r
}

fn mask_consumer_heartbeat(
    m: &mut Masks,
    mut r: ConsumerGroupHeartbeatResponse,
) -> ConsumerGroupHeartbeatResponse {
    r.throttle_time_ms = 0;
    if let Some(message) = &mut r.error_message {
        *message = str(&m.text(message));
    }
    if let Some(member) = &mut r.member_id {
        m.mask_str("member", member);
    }
    if let Some(assignment) = &mut r.assignment {
        for topic in &mut assignment.topic_partitions {
            let masked = m.uuid(&mut topic.topic_id);
            // The masked id goes into a Uuid field: encode its placeholder number.
            let n: u128 = masked
                .trim_start_matches("<topic-id")
                .trim_end_matches('>')
                .parse()
                .unwrap_or(0);
            topic.topic_id = uuid::Uuid::from_u128(n);
            topic.partitions.sort_unstable();
        }
        assignment
            .topic_partitions
            .sort_by_key(|t| t.topic_id.as_u128());
    }
    r
}

fn mask_consumer_describe(
    m: &mut Masks,
    mut r: ConsumerGroupDescribeResponse,
) -> ConsumerGroupDescribeResponse {
    use kafka_protocol::messages::consumer_group_describe_response::Assignment;
    r.throttle_time_ms = 0;
    let mask_assignment = |m: &mut Masks, a: &mut Assignment| {
        for topic in &mut a.topic_partitions {
            m.uuid(&mut topic.topic_id);
            topic.topic_id = uuid::Uuid::nil();
            m.mask_str("name", &mut topic.topic_name.0);
            topic.partitions.sort_unstable();
        }
    };
    for group in &mut r.groups {
        m.mask_str("name", &mut group.group_id.0);
        for member in &mut group.members {
            m.mask_str("member", &mut member.member_id);
            member.client_host = str("<host>");
            for topic in &mut member.subscribed_topic_names {
                m.mask_str("name", &mut topic.0);
            }
            mask_assignment(m, &mut member.assignment);
            mask_assignment(m, &mut member.target_assignment);
        }
        group.members.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    }
    r
}

/// Polls with Heartbeat until the answer is not NONE (another member's request has reached the
/// coordinator), for at most 10 s; returns the last answer.
async fn heartbeat_until_error(
    side: &Side,
    client: &mut NetworkClient,
    coordinator: i32,
    generation: i32,
    member_id: &str,
) -> HeartbeatResponse {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = send(
            client,
            coordinator,
            heartbeat(side, generation, member_id, None),
        )
        .await;
        if r.error_code != 0 || Instant::now() > deadline {
            return r;
        }
        sleep(Duration::from_millis(50)).await;
    }
}

/// The classic protocol, dynamic members: MEMBER_ID_REQUIRED, join/sync/heartbeat, commit and
/// fetch, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, a second member joining a Stable group
/// (REBALANCE_IN_PROGRESS on the first's heartbeat), the second generation, leaves and
/// the final state.
async fn classic_dynamic(mut s: Side) -> Side {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 3).await;
    let (mut b, _) = s.member().await;

    let r = send(&mut a, coordinator, join(&s, "", None)).await;
    let a_id = r.member_id.to_string();
    s.transcript
        .record("A join without id", mask_join(&mut s.masks, r));
    let r = send(&mut a, coordinator, join(&s, &a_id, None)).await;
    s.transcript.record("A join", mask_join(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        sync(&s, 1, &a_id, None, &[(&a_id, &[0, 1, 2])]),
    )
    .await;
    s.transcript.record("A sync", mask_sync(r));
    let r = send(&mut a, coordinator, heartbeat(&s, 1, &a_id, None)).await;
    s.transcript.record("A heartbeat", mask_heartbeat(r));
    let r = send(&mut a, coordinator, heartbeat(&s, 2, &a_id, None)).await;
    s.transcript
        .record("A heartbeat, wrong generation", mask_heartbeat(r));
    let r = send(&mut a, coordinator, heartbeat(&s, 1, "nobody", None)).await;
    s.transcript
        .record("heartbeat, unknown member", mask_heartbeat(r));
    let r = send(&mut a, coordinator, commit(&s, 1, &a_id, None, 10)).await;
    s.transcript
        .record("A commit", mask_commit(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, 7, &a_id, None, 99)).await;
    s.transcript
        .record("A commit, wrong generation", mask_commit(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, 1, "nobody", None, 99)).await;
    s.transcript
        .record("commit, unknown member", mask_commit(&mut s.masks, r));
    let r = send(&mut a, coordinator, offset_fetch(&s, None, -1)).await;
    s.transcript
        .record("offset fetch", mask_offset_fetch(&mut s.masks, r));
    let r = send(&mut a, coordinator, describe(&s)).await;
    s.transcript
        .record("describe, stable", mask_describe(&mut s.masks, r));

    // B joins the Stable group: its JoinGroup parks until A rejoins.
    let r = send(&mut b, coordinator, join(&s, "", None)).await;
    let b_id = r.member_id.to_string();
    s.transcript
        .record("B join without id", mask_join(&mut s.masks, r));
    let b_join = b.send(
        kafka_consumer::network::Target::Node(coordinator),
        join(&s, &b_id, None),
    );
    let r = heartbeat_until_error(&s, &mut a, coordinator, 1, &a_id).await;
    s.transcript
        .record("A heartbeat while B joins", mask_heartbeat(r));
    let r = send(&mut a, coordinator, commit(&s, 1, &a_id, None, 20)).await;
    s.transcript.record(
        "A commit while preparing the rebalance",
        mask_commit(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, join(&s, &a_id, None)).await;
    s.transcript.record("A rejoin", mask_join(&mut s.masks, r));
    let r = b_join.await.unwrap().body;
    s.transcript.record("B join", mask_join(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, 2, &a_id, None, 30)).await;
    s.transcript.record(
        "A commit while completing the rebalance",
        mask_commit(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, heartbeat(&s, 2, &a_id, None)).await;
    s.transcript.record(
        "A heartbeat while completing the rebalance",
        mask_heartbeat(r),
    );

    // B's SyncGroup parks until the leader's arrives.
    let b_sync = b.send(
        kafka_consumer::network::Target::Node(coordinator),
        sync(&s, 2, &b_id, None, &[]),
    );
    let r = send(
        &mut a,
        coordinator,
        sync(&s, 2, &a_id, None, &[(&a_id, &[0, 1]), (&b_id, &[2])]),
    )
    .await;
    s.transcript.record("A sync", mask_sync(r));
    let r = b_sync.await.unwrap().body;
    s.transcript.record("B sync", mask_sync(r));
    let r = send(&mut a, coordinator, describe(&s)).await;
    s.transcript
        .record("describe, two members", mask_describe(&mut s.masks, r));

    let r = send(&mut a, coordinator, leave(&s, &[(&a_id, None)])).await;
    s.transcript.record("A leave", mask_leave(&mut s.masks, r));
    let r = send(&mut b, coordinator, heartbeat(&s, 2, &b_id, None)).await;
    s.transcript
        .record("B heartbeat after A left", mask_heartbeat(r));
    let r = send(
        &mut b,
        coordinator,
        leave(&s, &[(&b_id, None), ("nobody", None)]),
    )
    .await;
    s.transcript
        .record("B and an unknown member leave", mask_leave(&mut s.masks, r));
    let r = send(&mut a, coordinator, describe(&s)).await;
    s.transcript
        .record("describe, empty", mask_describe(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, -1, "", None, 40)).await;
    s.transcript.record(
        "admin commit to the empty group",
        mask_commit(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, offset_fetch(&s, None, -1)).await;
    s.transcript.record(
        "offset fetch, empty group",
        mask_offset_fetch(&mut s.masks, r),
    );
    s
}

/// The classic protocol, static members: a static member joins without MEMBER_ID_REQUIRED; a
/// new incarnation with the same instance id replaces it, and the old one is fenced
/// (FENCED_INSTANCE_ID) on heartbeat, sync, commit and leave.
async fn classic_static(mut s: Side) -> Side {
    let (mut old, coordinator) = s.member().await;
    create_topic(&mut old, &s.topic.clone(), 3).await;
    let (mut new, _) = s.member().await;
    let instance = Some("instance-1");

    let r = send(&mut old, coordinator, join(&s, "", instance)).await;
    let old_id = r.member_id.to_string();
    s.transcript
        .record("static join", mask_join(&mut s.masks, r));
    let r = send(
        &mut old,
        coordinator,
        sync(&s, 1, &old_id, instance, &[(&old_id, &[0, 1, 2])]),
    )
    .await;
    s.transcript.record("static sync", mask_sync(r));
    let r = send(&mut old, coordinator, commit(&s, 1, &old_id, instance, 5)).await;
    s.transcript
        .record("static commit", mask_commit(&mut s.masks, r));

    let r = send(&mut new, coordinator, join(&s, "", instance)).await;
    let new_id = r.member_id.to_string();
    s.transcript
        .record("replacement join", mask_join(&mut s.masks, r));
    let r = send(&mut old, coordinator, heartbeat(&s, 1, &old_id, instance)).await;
    s.transcript
        .record("replaced member heartbeat", mask_heartbeat(r));
    let r = send(&mut old, coordinator, sync(&s, 1, &old_id, instance, &[])).await;
    s.transcript.record("replaced member sync", mask_sync(r));
    let r = send(&mut old, coordinator, commit(&s, 1, &old_id, instance, 6)).await;
    s.transcript
        .record("replaced member commit", mask_commit(&mut s.masks, r));
    let r = send(&mut new, coordinator, heartbeat(&s, 1, &new_id, instance)).await;
    s.transcript
        .record("replacement heartbeat", mask_heartbeat(r));
    let r = send(&mut new, coordinator, sync(&s, 1, &new_id, instance, &[])).await;
    s.transcript.record("replacement sync", mask_sync(r));
    let r = send(&mut new, coordinator, describe(&s)).await;
    s.transcript
        .record("describe", mask_describe(&mut s.masks, r));
    let r = send(&mut old, coordinator, leave(&s, &[(&old_id, instance)])).await;
    s.transcript
        .record("replaced member leave", mask_leave(&mut s.masks, r));
    let r = send(&mut new, coordinator, leave(&s, &[("", instance)])).await;
    s.transcript
        .record("leave by instance id", mask_leave(&mut s.masks, r));
    let r = send(&mut new, coordinator, describe(&s)).await;
    s.transcript
        .record("describe after leave", mask_describe(&mut s.masks, r));
    s
}

fn consumer_heartbeat(
    s: &Side,
    member_id: &str,
    epoch: i32,
    instance: Option<&str>,
    owned: Option<Vec<AckedPartitions>>,
) -> ConsumerGroupHeartbeatRequest {
    let joining = epoch == 0;
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(group_id(&s.group))
        .with_member_id(str(member_id))
        .with_member_epoch(epoch)
        .with_instance_id(instance.map(str))
        .with_rebalance_timeout_ms(if joining { 30_000 } else { -1 })
        .with_subscribed_topic_names(joining.then(|| vec![topic_name(&s.topic)]))
        .with_topic_partitions(owned)
}

/// The partitions of a heartbeat response's assignment, as an acknowledgement for the next
/// heartbeat.
fn owned(r: &ConsumerGroupHeartbeatResponse) -> Option<Vec<AckedPartitions>> {
    r.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .map(|t| {
                AckedPartitions::default()
                    .with_topic_id(t.topic_id)
                    .with_partitions(t.partitions.clone())
            })
            .collect()
    })
}

/// The KIP-848 protocol: join, acknowledge, a second member (revocation), a wrong epoch
/// (FENCED_MEMBER_EPOCH), an unknown member (UNKNOWN_MEMBER_ID), commits checked by member
/// epoch (STALE_MEMBER_EPOCH), a leave (-1), and a static member's temporary leave (-2) and
/// return.
async fn consumer_protocol(mut s: Side) -> Side {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 2).await;
    // Kafka's group coordinator learns of new topics from its own metadata publisher, a moment
    // after the broker's metadata cache (which create_topic waited for). A member joining in
    // that moment gets an empty assignment and a second epoch bump once the topic shows up.
    sleep(Duration::from_secs(1)).await;
    let (mut b, _) = s.member().await;
    let a_id = random_uuid();
    let b_id = random_uuid();
    let c_id = random_uuid();
    let c2_id = random_uuid();
    for (id, name) in [
        (&a_id, "member-a"),
        (&b_id, "member-b"),
        (&c_id, "member-c"),
        (&c2_id, "member-c2"),
    ] {
        s.masks.name(id, name);
    }
    let beat = |s: &Side, id: &str, epoch: i32, instance: Option<&str>, owned| {
        consumer_heartbeat(s, id, epoch, instance, owned)
    };

    let r = send(&mut a, coordinator, beat(&s, &a_id, 0, None, Some(vec![]))).await;
    let (mut a_epoch, mut a_owned) = (r.member_epoch, owned(&r));
    s.transcript
        .record("A joins", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        beat(&s, &a_id, a_epoch, None, a_owned.clone()),
    )
    .await;
    s.transcript
        .record("A acknowledges", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, a_epoch, &a_id, None, 3)).await;
    s.transcript
        .record("A commits", mask_commit(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, a_epoch + 5, &a_id, None, 3)).await;
    s.transcript
        .record("A commits, future epoch", mask_commit(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, 0, "nobody", None, 3)).await;
    s.transcript
        .record("commit, unknown member", mask_commit(&mut s.masks, r));

    let r = send(&mut b, coordinator, beat(&s, &b_id, 0, None, Some(vec![]))).await;
    let b_epoch = r.member_epoch;
    s.transcript
        .record("B joins", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        beat(&s, &a_id, a_epoch, None, a_owned.clone()),
    )
    .await;
    let old_epoch = a_epoch;
    if r.assignment.is_some() {
        a_owned = owned(&r);
    }
    a_epoch = r.member_epoch;
    s.transcript.record(
        "A heartbeats after B joined",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, commit(&s, old_epoch, &a_id, None, 4)).await;
    s.transcript
        .record("A commits at its old epoch", mask_commit(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, a_epoch, &a_id, None, 4)).await;
    s.transcript
        .record("A commits at its new epoch", mask_commit(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        beat(&s, &a_id, a_epoch, None, a_owned.clone()),
    )
    .await;
    a_epoch = r.member_epoch;
    s.transcript.record(
        "A acknowledges the revocation",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut b,
        coordinator,
        beat(&s, &b_id, b_epoch, None, Some(vec![])),
    )
    .await;
    s.transcript.record(
        "B heartbeats after the revocation",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut a,
        coordinator,
        ConsumerGroupDescribeRequest::default().with_group_ids(vec![group_id(&s.group)]),
    )
    .await;
    s.transcript.record(
        "describe two members",
        mask_consumer_describe(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, describe(&s)).await;
    s.transcript.record(
        "classic describe of a consumer group",
        mask_describe(&mut s.masks, r),
    );
    let r = send(
        &mut a,
        coordinator,
        beat(&s, &a_id, a_epoch + 10, None, None),
    )
    .await;
    s.transcript
        .record("A, epoch too new", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(&mut a, coordinator, beat(&s, "nobody", 1, None, None)).await;
    s.transcript
        .record("unknown member", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        offset_fetch(&s, Some(&a_id), a_epoch + 10),
    )
    .await;
    s.transcript.record(
        "offset fetch, wrong member epoch",
        mask_offset_fetch(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, offset_fetch(&s, Some(&a_id), a_epoch)).await;
    s.transcript.record(
        "offset fetch by the member",
        mask_offset_fetch(&mut s.masks, r),
    );
    let r = send(&mut b, coordinator, beat(&s, &b_id, -1, None, None)).await;
    s.transcript
        .record("B leaves", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(&mut b, coordinator, beat(&s, &b_id, b_epoch, None, None)).await;
    s.transcript.record(
        "B heartbeats after leaving",
        mask_consumer_heartbeat(&mut s.masks, r),
    );

    let instance = Some("instance-c");
    let r = send(
        &mut b,
        coordinator,
        beat(&s, &c_id, 0, instance, Some(vec![])),
    )
    .await;
    let c_epoch = r.member_epoch;
    s.transcript
        .record("static C joins", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(&mut b, coordinator, beat(&s, &c_id, -2, instance, None)).await;
    s.transcript.record(
        "static C leaves temporarily",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut b,
        coordinator,
        beat(&s, &c_id, c_epoch, instance, None),
    )
    .await;
    s.transcript.record(
        "static C heartbeats after leaving",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut b,
        coordinator,
        beat(&s, &c2_id, 0, instance, Some(vec![])),
    )
    .await;
    s.transcript.record(
        "static C returns with a new member id",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, beat(&s, &a_id, -1, None, None)).await;
    s.transcript
        .record("A leaves", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(&mut a, coordinator, offset_fetch(&s, None, -1)).await;
    s.transcript
        .record("offset fetch", mask_offset_fetch(&mut s.masks, r));
    s
}

/// Online migration (Kafka 4.1, `group.consumer.migration.policy` BIDIRECTIONAL by default):
/// a ConsumerGroupHeartbeat member joins a Stable classic group (upgrade), the classic member is
/// told to rejoin, rejoins, syncs its server-assigned partition and commits with its member
/// epoch as generation; the consumer member picks up the released partition and leaves, which
/// hands the group back to the classic protocol (downgrade), where the classic member rejoins,
/// leads and assigns again.
/// A classic member A asks for an id, joins alone and syncs both partitions of the topic to
/// itself (generation 1): the classic group a migration conversation starts from.
async fn classic_leader_owns_both_partitions(
    s: &mut Side,
    a: &mut NetworkClient,
    coordinator: i32,
) -> String {
    let r = send(a, coordinator, join(s, "", None)).await;
    let a_id = r.member_id.to_string();
    s.transcript
        .record("A asks for an id", mask_join(&mut s.masks, r));
    let r = send(a, coordinator, join(s, &a_id, None)).await;
    s.transcript.record("A joins", mask_join(&mut s.masks, r));
    let r = send(a, coordinator, sync(s, 1, &a_id, None, &[(&a_id, &[0, 1])])).await;
    s.transcript.record("A syncs both partitions", mask_sync(r));
    a_id
}

async fn migration(mut s: Side) -> Side {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 2).await;
    // As in `consumer_protocol`: let Kafka's coordinator see the new topic.
    sleep(Duration::from_secs(1)).await;
    let (mut c, _) = s.member().await;
    let c_id = random_uuid();
    s.masks.name(&c_id, "member-c");

    let a_id = classic_leader_owns_both_partitions(&mut s, &mut a, coordinator).await;

    let r = send(
        &mut c,
        coordinator,
        consumer_heartbeat(&s, &c_id, 0, None, Some(vec![])),
    )
    .await;
    let c_epoch = r.member_epoch;
    s.transcript.record(
        "C joins the classic group (upgrade)",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, heartbeat(&s, 1, &a_id, None)).await;
    s.transcript
        .record("A heartbeats after the upgrade", mask_heartbeat(r));
    let r = send(&mut a, coordinator, join(&s, &a_id, None)).await;
    let a_generation = r.generation_id;
    s.transcript
        .record("A rejoins the consumer group", mask_join(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        sync(&s, a_generation, &a_id, None, &[]),
    )
    .await;
    s.transcript
        .record("A syncs its server-side assignment", mask_sync(r));
    let r = send(
        &mut a,
        coordinator,
        heartbeat(&s, a_generation, &a_id, None),
    )
    .await;
    s.transcript.record("A heartbeats", mask_heartbeat(r));
    let r = send(
        &mut a,
        coordinator,
        commit(&s, a_generation, &a_id, None, 5),
    )
    .await;
    s.transcript
        .record("A commits at its generation", mask_commit(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        commit(&s, a_generation - 1, &a_id, None, 5),
    )
    .await;
    s.transcript.record(
        "A commits at an old generation",
        mask_commit(&mut s.masks, r),
    );
    let r = send(
        &mut c,
        coordinator,
        consumer_heartbeat(&s, &c_id, c_epoch, None, Some(vec![])),
    )
    .await;
    s.transcript.record(
        "C gets the released partition",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut a,
        coordinator,
        ConsumerGroupDescribeRequest::default().with_group_ids(vec![group_id(&s.group)]),
    )
    .await;
    s.transcript.record(
        "describe the mixed group",
        mask_consumer_describe(&mut s.masks, r),
    );
    let r = send(
        &mut a,
        coordinator,
        heartbeat(&s, a_generation, &c_id, None),
    )
    .await;
    s.transcript.record(
        "classic heartbeat from the consumer member",
        mask_heartbeat(r),
    );

    let r = send(
        &mut c,
        coordinator,
        consumer_heartbeat(&s, &c_id, -1, None, None),
    )
    .await;
    s.transcript.record(
        "C leaves (downgrade)",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut a,
        coordinator,
        heartbeat(&s, a_generation, &a_id, None),
    )
    .await;
    s.transcript
        .record("A heartbeats after the downgrade", mask_heartbeat(r));
    let r = send(&mut a, coordinator, join(&s, &a_id, None)).await;
    let generation = r.generation_id;
    s.transcript
        .record("A rejoins the classic group", mask_join(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        sync(&s, generation, &a_id, None, &[(&a_id, &[0, 1])]),
    )
    .await;
    s.transcript.record("A leads and assigns", mask_sync(r));
    let r = send(&mut a, coordinator, describe(&s)).await;
    s.transcript
        .record("describe the classic group", mask_describe(&mut s.masks, r));
    let r = send(&mut a, coordinator, leave(&s, &[(&a_id, None)])).await;
    s.transcript.record("A leaves", mask_leave(&mut s.masks, r));
    s
}

/// `validateOnlineDowngradeWithReplacedMember`: in a consumer group of classic member A and
/// consumer-protocol static member C (temporarily gone, epoch -2), a classic JoinGroup of C's
/// instance replaces C and, only classic members remaining, turns the group back into a classic
/// group at that join (same subscription: no rebalance).
async fn downgrade_at_replacement(mut s: Side) -> Side {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 2).await;
    sleep(Duration::from_secs(1)).await;
    let (mut c, _) = s.member().await;
    let (mut d, _) = s.member().await;
    let c_id = random_uuid();
    s.masks.name(&c_id, "member-c");
    let instance = "instance-c";

    let a_id = classic_leader_owns_both_partitions(&mut s, &mut a, coordinator).await;
    let r = send(
        &mut c,
        coordinator,
        consumer_heartbeat(&s, &c_id, 0, Some(instance), Some(vec![])),
    )
    .await;
    s.transcript.record(
        "static C joins (upgrade)",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, join(&s, &a_id, None)).await;
    let a_generation = r.generation_id;
    s.transcript
        .record("A rejoins the consumer group", mask_join(&mut s.masks, r));
    let r = send(
        &mut a,
        coordinator,
        sync(&s, a_generation, &a_id, None, &[]),
    )
    .await;
    s.transcript.record("A syncs", mask_sync(r));
    let r = send(
        &mut c,
        coordinator,
        consumer_heartbeat(&s, &c_id, -2, Some(instance), None),
    )
    .await;
    s.transcript.record(
        "C leaves for now (epoch -2)",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(&mut d, coordinator, join(&s, "", Some(instance))).await;
    let d_id = r.member_id.to_string();
    let d_generation = r.generation_id;
    s.transcript.record(
        "classic D replaces C's instance (downgrade)",
        mask_join(&mut s.masks, r),
    );
    // DescribeGroups answers from the last committed snapshot.
    sleep(Duration::from_millis(500)).await;
    let r = send(&mut a, coordinator, describe(&s)).await;
    s.transcript
        .record("describe the classic group", mask_describe(&mut s.masks, r));
    let r = send(
        &mut d,
        coordinator,
        sync(&s, d_generation, &d_id, Some(instance), &[]),
    )
    .await;
    s.transcript.record("D syncs", mask_sync(r));
    let r = send(
        &mut a,
        coordinator,
        heartbeat(&s, a_generation, &a_id, None),
    )
    .await;
    s.transcript.record("A heartbeats", mask_heartbeat(r));
    let r = send(
        &mut a,
        coordinator,
        leave(&s, &[(&a_id, None), (&d_id, Some(instance))]),
    )
    .await;
    s.transcript
        .record("A and D leave", mask_leave(&mut s.masks, r));
    s
}

/// ListGroups (v5) with type and state filters, and an empty group changing type: an emptied
/// consumer group gives way to a classic JoinGroup, an empty classic group to a
/// ConsumerGroupHeartbeat. Only this run's group is looked at (the real broker has others).
async fn group_types(mut s: Side) -> Side {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 2).await;
    sleep(Duration::from_secs(1)).await;
    let (a_id, b_id) = (random_uuid(), random_uuid());
    s.masks.name(&a_id, "member-a");
    s.masks.name(&b_id, "member-b");

    async fn listed(
        s: &mut Side,
        client: &mut NetworkClient,
        node: i32,
        label: &str,
        states: &[&str],
        types: &[&str],
    ) {
        // Kafka answers ListGroups from the last committed snapshot of the coordinator's
        // state: a write a moment ago may not show yet.
        sleep(Duration::from_millis(500)).await;
        let request = ListGroupsRequest::default()
            .with_states_filter(states.iter().map(|v| str(v)).collect())
            .with_types_filter(types.iter().map(|v| str(v)).collect());
        let r = send(client, node, request).await;
        let ours: Vec<String> = r
            .groups
            .iter()
            .filter(|g| g.group_id.0.as_str() == s.group)
            .map(|g| {
                format!(
                    "{} protocol_type={:?} state={} type={}",
                    s.masks.mask("group", g.group_id.0.as_str()),
                    g.protocol_type.as_str(),
                    g.group_state.as_str(),
                    g.group_type.as_str()
                )
            })
            .collect();
        s.transcript.record(label, (r.error_code, ours));
    }

    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, 0, None, Some(vec![])),
    )
    .await;
    s.transcript.record(
        "A joins (consumer protocol)",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    listed(
        &mut s,
        &mut a,
        coordinator,
        "list consumer groups",
        &[],
        &["Consumer"],
    )
    .await;
    listed(
        &mut s,
        &mut a,
        coordinator,
        "list classic groups",
        &[],
        &["classic"],
    )
    .await;
    listed(
        &mut s,
        &mut a,
        coordinator,
        "list stable groups",
        &[" STABLE "],
        &[],
    )
    .await;
    listed(
        &mut s,
        &mut a,
        coordinator,
        "list unknown type",
        &[],
        &["nonsense"],
    )
    .await;
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, -1, None, None),
    )
    .await;
    s.transcript
        .record("A leaves", mask_consumer_heartbeat(&mut s.masks, r));
    listed(
        &mut s,
        &mut a,
        coordinator,
        "list empty consumer groups",
        &["empty"],
        &["consumer"],
    )
    .await;

    // SyncGroup v5+ without ProtocolType/ProtocolName is refused before the coordinator.
    let r = send(
        &mut a,
        coordinator,
        SyncGroupRequest::default()
            .with_group_id(group_id(&s.group))
            .with_generation_id(1)
            .with_member_id(str(&a_id)),
    )
    .await;
    s.transcript
        .record("sync without protocol type and name", mask_sync(r));

    // The consumer group is empty: a classic JoinGroup replaces it with a classic group.
    let r = send(&mut a, coordinator, join(&s, "", None)).await;
    s.transcript
        .record("classic join, new member", mask_join(&mut s.masks, r));
    listed(
        &mut s,
        &mut a,
        coordinator,
        "list after the classic join",
        &[],
        &[],
    )
    .await;

    // The classic group is empty (its member only pending): a consumer-protocol join replaces it.
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &b_id, 0, None, Some(vec![])),
    )
    .await;
    s.transcript.record(
        "B joins (consumer protocol)",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    listed(&mut s, &mut a, coordinator, "list after B joins", &[], &[]).await;
    s
}

/// DeleteGroups (42) over every kind of group, results sorted by masked group id (Kafka
/// orders them by hash maps): a non-empty consumer group and classic group (NON_EMPTY_GROUP),
/// a simple group holding offsets, an unknown id and the empty id (GROUP_ID_NOT_FOUND); then
/// the emptied groups are deleted with their offsets, and a second delete finds nothing.
async fn delete_groups(mut s: Side) -> Side {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 2).await;
    sleep(Duration::from_secs(1)).await;
    let consumer_group = s.group.clone();
    let simple_group = format!("{consumer_group}-simple");
    let classic_group = format!("{consumer_group}-classic");
    let unknown_group = format!("{consumer_group}-unknown");
    s.masks.name(&simple_group, "group-simple");
    s.masks.name(&classic_group, "group-classic");
    s.masks.name(&unknown_group, "group-unknown");
    let a_id = random_uuid();
    s.masks.name(&a_id, "member-a");

    async fn deleted(
        s: &mut Side,
        client: &mut NetworkClient,
        node: i32,
        label: &str,
        groups: &[&str],
    ) {
        let request = DeleteGroupsRequest::default()
            .with_groups_names(groups.iter().map(|g| group_id(g)).collect());
        let r = send(client, node, request).await;
        let mut results: Vec<(String, i16)> = r
            .results
            .iter()
            .map(|g| (s.masks.mask("group", g.group_id.0.as_str()), g.error_code))
            .collect();
        results.sort();
        s.transcript.record(label, results);
    }

    // A consumer group with a member and committed offsets.
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, 0, None, Some(vec![])),
    )
    .await;
    let epoch = r.member_epoch;
    s.transcript
        .record("A joins", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(&mut a, coordinator, commit(&s, epoch, &a_id, None, 10)).await;
    s.transcript
        .record("A commits", mask_commit(&mut s.masks, r));
    // A simple group: offsets only.
    s.group = simple_group.clone();
    let r = send(&mut a, coordinator, commit(&s, -1, "", None, 20)).await;
    s.transcript
        .record("simple commit", mask_commit(&mut s.masks, r));
    // A Stable classic group of one member.
    s.group = classic_group.clone();
    let (mut b, _) = s.member().await;
    let r = send(&mut b, coordinator, join(&s, "", None)).await;
    let b_id = r.member_id.to_string();
    s.transcript
        .record("B needs a member id", mask_join(&mut s.masks, r));
    let r = send(&mut b, coordinator, join(&s, &b_id, None)).await;
    let generation = r.generation_id;
    s.transcript.record("B joins", mask_join(&mut s.masks, r));
    let r = send(
        &mut b,
        coordinator,
        sync(&s, generation, &b_id, None, &[(&b_id, &[0, 1])]),
    )
    .await;
    s.transcript.record("B syncs", mask_sync(r));
    s.group = consumer_group.clone();

    deleted(
        &mut s,
        &mut a,
        coordinator,
        "delete every kind of group",
        &[
            &consumer_group,
            &simple_group,
            &classic_group,
            &unknown_group,
            "",
        ],
    )
    .await;
    s.group = simple_group.clone();
    let r = send(&mut a, coordinator, offset_fetch(&s, None, -1)).await;
    s.transcript.record(
        "the simple group's offsets are gone",
        mask_offset_fetch(&mut s.masks, r),
    );

    // Both members leave; the emptied groups go, with the consumer group's offsets.
    s.group = consumer_group.clone();
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, -1, None, None),
    )
    .await;
    s.transcript
        .record("A leaves", mask_consumer_heartbeat(&mut s.masks, r));
    s.group = classic_group.clone();
    let r = send(&mut b, coordinator, leave(&s, &[(&b_id, None)])).await;
    s.transcript.record("B leaves", mask_leave(&mut s.masks, r));
    s.group = consumer_group.clone();
    deleted(
        &mut s,
        &mut a,
        coordinator,
        "delete the emptied groups",
        &[&consumer_group, &classic_group],
    )
    .await;
    let r = send(&mut a, coordinator, offset_fetch(&s, None, -1)).await;
    s.transcript.record(
        "the consumer group's offsets are gone",
        mask_offset_fetch(&mut s.masks, r),
    );
    deleted(
        &mut s,
        &mut a,
        coordinator,
        "delete again",
        &[&consumer_group, &classic_group, &simple_group],
    )
    .await;
    // Kafka answers ListGroups from the last committed snapshot.
    sleep(Duration::from_millis(500)).await;
    let r = send(&mut a, coordinator, ListGroupsRequest::default()).await;
    let mut ours: Vec<String> = r
        .groups
        .iter()
        .filter(|g| g.group_id.0.as_str().starts_with(&consumer_group))
        .map(|g| s.masks.mask("group", g.group_id.0.as_str()))
        .collect();
    ours.sort();
    s.transcript
        .record("nothing is listed", (r.error_code, ours));
    s
}

#[tokio::test]
async fn group_types_and_list_groups_match_kafka() {
    differential("group-types", group_types).await;
}

#[tokio::test]
async fn classic_dynamic_members_match_kafka() {
    differential("classic-dynamic", classic_dynamic).await;
}

#[tokio::test]
async fn classic_static_members_match_kafka() {
    differential("classic-static", classic_static).await;
}

#[tokio::test]
async fn consumer_protocol_matches_kafka() {
    differential("consumer-protocol", consumer_protocol).await;
}

/// KIP-1251's assignment epochs (Kafka 4.4): once a revocation moved member A to a new epoch,
/// a commit A sends at its old epoch is accepted for the partition it kept (assigned to it
/// before) and refused for the one it gave up; before 4.4 both are STALE_MEMBER_EPOCH.
async fn assignment_epochs(mut s: Side) -> Side {
    let TwoMembers {
        mut a,
        coordinator,
        a_id,
        a_epoch: old_epoch,
        a_owned: all,
    } = a_then_b_join(&mut s).await;
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, old_epoch, None, all),
    )
    .await;
    let kept = owned(&r);
    let kept_partition = kept
        .as_ref()
        .and_then(|topics| topics.first())
        .and_then(|topic| topic.partitions.first().copied())
        .expect("A keeps one of the two partitions");
    s.transcript.record(
        "A is told to revoke",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, old_epoch, None, kept),
    )
    .await;
    let new_epoch = r.member_epoch;
    s.transcript.record(
        "A acknowledges the revocation",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    for (step, epoch, partition) in [
        (
            "A commits its kept partition at its old epoch",
            old_epoch,
            kept_partition,
        ),
        (
            "A commits its given-up partition at its old epoch",
            old_epoch,
            1 - kept_partition,
        ),
        (
            "A commits its kept partition at its new epoch",
            new_epoch,
            kept_partition,
        ),
    ] {
        let r = send(
            &mut a,
            coordinator,
            commit_partition(&s, epoch, &a_id, partition, 7),
        )
        .await;
        s.transcript.record(step, mask_commit(&mut s.masks, r));
    }
    s
}

/// The opening of the two-member KIP-848 conversations: a topic of two partitions, then
/// member A joins (and gets both), then member B joins; both answers recorded.
struct TwoMembers {
    a: NetworkClient,
    coordinator: i32,
    a_id: String,
    /// A's epoch and partitions from its join.
    a_epoch: i32,
    a_owned: Option<Vec<AckedPartitions>>,
}

async fn a_then_b_join(s: &mut Side) -> TwoMembers {
    let (mut a, coordinator) = s.member().await;
    create_topic(&mut a, &s.topic.clone(), 2).await;
    // The group coordinator learns of the topic a moment after the broker (see above).
    sleep(Duration::from_secs(1)).await;
    let (mut b, _) = s.member().await;
    let a_id = random_uuid();
    let b_id = random_uuid();
    s.masks.name(&a_id, "member-a");
    s.masks.name(&b_id, "member-b");
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(s, &a_id, 0, None, Some(vec![])),
    )
    .await;
    let (a_epoch, a_owned) = (r.member_epoch, owned(&r));
    s.transcript
        .record("A joins", mask_consumer_heartbeat(&mut s.masks, r));
    let r = send(
        &mut b,
        coordinator,
        consumer_heartbeat(s, &b_id, 0, None, Some(vec![])),
    )
    .await;
    s.transcript
        .record("B joins", mask_consumer_heartbeat(&mut s.masks, r));
    TwoMembers {
        a,
        coordinator,
        a_id,
        a_epoch,
        a_owned,
    }
}

/// Kafka 4.4's batched target assignments (`group.consumer.assignment.interval.ms`, 1 s by
/// default): B joins right after A's first assignment, so the group is `Assigning` and A's
/// heartbeat brings nothing new; the first heartbeat after the interval computes the
/// assignment and starts A's revocation. Before 4.4 that happens at B's join. The steps before
/// the wait are three requests, far inside the interval even on a loaded machine.
async fn assignment_interval(mut s: Side) -> Side {
    let TwoMembers {
        mut a,
        coordinator,
        a_id,
        a_epoch: epoch,
        a_owned: all,
    } = a_then_b_join(&mut s).await;
    let describe =
        || ConsumerGroupDescribeRequest::default().with_group_ids(vec![group_id(&s.group)]);
    let r = send(&mut a, coordinator, describe()).await;
    s.transcript.record(
        "describe right after B joined",
        mask_consumer_describe(&mut s.masks, r),
    );
    sleep(Duration::from_millis(1_500)).await;
    let r = send(
        &mut a,
        coordinator,
        consumer_heartbeat(&s, &a_id, epoch, None, all),
    )
    .await;
    s.transcript.record(
        "A heartbeats after the interval",
        mask_consumer_heartbeat(&mut s.masks, r),
    );
    let r = send(&mut a, coordinator, describe()).await;
    s.transcript.record(
        "describe after the interval",
        mask_consumer_describe(&mut s.masks, r),
    );
    s
}

#[tokio::test]
async fn assignment_interval_matches_kafka() {
    differential_with(
        "assignment-interval",
        AssignmentInterval::Default,
        assignment_interval,
    )
    .await;
}

#[tokio::test]
async fn assignment_epochs_match_kafka() {
    differential("assignment-epochs", assignment_epochs).await;
}

#[tokio::test]
async fn online_migration_matches_kafka() {
    differential("migration", migration).await;
}

#[tokio::test]
async fn downgrade_at_a_static_replacement_matches_kafka() {
    differential("downgrade-replacement", downgrade_at_replacement).await;
}

#[tokio::test]
async fn delete_groups_matches_kafka() {
    differential("delete-groups", delete_groups).await;
}

#[tokio::test]
async fn group_api_versions_match_kafka() {
    let Some(real) = real_bootstrap() else {
        return;
    };
    let version = real_kafka_version(&real).await;
    let sim_cluster = harness_cluster(1, &[], version).await;
    let mut transcripts = Vec::new();
    // The APIs whose newest version the real broker lists beyond what `kafka-protocol` 0.18
    // decodes (and so the simulator serves): exactly those sim/FIDELITY.md names.
    let mut beyond_decodable = BTreeSet::new();
    for bootstrap in [sim_cluster.bootstrap_servers()[0].clone(), real] {
        let mut client = client(&bootstrap);
        let mut t = Transcript::default();
        let r = send(
            &mut client,
            -1,
            ApiVersionsRequest::default()
                .with_client_software_name(str("bad name!"))
                .with_client_software_version(str("1.0")),
        )
        .await;
        t.record("invalid client software name", r);
        let r = send(
            &mut client,
            -1,
            ApiVersionsRequest::default()
                .with_client_software_name(str("fidelity-test"))
                .with_client_software_version(str("1.0")),
        )
        .await;
        t.note("error", r.error_code.to_string());
        // The APIs both serve: the simulated broker serves a subset (sim/FIDELITY.md).
        for key in [
            ApiKey::Produce,
            ApiKey::Fetch,
            ApiKey::ListOffsets,
            ApiKey::Metadata,
            ApiKey::OffsetCommit,
            ApiKey::OffsetFetch,
            ApiKey::FindCoordinator,
            ApiKey::JoinGroup,
            ApiKey::Heartbeat,
            ApiKey::LeaveGroup,
            ApiKey::SyncGroup,
            ApiKey::DescribeGroups,
            ApiKey::ListGroups,
            ApiKey::DeleteGroups,
            ApiKey::ApiVersions,
            ApiKey::CreateTopics,
            ApiKey::DeleteTopics,
            ApiKey::OffsetForLeaderEpoch,
            ApiKey::CreatePartitions,
            ApiKey::ConsumerGroupHeartbeat,
            ApiKey::ConsumerGroupDescribe,
            ApiKey::DeleteRecords,
            ApiKey::DescribeConfigs,
            ApiKey::AlterConfigs,
            ApiKey::IncrementalAlterConfigs,
            ApiKey::OffsetDelete,
            ApiKey::DescribeCluster,
        ] {
            let range = r
                .api_keys
                .iter()
                .find(|k| k.api_key == key as i16)
                .map(|k| {
                    // Kafka 4.x still advertises Produce v0-2 (KAFKA-18659, for librdkafka)
                    // though it removed them; the sim starts at v3 (sim/FIDELITY.md).
                    let min = if key == ApiKey::Produce {
                        3.max(k.min_version)
                    } else {
                        k.min_version
                    };
                    let decodable = decodable(key).expect("an API the simulator serves");
                    if k.max_version > decodable.max {
                        beyond_decodable.insert(format!("{key:?}"));
                    }
                    format!("{min}..={}", k.max_version.min(decodable.max))
                });
            t.note(format!("{key:?}"), format!("{range:?}"));
        }
        transcripts.push(t);
    }
    assert_same("api-versions", &transcripts[0], &transcripts[1]);
    let expected: &[&str] = match version {
        KafkaVersion::V4_4 => &[
            "ApiVersions",
            "DeleteGroups",
            "ListOffsets",
            "OffsetCommit",
            "OffsetFetch",
        ],
        _ => &[],
    };
    assert_eq!(
        beyond_decodable,
        expected.iter().map(|s| (*s).to_owned()).collect(),
        "Kafka {version} lists newer versions than the simulator can serve"
    );
}
