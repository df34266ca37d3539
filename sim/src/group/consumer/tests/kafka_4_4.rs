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

/// KIP-1251 (4.4's `createAssignmentEpochValidator`): a commit at an epoch older than the
/// member's passes for partitions the member owns since then, and fails whole otherwise.
#[test]
fn a_commit_at_an_older_epoch_is_judged_by_assignment_epochs() {
    use kafka_protocol::error::ResponseError;
    let error = |r: Result<(), crate::group::consumer::GroupError>| r.err().map(|e| e.error);

    let mut c = coordinator_of(KafkaVersion::V4_4);
    let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
    send(&mut c, &join("a", &["foo"]), 10_000); // a: epoch 2, all six
    let rb = send(&mut c, &join("b", &["foo"]), 11_000); // target epoch 3 at once
    assert_eq!(rb.member_epoch, 3);
    let a_target = c.group(GROUP).unwrap().target_assignment["a"].clone();
    let kept = *a_target[&FOO].first().unwrap();
    let moved = (0..6).find(|p| !a_target[&FOO].contains(p)).unwrap();
    send(&mut c, &heartbeat("a", 2, &all), 11_100); // a revokes, still epoch 2
    let ra = send(&mut c, &heartbeat("a", 2, &a_target), 11_200);
    assert_eq!(ra.member_epoch, 3);
    let a = &c.group(GROUP).unwrap().members["a"];
    assert_eq!(a.assignment_epoch(FOO, kept), Some(2));
    assert_eq!(a.assignment_epoch(FOO, moved), None);

    let b_target = c.group(GROUP).unwrap().target_assignment["b"].clone();
    let rb = send(&mut c, &heartbeat("b", 3, &parts(&[])), 11_250);
    assert_eq!(assignment_of(&rb), Some(b_target.clone()));
    let b_partition = *b_target[&FOO].first().unwrap();

    // a's commit sent at epoch 2 for a partition it has owned since epoch 2: accepted.
    let commit = |c: &mut ConsumerGroupCoordinator, member: &str, epoch: i32, p: i32| {
        c.validate_offset_commit(GROUP, member, epoch, false, 9, [("foo", p)], 11_300)
    };
    assert_eq!(error(commit(&mut c, "a", 2, kept)), None);
    // ... not for a partition it gave up, and not when one partition of the commit fails.
    assert_eq!(
        error(commit(&mut c, "a", 2, moved)),
        Some(ResponseError::StaleMemberEpoch)
    );
    let both = c.validate_offset_commit(
        GROUP,
        "a",
        2,
        false,
        9,
        [("foo", kept), ("foo", moved)],
        11_300,
    );
    assert_eq!(error(both), Some(ResponseError::StaleMemberEpoch));
    // b received its partitions at epoch 3: a commit of them at epoch 2 predates them.
    assert_eq!(
        c.group(GROUP).unwrap().members["b"].assignment_epoch(FOO, b_partition),
        Some(3)
    );
    assert_eq!(
        error(commit(&mut c, "b", 2, b_partition)),
        Some(ResponseError::StaleMemberEpoch)
    );
    assert_eq!(error(commit(&mut c, "b", 3, b_partition)), None);
    // A newer epoch than the member's is stale as before.
    assert_eq!(
        error(commit(&mut c, "a", 4, kept)),
        Some(ResponseError::StaleMemberEpoch)
    );

    // Before 4.4 any older epoch is stale.
    let mut old = coordinator_of(KafkaVersion::V4_1);
    send(&mut old, &join("a", &["foo"]), 10_000); // epoch 1
    send(&mut old, &join("b", &["foo"]), 11_000); // epoch 2
    let a_target = old.group(GROUP).unwrap().target_assignment["a"].clone();
    send(&mut old, &heartbeat("a", 1, &all), 11_100);
    send(&mut old, &heartbeat("a", 1, &a_target), 11_200);
    let kept = *a_target[&FOO].first().unwrap();
    assert_eq!(
        error(commit(&mut old, "a", 1, kept)),
        Some(ResponseError::StaleMemberEpoch)
    );
}

/// 4.4's `asConsumerGroupDescribeMember`: a member revoking partitions is described with them
/// (its assigned partitions, then those pending revocation); 4.1 describes the assigned only.
#[test]
fn describe_includes_partitions_pending_revocation_from_4_4() {
    use kafka_protocol::messages::{ConsumerGroupDescribeRequest, GroupId};
    use kafka_protocol::protocol::StrBytes;

    for (version, first_epoch) in [(KafkaVersion::V4_4, 2), (KafkaVersion::V4_1, 1)] {
        let mut c = coordinator_of(version);
        let all = parts(&[(FOO, &[0, 1, 2, 3, 4, 5])]);
        send(&mut c, &join("a", &["foo"]), 10_000);
        send(&mut c, &join("b", &["foo"]), 11_000);
        send(&mut c, &heartbeat("a", first_epoch, &all), 11_100);
        let a = &c.group(GROUP).unwrap().members["a"];
        let assigned: Vec<i32> = a.assigned_partitions[&FOO].iter().copied().collect();
        let pending: Vec<i32> = a.partitions_pending_revocation[&FOO]
            .iter()
            .copied()
            .collect();
        assert_eq!((assigned.len(), pending.len()), (3, 3), "{version}");

        let request = ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(StrBytes::from_static_str(GROUP))]);
        let response = c.consumer_group_describe(&request, 11_200);
        let described = &response.groups[0].members[0];
        assert_eq!(described.member_id.as_str(), "a");
        let expected = if version == KafkaVersion::V4_4 {
            assigned.iter().chain(&pending).copied().collect()
        } else {
            assigned.clone()
        };
        assert_eq!(
            described.assignment.topic_partitions[0].partitions, expected,
            "{version}"
        );
    }
}
