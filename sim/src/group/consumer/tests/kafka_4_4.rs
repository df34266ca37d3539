//! What a Kafka 4.4 coordinator does differently: groups start at epoch 1 (KAFKA-20268) and
//! target assignments are computed at most every `group.consumer.assignment.interval.ms`
//! (`canComputeNextTargetAssignment`), on a heartbeat: 4.4 schedules no timer for them.

use super::harness::*;
use crate::group::consumer::{
    persist, ConsumerGroupConfig, ConsumerGroupCoordinator, ConsumerGroupState,
};
use crate::kafka_version::KafkaVersion;

fn coordinator_of(version: KafkaVersion) -> ConsumerGroupCoordinator {
    ConsumerGroupCoordinator::new(
        ConsumerGroupConfig {
            kafka_version: version,
            ..ConsumerGroupConfig::default()
        },
        topics(),
    )
}

#[test]
fn a_new_group_starts_at_epoch_one_and_the_first_member_gets_epoch_two() {
    let mut c = coordinator_of(KafkaVersion::V4_4);
    let r = send(&mut c, &join("a", &["foo"]), 10_000);
    assert_eq!(r.member_epoch, 2);
    assert_eq!(
        assignment_of(&r),
        Some(parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]))
    );
    let group = c.group(GROUP).unwrap();
    assert_eq!((group.group_epoch, group.assignment_epoch), (2, 2));
    assert_eq!(group.assignment_timestamp_ms, Some(10_000));

    // 4.1 starts at 0: the same join is epoch 1.
    let mut old = coordinator_of(KafkaVersion::V4_1);
    assert_eq!(send(&mut old, &join("a", &["foo"]), 10_000).member_epoch, 1);
}

#[test]
fn a_second_member_within_the_interval_waits_for_a_heartbeat_after_it() {
    let mut c = coordinator_of(KafkaVersion::V4_4);
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 10_000);

    // b joins 500 ms after the first assignment: the group epoch moves on, the assignment not.
    let rb = send(&mut c, &join("b", &["foo"]), 10_500);
    assert_eq!(rb.member_epoch, 2);
    assert_eq!(assignment_of(&rb), Some(parts(&[])));
    let group = c.group(GROUP).unwrap();
    assert_eq!((group.group_epoch, group.assignment_epoch), (3, 2));
    assert_eq!(group.state(), ConsumerGroupState::Assigning);

    // a heartbeats just before the interval ends: nothing to revoke yet.
    let ra = send(&mut c, &heartbeat("a", 2, &all), 10_999);
    assert_eq!((ra.member_epoch, assignment_of(&ra)), (2, None));
    assert_eq!(
        c.group(GROUP).unwrap().state(),
        ConsumerGroupState::Assigning
    );

    // The first heartbeat at or after 11_000 computes epoch 3 and starts the revocation.
    let ra = send(&mut c, &heartbeat("a", 2, &all), 11_000);
    let group = c.group(GROUP).unwrap();
    assert_eq!(group.assignment_epoch, 3);
    assert_eq!(group.assignment_timestamp_ms, Some(11_000));
    assert_eq!(ra.member_epoch, 2);
    let a_target = group.target_assignment["a"].clone();
    assert_eq!(assignment_of(&ra), Some(a_target.clone()));
    assert_eq!(a_target.values().map(|p| p.len()).sum::<usize>(), 3);
    assert_eq!(group.state(), ConsumerGroupState::Reconciling);
}

#[test]
fn before_4_4_the_interval_does_not_apply() {
    let mut c = coordinator_of(KafkaVersion::V4_1);
    send(&mut c, &join("a", &["foo"]), 10_000);
    send(&mut c, &join("b", &["foo"]), 10_001);
    let group = c.group(GROUP).unwrap();
    assert_eq!((group.group_epoch, group.assignment_epoch), (2, 2));
}

#[test]
fn an_interval_of_zero_computes_at_once() {
    let mut c = ConsumerGroupCoordinator::new(
        ConsumerGroupConfig {
            kafka_version: KafkaVersion::V4_4,
            assignment_interval_ms: 0,
            ..ConsumerGroupConfig::default()
        },
        topics(),
    );
    send(&mut c, &join("a", &["foo"]), 10_000);
    send(&mut c, &join("b", &["foo"]), 10_001);
    let group = c.group(GROUP).unwrap();
    assert_eq!((group.group_epoch, group.assignment_epoch), (3, 3));
}

#[test]
fn the_assignment_time_survives_a_coordinator_move() {
    let mut c = coordinator_of(KafkaVersion::V4_4);
    send(&mut c, &join("a", &["foo"]), 10_000);
    let records = persist::group_records(c.group(GROUP).unwrap());
    let mut groups = std::collections::BTreeMap::new();
    for (key, value) in records {
        let decoded =
            crate::group::group_record::GroupRecordValue::decode(key.record_type, &value.encode());
        persist::replay(&mut groups, &key, decoded);
    }
    let loaded = &groups[GROUP];
    assert_eq!(loaded.assignment_timestamp_ms, Some(10_000));
    assert_eq!(loaded.assignment_epoch, 2);
}
