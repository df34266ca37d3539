//! Group state across a coordinator move: a shard writes its groups to its offsets partition,
//! a shard loaded later from the same partition (the new coordinator) replays them.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::classic::ClassicGroupConfig;
use super::group_record::{record_type, GroupRecordKey};
use super::shard::GroupCoordinatorFactory;
use crate::config::ClusterConfig;
use crate::controller::{ClusterState, Controller, OFFSETS_TOPIC};
use crate::coordinator::{
    CoordinatorLog, GroupRequest, GroupRequestContext, GroupResponse, GroupShard, GroupShardFactory,
};

pub(super) const GROUP: &str = "app";
const SESSION_MS: i32 = 10_000;

pub(super) struct Fixture {
    controller: Controller,
    factory: GroupCoordinatorFactory,
    next_id: u64,
}

impl Fixture {
    pub(super) fn new() -> Self {
        let mut config = ClusterConfig {
            offsets_partitions: 1,
            ..ClusterConfig::default()
        };
        config.topics.insert("t".to_owned(), 4);
        let controller = Controller::new(
            config,
            &[(0, "b0".to_owned(), 9092), (1, "b1".to_owned(), 9093)],
        );
        let factory = GroupCoordinatorFactory {
            classic: ClassicGroupConfig {
                group_initial_rebalance_delay_ms: 0,
                ..ClassicGroupConfig::default()
            },
            ..GroupCoordinatorFactory::default()
        };
        Self {
            controller,
            factory,
            next_id: 0,
        }
    }

    /// A coordinator for offsets partition 0 at its current leader epoch, loaded at `now_ms`.
    pub(super) fn load(&self, now_ms: u64) -> Box<dyn GroupShard> {
        let epoch = self
            .controller
            .read()
            .partition(OFFSETS_TOPIC, 0)
            .unwrap()
            .leader_epoch;
        let log = CoordinatorLog::new(self.controller.clone(), 0, epoch);
        let version = self.controller.read().broker_version(0);
        let mut shard = self.factory.load(0, log, now_ms, version);
        shard.on_loaded(now_ms);
        shard
    }

    /// Moves the offsets partition's leadership (epoch bump): a new coordinator takes over.
    pub(super) fn move_coordinator(&self) {
        self.controller
            .update(|state| state.move_leader(OFFSETS_TOPIC, 0, None))
            .unwrap();
    }

    /// Changes the cluster (create or delete topics) as the controller would.
    pub(super) fn update_cluster<T>(&self, change: impl FnOnce(&mut ClusterState) -> T) -> T {
        self.controller.update(change)
    }

    /// Changes the settings of the coordinators loaded from now on.
    pub(super) fn configure(&mut self, change: impl FnOnce(&mut GroupCoordinatorFactory)) {
        change(&mut self.factory);
    }

    /// Sends `request` and returns its answer if the shard answered by now.
    pub(super) fn call(
        &mut self,
        shard: &mut dyn GroupShard,
        now_ms: u64,
        version: i16,
        request: GroupRequest,
    ) -> Option<GroupResponse> {
        let (id, responses) = self.call_all(shard, now_ms, version, request);
        responses
            .into_iter()
            .find(|(rid, _)| *rid == id)
            .map(|(_, r)| r)
    }

    /// Sends `request`; returns its request id and every answer the shard gave by now
    /// (including parked requests it released).
    pub(super) fn call_all(
        &mut self,
        shard: &mut dyn GroupShard,
        now_ms: u64,
        version: i16,
        request: GroupRequest,
    ) -> (u64, Vec<(u64, GroupResponse)>) {
        self.next_id += 1;
        let id = self.next_id;
        shard.poll(now_ms);
        shard.handle(
            now_ms,
            GroupRequestContext {
                request_id: id,
                api_version: version,
                client_id: "client".into(),
                client_host: "/10.0.0.1".into(),
                broker_id: 1,
                connection_id: 1,
            },
            request,
        );
        // Timers due now (the 0 ms initial-rebalance delay), as the runtime's loop fires them.
        shard.poll(now_ms);
        (id, shard.take_responses())
    }

    pub(super) fn topic_id(&self) -> uuid::Uuid {
        self.controller.read().topics["t"].topic_id
    }
}

pub(super) fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

pub(super) fn join(member_id: &str) -> GroupRequest {
    GroupRequest::JoinGroup(
        JoinGroupRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_session_timeout_ms(SESSION_MS)
            .with_rebalance_timeout_ms(SESSION_MS)
            .with_member_id(s(member_id))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"sub"))]),
    )
}

pub(super) fn join_response(r: Option<GroupResponse>) -> JoinGroupResponse {
    match r {
        Some(GroupResponse::JoinGroup(r)) => r,
        other => panic!("expected a JoinGroup answer, got {other:?}"),
    }
}

pub(super) fn heartbeat(member_id: &str, generation: i32) -> GroupRequest {
    GroupRequest::Heartbeat(
        HeartbeatRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_generation_id(generation)
            .with_member_id(s(member_id)),
    )
}

pub(super) fn heartbeat_error(r: Option<GroupResponse>) -> i16 {
    match r {
        Some(GroupResponse::Heartbeat(r)) => r.error_code,
        other => panic!("expected a Heartbeat answer, got {other:?}"),
    }
}

pub(super) fn sync(member_id: &str, generation: i32, assignment: &'static [u8]) -> GroupRequest {
    GroupRequest::SyncGroup(
        SyncGroupRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_generation_id(generation)
            .with_member_id(s(member_id))
            .with_assignments(vec![SyncGroupRequestAssignment::default()
                .with_member_id(s(member_id))
                .with_assignment(Bytes::from_static(assignment))]),
    )
}

pub(super) fn describe(
    fx: &mut Fixture,
    shard: &mut dyn GroupShard,
    now_ms: u64,
) -> (String, Vec<String>) {
    match fx.call(
        shard,
        now_ms,
        5,
        GroupRequest::DescribeGroups(
            DescribeGroupsRequest::default().with_groups(vec![GroupId(s(GROUP))]),
        ),
    ) {
        Some(GroupResponse::DescribeGroups(r)) => (
            r.groups[0].group_state.to_string(),
            r.groups[0]
                .members
                .iter()
                .map(|m| m.member_id.to_string())
                .collect(),
        ),
        other => panic!("expected a DescribeGroups answer, got {other:?}"),
    }
}

/// A Stable one-member classic group at generation 1 with assignment `a-0`.
pub(super) fn stable_classic_group(fx: &mut Fixture, shard: &mut dyn GroupShard) -> String {
    let first = join_response(fx.call(shard, 0, 9, join("")));
    assert_eq!(first.error_code, ResponseError::MemberIdRequired.code());
    let member = first.member_id.to_string();
    let joined = join_response(fx.call(shard, 0, 9, join(&member)));
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    match fx.call(shard, 0, 5, sync(&member, 1, b"a-0")) {
        Some(GroupResponse::SyncGroup(r)) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    member
}

pub(super) fn group_records(fx: &Fixture, record_type: i16) -> usize {
    let epoch = fx
        .controller
        .read()
        .partition(OFFSETS_TOPIC, 0)
        .unwrap()
        .leader_epoch;
    CoordinatorLog::new(fx.controller.clone(), 0, epoch)
        .read_all()
        .iter()
        .filter_map(|r| GroupRecordKey::decode(r.key.as_deref()?))
        .filter(|k| k.record_type == record_type)
        .count()
}

#[test]
fn classic_member_keeps_its_generation_and_assignment_on_the_new_coordinator() {
    let mut fx = Fixture::new();
    let mut old = fx.load(0);
    let member = stable_classic_group(&mut fx, old.as_mut());
    // Creation (empty record) and the leader's SyncGroup (members and assignment).
    assert_eq!(group_records(&fx, record_type::GROUP_METADATA), 2);

    fx.move_coordinator();
    let mut new = fx.load(1_000);
    assert_eq!(
        heartbeat_error(fx.call(new.as_mut(), 1_000, 4, heartbeat(&member, 1))),
        0,
        "the member's generation is valid on the new coordinator"
    );
    assert_eq!(
        heartbeat_error(fx.call(new.as_mut(), 1_000, 4, heartbeat(&member, 2))),
        ResponseError::IllegalGeneration.code()
    );
    match fx.call(new.as_mut(), 1_000, 5, sync(&member, 1, b"ignored")) {
        Some(GroupResponse::SyncGroup(r)) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(
                r.assignment,
                Bytes::from_static(b"a-0"),
                "persisted assignment"
            );
            assert_eq!(r.protocol_name.as_deref(), Some("range"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        describe(&mut fx, new.as_mut(), 1_000),
        ("Stable".to_owned(), vec![member.clone()])
    );

    // The deposed coordinator cannot write any more: a commit fences it and from then on it
    // never answers (the runtime unloads it and its waiters get NOT_COORDINATOR).
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_generation_id_or_member_epoch(1)
        .with_member_id(s(&member))
        .with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("t")))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(5),
                ]),
        ]);
    assert_eq!(
        fx.call(old.as_mut(), 1_000, 8, GroupRequest::OffsetCommit(commit)),
        None
    );
    assert_eq!(fx.call(old.as_mut(), 1_000, 4, heartbeat(&member, 1)), None);
    assert_eq!(old.next_deadline_ms(), None);
}

#[test]
fn session_timers_restart_when_the_new_coordinator_loads() {
    let mut fx = Fixture::new();
    let mut old = fx.load(0);
    let member = stable_classic_group(&mut fx, old.as_mut());
    fx.move_coordinator();
    // Loaded 8 s after the last heartbeat: the session (10 s) counts from the load.
    let mut new = fx.load(8_000);
    let deadline = new.next_deadline_ms();
    assert_eq!(deadline, Some(8_000 + SESSION_MS as u64));
    assert_eq!(
        heartbeat_error(fx.call(new.as_mut(), 17_000, 4, heartbeat(&member, 1))),
        0
    );
    // No heartbeat for a whole session: the member expires and the group rebalances to Empty.
    new.poll(17_000 + SESSION_MS as u64);
    assert_eq!(
        heartbeat_error(fx.call(new.as_mut(), 27_001, 4, heartbeat(&member, 1))),
        ResponseError::UnknownMemberId.code()
    );
    assert_eq!(
        describe(&mut fx, new.as_mut(), 27_001),
        ("Empty".to_owned(), vec![])
    );
    // The emptied group was persisted: a third coordinator loads it Empty at generation 2.
    fx.move_coordinator();
    let mut third = fx.load(30_000);
    assert_eq!(
        describe(&mut fx, third.as_mut(), 30_000),
        ("Empty".to_owned(), vec![])
    );
    let rejoin = join_response(fx.call(third.as_mut(), 30_000, 9, join(&member)));
    assert_eq!(rejoin.error_code, ResponseError::UnknownMemberId.code());
}

#[test]
fn a_rebalance_in_flight_is_lost_and_the_last_stable_generation_loads() {
    let mut fx = Fixture::new();
    let mut old = fx.load(0);
    let first = stable_classic_group(&mut fx, old.as_mut());
    // A second member starts a rebalance (PreparingRebalance); nothing of it is persisted.
    let pending = join_response(fx.call(old.as_mut(), 100, 9, join("")));
    let second = pending.member_id.to_string();
    assert_eq!(fx.call(old.as_mut(), 100, 9, join(&second)), None, "parked");
    assert_eq!(describe(&mut fx, old.as_mut(), 100).0, "PreparingRebalance");

    fx.move_coordinator();
    let mut new = fx.load(200);
    assert_eq!(
        describe(&mut fx, new.as_mut(), 200),
        ("Stable".to_owned(), vec![first.clone()]),
        "Kafka loads the last persisted generation, Stable"
    );
    assert_eq!(
        heartbeat_error(fx.call(new.as_mut(), 200, 4, heartbeat(&first, 1))),
        0
    );
    assert_eq!(
        join_response(fx.call(new.as_mut(), 200, 9, join(&second))).error_code,
        ResponseError::UnknownMemberId.code(),
        "the member added by the lost rebalance is unknown"
    );
}

#[test]
fn consumer_group_member_keeps_its_epoch_and_assignment_on_the_new_coordinator() {
    let mut fx = Fixture::new();
    let topic_id = fx.topic_id();
    let mut old = fx.load(0);
    let cgh = |epoch: i32, owned: Option<Vec<(uuid::Uuid, Vec<i32>)>>, join: bool| {
        let mut request = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s(GROUP)))
            .with_member_id(s("m1"))
            .with_member_epoch(epoch)
            .with_rebalance_timeout_ms(if join { 60_000 } else { -1 })
            .with_topic_partitions(owned.map(|o| {
                o.into_iter()
                    .map(|(topic_id, partitions)| {
                        consumer_group_heartbeat_request::TopicPartitions::default()
                            .with_topic_id(topic_id)
                            .with_partitions(partitions)
                    })
                    .collect()
            }));
        if join {
            request = request.with_subscribed_topic_names(Some(vec![TopicName(s("t"))]));
        }
        GroupRequest::ConsumerGroupHeartbeat(request)
    };
    let answer = |r: Option<GroupResponse>| match r {
        Some(GroupResponse::ConsumerGroupHeartbeat(r)) => r,
        other => panic!("{other:?}"),
    };
    let joined = answer(fx.call(old.as_mut(), 0, 1, cgh(0, Some(vec![]), true)));
    assert_eq!((joined.error_code, joined.member_epoch), (0, 1));
    let assigned = joined.assignment.unwrap().topic_partitions;
    assert_eq!(assigned[0].partitions, vec![0, 1, 2, 3]);
    assert!(group_records(&fx, record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT) >= 1);

    fx.move_coordinator();
    let mut new = fx.load(1_000);
    let beat = answer(fx.call(
        new.as_mut(),
        1_000,
        1,
        cgh(1, Some(vec![(topic_id, vec![0, 1, 2, 3])]), false),
    ));
    assert_eq!(beat.error_code, 0, "{:?}", beat.error_message);
    assert_eq!(beat.member_epoch, 1, "the member epoch survives the move");
    assert!(beat.assignment.is_none(), "nothing changed for the member");
    let stale = answer(fx.call(new.as_mut(), 1_000, 1, cgh(2, None, false)));
    assert_eq!(stale.error_code, ResponseError::FencedMemberEpoch.code());

    // Committing at the member's epoch is accepted by the new coordinator.
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_generation_id_or_member_epoch(1)
        .with_member_id(s("m1"))
        .with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("t")))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(5),
                ]),
        ]);
    match fx.call(new.as_mut(), 1_000, 9, GroupRequest::OffsetCommit(commit)) {
        Some(GroupResponse::OffsetCommit(r)) => {
            assert_eq!(r.topics[0].partitions[0].error_code, 0)
        }
        other => panic!("{other:?}"),
    }

    // The session timer restarted at load: silence for a session fences the member and the
    // fencing is persisted too (a member tombstone).
    new.poll(1_000 + 45_000);
    assert!(group_records(&fx, record_type::CONSUMER_GROUP_MEMBER_METADATA) >= 2);
    fx.move_coordinator();
    let mut third = fx.load(50_000);
    let gone = answer(fx.call(
        third.as_mut(),
        50_000,
        1,
        cgh(1, Some(vec![(topic_id, vec![0, 1, 2, 3])]), false),
    ));
    assert_eq!(gone.error_code, ResponseError::UnknownMemberId.code());
}

/// `ClusterConfig::coordinator_high_watermark_lag_ms`: a broker that just became leader of the
/// offsets partition has a high watermark behind its predecessor's (it learns it from its
/// followers' next fetches), and an OffsetFetch without `require_stable` reads at it
/// (`GroupCoordinatorService.fetchOffsets` schedules a read operation; `CoordinatorLoaderImpl`
/// leaves what it replayed above the high watermark uncommitted). A commit made just before the
/// move is invisible to such fetches until the lag has passed or the new shard's first write
/// commits; a `require_stable` fetch (a write operation) sees it at once.
#[test]
fn a_commit_just_before_a_move_is_invisible_to_unstable_fetches_until_the_high_watermark_catches_up(
) {
    let mut fx = Fixture::new();
    fx.update_cluster(|state| state.config.coordinator_high_watermark_lag_ms = 100);
    let fetched = |fx: &mut Fixture, shard: &mut dyn GroupShard, now_ms, require_stable| {
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(s("simple")))
            .with_topics(Some(vec![
                offset_fetch_request::OffsetFetchRequestTopic::default()
                    .with_name(TopicName(s("t")))
                    .with_partition_indexes(vec![0]),
            ]))
            .with_require_stable(require_stable);
        match fx.call(shard, now_ms, 7, GroupRequest::OffsetFetch(request)) {
            Some(GroupResponse::OffsetFetch(r)) => r.topics[0].partitions[0].committed_offset,
            other => panic!("expected an OffsetFetch answer, got {other:?}"),
        }
    };
    let commit = |fx: &mut Fixture, shard: &mut dyn GroupShard, now_ms, offset| {
        let answer = fx.call(
            shard,
            now_ms,
            8,
            super::shard_tests::simple_commit("simple", offset),
        );
        match answer {
            Some(GroupResponse::OffsetCommit(r)) => {
                assert_eq!(r.topics[0].partitions[0].error_code, 0)
            }
            other => panic!("expected an OffsetCommit answer, got {other:?}"),
        }
    };

    let mut first = fx.load(0);
    commit(&mut fx, first.as_mut(), 0, 5);
    commit(&mut fx, first.as_mut(), 950, 9);
    assert_eq!(
        fetched(&mut fx, first.as_mut(), 960, false),
        9,
        "no move, no lag"
    );

    fx.move_coordinator();
    let mut second = fx.load(1_000);
    assert_eq!(
        fetched(&mut fx, second.as_mut(), 1_000, false),
        5,
        "above the high watermark"
    );
    assert_eq!(
        fetched(&mut fx, second.as_mut(), 1_000, true),
        9,
        "require_stable sees it"
    );
    assert_eq!(fetched(&mut fx, second.as_mut(), 1_099, false), 5);
    assert_eq!(
        fetched(&mut fx, second.as_mut(), 1_100, false),
        9,
        "caught up"
    );

    // The next coordinator loads more than the lag after the last write: nothing trails.
    fx.move_coordinator();
    let mut third = fx.load(2_000);
    assert_eq!(fetched(&mut fx, third.as_mut(), 2_000, false), 9);

    // A commit just before the next move; the new shard's first write commits the tail too.
    commit(&mut fx, third.as_mut(), 2_990, 12);
    fx.move_coordinator();
    let mut fourth = fx.load(3_000);
    assert_eq!(fetched(&mut fx, fourth.as_mut(), 3_000, false), 9);
    let request = super::shard_tests::simple_commit("other", 1);
    fx.call(fourth.as_mut(), 3_010, 8, request);
    assert_eq!(
        fetched(&mut fx, fourth.as_mut(), 3_020, false),
        12,
        "the write caught it up"
    );

    // Without the lag (the default) an unstable fetch sees the last commit right away.
    fx.update_cluster(|state| state.config.coordinator_high_watermark_lag_ms = 0);
    commit(&mut fx, fourth.as_mut(), 3_990, 13);
    fx.move_coordinator();
    let mut fifth = fx.load(4_000);
    assert_eq!(fetched(&mut fx, fifth.as_mut(), 4_000, false), 13);
}
