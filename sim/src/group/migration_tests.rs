//! Online migration through the shard (`GroupMetadataManager`'s `convertToConsumerGroup` and
//! `convertToClassicGroup`): a ConsumerGroupHeartbeat upgrades a non-empty classic group, the
//! classic members carry on inside the consumer group, the last consumer-protocol member
//! leaving downgrades it again, the records survive a coordinator move, and
//! `group.consumer.migration.policy` refuses what it must.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;

use super::consumer::assignment::{self, Assignment};
use super::consumer::TopicsImage;
use super::group_record::record_type;
use super::migration::consumer_protocol::{
    decode_assignment, encode_assignment, tests::subscription,
};
use super::migration::ConsumerGroupMigrationPolicy;
use super::move_tests::{
    group_records, heartbeat, heartbeat_error, join_response, s, Fixture, GROUP,
};
use crate::coordinator::{GroupRequest, GroupResponse, GroupShard};

const SESSION_MS: i32 = 10_000;

/// A classic JoinGroup with a `range` consumer-protocol subscription to `t` owning `owned`.
fn classic_join(member_id: &str, owned: &[i32]) -> GroupRequest {
    let owned: Vec<(&str, &[i32])> = if owned.is_empty() {
        vec![]
    } else {
        vec![("t", owned)]
    };
    GroupRequest::JoinGroup(
        JoinGroupRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_session_timeout_ms(SESSION_MS)
            .with_rebalance_timeout_ms(SESSION_MS)
            .with_member_id(s(member_id))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(subscription(3, &["t"], &owned))]),
    )
}

fn classic_sync(member_id: &str, generation: i32, assignments: Vec<(&str, Bytes)>) -> GroupRequest {
    GroupRequest::SyncGroup(
        SyncGroupRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_generation_id(generation)
            .with_member_id(s(member_id))
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
            .with_assignments(
                assignments
                    .into_iter()
                    .map(|(m, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(s(m))
                            .with_assignment(a)
                    })
                    .collect(),
            ),
    )
}

fn cgh(member: &str, epoch: i32, owned: Option<&Assignment>) -> GroupRequest {
    let mut request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(owned.map(|o| {
            o.iter()
                .map(|(id, ps)| {
                    consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_topic_id(*id)
                        .with_partitions(ps.iter().copied().collect())
                })
                .collect()
        }));
    if epoch == 0 {
        request = request
            .with_rebalance_timeout_ms(60_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]))
            .with_topic_partitions(Some(vec![]));
    }
    GroupRequest::ConsumerGroupHeartbeat(request)
}

fn cgh_answer(r: Option<GroupResponse>) -> ConsumerGroupHeartbeatResponse {
    match r {
        Some(GroupResponse::ConsumerGroupHeartbeat(r)) => r,
        other => panic!("expected a ConsumerGroupHeartbeat answer, got {other:?}"),
    }
}

fn sync_answer(r: Option<GroupResponse>) -> SyncGroupResponse {
    match r {
        Some(GroupResponse::SyncGroup(r)) => r,
        other => panic!("expected a SyncGroup answer, got {other:?}"),
    }
}

fn topics(fx: &Fixture) -> TopicsImage {
    TopicsImage::default().with_topic("t", fx.topic_id(), 4)
}

fn partitions(fx: &Fixture, ps: &[i32]) -> Assignment {
    let mut a = Assignment::new();
    for &p in ps {
        assignment::insert(&mut a, fx.topic_id(), p);
    }
    a
}

/// The group's (type, state) as ListGroups reports them.
fn listed(fx: &mut Fixture, shard: &mut dyn GroupShard) -> (String, String) {
    match fx.call(
        shard,
        0,
        5,
        GroupRequest::ListGroups(ListGroupsRequest::default()),
    ) {
        Some(GroupResponse::ListGroups(r)) => {
            let g = &r.groups[0];
            (g.group_type.to_string(), g.group_state.to_string())
        }
        other => panic!("{other:?}"),
    }
}

/// A Stable classic group of one member ("m1", v3 join so no MEMBER_ID_REQUIRED round) owning
/// all four partitions of `t` at generation 1. Returns the member id.
fn classic_group_owning_everything(fx: &mut Fixture, shard: &mut dyn GroupShard) -> String {
    let joined = join_response(fx.call(shard, 0, 3, classic_join("", &[])));
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    let member = joined.member_id.to_string();
    let all = encode_assignment(&partitions(fx, &[0, 1, 2, 3]), &topics(fx), 3).unwrap();
    let synced = sync_answer(fx.call(shard, 0, 5, classic_sync(&member, 1, vec![(&member, all)])));
    assert_eq!(synced.error_code, 0);
    member
}

#[test]
fn a_consumer_member_upgrades_a_classic_group_and_the_classic_member_follows() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    let m1 = classic_group_owning_everything(&mut fx, shard.as_mut());

    // c1's join converts the group (generation 1 -> epoch 1) and bumps it to epoch 2; m1 still
    // owns everything, so c1 gets nothing yet.
    let joined = cgh_answer(fx.call(shard.as_mut(), 10, 1, cgh("c1", 0, None)));
    assert_eq!((joined.error_code, joined.member_epoch), (0, 2));
    assert_eq!(joined.assignment.map(|a| a.topic_partitions.len()), Some(0));
    assert_eq!(listed(&mut fx, shard.as_mut()).0, "consumer");
    assert_eq!(
        group_records(&fx, record_type::GROUP_METADATA),
        3,
        "creation, sync, and the tombstone the upgrade writes"
    );

    // m1 heartbeats at its generation: told to rejoin. It rejoins still owning everything (a
    // cooperative client): it keeps its half at generation 1 and must revoke the rest.
    let hb = heartbeat_error(fx.call(shard.as_mut(), 20, 4, heartbeat(&m1, 1)));
    assert_eq!(hb, ResponseError::RebalanceInProgress.code());
    let rejoined = join_response(fx.call(shard.as_mut(), 30, 9, classic_join(&m1, &[0, 1, 2, 3])));
    assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 1));
    assert_eq!(
        rejoined.leader.as_str(),
        "",
        "nobody assigns in a consumer group"
    );
    let kept = sync_answer(fx.call(shard.as_mut(), 40, 5, classic_sync(&m1, 1, vec![])));
    let kept = decode_assignment(&kept.assignment, &topics(&fx)).unwrap();
    assert_eq!(assignment::partition_count(&kept), 2);
    let kept_list: Vec<i32> = assignment::pairs(&kept).map(|(_, p)| p).collect();
    let rejoined = join_response(fx.call(shard.as_mut(), 50, 9, classic_join(&m1, &kept_list)));
    assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 2));

    // The revoked half is free: c1 gets it.
    let hb = cgh_answer(fx.call(
        shard.as_mut(),
        60,
        1,
        cgh("c1", 2, Some(&Assignment::new())),
    ));
    let c1: Assignment = hb
        .assignment
        .expect("c1's assignment changed")
        .topic_partitions
        .iter()
        .map(|tp| (tp.topic_id, tp.partitions.iter().copied().collect()))
        .collect();
    assert_eq!(assignment::partition_count(&c1), 2);
    assert!(assignment::pairs(&c1).all(|(t, p)| !assignment::contains(&kept, t, p)));

    // The group survives a coordinator move with its classic member.
    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert_eq!(listed(&mut fx, moved.as_mut()).0, "consumer");
    assert_eq!(
        heartbeat_error(fx.call(moved.as_mut(), 1_000, 4, heartbeat(&m1, 2))),
        0
    );
}

#[test]
fn the_upgrade_tells_parked_classic_requests_to_rejoin() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    classic_group_owning_everything(&mut fx, shard.as_mut());
    // m2 joins: the group waits for m1 to rejoin, m2's join is parked.
    let (m2_join, answers) = fx.call_all(shard.as_mut(), 10, 3, classic_join("", &[]));
    assert!(answers.iter().all(|(id, _)| *id != m2_join), "parked");
    let (_, answers) = fx.call_all(shard.as_mut(), 20, 1, cgh("c1", 0, None));
    let parked = answers
        .iter()
        .find(|(id, _)| *id == m2_join)
        .map(|(_, r)| r.clone());
    assert_eq!(
        join_response(parked).error_code,
        ResponseError::RebalanceInProgress.code()
    );
    assert_eq!(listed(&mut fx, shard.as_mut()).0, "consumer");
}

#[test]
fn the_last_consumer_member_leaving_downgrades_and_the_classic_members_rebalance() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    let m1 = classic_group_owning_everything(&mut fx, shard.as_mut());
    cgh_answer(fx.call(shard.as_mut(), 10, 1, cgh("c1", 0, None)));
    // m1 (eager: owns nothing when it rejoins) moves to epoch 2 at once.
    let rejoined = join_response(fx.call(shard.as_mut(), 20, 9, classic_join(&m1, &[])));
    assert_eq!(rejoined.generation_id, 2);

    let left = cgh_answer(fx.call(shard.as_mut(), 30, 1, cgh("c1", -1, None)));
    assert_eq!(left.error_code, 0);
    assert_eq!(
        listed(&mut fx, shard.as_mut()),
        ("classic".to_owned(), "PreparingRebalance".to_owned()),
        "a classic group again, rebalancing so that a leader assigns"
    );
    // m1's generation (its member epoch) is the classic generation; it must rejoin.
    let hb = heartbeat_error(fx.call(shard.as_mut(), 40, 4, heartbeat(&m1, 2)));
    assert_eq!(hb, ResponseError::RebalanceInProgress.code());
    let rejoined = join_response(fx.call(shard.as_mut(), 50, 9, classic_join(&m1, &[])));
    assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 3));
    assert_eq!(
        rejoined.leader.as_str(),
        m1,
        "the classic protocol: m1 leads"
    );

    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert_eq!(listed(&mut fx, moved.as_mut()).0, "classic");
}

#[test]
fn the_policy_and_the_request_decide_whether_a_classic_group_upgrades() {
    let not_found = ResponseError::GroupIdNotFound.code();
    for policy in [
        ConsumerGroupMigrationPolicy::Disabled,
        ConsumerGroupMigrationPolicy::Downgrade,
    ] {
        let mut fx = Fixture::new();
        fx.configure(|f| f.consumer.migration_policy = policy);
        let mut shard = fx.load(0);
        let m1 = classic_group_owning_everything(&mut fx, shard.as_mut());
        let refused = cgh_answer(fx.call(shard.as_mut(), 10, 1, cgh("c1", 0, None)));
        assert_eq!(refused.error_code, not_found, "{policy}");
        assert!(refused
            .error_message
            .as_deref()
            .is_some_and(|m| m.contains("online upgrade is disabled")));
        assert_eq!(listed(&mut fx, shard.as_mut()).0, "classic");
        assert_eq!(
            heartbeat_error(fx.call(shard.as_mut(), 20, 4, heartbeat(&m1, 1))),
            0
        );
    }

    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    let m1 = classic_group_owning_everything(&mut fx, shard.as_mut());
    // Only a join may convert the group.
    let refused = cgh_answer(fx.call(
        shard.as_mut(),
        10,
        1,
        cgh("c1", 3, Some(&Assignment::new())),
    ));
    assert_eq!(refused.error_code, not_found);
    // The request's own checks come first (epoch 0 needs a rebalance timeout).
    let invalid = match cgh("c1", 0, None) {
        GroupRequest::ConsumerGroupHeartbeat(r) => r.with_rebalance_timeout_ms(-1),
        _ => unreachable!(),
    };
    let refused = cgh_answer(fx.call(
        shard.as_mut(),
        10,
        1,
        GroupRequest::ConsumerGroupHeartbeat(invalid),
    ));
    assert_eq!(refused.error_code, ResponseError::InvalidRequest.code());
    assert_eq!(
        heartbeat_error(fx.call(shard.as_mut(), 20, 4, heartbeat(&m1, 1))),
        0
    );

    // A heartbeat refused after the conversion (the converted group is full) leaves the
    // classic group as it was.
    let mut fx = Fixture::new();
    fx.configure(|f| f.consumer.max_size = 1);
    let mut shard = fx.load(0);
    let m1 = classic_group_owning_everything(&mut fx, shard.as_mut());
    let refused = cgh_answer(fx.call(shard.as_mut(), 10, 1, cgh("c1", 0, None)));
    assert_eq!(
        refused.error_code,
        ResponseError::GroupMaxSizeReached.code()
    );
    assert_eq!(
        listed(&mut fx, shard.as_mut()),
        ("classic".to_owned(), "Stable".to_owned())
    );
    assert_eq!(
        heartbeat_error(fx.call(shard.as_mut(), 20, 4, heartbeat(&m1, 1))),
        0
    );
    assert_eq!(group_records(&fx, record_type::CONSUMER_GROUP_METADATA), 0);
}

#[test]
fn with_upgrade_only_the_group_stays_a_consumer_group_of_classic_members() {
    let mut fx = Fixture::new();
    fx.configure(|f| f.consumer.migration_policy = ConsumerGroupMigrationPolicy::Upgrade);
    let mut shard = fx.load(0);
    let m1 = classic_group_owning_everything(&mut fx, shard.as_mut());
    cgh_answer(fx.call(shard.as_mut(), 10, 1, cgh("c1", 0, None)));
    cgh_answer(fx.call(shard.as_mut(), 20, 1, cgh("c1", -1, None)));
    assert_eq!(listed(&mut fx, shard.as_mut()).0, "consumer");
    // m1 is behind the group epoch (3): rejoin, and it gets everything at generation 3.
    let hb = heartbeat_error(fx.call(shard.as_mut(), 30, 4, heartbeat(&m1, 1)));
    assert_eq!(hb, ResponseError::RebalanceInProgress.code());
    let rejoined = join_response(fx.call(shard.as_mut(), 40, 9, classic_join(&m1, &[])));
    assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 3));
    let synced = sync_answer(fx.call(shard.as_mut(), 50, 5, classic_sync(&m1, 3, vec![])));
    assert_eq!(
        decode_assignment(&synced.assignment, &topics(&fx)).unwrap(),
        partitions(&fx, &[0, 1, 2, 3])
    );
}

/// A ConsumerGroupHeartbeat of static member `member` (instance `i0`).
fn static_cgh(member: &str, epoch: i32) -> GroupRequest {
    match cgh(member, epoch, None) {
        GroupRequest::ConsumerGroupHeartbeat(r) => {
            GroupRequest::ConsumerGroupHeartbeat(r.with_instance_id(Some(s("i0"))))
        }
        _ => unreachable!(),
    }
}

/// A classic JoinGroup of instance `i0` without a member id: it replaces the consumer-protocol
/// static member of that instance.
fn static_classic_join() -> GroupRequest {
    match classic_join("", &[]) {
        GroupRequest::JoinGroup(r) => {
            GroupRequest::JoinGroup(r.with_group_instance_id(Some(s("i0"))))
        }
        _ => unreachable!(),
    }
}

/// A consumer group of classic member m1 and consumer-protocol static member c1 (`i0`), c1
/// temporarily left (epoch -2). Returns m1.
fn mixed_group_with_departed_static_member(fx: &mut Fixture, shard: &mut dyn GroupShard) -> String {
    let m1 = classic_group_owning_everything(fx, shard);
    let joined = cgh_answer(fx.call(shard, 10, 1, static_cgh("c1", 0)));
    assert_eq!(joined.error_code, 0);
    let rejoined = join_response(fx.call(shard, 20, 9, classic_join(&m1, &[])));
    assert_eq!(rejoined.error_code, 0);
    let left = cgh_answer(fx.call(shard, 30, 1, static_cgh("c1", -2)));
    assert_eq!((left.error_code, left.member_epoch), (0, -2));
    assert_eq!(listed(fx, shard).0, "consumer");
    m1
}

#[test]
fn a_classic_static_member_replacing_the_last_consumer_member_downgrades_at_its_join() {
    let mut fx = Fixture::new();
    let mut shard = fx.load(0);
    mixed_group_with_departed_static_member(&mut fx, shard.as_mut());
    // `validateOnlineDowngradeWithReplacedMember`: only classic members remain once i0's
    // consumer member is replaced, so the join converts the group; the subscription is the
    // same, so there is no rebalance.
    let joined = join_response(fx.call(shard.as_mut(), 40, 9, static_classic_join()));
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(
        listed(&mut fx, shard.as_mut()),
        ("classic".to_owned(), "Stable".to_owned())
    );
    let new_id = joined.member_id.to_string();
    let synced = sync_answer(fx.call(
        shard.as_mut(),
        50,
        5,
        classic_sync(&new_id, joined.generation_id, vec![]),
    ));
    assert_eq!(synced.error_code, 0, "{synced:?}");

    fx.move_coordinator();
    let mut moved = fx.load(1_000);
    assert_eq!(listed(&mut fx, moved.as_mut()).0, "classic");
}

#[test]
fn without_online_downgrade_the_replacement_keeps_the_consumer_group() {
    let mut fx = Fixture::new();
    fx.configure(|f| f.consumer.migration_policy = ConsumerGroupMigrationPolicy::Upgrade);
    let mut shard = fx.load(0);
    mixed_group_with_departed_static_member(&mut fx, shard.as_mut());
    let joined = join_response(fx.call(shard.as_mut(), 40, 9, static_classic_join()));
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(listed(&mut fx, shard.as_mut()).0, "consumer");
}
