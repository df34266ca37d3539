//! Committed offsets (OffsetFetch) that arrive after the application changed the partition:
//! a seek made while the position was being initialized wins, and a partition unassigned and
//! assigned again waits for an answer of its own.

use super::tests::{fetch_response, parts, tp};
use super::*;
use crate::config::AutoOffsetReset;
use crate::internals::context::testing::Parts;
use crate::internals::events::SeekTarget;
use crate::internals::seek::seek_partition;

fn seek(p: &mut Parts, partition: i32, target: SeekTarget) {
    seek_partition(
        &mut p.subscriptions,
        &p.buffer,
        &tp(partition),
        &target,
        Some(5),
    );
}

fn assign(p: &mut Parts, partitions: &[i32]) {
    let partitions: BTreeSet<TopicPartition> = partitions.iter().map(|&i| tp(i)).collect();
    p.subscriptions.assign_from_user(&partitions);
    p.buffer.set_assignment(&partitions);
}

fn fetched(r: &UnsentRequest) -> Vec<i32> {
    let RequestBody::OffsetFetch(req) = &r.body else {
        panic!("{r:?}")
    };
    req.groups[0].topics.as_ref().unwrap()[0]
        .partition_indexes
        .clone()
}

#[test]
fn a_seek_while_the_committed_offset_is_fetched_keeps_the_seek() {
    let mut p = parts(false);
    assign(&mut p, &[0, 1, 2]);
    let mut m = CommitRequestManager::new(&p.settings);
    let r = m.poll(&mut p.ctx());
    seek(&mut p, 0, SeekTarget::Offset(OffsetAndMetadata::new(3)));
    seek(&mut p, 1, SeekTarget::End);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        fetch_response(&[(0, 42, -1), (1, 7, -1), (2, 9, -1)]),
    );
    assert_eq!(p.buffer.position(&tp(0)).unwrap().0.offset, 3);
    assert_eq!(
        p.subscriptions.fetch_state(&tp(1)),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Latest)),
        "seek_to_end is not overwritten by the committed offset"
    );
    assert!(p.buffer.position(&tp(1)).is_none());
    assert_eq!(p.buffer.position(&tp(2)).unwrap().0.offset, 9);
}

#[test]
fn a_partition_assigned_again_during_the_fetch_gets_a_fetch_of_its_own() {
    // assign([p0]); the OffsetFetch is slow; assign([]); another consumer commits 50;
    // assign([p0]): the first answer (42) is from before the new assignment.
    let mut p = parts(false);
    assign(&mut p, &[0]);
    let mut m = CommitRequestManager::new(&p.settings);
    let first = m.poll(&mut p.ctx());
    assign(&mut p, &[]);
    assign(&mut p, &[0]);
    let second = m.poll(&mut p.ctx());
    assert_eq!(second.requests.len(), 1, "the new assignment asks again");
    assert_eq!(fetched(&second.requests[0]), [0]);
    m.on_response(
        &mut p.ctx(),
        first.requests[0].token,
        fetch_response(&[(0, 42, -1)]),
    );
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Initializing),
        "the old assignment's committed offset is dropped"
    );
    m.on_response(
        &mut p.ctx(),
        second.requests[0].token,
        fetch_response(&[(0, 50, -1)]),
    );
    assert_eq!(p.buffer.position(&tp(0)).unwrap().0.offset, 50);
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching)
    );
}
