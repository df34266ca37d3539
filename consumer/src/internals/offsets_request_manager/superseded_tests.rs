//! Answers that arrive after the application changed the partition (KAFKA-7703 class): every
//! path where a ListOffsets or OffsetForLeaderEpoch answer meets a seek, a new reset, a pause
//! or an assignment change made while it was in flight. The user's last seek always wins.

use super::tests::{epoch_response, list_response, parts, requested, tp};
use super::*;
use crate::internals::context::testing::Parts;
use crate::internals::events::SeekTarget;
use crate::internals::seek::seek_partition;
use crate::types::OffsetAndMetadata;

/// The application's seek, as the background task applies it.
fn seek(p: &mut Parts, partition: i32, target: SeekTarget) {
    seek_partition(
        &mut p.subscriptions,
        &p.buffer,
        &tp(partition),
        &target,
        Some(5),
    );
}

fn position(p: &Parts, partition: i32) -> Option<(i64, Option<i32>)> {
    p.buffer
        .position(&tp(partition))
        .map(|(pos, _)| (pos.offset, pos.offset_epoch))
}

fn state(p: &Parts, partition: i32) -> Option<FetchState> {
    p.subscriptions.fetch_state(&tp(partition))
}

/// The requests to broker 1 (p0's leader) only.
fn to_p0(r: PollResult) -> Vec<UnsentRequest> {
    r.requests
        .into_iter()
        .filter(|r| r.target == Target::Node(1))
        .collect()
}

#[test]
fn seek_to_end_during_the_automatic_reset_wins_over_the_late_earliest_answer() {
    // The run: auto.offset.reset=earliest, the EARLIEST lookup is slow, the
    // application calls seek_to_end meanwhile.
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let earliest = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(requested(&earliest[0]), [(0, -2, 5)]);

    seek(&mut p, 0, SeekTarget::End);
    let latest = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(
        latest.len(),
        1,
        "the LATEST lookup goes out without waiting for the superseded one"
    );
    assert_eq!(requested(&latest[0]), [(0, -1, 5)]);

    m.on_response(
        &mut p.ctx(),
        earliest[0].token,
        list_response(&[(0, 0, 0, 5)]),
    );
    assert_eq!(position(&p, 0), None, "the EARLIEST answer is dropped");
    assert_eq!(
        state(&p, 0),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Latest))
    );
    assert!(
        to_p0(m.poll(&mut p.ctx())).is_empty(),
        "the LATEST lookup is still in flight"
    );

    m.on_response(
        &mut p.ctx(),
        latest[0].token,
        list_response(&[(0, 0, 66, 5)]),
    );
    assert_eq!(position(&p, 0), Some((66, Some(5))));
    assert_eq!(state(&p, 0), Some(FetchState::Fetching));
}

#[test]
fn the_late_earliest_answer_is_not_installed_after_seek_to_end() {
    // The same race where the EARLIEST answer arrives before the consumer polls again: it
    // must not become the position (the issue saw position 0 and the whole partition
    // delivered again), and the LATEST lookup goes out next.
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let earliest = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::End);
    m.on_response(
        &mut p.ctx(),
        earliest[0].token,
        list_response(&[(0, 0, 0, 5)]),
    );
    assert_eq!(position(&p, 0), None, "the EARLIEST answer is dropped");
    assert_eq!(
        state(&p, 0),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Latest))
    );
    let latest = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(requested(&latest[0]), [(0, -1, 5)]);
}

#[test]
fn the_last_of_two_seek_to_end_calls_wins() {
    // seek_to_end, seek(5), seek_to_end again: the first lookup's log end is older than the
    // last seek; records appended in between would be delivered although the user asked to
    // skip them. Comparing strategies alone (Java's check) would install it.
    let mut p = parts(AutoOffsetReset::Earliest);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
    seek(&mut p, 0, SeekTarget::End);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let first = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::Offset(OffsetAndMetadata::new(5)));
    seek(&mut p, 0, SeekTarget::End);
    let second = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(second.len(), 1, "the second seek_to_end asks again at once");
    m.on_response(
        &mut p.ctx(),
        first[0].token,
        list_response(&[(0, 0, 60, 5)]),
    );
    assert_eq!(
        position(&p, 0),
        Some((5, None)),
        "the first answer is dropped"
    );
    m.on_response(
        &mut p.ctx(),
        second[0].token,
        list_response(&[(0, 0, 66, 5)]),
    );
    assert_eq!(position(&p, 0), Some((66, Some(5))));
    assert_eq!(state(&p, 0), Some(FetchState::Fetching));
}

#[test]
fn seek_to_an_offset_during_a_reset_keeps_the_offset() {
    // Also the shape of an offsets_for_times-based seek: the application looks the offset up
    // and seeks to it while the automatic reset is under way.
    let mut p = parts(AutoOffsetReset::Latest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let reset = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::Offset(OffsetAndMetadata::new(12)));
    assert!(to_p0(m.poll(&mut p.ctx())).is_empty(), "nothing to look up");
    m.on_response(
        &mut p.ctx(),
        reset[0].token,
        list_response(&[(0, 0, 66, 5)]),
    );
    assert_eq!(position(&p, 0), Some((12, None)));
    assert_eq!(state(&p, 0), Some(FetchState::Fetching));
}

#[test]
fn seek_to_beginning_then_end_then_beginning_applies_only_the_last_answer() {
    let mut p = parts(AutoOffsetReset::Latest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    seek(&mut p, 0, SeekTarget::Beginning);
    let a = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::End);
    let b = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::Beginning);
    let c = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(
        [&a, &b, &c].map(|r| requested(&r[0])[0].1),
        [-2, -1, -2],
        "one lookup per seek"
    );
    // Answers in reverse order, then in order: only the last seek's answer counts.
    m.on_response(&mut p.ctx(), b[0].token, list_response(&[(0, 0, 66, 5)]));
    m.on_response(&mut p.ctx(), a[0].token, list_response(&[(0, 0, 3, 5)]));
    assert_eq!(position(&p, 0), None);
    m.on_response(&mut p.ctx(), c[0].token, list_response(&[(0, 0, 4, 5)]));
    assert_eq!(position(&p, 0), Some((4, Some(5))));
}

#[test]
fn a_failed_reset_does_not_hold_back_the_seek_that_replaces_it() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let reset = to_p0(m.poll(&mut p.ctx()));
    let code = ResponseError::NotLeaderOrFollower.code();
    m.on_response(
        &mut p.ctx(),
        reset[0].token,
        list_response(&[(0, code, -1, -1)]),
    );
    assert!(to_p0(m.poll(&mut p.ctx())).is_empty(), "backing off");
    seek(&mut p, 0, SeekTarget::End);
    let latest = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(latest.len(), 1, "the seek is not held by the old backoff");
    assert_eq!(requested(&latest[0]), [(0, -1, 5)]);
}

#[test]
fn a_superseded_reset_that_fails_reports_nothing_and_backs_nothing_off() {
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let reset = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::End);
    let latest = to_p0(m.poll(&mut p.ctx()));
    let code = ResponseError::TopicAuthorizationFailed.code();
    m.on_response(
        &mut p.ctx(),
        reset[0].token,
        list_response(&[(0, code, -1, -1)]),
    );
    assert!(p.effects.errors.is_empty(), "{:?}", p.effects.errors);
    m.on_response(
        &mut p.ctx(),
        latest[0].token,
        list_response(&[(0, 0, 66, 5)]),
    );
    assert_eq!(position(&p, 0), Some((66, Some(5))));
}

#[test]
fn a_seek_with_another_epoch_during_validation_gets_its_own_validation() {
    // seek(100, epoch 5) is being validated; the application seeks to 100 again with the
    // epoch 3 it committed. The epoch-5 answer (no truncation) says nothing about epoch 3,
    // whose log was truncated at 80.
    let mut p = parts(AutoOffsetReset::Earliest);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
    seek(
        &mut p,
        0,
        SeekTarget::Offset(OffsetAndMetadata::with_leader_epoch(100, Some(5))),
    );
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let first = to_p0(m.poll(&mut p.ctx()));
    seek(
        &mut p,
        0,
        SeekTarget::Offset(OffsetAndMetadata::with_leader_epoch(100, Some(3))),
    );
    let second = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(second.len(), 1, "the new position is validated at once");
    let RequestBody::OffsetForLeaderEpoch(body) = &second[0].body else {
        panic!("{:?}", second[0])
    };
    assert_eq!(body.topics[0].partitions[0].leader_epoch, 3);

    m.on_response(&mut p.ctx(), first[0].token, epoch_response(150, 5));
    assert_eq!(state(&p, 0), Some(FetchState::AwaitingValidation));
    m.on_response(&mut p.ctx(), second[0].token, epoch_response(80, 3));
    assert_eq!(position(&p, 0), Some((80, Some(3))), "truncation detected");
    assert_eq!(state(&p, 0), Some(FetchState::Fetching));
}

#[test]
fn seek_to_end_during_validation_drops_the_validation_answer() {
    let mut p = parts(AutoOffsetReset::Earliest);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
    seek(
        &mut p,
        0,
        SeekTarget::Offset(OffsetAndMetadata::with_leader_epoch(100, Some(3))),
    );
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let validation = to_p0(m.poll(&mut p.ctx()));
    seek(&mut p, 0, SeekTarget::End);
    let latest = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(requested(&latest[0]), [(0, -1, 5)]);
    // A truncation answer would move the position to 80: dropped.
    m.on_response(&mut p.ctx(), validation[0].token, epoch_response(80, 3));
    assert_eq!(
        state(&p, 0),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Latest))
    );
    m.on_response(
        &mut p.ctx(),
        latest[0].token,
        list_response(&[(0, 0, 66, 5)]),
    );
    assert_eq!(position(&p, 0), Some((66, Some(5))));
}

#[test]
fn a_reset_during_validation_drops_the_validation_answer() {
    // The consumer's own new reset (a fetch found the position out of range) supersedes the
    // validation in flight just as a user seek does.
    let mut p = parts(AutoOffsetReset::Earliest);
    p.subscriptions
        .set_fetch_state(&tp(1), FetchState::Fetching);
    seek(
        &mut p,
        0,
        SeekTarget::Offset(OffsetAndMetadata::with_leader_epoch(100, Some(3))),
    );
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let validation = to_p0(m.poll(&mut p.ctx()));
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::AwaitingReset(AutoOffsetReset::Earliest));
    let reset = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(requested(&reset[0]), [(0, -2, 5)]);
    m.on_response(&mut p.ctx(), validation[0].token, epoch_response(150, 3));
    assert_eq!(
        state(&p, 0),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Earliest))
    );
}

#[test]
fn a_reset_answer_still_applies_to_a_paused_partition_which_stays_unfetched() {
    // Pausing is not a seek: the reset goes on, and the partition is fetched once resumed.
    let mut p = parts(AutoOffsetReset::Earliest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let reset = to_p0(m.poll(&mut p.ctx()));
    p.subscriptions.set_paused(&tp(0), true);
    p.buffer.drop_buffered(&tp(0));
    m.on_response(&mut p.ctx(), reset[0].token, list_response(&[(0, 0, 7, 5)]));
    assert_eq!(position(&p, 0), Some((7, Some(5))));
    assert!(!p.subscriptions.fetchable_partitions().contains(&tp(0)));
    p.subscriptions.set_paused(&tp(0), false);
    assert!(p.subscriptions.fetchable_partitions().contains(&tp(0)));
}

#[test]
fn a_reset_answer_for_a_partition_unassigned_and_assigned_again_is_dropped() {
    // assign([p0, p1]); the reset is in flight; assign([p1]); assign([p0, p1]): the
    // partition is new again and gets a lookup of its own.
    let mut p = parts(AutoOffsetReset::Latest);
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let old = to_p0(m.poll(&mut p.ctx()));
    let only_p1 = [tp(1)].into_iter().collect();
    p.subscriptions.assign_from_user(&only_p1);
    p.buffer.set_assignment(&only_p1);
    m.on_response(&mut p.ctx(), old[0].token, list_response(&[(0, 0, 40, 5)]));
    assert_eq!(position(&p, 0), None, "unassigned: nothing applied");

    let old = to_p0(m.poll(&mut p.ctx()));
    assert!(old.is_empty());
    let both = [tp(0), tp(1)].into_iter().collect();
    p.subscriptions.assign_from_user(&both);
    p.buffer.set_assignment(&both);
    let first = to_p0(m.poll(&mut p.ctx()));
    p.subscriptions.assign_from_user(&only_p1);
    p.buffer.set_assignment(&only_p1);
    p.subscriptions.assign_from_user(&both);
    p.buffer.set_assignment(&both);
    let second = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(second.len(), 1, "the new assignment asks at once");
    m.on_response(
        &mut p.ctx(),
        first[0].token,
        list_response(&[(0, 0, 50, 5)]),
    );
    assert_eq!(
        position(&p, 0),
        None,
        "the old assignment's answer is dropped"
    );
    m.on_response(
        &mut p.ctx(),
        second[0].token,
        list_response(&[(0, 0, 66, 5)]),
    );
    assert_eq!(position(&p, 0), Some((66, Some(5))));
}

#[test]
fn a_by_duration_fallback_to_latest_belongs_to_its_own_reset() {
    // KIP-1106: a by_duration reset that found nothing that recent asks for the latest
    // offset next. A seek_to_beginning in between must ask for the earliest, and a later
    // by_duration reset starts over with its timestamp.
    let hour = Duration::from_secs(3_600);
    let mut p = parts(AutoOffsetReset::ByDuration(hour));
    let mut m = OffsetsRequestManager::new(100, 1_000);
    let r = to_p0(m.poll(&mut p.ctx()));
    m.on_response(&mut p.ctx(), r[0].token, list_response(&[(0, 0, -1, -1)]));
    seek(&mut p, 0, SeekTarget::Beginning);
    let r = to_p0(m.poll(&mut p.ctx()));
    assert_eq!(requested(&r[0])[0].1, -2);
    m.on_response(&mut p.ctx(), r[0].token, list_response(&[(0, 0, 0, 5)]));
    p.subscriptions.set_fetch_state(
        &tp(0),
        FetchState::AwaitingReset(AutoOffsetReset::ByDuration(hour)),
    );
    let r = to_p0(m.poll(&mut p.ctx()));
    assert!(requested(&r[0])[0].1 > 0, "by time again, not latest");
}
