use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, PartitionData as WirePartition,
};
use uuid::Uuid;

use super::*;
use crate::internals::context::testing::Parts;
use crate::internals::fetch_buffer::FetchPosition;
use crate::internals::settings::ConsumerSettings;
use crate::internals::test_support::{all_versions, metadata, versions_capped};
use crate::records::{NewRecord, RecordBatchBuilder};

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

/// Partitions 0 and 1 led by broker 1, partition 2 by broker 2; all fetching from offset 0.
fn parts(policy: AutoOffsetReset) -> Parts {
    let mut p = Parts::new(ConsumerSettings {
        auto_offset_reset: policy,
        ..ConsumerSettings::default()
    });
    p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
    p.metadata = metadata(&[(0, 1, 5), (1, 1, 5), (2, 2, 5)]);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1), tp(2)].into_iter().collect());
    p.buffer.set_assignment(&p.subscriptions.assigned());
    for i in 0..3 {
        p.buffer.set_position(&tp(i), FetchPosition::new(0));
        p.subscriptions
            .set_fetch_state(&tp(i), FetchState::Fetching);
    }
    p
}

fn sent(r: &UnsentRequest) -> (i32, i32, Vec<(Uuid, i32, i64)>, usize) {
    let RequestBody::Fetch(f) = &r.body else {
        panic!()
    };
    let partitions = f
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition, p.fetch_offset))
        })
        .collect();
    (
        f.session_id,
        f.session_epoch,
        partitions,
        f.forgotten_topics_data.len(),
    )
}

fn records(base: i64, n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(base);
    for _ in 0..n {
        b.append(&NewRecord {
            timestamp_ms: 0,
            key: None,
            value: Some(b"v"),
            headers: &[],
        })
        .unwrap();
    }
    b.build().unwrap()
}

fn response(
    session_id: i32,
    parts: Vec<(i32, i16, Option<Bytes>)>,
) -> Result<(ResponseBody, i16), NetworkError> {
    let partitions = parts
        .into_iter()
        .map(|(p, code, records)| {
            WirePartition::default()
                .with_partition_index(p)
                .with_error_code(code)
                .with_high_watermark(10)
                .with_records(records)
        })
        .collect();
    let body = FetchResponse::default()
        .with_session_id(session_id)
        .with_responses(vec![FetchableTopicResponse::default()
            .with_topic_id(Uuid::from_u128(1))
            .with_partitions(partitions)]);
    Ok((ResponseBody::Fetch(body), 17))
}

#[test]
fn one_fetch_per_leader_by_topic_id_and_only_fetchable_partitions() {
    let mut p = parts(AutoOffsetReset::Earliest);
    p.subscriptions.set_paused(&tp(1), true);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 2);
    assert_eq!(r.requests[0].target, Target::Node(1));
    assert_eq!(r.requests[0].version, Some(18));
    assert_eq!(
        sent(&r.requests[0]).2,
        [(Uuid::from_u128(1), 0, 0)],
        "paused p1 not fetched"
    );
    assert_eq!(r.requests[1].target, Target::Node(2));
    assert!(
        m.poll(&mut p.ctx()).requests.is_empty(),
        "one in flight per broker"
    );

    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(9, vec![(0, 0, Some(records(0, 3)))]),
    );
    assert!(p.buffer.buffered_partitions().contains(&tp(0)));
    // Node 1 is free again, but p0 has buffered data and p1 is paused: nothing to fetch there.
    assert!(m.poll(&mut p.ctx()).requests.is_empty());
    assert_eq!(p.buffer.collect(10, Instant::now()).unwrap().count(), 3);
    let r = m.poll(&mut p.ctx());
    let (session_id, epoch, partitions, _) = sent(&r.requests[0]);
    assert_eq!((session_id, epoch), (9, 1), "incremental");
    assert_eq!(
        partitions,
        [(Uuid::from_u128(1), 0, 3)],
        "the advanced position"
    );
}

#[test]
fn a_broker_with_buffered_data_gets_no_fetch_until_it_is_consumed() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    let node1 = r.requests[0].token;
    // Only p1 has data; p0 comes back empty (nothing new at the broker).
    m.on_response(
        &mut p.ctx(),
        node1,
        response(9, vec![(0, 0, None), (1, 0, Some(records(0, 3)))]),
    );
    // p0 has nothing buffered, but its leader still holds p1's data: no fetch to node 1 (it
    // would forget p1 from the session, and could wait at the broker while p1 is consumed).
    assert!(m.poll(&mut p.ctx()).requests.is_empty());
    assert_eq!(p.buffer.collect(10, Instant::now()).unwrap().count(), 3);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].target, Target::Node(1));
    let (_, _, partitions, forgotten) = sent(&r.requests[0]);
    assert_eq!(partitions, [(Uuid::from_u128(1), 1, 3)], "only p1 changed");
    assert_eq!(forgotten, 0, "p0 stays in the session");
}

#[test]
fn old_brokers_are_fetched_by_topic_name() {
    let mut p = parts(AutoOffsetReset::Earliest);
    p.versions = crate::internals::node_versions::NodeVersions::every_node(versions_capped(12, 4));
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests[0].version, Some(12));
    let RequestBody::Fetch(f) = &r.requests[0].body else {
        panic!()
    };
    assert_eq!(f.topics[0].topic.0.as_str(), "t");
    assert!(f.topics[0].topic_id.is_nil());
}

#[test]
fn out_of_range_resets_by_policy_or_reports_without_one() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    let code = ResponseError::OffsetOutOfRange.code();
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Earliest))
    );
    assert!(p.effects.errors.is_empty());

    let mut p = parts(AutoOffsetReset::None);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    assert!(matches!(
        &p.effects.errors[..],
        [Error::OffsetOutOfRange { .. }]
    ));
}

/// Issue #27 bug 3: with `auto.offset.reset=none` an out-of-range position is kept (Java's
/// `handleInitializeErrors` leaves the state alone and throws OffsetOutOfRangeException), the
/// partition is fetched again only after the application polled, and the error comes again
/// while the position is still out of range; a seek lifts the hold.
#[test]
fn out_of_range_without_a_policy_keeps_the_position_and_reports_again_after_a_poll() {
    let code = ResponseError::OffsetOutOfRange.code();
    let mut p = parts(AutoOffsetReset::None);
    p.buffer.set_position(&tp(0), FetchPosition::new(7));
    let mut m = FetchRequestManager::new(100, 1_000);
    let fetched_p0 = |r: &PollResult| {
        r.requests
            .iter()
            .flat_map(|r| sent(r).2)
            .filter(|(_, partition, _)| *partition == 0)
            .map(|(_, _, offset)| offset)
            .collect::<Vec<_>>()
    };
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched_p0(&r), vec![7]);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    let offsets_of = |errors: &[Error]| -> Vec<Vec<(TopicPartition, i64)>> {
        errors
            .iter()
            .map(|e| match e {
                Error::OffsetOutOfRange { offsets } => offsets.clone(),
                other => panic!("unexpected error {other:?}"),
            })
            .collect()
    };
    assert_eq!(
        offsets_of(&std::mem::take(&mut p.effects.errors)),
        vec![vec![(tp(0), 7)]]
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching),
        "the position is kept, not sent to a reset"
    );
    assert_eq!(
        p.buffer.position(&tp(0)).map(|(pos, _)| pos.offset),
        Some(7)
    );

    let r = m.poll(&mut p.ctx());
    assert!(
        fetched_p0(&r).is_empty(),
        "no refetch before the application polled past the error"
    );
    for request in &r.requests {
        m.on_response(&mut p.ctx(), request.token, response(0, vec![]));
    }

    m.on_poll();
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched_p0(&r), vec![7], "fetched again after the poll");
    let token = r
        .requests
        .iter()
        .find(|r| r.target == Target::Node(1))
        .expect("a fetch to broker 1")
        .token;
    m.on_response(&mut p.ctx(), token, response(0, vec![(0, code, None)]));
    assert_eq!(
        offsets_of(&std::mem::take(&mut p.effects.errors)),
        vec![vec![(tp(0), 7)]],
        "still out of range: the same error again"
    );
    for request in r.requests.iter().filter(|r| r.token != token) {
        m.on_response(&mut p.ctx(), request.token, response(0, vec![]));
    }

    // The application seeks: the new position is fetched without waiting for a poll.
    p.buffer.set_position(&tp(0), FetchPosition::new(9));
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched_p0(&r), vec![9]);
}

#[test]
fn leader_errors_refresh_metadata_and_data_for_a_seeked_partition_is_dropped() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    // The application seeks p0 while the fetch is in flight.
    p.buffer.set_position(&tp(0), FetchPosition::new(100));
    let code = ResponseError::NotLeaderOrFollower.code();
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, 0, Some(records(0, 3))), (1, code, None)]),
    );
    assert!(
        !p.buffer.buffered_partitions().contains(&tp(0)),
        "fetched at the old position: dropped"
    );
    assert!(p.effects.metadata_refresh);
}

#[test]
fn failed_fetch_backs_off_and_restarts_the_session() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, response(9, vec![]));
    let r = m.poll(&mut p.ctx());
    let node1 = r
        .requests
        .iter()
        .find(|u| u.target == Target::Node(1))
        .unwrap();
    assert_eq!(sent(node1).1, 1);
    m.on_response(
        &mut p.ctx(),
        node1.token,
        Err(NetworkError::NoNodeAvailable),
    );
    let r = m.poll(&mut p.ctx());
    assert!(
        r.requests.iter().all(|u| u.target != Target::Node(1)),
        "backing off"
    );
    p.advance_ms(100);
    let r = m.poll(&mut p.ctx());
    let node1 = r
        .requests
        .iter()
        .find(|u| u.target == Target::Node(1))
        .unwrap();
    let (session_id, epoch, partitions, _) = sent(node1);
    assert_eq!(
        (session_id, epoch, partitions.len()),
        (9, 0, 2),
        "full request"
    );
    let close = m.poll_on_close(&mut p.ctx());
    assert!(close.requests.iter().all(|u| sent(u).1 == FINAL_EPOCH));
}

fn diverging(
    partition: i32,
    epoch: i32,
    end_offset: i64,
) -> Result<(ResponseBody, i16), NetworkError> {
    use kafka_protocol::messages::fetch_response::EpochEndOffset;
    let body = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
        .with_topic_id(Uuid::from_u128(1))
        .with_partitions(vec![WirePartition::default()
            .with_partition_index(partition)
            .with_high_watermark(10)
            .with_diverging_epoch(
                EpochEndOffset::default()
                    .with_epoch(epoch)
                    .with_end_offset(end_offset),
            )])]);
    Ok((ResponseBody::Fetch(body), 17))
}

fn position_with_epoch(p: &mut Parts, offset: i64, offset_epoch: i32) {
    p.buffer.set_position(
        &tp(0),
        FetchPosition {
            offset,
            offset_epoch: Some(offset_epoch),
            current_leader_epoch: Some(5),
        },
    );
}

/// Issue #27 bug 4: Fetch v12+ carries the epoch of the last consumed record as
/// `last_fetched_epoch` (-1 when unknown), so the leader can answer a diverging epoch.
#[test]
fn fetch_sends_the_last_fetched_epoch() {
    let mut p = parts(AutoOffsetReset::Earliest);
    position_with_epoch(&mut p, 40, 3);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    let RequestBody::Fetch(f) = &r.requests[0].body else {
        panic!()
    };
    let epochs: Vec<(i32, i32)> = f.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition, p.last_fetched_epoch))
        .collect();
    assert_eq!(epochs, vec![(0, 3), (1, -1)]);
}

/// Issue #27 bug 4: a diverging epoch below the position moves it to the divergence point
/// (as an OffsetForLeaderEpoch answer would); one at or past it keeps the offset and takes
/// the leader's epoch; with `auto.offset.reset=none` the truncation is reported and the
/// position kept.
#[test]
fn a_diverging_epoch_is_handled_as_a_validation_answer() {
    let mut p = parts(AutoOffsetReset::Earliest);
    position_with_epoch(&mut p, 40, 3);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, diverging(0, 2, 25));
    let (position, _) = p.buffer.position(&tp(0)).unwrap();
    assert_eq!((position.offset, position.offset_epoch), (25, Some(2)));
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
    assert!(p.effects.errors.is_empty());

    let mut p = parts(AutoOffsetReset::Earliest);
    position_with_epoch(&mut p, 40, 3);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, diverging(0, 2, 60));
    let (position, _) = p.buffer.position(&tp(0)).unwrap();
    assert_eq!((position.offset, position.offset_epoch), (40, Some(2)));

    let mut p = parts(AutoOffsetReset::None);
    position_with_epoch(&mut p, 40, 3);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, diverging(0, 2, 25));
    assert!(
        matches!(&p.effects.errors[..], [Error::LogTruncation { divergent_offsets }]
            if divergent_offsets == &vec![(tp(0), 25)]),
        "{:?}",
        p.effects.errors
    );
    assert_eq!(
        p.buffer.position(&tp(0)).map(|(pos, _)| pos.offset),
        Some(40)
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
}

/// The offsets at which a poll's fetches ask for partition `partition`.
fn fetched(r: &PollResult, partition: i32) -> Vec<i64> {
    r.requests
        .iter()
        .flat_map(|r| sent(r).2)
        .filter(|(_, p, _)| *p == partition)
        .map(|(_, _, offset)| offset)
        .collect()
}

/// Answers every fetch of `r` with nothing, freeing the brokers.
fn answer_empty(m: &mut FetchRequestManager, p: &mut Parts, r: &PollResult) {
    for request in &r.requests {
        m.on_response(&mut p.ctx(), request.token, response(0, vec![]));
    }
}

/// Issue #18: a non-retriable per-partition error (here TOPIC_AUTHORIZATION_FAILED) used to
/// leave the partition fetchable, so every poll of the background loop fetched it again at
/// once and queued one more error for the application: a hot loop. Now, as in Java, where the
/// failed fetch waits in the buffer until the application collects (and is thrown) the error,
/// the partition is not fetched again until the application has polled past the error, and
/// then not before a backoff growing from `retry.backoff.ms`; a seek lifts the hold at once.
#[test]
fn a_non_retriable_partition_error_holds_the_partition_until_the_application_polls() {
    let code = ResponseError::TopicAuthorizationFailed.code();
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched(&r, 0), vec![0]);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    assert!(
        matches!(&p.effects.errors[..], [Error::Authorization { .. }]),
        "{:?}",
        p.effects.errors
    );
    answer_empty(&mut m, &mut p, &r);

    // The background loop polls its managers far more often than the application polls.
    for _ in 0..20 {
        p.advance_ms(50);
        let r = m.poll(&mut p.ctx());
        assert!(
            fetched(&r, 0).is_empty(),
            "no refetch before the application has seen the error"
        );
        assert_eq!(fetched(&r, 1), vec![0], "other partitions keep fetching");
        answer_empty(&mut m, &mut p, &r);
    }
    assert_eq!(p.effects.errors.len(), 1, "one error, not one per fetch");

    // The application polled (and got the error): fetched again, and failing again the
    // backoff doubles before the next attempt.
    m.on_poll();
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched(&r, 0), vec![0]);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    answer_empty(&mut m, &mut p, &r);
    m.on_poll();
    p.advance_ms(79);
    let r = m.poll(&mut p.ctx());
    assert!(fetched(&r, 0).is_empty(), "within the backoff");
    answer_empty(&mut m, &mut p, &r);
    p.advance_ms(161);
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched(&r, 0), vec![0], "backoff over");
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    answer_empty(&mut m, &mut p, &r);

    // A seek (new position) lifts the hold at once.
    p.buffer.set_position(&tp(0), FetchPosition::new(4));
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched(&r, 0), vec![4]);
    assert_eq!(p.effects.errors.len(), 3);
}

/// Issue #18 (request storms): a retriable per-partition error (NOT_LEADER_OR_FOLLOWER) asks
/// for metadata; the partition is not fetched again from the same leader at once (that is a
/// request per round trip until new metadata arrives) but after a backoff from
/// `retry.backoff.ms`, or as soon as its leader or leader epoch changes.
#[test]
fn a_retriable_partition_error_backs_off_until_the_leader_changes() {
    let code = ResponseError::NotLeaderOrFollower.code();
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    assert!(p.effects.metadata_refresh);
    assert!(p.effects.errors.is_empty());
    answer_empty(&mut m, &mut p, &r);
    let r = m.poll(&mut p.ctx());
    assert!(
        fetched(&r, 0).is_empty(),
        "not at once from the same leader"
    );
    assert!(r.next_poll_at.is_some(), "woken when the backoff ends");
    answer_empty(&mut m, &mut p, &r);
    p.advance_ms(120);
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched(&r, 0), vec![0], "backoff over");
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        response(0, vec![(0, code, None)]),
    );
    answer_empty(&mut m, &mut p, &r);

    // New metadata moves p0 to broker 2 with a newer epoch: fetched from there at once.
    p.metadata = metadata(&[(0, 2, 6), (1, 1, 5), (2, 2, 5)]);
    let r = m.poll(&mut p.ctx());
    assert_eq!(fetched(&r, 0), vec![0]);
}

/// Issue #18 (KIP-951): NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with the broker's
/// `current_leader` and `node_endpoints` moves the partition to its new leader at once, as
/// Java's `AbstractFetch` hands them to `Metadata.updatePartitionLeadership`: the partition is
/// fetched from the new leader on the next poll, without waiting for a Metadata response.
#[test]
fn leader_hints_move_the_partition_to_its_new_leader_at_once() {
    use kafka_protocol::messages::fetch_response::{LeaderIdAndEpoch, NodeEndpoint};
    use kafka_protocol::messages::BrokerId;

    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    let moved = |code: ResponseError, partition: i32, leader: i32, epoch: i32| {
        WirePartition::default()
            .with_partition_index(partition)
            .with_error_code(code.code())
            .with_high_watermark(-1)
            .with_current_leader(
                LeaderIdAndEpoch::default()
                    .with_leader_id(BrokerId(leader))
                    .with_leader_epoch(epoch),
            )
    };
    let body = FetchResponse::default()
        .with_responses(vec![FetchableTopicResponse::default()
            .with_topic_id(Uuid::from_u128(1))
            .with_partitions(vec![
                moved(ResponseError::NotLeaderOrFollower, 0, 3, 6),
                moved(ResponseError::FencedLeaderEpoch, 1, -1, -1),
            ])])
        .with_node_endpoints(vec![NodeEndpoint::default()
            .with_node_id(BrokerId(3))
            .with_host(StrBytes::from_static_str("b3"))
            .with_port(9092)
            .with_rack(Some(StrBytes::from_static_str("r3")))]);
    let node1 = r
        .requests
        .iter()
        .find(|u| u.target == Target::Node(1))
        .expect("node 1");
    m.on_response(
        &mut p.ctx(),
        node1.token,
        Ok((ResponseBody::Fetch(body), 17)),
    );
    assert_eq!(
        p.effects.leader_hints,
        vec![LeaderHint {
            topic: "t".to_owned(),
            partition: 0,
            leader_id: 3,
            leader_epoch: 6,
        }],
        "only a hint naming a leader"
    );
    assert_eq!(
        p.effects
            .leader_endpoints
            .iter()
            .map(|b| (b.node_id, b.host.as_str(), b.rack.as_deref()))
            .collect::<Vec<_>>(),
        vec![(3, "b3", Some("r3"))]
    );
    assert!(p.effects.metadata_refresh, "metadata is still refreshed");
    // The loop applies the hints to the client's metadata.
    let hints = std::mem::take(&mut p.effects.leader_hints);
    let endpoints = std::mem::take(&mut p.effects.leader_endpoints);
    assert_eq!(
        p.metadata.update_partition_leadership(&hints, &endpoints),
        vec![("t".to_owned(), 0)]
    );
    answer_empty(&mut m, &mut p, &r);
    let r = m.poll(&mut p.ctx());
    let to_node3 = r
        .requests
        .iter()
        .find(|u| u.target == Target::Node(3))
        .expect("p0 fetched from its new leader at once");
    assert_eq!(
        sent(to_node3).2,
        [(Uuid::from_u128(1), 0, 0)],
        "p0 only, at its position"
    );
    let RequestBody::Fetch(f) = &to_node3.body else {
        panic!()
    };
    assert_eq!(f.topics[0].partitions[0].current_leader_epoch, 6);
    assert!(fetched(&r, 1).is_empty(), "p1 waits: no hint, same leader");
}

/// Answers node `node`'s fetch in `r` with `partitions` (index, error code, preferred read
/// replica), no records.
fn answer_node(
    m: &mut FetchRequestManager,
    p: &mut Parts,
    r: &PollResult,
    node: i32,
    partitions: &[(i32, ResponseError, i32)],
) {
    let request = r
        .requests
        .iter()
        .find(|u| u.target == Target::Node(node))
        .unwrap_or_else(|| panic!("a fetch to node {node}: {r:?}"));
    let partitions = partitions
        .iter()
        .map(|&(index, code, replica)| {
            WirePartition::default()
                .with_partition_index(index)
                .with_error_code(if code == ResponseError::UnknownServerError {
                    0
                } else {
                    code.code()
                })
                .with_high_watermark(10)
                .with_preferred_read_replica(kafka_protocol::messages::BrokerId(replica))
        })
        .collect();
    let body = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
        .with_topic_id(Uuid::from_u128(1))
        .with_partitions(partitions)]);
    m.on_response(
        &mut p.ctx(),
        request.token,
        Ok((ResponseBody::Fetch(body), 17)),
    );
}

/// The node each partition of `r` is fetched from.
fn targets(r: &PollResult) -> Vec<(i32, i32)> {
    let mut out: Vec<(i32, i32)> = r
        .requests
        .iter()
        .flat_map(|u| {
            let Target::Node(node) = u.target else {
                panic!()
            };
            sent(u).2.into_iter().map(move |(_, p, _)| (p, node))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Issue #18 (KIP-392): a leader's `preferred_read_replica` moves the partition to that
/// follower until the lease (`metadata.max.age.ms`) runs out, as Java's
/// `SubscriptionState.updatePreferredReadReplica` / `AbstractFetch.selectReadReplica`; an
/// error from the follower, or an offset it has not caught up to, sends it back to the
/// leader at once.
#[test]
fn a_preferred_read_replica_is_fetched_from_until_its_lease_ends_or_it_fails() {
    // No error code in `answer_node` is spelled UnknownServerError.
    const OK: ResponseError = ResponseError::UnknownServerError;
    let mut p = parts(AutoOffsetReset::None);
    p.settings.metadata_max_age_ms = 10_000;
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(targets(&r), vec![(0, 1), (1, 1), (2, 2)]);
    answer_node(&mut m, &mut p, &r, 1, &[(0, OK, 2), (1, OK, -1)]);
    answer_node(&mut m, &mut p, &r, 2, &[(2, OK, -1)]);

    let r = m.poll(&mut p.ctx());
    assert_eq!(
        targets(&r),
        vec![(0, 2), (1, 1), (2, 2)],
        "p0 from the follower"
    );
    answer_node(&mut m, &mut p, &r, 1, &[(1, OK, -1)]);
    answer_node(&mut m, &mut p, &r, 2, &[(0, OK, -1), (2, OK, -1)]);
    p.advance_ms(9_999);
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        targets(&r),
        vec![(0, 2), (1, 1), (2, 2)],
        "within the lease"
    );
    answer_node(&mut m, &mut p, &r, 1, &[]);
    answer_node(&mut m, &mut p, &r, 2, &[]);
    p.advance_ms(1);
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        targets(&r),
        vec![(0, 1), (1, 1), (2, 2)],
        "lease over: the leader"
    );

    // Preferred again; the follower then answers NOT_LEADER_OR_FOLLOWER: back to the
    // leader at once (no backoff: the replica that failed is not the leader).
    answer_node(&mut m, &mut p, &r, 1, &[(0, OK, 2)]);
    answer_node(&mut m, &mut p, &r, 2, &[]);
    let r = m.poll(&mut p.ctx());
    assert_eq!(targets(&r), vec![(0, 2), (1, 1), (2, 2)]);
    answer_node(&mut m, &mut p, &r, 1, &[]);
    answer_node(
        &mut m,
        &mut p,
        &r,
        2,
        &[(0, ResponseError::NotLeaderOrFollower, -1)],
    );
    let r = m.poll(&mut p.ctx());
    assert_eq!(targets(&r), vec![(0, 1), (1, 1), (2, 2)]);

    // Out of range on a follower that has not caught up: retried on the leader, not
    // reported (even with auto.offset.reset=none) and no reset.
    answer_node(&mut m, &mut p, &r, 1, &[(0, OK, 2)]);
    answer_node(&mut m, &mut p, &r, 2, &[]);
    let r = m.poll(&mut p.ctx());
    answer_node(&mut m, &mut p, &r, 1, &[]);
    answer_node(
        &mut m,
        &mut p,
        &r,
        2,
        &[(0, ResponseError::OffsetOutOfRange, -1)],
    );
    assert!(p.effects.errors.is_empty(), "{:?}", p.effects.errors);
    let r = m.poll(&mut p.ctx());
    assert_eq!(targets(&r), vec![(0, 1), (1, 1), (2, 2)]);

    // A lost connection to the follower also ends the preference.
    answer_node(&mut m, &mut p, &r, 1, &[(0, OK, 2)]);
    answer_node(&mut m, &mut p, &r, 2, &[]);
    let r = m.poll(&mut p.ctx());
    answer_node(&mut m, &mut p, &r, 1, &[]);
    let to_2 = r
        .requests
        .iter()
        .find(|u| u.target == Target::Node(2))
        .expect("node 2");
    m.on_response(&mut p.ctx(), to_2.token, Err(NetworkError::NoNodeAvailable));
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        targets(&r),
        vec![(0, 1), (1, 1)],
        "node 2 backs off; p0 on the leader"
    );
}

/// A rolling upgrade: broker 1 is new (Fetch by topic id), broker 2 still old (Fetch v12 at
/// most). Each leader's fetch is built for its own versions; a version taken from broker 1
/// would pin broker 2's fetch to a version it lacks.
#[test]
fn each_leader_is_fetched_at_its_own_version() {
    use crate::internals::node_versions::NodeVersions;
    let mut p = parts(AutoOffsetReset::Earliest);
    p.versions = NodeVersions::default()
        .with_node(1, all_versions())
        .with_node(2, versions_capped(12, 4));
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 2, "{r:?}");
    let by_target = |node| {
        r.requests
            .iter()
            .find(|q| q.target == Target::Node(node))
            .unwrap()
    };
    let new = by_target(1);
    assert_eq!(new.version, Some(FETCH_VERSIONS.max));
    let (_, _, partitions, _) = sent(new);
    assert!(partitions
        .iter()
        .all(|(id, _, _)| *id == Uuid::from_u128(1)));
    let old = by_target(2);
    assert_eq!(old.version, Some(12));
    let RequestBody::Fetch(f) = &old.body else {
        panic!()
    };
    assert_eq!(
        f.topics[0].topic.0.as_str(),
        "t",
        "by name for the old broker"
    );
    assert!(f.topics[0].topic_id.is_nil());
}

/// A leader with no connection yet gets no fetch built from another broker's versions: the
/// manager waits and asks the loop to connect it.
#[test]
fn a_leader_not_connected_is_connected_before_its_fetch_is_built() {
    use crate::internals::node_versions::NodeVersions;
    let mut p = parts(AutoOffsetReset::Earliest);
    p.versions = NodeVersions::default().with_node(1, all_versions());
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].target, Target::Node(1));
    assert_eq!(
        p.effects.connect_nodes.iter().copied().collect::<Vec<_>>(),
        [2]
    );
    p.versions = p.versions.clone().with_node(2, all_versions());
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].target, Target::Node(2));
}

/// A leader that offers no Fetch version we speak is reported once, as a typed error naming
/// the API, not fetched in a loop, and fetched once it is upgraded.
#[test]
fn a_leader_without_a_usable_fetch_is_reported_once() {
    use crate::internals::node_versions::NodeVersions;
    use crate::internals::test_support::versions_without;
    use kafka_protocol::messages::ApiKey;
    let mut p = parts(AutoOffsetReset::Earliest);
    p.versions = NodeVersions::default()
        .with_node(1, all_versions())
        .with_node(2, versions_without(&[ApiKey::Fetch]));
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert!(matches!(
        &p.effects.errors[..],
        [Error::Network(NetworkError::UnsupportedApi { .. })]
    ));
    assert!(
        p.effects.errors[0].to_string().contains("Fetch"),
        "{}",
        p.effects.errors[0]
    );
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty(), "node 1 busy, node 2 unusable");
    assert_eq!(p.effects.errors.len(), 1, "reported once");
    p.versions = p.versions.clone().with_node(2, all_versions());
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].target, Target::Node(2));
}
