//! `close_with` (Java's `CloseOptions`) against a real Apache Kafka 4.x broker, both group
//! protocols: a member that leaves on close hands its partitions over at once; one that
//! remains keeps them until its session times out.
//!
//! Each case: member `a` owns every partition, closes with the operation under test, and
//! member `b` (another member id and instance id) subscribes right away. How long `b` waits
//! for every partition tells whether `a` left: the test broker's session timeout is 6 s for
//! both protocols (`group.consumer.session.timeout.ms` in `testing/kafka/run`, the classic
//! member's own `session.timeout.ms` here), so a hand-over within 4 s means `a` left and one
//! after 4 s means the broker waited for `a`'s session to expire.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`); compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;

use kafka_consumer::{
    AutoOffsetReset, CloseOptions, Consumer, ConsumerConfig, GroupMembershipOperation,
};
use support::group::unique;
use support::real_broker::{bootstrap, client, create_topic};
use tokio::time::{Duration, Instant};

const PARTITIONS: i32 = 4;
const SESSION_TIMEOUT_MS: u64 = 6_000;
/// Below: `a` left. Above: the broker waited for `a`'s session to expire.
const LEFT_WITHIN: Duration = Duration::from_millis(4_000);

fn config(
    bootstrap: &str,
    protocol: &str,
    group: &str,
    instance_id: Option<&str>,
) -> ConsumerConfig {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol);
    if protocol == "classic" {
        builder = builder
            .set("session.timeout.ms", SESSION_TIMEOUT_MS.to_string())
            .set("heartbeat.interval.ms", "500");
    }
    if let Some(id) = instance_id {
        builder = builder.set("group.instance.id", id);
    }
    builder.build().unwrap()
}

/// Polls until `consumer` owns `partitions` partitions; returns how long that took.
async fn until_owning_all(consumer: &mut Consumer, what: &str) -> Duration {
    let started = Instant::now();
    while consumer.assignment().len() < PARTITIONS as usize {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: owns only {:?}",
            consumer.assignment()
        );
        consumer.poll(Duration::from_millis(100)).await.unwrap();
    }
    started.elapsed()
}

/// Runs one case; returns how long `b` waited for every partition after `a` closed.
async fn hand_over(
    protocol: &str,
    instance_ids: (Option<&str>, Option<&str>),
    operation: GroupMembershipOperation,
) -> Option<Duration> {
    let bootstrap = bootstrap()?;
    let case = format!("{protocol} {instance_ids:?} {operation:?}");
    let topic = unique("close-options");
    let group = unique("close-options-group");
    create_topic(&mut client(bootstrap.clone()), &topic, PARTITIONS).await;

    let mut a = Consumer::new(config(&bootstrap, protocol, &group, instance_ids.0)).unwrap();
    a.subscribe([topic.clone()]).await.unwrap();
    until_owning_all(&mut a, &format!("{case}: a")).await;

    let closing = Instant::now();
    a.close_with(
        CloseOptions::new()
            .timeout(Duration::from_secs(10))
            .group_membership_operation(operation),
    )
    .await
    .unwrap();
    assert!(
        a.assignment().is_empty(),
        "{case}: a released its partitions"
    );
    let mut b = Consumer::new(config(&bootstrap, protocol, &group, instance_ids.1)).unwrap();
    b.subscribe([topic.clone()]).await.unwrap();
    until_owning_all(&mut b, &format!("{case}: b")).await;
    let waited = closing.elapsed();
    let owned: BTreeSet<i32> = b.assignment().iter().map(|tp| tp.partition).collect();
    assert_eq!(owned, (0..PARTITIONS).collect(), "{case}");
    b.close(Duration::from_secs(10)).await.unwrap();
    eprintln!("{case}: b owned every partition {waited:?} after a closed");
    Some(waited)
}

async fn assert_left(
    protocol: &str,
    ids: (Option<&str>, Option<&str>),
    op: GroupMembershipOperation,
) {
    if let Some(waited) = hand_over(protocol, ids, op).await {
        assert!(
            waited < LEFT_WITHIN,
            "{protocol} {ids:?} {op:?}: a should have left, b waited {waited:?}"
        );
    }
}

async fn assert_remained(
    protocol: &str,
    ids: (Option<&str>, Option<&str>),
    op: GroupMembershipOperation,
) {
    if let Some(waited) = hand_over(protocol, ids, op).await {
        assert!(
            waited >= LEFT_WITHIN,
            "{protocol} {ids:?} {op:?}: a should have remained until its session timed out, \
             b waited only {waited:?}"
        );
    }
}

const DYNAMIC: (Option<&str>, Option<&str>) = (None, None);
const STATIC: (Option<&str>, Option<&str>) = (Some("instance-a"), Some("instance-b"));

#[tokio::test]
async fn classic_dynamic_member_leaves_by_default() {
    assert_left("classic", DYNAMIC, GroupMembershipOperation::Default).await;
}

#[tokio::test]
async fn classic_dynamic_member_told_to_remain_keeps_its_place() {
    assert_remained("classic", DYNAMIC, GroupMembershipOperation::RemainInGroup).await;
}

#[tokio::test]
async fn classic_static_member_told_to_leave_leaves() {
    assert_left("classic", STATIC, GroupMembershipOperation::LeaveGroup).await;
}

#[tokio::test]
async fn classic_static_member_remains_by_default() {
    assert_remained("classic", STATIC, GroupMembershipOperation::Default).await;
}

#[tokio::test]
async fn consumer_protocol_dynamic_member_told_to_remain_keeps_its_place() {
    assert_remained("consumer", DYNAMIC, GroupMembershipOperation::RemainInGroup).await;
}

#[tokio::test]
async fn consumer_protocol_static_member_told_to_leave_leaves() {
    assert_left("consumer", STATIC, GroupMembershipOperation::LeaveGroup).await;
}

#[tokio::test]
async fn consumer_protocol_static_member_remains_by_default() {
    assert_remained("consumer", STATIC, GroupMembershipOperation::Default).await;
}
