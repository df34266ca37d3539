//! Differential tests of the data path: Produce, ListOffsets and Fetch (with KIP-227 fetch
//! sessions) driven by our `NetworkClient` against a simulated single-broker cluster and against
//! the real broker (`KAFKA_BOOTSTRAP`), comparing every response field by field with topic ids,
//! the run's unique topic name, session ids, node endpoints and throttle times masked. Record
//! bytes are compared raw: both brokers keep the producer's batch and rewrite only its base
//! offset and partition leader epoch.
//!
//! Every Fetch has `max_wait_ms` 0, so no answer depends on timing.
#![cfg(not(madsim))]

mod differential_support;

use bytes::Bytes;
use differential_support::*;
use kafka_consumer::network::NetworkClient;
use kafka_consumer::records::{NewRecord, RecordBatchBuilder};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;

struct Side {
    topic: String,
    topic_id: uuid::Uuid,
    leader: i32,
    masks: Masks,
    transcript: Transcript,
}

/// A batch of `count` records with values `v{first}`.., timestamps 1000 + i.
fn batch(first: usize, count: usize) -> Bytes {
    let mut builder = RecordBatchBuilder::new(0);
    for i in first..first + count {
        let value = format!("v{i}");
        builder
            .append(&NewRecord {
                timestamp_ms: 1_000 + i as i64,
                key: None,
                value: Some(value.as_bytes()),
                headers: &[],
            })
            .unwrap();
    }
    builder.build().unwrap()
}

fn produce(s: &Side, partition: i32, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(&s.topic))
            .with_topic_id(s.topic_id)
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}

fn list_offsets(s: &Side, queries: &[(i32, i64)]) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic_name(&s.topic))
            .with_partitions(
                queries
                    .iter()
                    .map(|(partition, timestamp)| {
                        ListOffsetsPartition::default()
                            .with_partition_index(*partition)
                            .with_timestamp(*timestamp)
                    })
                    .collect(),
            )])
}

fn fetch_partition(partition: i32, offset: i64) -> FetchPartition {
    FetchPartition::default()
        .with_partition(partition)
        .with_fetch_offset(offset)
        .with_partition_max_bytes(1 << 20)
}

/// A Fetch of `partitions` (partition, offset) in session `session` at `epoch`, forgetting
/// `forgotten`.
fn fetch(
    s: &Side,
    (session, epoch): (i32, i32),
    partitions: &[(i32, i64)],
    forgotten: &[i32],
) -> FetchRequest {
    let topics = if partitions.is_empty() {
        Vec::new()
    } else {
        vec![FetchTopic::default()
            .with_topic(topic_name(&s.topic))
            .with_topic_id(s.topic_id)
            .with_partitions(
                partitions
                    .iter()
                    .map(|(p, o)| fetch_partition(*p, *o))
                    .collect(),
            )]
    };
    let forgotten_topics = if forgotten.is_empty() {
        Vec::new()
    } else {
        vec![ForgottenTopic::default()
            .with_topic(topic_name(&s.topic))
            .with_topic_id(s.topic_id)
            .with_partitions(forgotten.to_vec())]
    };
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_id(session)
        .with_session_epoch(epoch)
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten_topics)
}

fn mask_produce(m: &mut Masks, mut r: ProduceResponse) -> ProduceResponse {
    r.throttle_time_ms = 0;
    r.node_endpoints.clear();
    for topic in &mut r.responses {
        m.mask_str("name", &mut topic.name.0);
        m.uuid(&mut topic.topic_id);
        topic.topic_id = uuid::Uuid::nil();
    }
    r
}

fn mask_list_offsets(m: &mut Masks, mut r: ListOffsetsResponse) -> ListOffsetsResponse {
    r.throttle_time_ms = 0;
    for topic in &mut r.topics {
        m.mask_str("name", &mut topic.name.0);
        // Kafka collects the answers in a hash map.
        topic.partitions.sort_by_key(|p| p.partition_index);
    }
    r
}

/// Masks a Fetch response; the session id keeps only whether there is one.
fn mask_fetch(m: &mut Masks, mut r: FetchResponse) -> FetchResponse {
    r.throttle_time_ms = 0;
    r.session_id = r.session_id.signum();
    r.node_endpoints.clear();
    for topic in &mut r.responses {
        m.mask_str("name", &mut topic.topic.0);
        topic.topic_id = uuid::Uuid::nil();
        topic.partitions.sort_by_key(|p| p.partition_index);
    }
    r
}

/// Produces `records`, retrying while the partition is not yet led here: Kafka's Metadata can
/// name a leader a moment before that broker's replica manager has become it.
async fn produce_retrying(
    client: &mut NetworkClient,
    s: &Side,
    partition: i32,
    records: Bytes,
) -> ProduceResponse {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = send(client, s.leader, produce(s, partition, records.clone())).await;
        let code = r.responses[0].partition_responses[0].error_code;
        // UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER
        if ![3, 5, 6].contains(&code) || tokio::time::Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn connect(bootstrap: &str, topic: &str, partitions: i32) -> (NetworkClient, Side) {
    let mut client = client(bootstrap);
    create_topic(&mut client, topic, partitions).await;
    let info = client.metadata().topic(topic).unwrap();
    let topic_id = info.topic_id;
    let leader = info.partitions[&0].leader_id.unwrap();
    let mut masks = Masks::default();
    masks.name(topic, "topic");
    let side = Side {
        topic: topic.to_owned(),
        topic_id,
        leader,
        masks,
        transcript: Transcript::default(),
    };
    (client, side)
}

/// Produce into partition 0 of a two-partition topic (partition 1 stays empty), then
/// ListOffsets (-1, -2, -3, by timestamp, past the last timestamp, an empty partition, a
/// partition that does not exist) and sessionless Fetch (from 0, from the middle, at the end,
/// past the end: OFFSET_OUT_OF_RANGE, an empty partition, a partition that does not exist).
async fn offsets_and_sessionless_fetch(bootstrap: String, topic: String) -> Transcript {
    let (mut client, mut s) = connect(&bootstrap, &topic, 2).await;
    let leader = s.leader;
    for (first, count) in [(0, 3), (3, 2)] {
        let r = produce_retrying(&mut client, &s, 0, batch(first, count)).await;
        s.transcript
            .record(format!("produce {count}"), mask_produce(&mut s.masks, r));
    }
    let r = send(&mut client, leader, produce(&s, 5, batch(0, 1))).await;
    s.transcript.record(
        "produce to a missing partition",
        mask_produce(&mut s.masks, r),
    );
    // One request per query: a partition named twice in one request is INVALID_REQUEST.
    let queries = [
        ("latest", 0, -1),
        ("earliest", 0, -2),
        ("max timestamp", 0, -3),
        ("the first timestamp", 0, 1_000),
        ("a timestamp in the second batch", 0, 1_003),
        ("the last timestamp", 0, 1_004),
        ("past the last timestamp", 0, 9_999),
        ("latest, empty partition", 1, -1),
        ("earliest, empty partition", 1, -2),
        ("max timestamp, empty partition", 1, -3),
        ("a timestamp, empty partition", 1, 1_000),
        ("missing partition", 9, -1),
    ];
    for (label, partition, timestamp) in queries {
        let r = send(
            &mut client,
            leader,
            list_offsets(&s, &[(partition, timestamp)]),
        )
        .await;
        s.transcript.record(
            format!("list offsets: {label}"),
            mask_list_offsets(&mut s.masks, r),
        );
    }
    let r = send(
        &mut client,
        leader,
        list_offsets(&s, &[(0, -1), (1, -2), (0, -2)]),
    )
    .await;
    s.transcript.record(
        "list offsets: a partition named twice",
        mask_list_offsets(&mut s.masks, r),
    );
    let fetches: [(&str, &[(i32, i64)]); 6] = [
        ("from the start", &[(0, 0)]),
        ("from inside the second batch", &[(0, 4)]),
        ("at the log end", &[(0, 5)]),
        ("past the log end", &[(0, 6)]),
        ("an empty partition", &[(1, 0)]),
        ("a missing partition", &[(7, 0)]),
    ];
    for (label, partitions) in fetches {
        let r = send(&mut client, leader, fetch(&s, (0, -1), partitions, &[])).await;
        s.transcript
            .record(format!("fetch {label}"), mask_fetch(&mut s.masks, r));
    }
    s.transcript
}

/// A full fetch opens a session; incremental fetches return only what changed, add and forget
/// partitions; a wrong epoch gets INVALID_FETCH_SESSION_EPOCH, an unknown session
/// FETCH_SESSION_ID_NOT_FOUND; epoch -1 closes the session.
async fn fetch_session(bootstrap: String, topic: String) -> Transcript {
    let (mut client, mut s) = connect(&bootstrap, &topic, 2).await;
    let leader = s.leader;
    let r = produce_retrying(&mut client, &s, 0, batch(0, 3)).await;
    s.transcript
        .record("produce", mask_produce(&mut s.masks, r));

    let r = send(&mut client, leader, fetch(&s, (0, 0), &[(0, 0)], &[])).await;
    let session = r.session_id;
    s.transcript
        .record("full fetch opens a session", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 1), &[(0, 3)], &[])).await;
    s.transcript.record(
        "incremental, offset moved to the end",
        mask_fetch(&mut s.masks, r),
    );
    let r = send(&mut client, leader, fetch(&s, (session, 2), &[], &[])).await;
    s.transcript
        .record("incremental, nothing changed", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, produce(&s, 0, batch(3, 2))).await;
    s.transcript
        .record("produce more", mask_produce(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 3), &[], &[])).await;
    s.transcript
        .record("incremental, new records", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 4), &[(1, 0)], &[])).await;
    s.transcript
        .record("incremental, add a partition", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 5), &[], &[0])).await;
    s.transcript.record(
        "incremental, forget a partition",
        mask_fetch(&mut s.masks, r),
    );
    let r = send(&mut client, leader, fetch(&s, (session, 5), &[], &[])).await;
    s.transcript
        .record("incremental, repeated epoch", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 9), &[], &[])).await;
    s.transcript
        .record("incremental, future epoch", mask_fetch(&mut s.masks, r));
    let r = send(
        &mut client,
        leader,
        fetch(&s, (session.wrapping_add(1), 1), &[], &[]),
    )
    .await;
    s.transcript
        .record("incremental, unknown session", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 6), &[(0, 5)], &[])).await;
    s.transcript.record(
        "incremental, right epoch again",
        mask_fetch(&mut s.masks, r),
    );
    let r = send(
        &mut client,
        leader,
        fetch(&s, (session, -1), &[(0, 0)], &[]),
    )
    .await;
    s.transcript
        .record("close the session", mask_fetch(&mut s.masks, r));
    let r = send(&mut client, leader, fetch(&s, (session, 7), &[], &[])).await;
    s.transcript.record(
        "incremental on the closed session",
        mask_fetch(&mut s.masks, r),
    );
    s.transcript
}

/// Kafka's fetch-session fairness: in an incremental fetch a partition that returned records
/// moves to the end of the session, so with a response limit of one batch the next fetches
/// read the other partitions first (`IncrementalFetchContext.updateAndGenerateResponseData`).
/// A full fetch does not rotate.
async fn fetch_session_rotation(bootstrap: String, topic: String) -> Transcript {
    let (mut client, mut s) = connect(&bootstrap, &topic, 3).await;
    let leader = s.leader;
    for partition in 0..3 {
        for n in 0..3 {
            let r = produce_retrying(
                &mut client,
                &s,
                partition,
                batch(10 * partition as usize + n, 1),
            )
            .await;
            s.transcript
                .record("produce", mask_produce(&mut s.masks, r));
        }
    }
    let one_batch = |request: FetchRequest| request.with_max_bytes(1);
    let r = send(
        &mut client,
        leader,
        one_batch(fetch(&s, (0, 0), &[(0, 0), (1, 0), (2, 0)], &[])),
    )
    .await;
    let session = r.session_id;
    s.transcript.record(
        "full fetch: partition 0 fills the response",
        mask_fetch(&mut s.masks, r),
    );
    let steps: [(&str, &[(i32, i64)]); 4] = [
        ("partition 0 moved on, read first, goes last", &[(0, 1)]),
        ("partition 1 now first", &[(0, 2)]),
        ("partition 2 now first", &[(1, 1)]),
        ("partition 0 again", &[(2, 1)]),
    ];
    for (epoch, (what, moved)) in (1..).zip(steps) {
        let r = send(
            &mut client,
            leader,
            one_batch(fetch(&s, (session, epoch), moved, &[])),
        )
        .await;
        s.transcript.record(what, mask_fetch(&mut s.masks, r));
    }
    s.transcript
}

async fn differential<F, Fut>(name: &str, conversation: F)
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = Transcript>,
{
    let Some(real) = real_bootstrap() else {
        return;
    };
    let sim_cluster = harness_cluster(1, &[], real_kafka_version(&real).await).await;
    let topic = unique(name);
    let sim = conversation(sim_cluster.bootstrap_servers()[0].clone(), topic.clone()).await;
    let kafka = conversation(real, topic).await;
    assert_same(name, &sim, &kafka);
}

#[tokio::test]
async fn offsets_and_sessionless_fetch_match_kafka() {
    differential("offsets-fetch", offsets_and_sessionless_fetch).await;
}

#[tokio::test]
async fn fetch_sessions_match_kafka() {
    differential("fetch-session", fetch_session).await;
}

#[tokio::test]
async fn fetch_session_rotation_matches_kafka() {
    differential("fetch-rotation", fetch_session_rotation).await;
}
