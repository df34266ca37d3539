use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};

use super::*;
use crate::internals::completion::Completion;
use crate::internals::context::testing::Parts;
use crate::internals::settings::ConsumerSettings;
use crate::internals::test_support::{all_versions, metadata};

pub(super) fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

pub(super) fn parts(policy: AutoOffsetReset) -> Parts {
    let mut p = Parts::new(ConsumerSettings {
        auto_offset_reset: policy,
        ..ConsumerSettings::default()
    });
    p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
    // p0 led by broker 1 (epoch 5), p1 by broker 2 (epoch 7).
    p.metadata = metadata(&[(0, 1, 5), (1, 2, 7)]);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1)].into_iter().collect());
    p.buffer.set_assignment(&p.subscriptions.assigned());
    p
}

pub(super) fn list_response(
    entries: &[(i32, i16, i64, i32)],
) -> Result<(ResponseBody, i16), NetworkError> {
    let partitions = entries
        .iter()
        .map(|&(p, code, offset, epoch)| {
            ListOffsetsPartitionResponse::default()
                .with_partition_index(p)
                .with_error_code(code)
                .with_offset(offset)
                .with_timestamp(-1)
                .with_leader_epoch(epoch)
        })
        .collect();
    let body = ListOffsetsResponse::default()
        .with_topics(vec![ListOffsetsTopicResponse::default()
            .with_name(topic_name("t"))
            .with_partitions(partitions)]);
    Ok((ResponseBody::ListOffsets(body), 9))
}

pub(super) fn requested(r: &UnsentRequest) -> Vec<(i32, i64, i32)> {
    let RequestBody::ListOffsets(body) = &r.body else {
        panic!("{r:?}")
    };
    assert_eq!(body.replica_id, BrokerId(-1));
    body.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.timestamp, p.current_leader_epoch))
        .collect()
}

#[test]
fn without_group_new_partitions_reset_by_policy_to_each_leader() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 2, "one ListOffsets per leader");
    assert_eq!(r.requests[0].target, Target::Node(1));
    assert_eq!(requested(&r.requests[0]), [(0, -2, 5)]);
    assert_eq!(r.requests[1].target, Target::Node(2));
    assert_eq!(requested(&r.requests[1]), [(1, -2, 7)]);
    assert!(
        m.poll(&mut p.ctx()).requests.is_empty(),
        "no duplicates in flight"
    );

    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        list_response(&[(0, 0, 17, 5)]),
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
    let (position, _) = p.buffer.position(&tp(0)).unwrap();
    assert_eq!((position.offset, position.offset_epoch), (17, Some(5)));

    // NOT_LEADER: metadata refresh and a retry after the backoff.
    let code = ResponseError::NotLeaderOrFollower.code();
    m.on_response(
        &mut p.ctx(),
        r.requests[1].token,
        list_response(&[(1, code, -1, -1)]),
    );
    assert!(p.effects.metadata_refresh);
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty());
    let wait = r.next_poll_at.expect("a backoff") - p.now;
    assert!((80..120).contains(&wait.as_millis()), "{wait:?}");
    p.advance_ms(120);
    assert_eq!(m.poll(&mut p.ctx()).requests.len(), 1);
}

/// Issue #18 (request storms): a reset whose ListOffsets keeps failing (the leader stays
/// unavailable) is retried after a backoff doubling from `retry.backoff.ms` (100) to
/// `retry.backoff.max.ms` (1 000), not every 100 ms for as long as the error lasts.
#[test]
fn a_lookup_that_keeps_failing_backs_off_exponentially() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let code = ResponseError::LeaderNotAvailable.code();
    let mut waits_ms = Vec::new();
    let mut r = m.poll(&mut p.ctx());
    for _ in 0..6 {
        let request = r
            .requests
            .iter()
            .find(|u| u.target == Target::Node(1))
            .expect("p0's reset");
        m.on_response(
            &mut p.ctx(),
            request.token,
            list_response(&[(0, code, -1, -1)]),
        );
        let waiting = m.poll(&mut p.ctx());
        assert!(waiting.requests.is_empty(), "{waiting:?}");
        let wake = waiting.next_poll_at.expect("a backoff");
        waits_ms.push((wake - p.now).as_millis());
        p.now = wake;
        r = m.poll(&mut p.ctx());
    }
    assert!((160..240).contains(&waits_ms[1]), "{waits_ms:?}");
    assert!((320..480).contains(&waits_ms[2]), "{waits_ms:?}");
    assert!((800..=1_000).contains(&waits_ms[5]), "{waits_ms:?}");
}

#[test]
fn by_duration_lists_offsets_by_time_and_falls_back_to_latest() {
    let hour = Duration::from_secs(3_600);
    let mut p = parts(AutoOffsetReset::ByDuration(hour));
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let before = crate::rt::wall_clock_ms();
    let r = m.poll(&mut p.ctx());
    let after = crate::rt::wall_clock_ms();
    assert_eq!(r.requests.len(), 2);
    let [(0, timestamp, 5)] = requested(&r.requests[0])[..] else {
        panic!("{:?}", requested(&r.requests[0]))
    };
    assert!((before - 3_600_000..=after - 3_600_000).contains(&timestamp));

    // p0 has a record that recent: it starts there.
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        list_response(&[(0, 0, 40, 5)]),
    );
    assert_eq!(p.buffer.position(&tp(0)).unwrap().0.offset, 40);
    // p1 has none (offset -1): the next poll asks for its latest offset, without a backoff.
    m.on_response(
        &mut p.ctx(),
        r.requests[1].token,
        list_response(&[(1, 0, -1, -1)]),
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(1)),
        Some(FetchState::AwaitingReset(AutoOffsetReset::ByDuration(hour)))
    );
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(requested(&r.requests[0]), [(1, -1, 7)]);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        list_response(&[(1, 0, 99, 7)]),
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(1)),
        Some(FetchState::Fetching)
    );
    assert_eq!(p.buffer.position(&tp(1)).unwrap().0.offset, 99);

    // A later reset of p1 by duration asks by time again.
    p.subscriptions.set_fetch_state(
        &tp(1),
        FetchState::AwaitingReset(AutoOffsetReset::ByDuration(hour)),
    );
    let r = m.poll(&mut p.ctx());
    assert!(requested(&r.requests[0])[0].1 > 0);
}

#[test]
fn latest_policy_and_no_policy_error_on_poll() {
    let mut p = parts(AutoOffsetReset::Latest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(requested(&r.requests[0]), [(0, -1, 5)]);

    let mut p = parts(AutoOffsetReset::None);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    assert!(
        m.poll(&mut p.ctx()).requests.is_empty(),
        "nothing to ask with policy none"
    );
    m.on_poll(&mut p.ctx());
    let [Error::NoOffsetForPartition { partitions }] = &p.effects.errors[..] else {
        panic!("{:?}", p.effects.errors)
    };
    assert_eq!(partitions, &[tp(0), tp(1)]);
}

pub(super) fn epoch_response(
    end_offset: i64,
    epoch: i32,
) -> Result<(ResponseBody, i16), NetworkError> {
    let body = OffsetForLeaderEpochResponse::default().with_topics(vec![
        OffsetForLeaderTopicResult::default()
            .with_topic(topic_name("t"))
            .with_partitions(vec![EpochEndOffset::default()
                .with_partition(0)
                .with_leader_epoch(epoch)
                .with_end_offset(end_offset)]),
    ]);
    Ok((ResponseBody::OffsetForLeaderEpoch(body), 4))
}

fn awaiting_validation(p: &mut Parts, offset: i64, offset_epoch: i32) {
    p.buffer.set_position(
        &tp(0),
        FetchPosition {
            offset,
            offset_epoch: Some(offset_epoch),
            current_leader_epoch: Some(4),
        },
    );
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::AwaitingValidation);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
}

#[test]
fn validation_detects_truncation_and_moves_to_the_divergence_point() {
    let mut p = parts(AutoOffsetReset::Earliest);
    awaiting_validation(&mut p, 100, 3);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    let RequestBody::OffsetForLeaderEpoch(body) = &r.requests[0].body else {
        panic!()
    };
    let asked = &body.topics[0].partitions[0];
    assert_eq!((asked.leader_epoch, asked.current_leader_epoch), (3, 5));
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(80, 3));
    let (position, _) = p.buffer.position(&tp(0)).unwrap();
    assert_eq!((position.offset, position.offset_epoch), (80, Some(3)));
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
}

#[test]
fn validation_without_truncation_keeps_the_position_and_none_policy_reports_truncation() {
    let mut p = parts(AutoOffsetReset::Earliest);
    awaiting_validation(&mut p, 100, 3);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(150, 3));
    let (position, _) = p.buffer.position(&tp(0)).unwrap();
    assert_eq!(
        (position.offset, position.current_leader_epoch),
        (100, Some(5))
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );

    let mut p = parts(AutoOffsetReset::None);
    awaiting_validation(&mut p, 100, 3);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(80, 3));
    assert!(matches!(
        &p.effects.errors[..],
        [Error::LogTruncation { .. }]
    ));
}

#[test]
fn leader_epoch_change_triggers_validation() {
    let mut p = parts(AutoOffsetReset::Earliest);
    p.buffer.set_position(
        &tp(0),
        FetchPosition {
            offset: 10,
            offset_epoch: Some(4),
            current_leader_epoch: Some(4),
        },
    );
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::Fetching);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    m.on_metadata_update(&mut p.ctx());
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::AwaitingValidation)
    );
}

#[test]
fn user_lookups_complete_when_every_partition_answered() {
    let mut p = parts(AutoOffsetReset::Earliest);
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::Fetching);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let (c, rx) = Completion::new("end_offsets", Some(p.now + Duration::from_secs(5)), 5_000);
    m.list_offsets([(tp(0), -1), (tp(1), -1)].into_iter().collect(), c);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 2);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        list_response(&[(0, 0, 9, 5)]),
    );
    assert!(rx.borrow().is_none());
    m.on_response(
        &mut p.ctx(),
        r.requests[1].token,
        list_response(&[(1, 0, 4, 7)]),
    );
    let answer = rx.borrow().clone().unwrap().unwrap();
    assert_eq!(answer[&tp(0)].unwrap().offset, 9);
    assert_eq!(answer[&tp(1)].unwrap().offset, 4);
}

/// `end_offsets` of a topic the consumer neither subscribes to nor is assigned (found against
/// the real broker, `consumer/tests/transactions_real_kafka.rs`): its leaders are unknown, so
/// the lookup must put the topic into the metadata the consumer asks for, or it waits out its
/// timeout. Java: `metadata.addTransientTopics` in `OffsetsRequestManager.fetchOffsets`.
#[test]
fn user_lookups_of_unassigned_topics_ask_for_their_metadata() {
    let mut p = parts(AutoOffsetReset::Earliest);
    for tp in [tp(0), tp(1)] {
        p.subscriptions.set_fetch_state(&tp, FetchState::Fetching);
    }
    let elsewhere = TopicPartition::new("elsewhere", 0);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let (c, rx) = Completion::new("end_offsets", Some(p.now + Duration::from_secs(5)), 5_000);
    m.list_offsets([(elsewhere.clone(), -1)].into_iter().collect(), c);
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty(), "no leader known yet");
    assert!(p.effects.metadata_refresh);
    assert_eq!(
        p.subscriptions.metadata_topics(),
        ["elsewhere", "t"].map(str::to_owned).into_iter().collect()
    );
    assert!(p.subscriptions.retains_metadata_of("elsewhere"));

    // The refresh names its leader: the lookup goes out and completes.
    let mut response = crate::internals::test_support::metadata_response(&[(0, 2, 3)]);
    response.topics[0].name = Some(topic_name("elsewhere"));
    response.topics[0].topic_id = uuid::Uuid::from_u128(9);
    p.metadata
        .update(&response, crate::network::MetadataScope::ListedTopics);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].target, Target::Node(2));
    let RequestBody::ListOffsets(body) = &r.requests[0].body else {
        panic!("{:?}", r.requests[0])
    };
    assert_eq!(body.topics[0].name.0.as_str(), "elsewhere");
    let answer =
        ListOffsetsResponse::default().with_topics(vec![ListOffsetsTopicResponse::default()
            .with_name(topic_name("elsewhere"))
            .with_partitions(vec![ListOffsetsPartitionResponse::default()
                .with_partition_index(0)
                .with_offset(42)
                .with_timestamp(-1)
                .with_leader_epoch(3)])]);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        Ok((ResponseBody::ListOffsets(answer), 9)),
    );
    assert_eq!(
        rx.borrow().clone().unwrap().unwrap()[&elsewhere]
            .unwrap()
            .offset,
        42
    );

    // Done: the topic's metadata is no longer needed.
    m.poll(&mut p.ctx());
    assert_eq!(
        p.subscriptions.metadata_topics(),
        ["t"].map(str::to_owned).into_iter().collect()
    );
    assert!(!p.subscriptions.retains_metadata_of("elsewhere"));
}

/// Issue #27 bug 3: with `auto.offset.reset=none` a detected truncation keeps the position
/// (Java's `maybeCompleteValidation` returns the LogTruncation and leaves the partition
/// awaiting validation), and is validated — and reported — again only after the application
/// polled; nothing turns into "no offset for partition".
#[test]
fn truncation_without_a_policy_keeps_the_position_and_reports_again_after_a_poll() {
    let mut p = parts(AutoOffsetReset::None);
    awaiting_validation(&mut p, 100, 3);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(80, 3));
    let truncations = |errors: Vec<Error>| -> Vec<Vec<(TopicPartition, i64)>> {
        errors
            .into_iter()
            .map(|e| match e {
                Error::LogTruncation { divergent_offsets } => divergent_offsets,
                other => panic!("unexpected error {other:?}"),
            })
            .collect()
    };
    assert_eq!(
        truncations(std::mem::take(&mut p.effects.errors)),
        vec![vec![(tp(0), 80)]]
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::AwaitingValidation),
        "the position is kept, not sent to a reset"
    );
    assert_eq!(
        p.buffer.position(&tp(0)).map(|(pos, _)| pos.offset),
        Some(100)
    );

    p.now += Duration::from_secs(1);
    assert!(
        m.poll(&mut p.ctx()).requests.is_empty(),
        "not validated again before the application polled"
    );
    m.on_poll(&mut p.ctx());
    assert!(
        p.effects.errors.is_empty(),
        "a kept position is not 'no offset for partition': {:?}",
        p.effects.errors
    );
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1, "validated again after the poll");
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(80, 3));
    assert_eq!(
        truncations(std::mem::take(&mut p.effects.errors)),
        vec![vec![(tp(0), 80)]],
        "the same error again"
    );
}

/// `position` on a partition whose truncation was reported under `auto.offset.reset=none`
/// validates it again and fails with the truncation found again, as Java's `position` throws
/// the `LogTruncationException` its validation caches; it neither waits out its timeout nor
/// queues the error for the next poll. A validation that finds the log whole answers nothing.
#[test]
fn position_after_a_reported_truncation_validates_again_and_fails_with_it() {
    let mut p = parts(AutoOffsetReset::None);
    awaiting_validation(&mut p, 100, 3);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(80, 3));
    assert_eq!(p.effects.errors.len(), 1, "reported to the poll");
    p.effects.errors.clear();
    assert!(
        m.truncation_error(&tp(0)).is_some(),
        "known before position is asked"
    );

    m.on_position_request(&tp(0));
    assert!(
        m.truncation_error(&tp(0)).is_none(),
        "position waits for the validation it starts"
    );
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1, "validated again for position");
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(80, 3));
    match m.truncation_error(&tp(0)) {
        Some(Error::LogTruncation { divergent_offsets }) => {
            assert_eq!(divergent_offsets, vec![(tp(0), 80)]);
        }
        other => panic!("expected the truncation, got {other:?}"),
    }
    assert!(
        p.effects.errors.is_empty(),
        "the position call takes it, not the next poll: {:?}",
        p.effects.errors
    );
    assert_eq!(
        p.buffer.position(&tp(0)).map(|(pos, _)| pos.offset),
        Some(100),
        "still kept for the application's seek"
    );

    // The log was repaired meanwhile: the validation passes and position has its answer.
    m.on_position_request(&tp(0));
    let r = m.poll(&mut p.ctx());
    m.on_response(&mut p.ctx(), r.requests[0].token, epoch_response(120, 3));
    assert!(m.truncation_error(&tp(0)).is_none());
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
}

/// A topic deleted and created again under the same name has a new topic id: the position of
/// the old topic is dropped and the partition starts over (committed offset, else the reset
/// policy) instead of being validated against the new log, where the difference would read as
/// a truncation and skip the new records (family-data-path-recreate seeds 230 and 766).
#[test]
fn a_topic_created_again_restarts_its_partitions_positions() {
    let mut p = parts(AutoOffsetReset::Earliest);
    for tp in [tp(0), tp(1)] {
        p.buffer.set_position(
            &tp,
            FetchPosition {
                offset: 155,
                offset_epoch: Some(5),
                current_leader_epoch: Some(5),
            },
        );
        p.subscriptions.set_fetch_state(&tp, FetchState::Fetching);
    }
    let mut m = OffsetsRequestManager::new(100, 1_000);
    m.on_metadata_update(&mut p.ctx());
    let first = p
        .buffer
        .incarnation(&tp(0))
        .expect("recorded from metadata");
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );

    // The same topic id again: nothing changes.
    m.on_metadata_update(&mut p.ctx());
    assert_eq!(p.buffer.position(&tp(0)).unwrap().0.offset, 155);

    // Created again: a new id, epoch 0.
    let mut response = crate::internals::test_support::metadata_response(&[(0, 1, 0), (1, 2, 0)]);
    response.topics[0].topic_id = uuid::Uuid::from_u128(77);
    p.metadata
        .update(&response, crate::network::MetadataScope::AllTopics);
    m.on_metadata_update(&mut p.ctx());
    for tp in [tp(0), tp(1)] {
        assert_eq!(
            p.subscriptions.fetch_state(&tp),
            Some(FetchState::Initializing),
            "{tp}: starts over as newly assigned"
        );
    }
    m.poll(&mut p.ctx());
    for tp in [tp(0), tp(1)] {
        assert_eq!(
            p.subscriptions.fetch_state(&tp),
            Some(FetchState::AwaitingReset(AutoOffsetReset::Earliest)),
            "{tp}: no group, no committed offset: the reset policy"
        );
        assert!(
            p.buffer.position(&tp).is_none(),
            "{tp}: old position dropped"
        );
        assert_eq!(p.buffer.incarnation(&tp), Some(uuid::Uuid::from_u128(77)));
    }
    assert_ne!(first, uuid::Uuid::from_u128(77));
}
