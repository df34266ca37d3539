use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};

use super::*;
use crate::config::AutoOffsetReset;
use crate::internals::completion::CompletionReceiver;
use crate::internals::context::testing::Parts;
use crate::internals::settings::ConsumerSettings;
use crate::internals::test_support::{all_versions, metadata};

const COORDINATOR: i32 = i32::MAX - 1;

pub(super) fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn settings(auto_commit: bool) -> ConsumerSettings {
    ConsumerSettings {
        group_id: Some("g".into()),
        enable_auto_commit: auto_commit,
        auto_commit_interval_ms: 1_000,
        auto_offset_reset: AutoOffsetReset::Earliest,
        ..ConsumerSettings::default()
    }
}

pub(super) fn parts(auto_commit: bool) -> Parts {
    let mut p = Parts::new(settings(auto_commit));
    p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
    p.coordinator = Some(COORDINATOR);
    p.metadata = metadata(&[(0, 1, 5), (1, 2, 5)]);
    p
}

fn offsets(pairs: &[(i32, i64)]) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
    pairs
        .iter()
        .map(|&(p, o)| (tp(p), OffsetAndMetadata::new(o)))
        .collect()
}

fn commit_ok() -> Result<(ResponseBody, i16), NetworkError> {
    Ok((
        ResponseBody::OffsetCommit(OffsetCommitResponse::default()),
        9,
    ))
}

fn commit_error(code: ResponseError) -> Result<(ResponseBody, i16), NetworkError> {
    let body =
        OffsetCommitResponse::default().with_topics(vec![OffsetCommitResponseTopic::default()
            .with_name(topic_name("t"))
            .with_partitions(vec![OffsetCommitResponsePartition::default()
                .with_partition_index(0)
                .with_error_code(code.code())])]);
    Ok((ResponseBody::OffsetCommit(body), 9))
}

fn committed_offsets(m: &RequestBody) -> Vec<(String, i32, i64)> {
    let RequestBody::OffsetCommit(r) = m else {
        panic!("{m:?}")
    };
    assert_eq!(
        r.generation_id_or_member_epoch, -1,
        "assign mode: no generation"
    );
    assert!(r.member_id.is_empty());
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
        })
        .collect()
}

fn commit_sync(
    m: &mut CommitRequestManager,
    p: &Parts,
    o: BTreeMap<TopicPartition, OffsetAndMetadata>,
    timeout_ms: u64,
) -> (Completion<()>, CompletionReceiver<()>) {
    let (c, rx) = Completion::new(
        "commit_sync",
        Some(p.now + Duration::from_millis(timeout_ms)),
        timeout_ms,
    );
    m.commit(o, true, c.clone());
    (c, rx)
}

fn result<T: Clone>(rx: &CompletionReceiver<T>) -> Option<Result<T, Error>> {
    rx.borrow().clone()
}

#[test]
fn commit_sync_retries_retriable_errors_until_success() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 10)]), 5_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(r.requests[0].target, Target::Node(COORDINATOR));
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 10)]
    );
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::CoordinatorLoadInProgress),
    );
    assert!(result(&rx).is_none(), "retriable: not completed");
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty(), "backing off");
    p.now = r.next_poll_at.unwrap();
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    m.on_response(&mut p.ctx(), r.requests[0].token, commit_ok());
    assert!(matches!(result(&rx), Some(Ok(()))));
    assert!(!m.has_pending_commits());
}

#[test]
fn not_coordinator_marks_unknown_and_waits_for_rediscovery() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 1)]), 5_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::NotCoordinator),
    );
    assert!(p.effects.coordinator_unknown.is_some());
    p.coordinator = None;
    p.advance_ms(2_000);
    assert!(
        m.poll(&mut p.ctx()).requests.is_empty(),
        "waits for the coordinator"
    );
    assert!(result(&rx).is_none());
    p.coordinator = Some(COORDINATOR);
    assert_eq!(
        m.poll(&mut p.ctx()).requests.len(),
        1,
        "level-triggered resend"
    );
}

#[test]
fn disconnect_of_coordinator_connection_marks_it_unknown() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 1)]), 5_000);
    let r = m.poll(&mut p.ctx());
    let disconnect = NetworkError::ConnectionClosed {
        broker: "coordinator".into(),
        reason: crate::network::CloseReason::PeerClosed,
    };
    m.on_response(&mut p.ctx(), r.requests[0].token, Err(disconnect));
    assert!(p.effects.coordinator_unknown.is_some(), "KAFKA-17293");
    assert!(result(&rx).is_none(), "sync commit keeps retrying");
}

#[test]
fn commit_async_does_not_retry_and_fatal_errors_fail_sync_commits() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let (c, rx) = Completion::new("commit_async", None, 0);
    m.commit(offsets(&[(0, 1)]), false, c);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::CoordinatorLoadInProgress),
    );
    assert!(matches!(result(&rx), Some(Err(Error::Retriable { .. }))));

    let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 1)]), 5_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::OffsetMetadataTooLarge),
    );
    assert!(matches!(result(&rx), Some(Err(Error::Fatal { .. }))));
    let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 1)]), 5_000);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::GroupAuthorizationFailed),
    );
    assert!(matches!(
        result(&rx),
        Some(Err(Error::Authorization { .. }))
    ));
}

#[test]
fn commits_are_sent_in_order() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let mut receivers = Vec::new();
    for offset in 1..=3 {
        let (c, rx) = Completion::<()>::new("commit_async", None, 0);
        m.commit(offsets(&[(0, offset)]), false, c);
        receivers.push(rx);
    }
    let r = m.poll(&mut p.ctx());
    let sent: Vec<i64> = r
        .requests
        .iter()
        .map(|u| committed_offsets(&u.body)[0].2)
        .collect();
    assert_eq!(sent, [1, 2, 3]);
}

#[test]
fn reaped_commit_is_not_resent() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let (c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 1)]), 100);
    let r = m.poll(&mut p.ctx());
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::CoordinatorLoadInProgress),
    );
    // The reaper fails it at its deadline.
    c.complete(Err(c.timeout_error()));
    p.advance_ms(5_000);
    assert!(m.poll(&mut p.ctx()).requests.is_empty());
    assert!(matches!(result(&rx), Some(Err(Error::Timeout { .. }))));
    assert!(!m.has_pending_commits());
}

#[test]
fn auto_commit_commits_only_the_poll_snapshot_on_its_interval() {
    let mut p = parts(true);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1)].into_iter().collect());
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::Fetching);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
    let mut m = CommitRequestManager::new(&p.settings);
    // The snapshot a poll sent: records up to 5 on p0 were returned by earlier polls. The live
    // position may be further along (records returned by *this* poll): never committed.
    m.on_poll(p.now, offsets(&[(0, 5), (3, 9)]));
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty(), "interval not elapsed");
    assert_eq!(
        r.next_poll_at,
        Some(p.now + Duration::from_millis(1_000)),
        "wakes for it"
    );
    p.advance_ms(1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 5)],
        "unassigned t-3 not committed"
    );
    // One auto-commit in flight at a time.
    p.advance_ms(1_000);
    m.on_poll(p.now, offsets(&[(0, 7)]));
    assert!(m.poll(&mut p.ctx()).requests.is_empty());
    m.on_response(&mut p.ctx(), r.requests[0].token, commit_ok());
    p.advance_ms(1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 7)]
    );
}

#[test]
fn a_snapshot_position_does_not_outlive_the_loss_of_its_partition() {
    let mut p = parts(true);
    let both: BTreeSet<_> = [tp(0), tp(1)].into_iter().collect();
    p.subscriptions.assign_from_user(&both);
    let mut m = CommitRequestManager::new(&p.settings);
    // The last snapshot before the loss: t-0 consumed up to 175.
    m.on_poll(p.now, offsets(&[(0, 175), (1, 9)]));
    p.subscriptions
        .assign_from_user(&[tp(1)].into_iter().collect());
    let commits = |r: PollResult| -> Vec<RequestBody> {
        r.requests
            .into_iter()
            .map(|r| r.body)
            .filter(|b| matches!(b, RequestBody::OffsetCommit(_)))
            .collect()
    };
    assert!(commits(m.poll(&mut p.ctx())).is_empty());
    // t-0 comes back (positioned at the committed 174); no poll snapshot since.
    p.subscriptions.assign_from_user(&both);
    p.advance_ms(1_000);
    let sent = commits(m.poll(&mut p.ctx()));
    assert_eq!(sent.len(), 1);
    assert_eq!(
        committed_offsets(&sent[0]),
        [("t".to_owned(), 1, 9)],
        "the stale 175 of t-0 is not committed"
    );
}

#[test]
fn two_auto_commits_sent_in_one_round_never_go_below_each_other() {
    let mut p = parts(true);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1)].into_iter().collect());
    let mut m = CommitRequestManager::new(&p.settings);
    // The snapshot says 68; an auto-commit of 69 is queued, then the commit before
    // revocation from the snapshot: both go out in the same round, 69 first.
    m.on_poll(p.now, offsets(&[(0, 68), (1, 5)]));
    m.auto_commit_now(offsets(&[(0, 69)]));
    let deadline = p.now + Duration::from_millis(5_000);
    let (_completion, _receiver) = m
        .commit_before_revocation(&p.ctx(), deadline)
        .expect("something to commit");
    let sent: Vec<_> = m
        .poll(&mut p.ctx())
        .requests
        .iter()
        .filter(|r| matches!(r.body, RequestBody::OffsetCommit(_)))
        .map(|r| committed_offsets(&r.body))
        .collect();
    assert_eq!(
        sent,
        [vec![("t".to_owned(), 0, 69)], vec![("t".to_owned(), 1, 5)]],
        "the second commit leaves out t-0, below what the first one just sent"
    );
}

#[test]
fn no_auto_commit_timer_without_auto_commit() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    m.on_poll(p.now, offsets(&[(0, 5)]));
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty());
    assert_eq!(
        r.next_poll_at, None,
        "nothing to do: no wake-up (KAFKA-20426)"
    );
}

#[test]
fn closing_with_unknown_coordinator_fails_pending_commits() {
    let mut p = parts(false);
    p.coordinator = None;
    let mut m = CommitRequestManager::new(&p.settings);
    let (c, rx) = Completion::new("commit_async", None, 0);
    m.commit(offsets(&[(0, 1)]), false, c);
    assert!(m.poll(&mut p.ctx()).requests.is_empty());
    assert!(result(&rx).is_none(), "not closing: waits");
    m.signal_close();
    m.poll(&mut p.ctx());
    assert!(
        matches!(result(&rx), Some(Err(Error::CommitFailed { .. }))),
        "KAFKA-19357"
    );
    assert!(!m.has_pending_commits());
}

pub(super) fn fetch_response(
    entries: &[(i32, i64, i32)],
) -> Result<(ResponseBody, i16), NetworkError> {
    let partitions = entries
        .iter()
        .map(|&(p, offset, epoch)| {
            OffsetFetchResponsePartitions::default()
                .with_partition_index(p)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(epoch)
        })
        .collect();
    let body =
        OffsetFetchResponse::default().with_groups(vec![OffsetFetchResponseGroup::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_topics(vec![OffsetFetchResponseTopics::default()
                .with_name(topic_name("t"))
                .with_partitions(partitions)])]);
    Ok((ResponseBody::OffsetFetch(body), 9))
}

#[test]
fn positions_start_from_committed_offsets_or_await_reset() {
    let mut p = parts(false);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1), tp(2)].into_iter().collect());
    p.buffer.set_assignment(&p.subscriptions.assigned());
    let mut m = CommitRequestManager::new(&p.settings);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    let RequestBody::OffsetFetch(req) = &r.requests[0].body else {
        panic!()
    };
    assert_eq!(r.requests[0].version, Some(9));
    assert!(
        req.require_stable,
        "stable offsets under read_uncommitted too, as Java asks for them"
    );
    assert!(req.topics.as_ref().is_some_and(Vec::is_empty));
    assert_eq!(
        req.groups[0].topics.as_ref().unwrap()[0].partition_indexes,
        [0, 1, 2]
    );
    assert!(
        m.poll(&mut p.ctx()).requests.is_empty(),
        "no duplicate fetch while in flight"
    );
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        fetch_response(&[(0, 42, -1), (1, 7, 5), (2, -1, -1)]),
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
    assert_eq!(p.buffer.position(&tp(0)).unwrap().0.offset, 42);
    assert_eq!(
        p.subscriptions.fetch_state(&tp(1)),
        Some(FetchState::AwaitingValidation),
        "epoch: KIP-320"
    );
    assert_eq!(p.buffer.position(&tp(1)).unwrap().0.offset_epoch, Some(5));
    assert_eq!(
        p.subscriptions.fetch_state(&tp(2)),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Earliest))
    );
}

#[test]
fn committed_answers_and_old_versions_use_the_single_group_layout() {
    let mut p = parts(false);
    p.versions = crate::internals::node_versions::NodeVersions::every_node(
        crate::internals::test_support::versions_capped(7, 3),
    );
    let mut m = CommitRequestManager::new(&p.settings);
    let (c, rx) = Completion::new("committed", Some(p.now + Duration::from_secs(5)), 5_000);
    m.fetch_committed([tp(0), tp(1)].into_iter().collect(), c);
    let r = m.poll(&mut p.ctx());
    let RequestBody::OffsetFetch(req) = &r.requests[0].body else {
        panic!()
    };
    assert_eq!(r.requests[0].version, Some(7));
    assert!(req.require_stable, "v7 is the first version with the flag");
    assert_eq!(req.group_id.0.as_str(), "g");
    assert!(req.groups.is_empty());
    let body = OffsetFetchResponse::default().with_topics(vec![
        kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseTopic::default()
            .with_name(topic_name("t"))
            .with_partitions(vec![
                kafka_protocol::messages::offset_fetch_response::OffsetFetchResponsePartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(3)
                    .with_committed_leader_epoch(-1),
            ]),
    ]);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        Ok((ResponseBody::OffsetFetch(body), 7)),
    );
    let answer = result(&rx).unwrap().unwrap();
    assert_eq!(answer[&tp(0)], Some(OffsetAndMetadata::new(3)));
    assert_eq!(answer[&tp(1)], None);
}

/// With `require_stable`, a partition whose committed offset is part of an open transaction
/// answers UNSTABLE_OFFSET_COMMIT; Java's `CommitRequestManager` fails that attempt with the
/// retriable `UnstableOffsetCommitException` and fetches again after the backoff, and so do we
/// (the caller gets the offsets once they are stable, not an error). Brokers before OffsetFetch
/// v7 have no flag: it is left unset there rather than failing the encode.
#[test]
fn unstable_offsets_are_fetched_again_and_old_versions_go_without_the_flag() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let (c, rx) = Completion::new("committed", Some(p.now + Duration::from_secs(5)), 5_000);
    m.fetch_committed([tp(0)].into_iter().collect(), c);
    let r = m.poll(&mut p.ctx());
    let mut unstable = fetch_response(&[(0, -1, -1)]);
    if let Ok((ResponseBody::OffsetFetch(body), _)) = &mut unstable {
        body.groups[0].topics[0].partitions[0].error_code =
            ResponseError::UnstableOffsetCommit.code();
    }
    m.on_response(&mut p.ctx(), r.requests[0].token, unstable);
    assert!(result(&rx).is_none(), "unstable: fetched again, not failed");
    let r = m.poll(&mut p.ctx());
    assert!(r.requests.is_empty(), "backing off");
    p.now = r.next_poll_at.unwrap();
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        fetch_response(&[(0, 12, -1)]),
    );
    let answer = result(&rx).unwrap().unwrap();
    assert_eq!(answer[&tp(0)], Some(OffsetAndMetadata::new(12)));

    p.versions = crate::internals::node_versions::NodeVersions::every_node(
        crate::internals::test_support::versions_capped(6, 3),
    );
    let (c, _rx) = Completion::new("committed", Some(p.now + Duration::from_secs(5)), 5_000);
    m.fetch_committed([tp(0)].into_iter().collect(), c);
    let r = m.poll(&mut p.ctx());
    let RequestBody::OffsetFetch(req) = &r.requests[0].body else {
        panic!()
    };
    assert_eq!(r.requests[0].version, Some(6));
    assert!(!req.require_stable);
}

/// KAFKA-16033: the commit before revocation is retried with the positions consumed when the
/// retry goes out. An interval auto-commit sent during the retry's backoff commits newer
/// positions; a retry still carrying the positions of its failed attempt would move the
/// group's committed offset back behind it.
#[test]
fn revocation_commit_retry_never_commits_behind_an_auto_commit_sent_during_its_backoff() {
    let mut p = parts(true);
    p.subscriptions
        .assign_from_user(&[tp(0)].into_iter().collect());
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::Fetching);
    let mut m = CommitRequestManager::new(&p.settings);
    m.on_poll(p.now, offsets(&[(0, 5)]));
    let deadline = p.now + Duration::from_millis(30_000);
    let (_c, rx) = {
        let ctx = p.ctx();
        m.commit_before_revocation(&ctx, deadline)
            .expect("offsets to commit")
    };
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 5)]
    );
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        commit_error(ResponseError::CoordinatorLoadInProgress),
    );
    assert!(result(&rx).is_none(), "retriable: retried");
    // The application polls on; the interval auto-commit goes out while the retry backs off.
    p.advance_ms(1_000);
    m.on_poll(p.now, offsets(&[(0, 9)]));
    let r = m.poll(&mut p.ctx());
    let sent: Vec<_> = r
        .requests
        .iter()
        .map(|u| committed_offsets(&u.body))
        .collect();
    assert!(
        sent.iter().all(|o| o == &[("t".to_owned(), 0, 9)]),
        "every commit sent now carries the newest position 9: {sent:?}"
    );
    for u in &r.requests {
        m.on_response(&mut p.ctx(), u.token, commit_ok());
    }
    p.advance_ms(2_000);
    let r = m.poll(&mut p.ctx());
    for u in &r.requests {
        assert_eq!(
            committed_offsets(&u.body),
            [("t".to_owned(), 0, 9)],
            "the retry does not commit 5 after 9 was committed"
        );
        m.on_response(&mut p.ctx(), u.token, commit_ok());
    }
    assert!(
        matches!(result(&rx), Some(Ok(()))),
        "revocation commit done"
    );
}

/// A `commit_sync` of the positions (as `close` makes) commits past the poll-start snapshot;
/// the auto-commit before revocation that follows must not commit the snapshot after it
/// (found by the `family-lost-commits` scenario, seed 4). Once the position moves back (a
/// seek), auto-commits follow it again.
#[test]
fn auto_commits_never_go_below_what_this_member_committed_until_a_seek() {
    let mut p = parts(true);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1)].into_iter().collect());
    for p_ in [0, 1] {
        p.subscriptions
            .set_fetch_state(&tp(p_), FetchState::Fetching);
    }
    let mut m = CommitRequestManager::new(&p.settings);
    m.on_poll(p.now, offsets(&[(0, 91), (1, 91)]));
    let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 92)]), 5_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 92)]
    );
    m.on_response(&mut p.ctx(), r.requests[0].token, commit_ok());
    assert!(matches!(result(&rx), Some(Ok(()))));

    let deadline = p.now + Duration::from_millis(30_000);
    let (_c, rx) = {
        let ctx = p.ctx();
        m.commit_before_revocation(&ctx, deadline)
            .expect("offsets to commit")
    };
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 1, 91)],
        "t-0 stays at the 92 committed, t-1 is committed"
    );
    m.on_response(&mut p.ctx(), r.requests[0].token, commit_ok());
    assert!(matches!(result(&rx), Some(Ok(()))));

    // Nothing at or above the floor: done without a request.
    m.on_poll(p.now, offsets(&[(0, 91)]));
    let (_c, rx) = {
        let ctx = p.ctx();
        m.commit_before_revocation(&ctx, deadline)
            .expect("offsets to commit")
    };
    assert!(m.poll(&mut p.ctx()).requests.is_empty());
    assert!(matches!(result(&rx), Some(Ok(()))));

    // The application seeks t-0 back to 50: the interval auto-commit follows it.
    m.on_poll(p.now, offsets(&[(0, 50), (1, 91)]));
    p.advance_ms(1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1);
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 50), ("t".to_owned(), 1, 91)]
    );
}

/// Automatic commits leave out a partition whose topic is gone from metadata (the broker
/// refuses it until the topic exists again) or whose position belongs to an earlier topic of
/// the same name (it would land in the new one: family-data-path-recreate seeds 230 and 766).
#[test]
fn auto_commits_leave_out_positions_of_a_deleted_or_recreated_topic() {
    let mut p = parts(true);
    p.subscriptions
        .assign_from_user(&[tp(0), tp(1)].into_iter().collect());
    p.buffer.set_assignment(&p.subscriptions.assigned());
    let current = p.metadata.topic_id("t").unwrap();
    p.buffer.set_incarnation(&tp(0), current);
    p.buffer
        .set_incarnation(&tp(1), uuid::Uuid::from_u128(4_242));
    for p_ in [0, 1] {
        p.subscriptions
            .set_fetch_state(&tp(p_), FetchState::Fetching);
    }
    let mut m = CommitRequestManager::new(&p.settings);
    m.on_poll(p.now, offsets(&[(0, 5), (1, 155)]));
    p.advance_ms(1_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 0, 5)],
        "t-1's position is of another topic id"
    );
    m.on_response(&mut p.ctx(), r.requests[0].token, commit_ok());

    // The topic is gone from metadata: nothing to commit.
    p.metadata = crate::network::Metadata::default();
    m.on_poll(p.now, offsets(&[(0, 6), (1, 156)]));
    p.advance_ms(1_000);
    assert!(m.poll(&mut p.ctx()).requests.is_empty());

    // An explicit commit is the application's to make.
    let (_c, _rx) = commit_sync(&mut m, &p, offsets(&[(1, 156)]), 5_000);
    let r = m.poll(&mut p.ctx());
    assert_eq!(
        committed_offsets(&r.requests[0].body),
        [("t".to_owned(), 1, 156)]
    );
}

/// Java's `OffsetCommitRequest` build: an offset without a known leader epoch carries
/// `RecordBatch.NO_PARTITION_LEADER_EPOCH` (-1), one with an epoch carries it.
#[test]
fn an_unknown_leader_epoch_is_committed_as_minus_one() {
    let mut o = offsets(&[(0, 10), (1, 20)]);
    o.get_mut(&tp(1)).unwrap().leader_epoch = Some(7);
    let request = commit_request("g", None, &o);
    let epochs: Vec<i32> = request
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.committed_leader_epoch))
        .collect();
    assert_eq!(epochs, [-1, 7]);
}

/// Java's `OffsetCommitResponseHandler`: UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION answer a
/// commit with a generation reset and `CommitFailed`, unless the commit was sent in an older
/// generation while a rebalance is under way, which is `RebalanceInProgress` (poll and retry).
#[test]
fn a_generation_error_resets_unless_an_older_generation_meets_a_rebalance() {
    let member = |generation_id, rebalancing| MemberIdentity {
        generation_id,
        member_id: "m".into(),
        group_instance_id: None,
        stable: true,
        rebalancing,
    };
    // (generation when answered, rebalancing then, expect a reset)
    for (now_generation, rebalancing, reset) in [
        (3, true, true),
        (3, false, true),
        (4, true, false),
        (4, false, true),
    ] {
        let mut p = parts(false);
        p.member = Some(member(3, false));
        let mut m = CommitRequestManager::new(&p.settings);
        let (_c, rx) = commit_sync(&mut m, &p, offsets(&[(0, 10)]), 5_000);
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests.len(), 1, "sent in generation 3");
        p.member = Some(member(now_generation, rebalancing));
        m.on_response(
            &mut p.ctx(),
            r.requests[0].token,
            commit_error(ResponseError::IllegalGeneration),
        );
        let case = format!("generation {now_generation}, rebalancing {rebalancing}");
        assert_eq!(p.effects.generation_reset.is_some(), reset, "{case}");
        match result(&rx) {
            Some(Err(Error::CommitFailed { .. })) if reset => {}
            Some(Err(Error::RebalanceInProgress { .. })) if !reset => {}
            other => panic!("{case}: {other:?}"),
        }
    }
}

/// A coordinator connection without OffsetFetch (a reconnect to a broker of another version)
/// fails the committed-offset fetches waiting to go out with `UnsupportedApi`, and leaves the
/// one already in flight on the earlier connection to its own answer.
#[test]
fn an_unsupported_offset_fetch_fails_only_the_fetches_not_yet_sent() {
    let mut p = parts(false);
    let mut m = CommitRequestManager::new(&p.settings);
    let deadline = Some(p.now + Duration::from_secs(5));
    let (first, first_rx) = Completion::new("committed", deadline, 5_000);
    m.fetch_committed([tp(0)].into_iter().collect(), first);
    let r = m.poll(&mut p.ctx());
    assert_eq!(r.requests.len(), 1, "the first fetch goes out");
    p.versions = crate::internals::node_versions::NodeVersions::every_node(
        crate::internals::test_support::versions_without(&[
            kafka_protocol::messages::ApiKey::OffsetFetch,
        ]),
    );
    let (second, second_rx) = Completion::new("committed", deadline, 5_000);
    m.fetch_committed([tp(1)].into_iter().collect(), second);
    let _ = m.poll(&mut p.ctx());
    assert!(
        matches!(
            result(&second_rx),
            Some(Err(Error::Network(NetworkError::UnsupportedApi { .. })))
        ),
        "{:?}",
        result(&second_rx)
    );
    assert!(
        result(&first_rx).is_none(),
        "the fetch in flight waits for its answer"
    );
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        fetch_response(&[(0, 42, -1)]),
    );
    assert!(
        matches!(result(&first_rx), Some(Ok(_))),
        "{:?}",
        result(&first_rx)
    );
}
