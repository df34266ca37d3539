//! Committed offsets of a deleted topic are removed with tombstones, as Kafka's
//! `OffsetMetadataManager.onPartitionsDeleted` removes them, so a topic re-created under the
//! same name starts without the old topic's offsets — on this coordinator and the next.

use super::move_tests::Fixture;
use super::shard_tests::{committed, simple_commit};
use crate::coordinator::{GroupResponse, GroupShard};

fn commit_ok(fx: &mut Fixture, shard: &mut dyn GroupShard, group: &str, offset: i64) {
    match fx.call(shard, 0, 8, simple_commit(group, offset)) {
        Some(GroupResponse::OffsetCommit(r)) => assert_eq!(r.topics[0].partitions[0].error_code, 0),
        other => panic!("{other:?}"),
    }
}

fn delete_topic(fx: &Fixture) {
    fx.update_cluster(|s| s.delete_topic("t"))
        .expect("t exists");
}

fn create_topic(fx: &Fixture) {
    fx.update_cluster(|s| s.create_topic("t", 4, 1, None))
        .expect("t is created");
}

#[test]
fn offsets_of_a_deleted_topic_are_gone_and_stay_gone_on_the_next_coordinator() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    commit_ok(&mut fx, shard.as_mut(), "a", 5);
    commit_ok(&mut fx, shard.as_mut(), "b", 6);
    assert_eq!(committed(&mut fx, shard.as_mut(), "a"), 5);

    delete_topic(&fx);
    assert_eq!(committed(&mut fx, shard.as_mut(), "a"), -1);
    create_topic(&fx);
    assert_eq!(
        committed(&mut fx, shard.as_mut(), "b"),
        -1,
        "the re-created topic does not inherit the old offsets"
    );

    // Deleted and re-created between two requests: the id changed, so it is a deletion.
    commit_ok(&mut fx, shard.as_mut(), "a", 7);
    delete_topic(&fx);
    create_topic(&fx);
    assert_eq!(committed(&mut fx, shard.as_mut(), "a"), -1);

    // An offset committed to the new topic is kept.
    commit_ok(&mut fx, shard.as_mut(), "a", 3);
    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert_eq!(committed(&mut fx, moved.as_mut(), "a"), 3);
    assert_eq!(
        committed(&mut fx, moved.as_mut(), "b"),
        -1,
        "the tombstones reach the next coordinator"
    );
}
