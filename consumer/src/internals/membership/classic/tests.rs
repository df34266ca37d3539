//! The classic membership manager on a fake clock: joins (follower, leader, MEMBER_ID_REQUIRED),
//! the callback order of eager and cooperative rebalances, heartbeats and their errors, the
//! poll timer, leaving, and fatal errors.

use std::collections::BTreeSet;

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{
    HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::assignor::protocol::{decode_assignment, encode_assignment, encode_subscription};
use crate::assignor::{Assignment, Subscription};
use crate::config::Assignor;
use crate::internals::context::testing::Parts;
use crate::internals::events::{BackgroundEvent, RebalanceCallback};
use crate::internals::requests::RequestBody;
use crate::internals::subscription_state::FetchState;
use crate::internals::test_support::{all_versions, metadata};
use crate::protocol::ResponseError;
use crate::rt::Duration;

const COORDINATOR: i32 = i32::MAX - 1;

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn set(partitions: &[i32]) -> BTreeSet<TopicPartition> {
    partitions.iter().map(|&p| tp(p)).collect()
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

struct Harness {
    p: Parts,
    m: ClassicMembershipManager,
    commit: CommitRequestManager,
}

fn settings(strategy: Vec<Assignor>, auto_commit: bool) -> ConsumerSettings {
    ConsumerSettings {
        group_id: Some("g".into()),
        enable_auto_commit: auto_commit,
        partition_assignment_strategy: strategy,
        session_timeout_ms: 10_000,
        heartbeat_interval_ms: 3_000,
        max_poll_interval_ms: 60_000,
        ..ConsumerSettings::default()
    }
}

impl Harness {
    fn new(strategy: Vec<Assignor>, auto_commit: bool) -> Self {
        let settings = settings(strategy, auto_commit);
        let commit = CommitRequestManager::new(&settings);
        let mut p = Parts::new(settings);
        p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
        p.coordinator = Some(COORDINATOR);
        p.metadata = metadata(&[(0, 1, 1), (1, 1, 1), (2, 2, 1), (3, 2, 1)]);
        p.subscriptions
            .subscribe(["t".to_owned()].into_iter().collect());
        let m = ClassicMembershipManager::new(&p.settings, p.now)
            .expect("valid settings")
            .expect("a group");
        Self { p, m, commit }
    }

    fn eager() -> Self {
        Self::new(vec![Assignor::Range], false)
    }

    /// Polls the manager once, as the application's prompt answer to a poll request: when
    /// the round asks for an acknowledged poll, the application polls and the manager runs
    /// the next round.
    fn poll(&mut self) -> PollResult {
        let mut result = self.poll_once();
        if std::mem::take(&mut self.p.effects.poll_requested) {
            self.app_polls();
            let mut next = self.poll_once();
            result.requests.append(&mut next.requests);
            result.next_poll_at = next.next_poll_at.or(result.next_poll_at);
        }
        result
    }

    fn poll_once(&mut self) -> PollResult {
        self.p.member = Some(self.m.identity());
        let mut ctx = self.p.ctx();
        self.m.poll(&mut ctx, &mut self.commit)
    }

    fn app_polls(&mut self) {
        let mut ctx = self.p.ctx();
        self.m.on_poll(&mut ctx, true);
    }

    fn respond(&mut self, token: u64, body: ResponseBody) {
        let mut ctx = self.p.ctx();
        self.m.on_response(&mut ctx, token, Ok((body, 9)));
    }

    fn callbacks(&mut self) -> Vec<(u64, RebalanceCallback, BTreeSet<TopicPartition>)> {
        self.p
            .effects
            .background_events
            .drain(..)
            .map(|e| match e {
                BackgroundEvent::RebalanceCallbackNeeded {
                    id,
                    callback,
                    partitions,
                    ..
                } => (id, callback, partitions),
                other => panic!("unexpected event {other:?}"),
            })
            .collect()
    }

    fn complete(&mut self, id: u64) {
        let mut ctx = self.p.ctx();
        self.m.on_callback_completed(&mut ctx, id);
    }

    /// Polls; expects exactly one request and returns it.
    fn one_request(&mut self) -> (u64, RequestBody) {
        let result = self.poll();
        assert_eq!(result.requests.len(), 1, "requests: {:?}", result.requests);
        let request = result.requests.into_iter().next().expect("one request");
        (request.token, request.body)
    }

    /// Drives a follower through JoinGroup and SyncGroup to an assignment, returning the
    /// assigned callback's id.
    fn join_as_follower(&mut self, generation: i32, assigned: &[i32]) -> u64 {
        self.app_polls();
        let (token, body) = self.one_request();
        assert!(matches!(body, RequestBody::JoinGroup(_)), "{body:?}");
        self.respond(
            token,
            join_response(generation, "m-1", "leader-elsewhere", "range"),
        );
        let (token, body) = self.one_request();
        let RequestBody::SyncGroup(sync) = body else {
            panic!("expected SyncGroup, got {body:?}");
        };
        assert!(
            sync.assignments.is_empty(),
            "a follower sends no assignments"
        );
        assert_eq!(sync.generation_id, generation);
        self.respond(token, sync_response(assigned));
        let callbacks = self.callbacks();
        assert_eq!(callbacks.len(), 1, "{callbacks:?}");
        let (id, kind, partitions) = callbacks.into_iter().next().expect("a callback");
        assert_eq!(kind, RebalanceCallback::Assigned);
        assert_eq!(partitions, set(assigned));
        id
    }
}

fn join_response(generation: i32, member: &str, leader: &str, protocol: &str) -> ResponseBody {
    ResponseBody::JoinGroup(
        JoinGroupResponse::default()
            .with_generation_id(generation)
            .with_member_id(s(member))
            .with_leader(s(leader))
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s(protocol))),
    )
}

fn join_error(code: ResponseError, member: &str) -> ResponseBody {
    ResponseBody::JoinGroup(
        JoinGroupResponse::default()
            .with_error_code(code.code())
            .with_generation_id(-1)
            .with_member_id(s(member)),
    )
}

fn sync_response(assigned: &[i32]) -> ResponseBody {
    let assignment = Assignment::new(assigned.iter().map(|&p| tp(p)).collect());
    ResponseBody::SyncGroup(
        SyncGroupResponse::default()
            .with_assignment(encode_assignment(&assignment, 3).expect("encodes")),
    )
}

fn heartbeat_response(code: Option<ResponseError>) -> ResponseBody {
    ResponseBody::Heartbeat(
        HeartbeatResponse::default().with_error_code(code.map_or(0, |c| c.code())),
    )
}

#[test]
fn nothing_happens_before_the_application_polls() {
    let mut h = Harness::eager();
    assert!(h.poll().requests.is_empty(), "joining waits for poll()");
    h.app_polls();
    h.p.coordinator = None;
    assert!(h.poll().requests.is_empty(), "and for the coordinator");
    h.p.coordinator = Some(COORDINATOR);
    let (_, body) = h.one_request();
    let RequestBody::JoinGroup(join) = body else {
        panic!("expected JoinGroup, got {body:?}");
    };
    assert_eq!(join.group_id.0.as_str(), "g");
    assert_eq!(join.member_id.as_str(), "");
    assert_eq!(join.session_timeout_ms, 10_000);
    assert_eq!(join.rebalance_timeout_ms, 60_000);
    assert_eq!(join.protocol_type.as_str(), "consumer");
    assert_eq!(join.protocols.len(), 1);
    assert_eq!(join.protocols[0].name.as_str(), "range");
    assert_eq!(h.m.state(), MemberState::PreparingRebalance);
}

#[test]
fn member_id_required_rejoins_at_once_with_the_given_id() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    h.respond(token, join_error(ResponseError::MemberIdRequired, "m-1"));
    assert_eq!(h.m.state(), MemberState::Unjoined);
    let (_, body) = h.one_request();
    let RequestBody::JoinGroup(join) = body else {
        panic!("expected JoinGroup, got {body:?}");
    };
    assert_eq!(
        join.member_id.as_str(),
        "m-1",
        "KIP-394: rejoin with the id"
    );
}

#[test]
fn follower_gets_partitions_fetchable_only_after_the_assigned_callback() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 2]);
    assert_eq!(h.m.state(), MemberState::Stable);
    assert_eq!(h.p.subscriptions.assigned(), set(&[0, 2]));
    for p in [0, 2] {
        h.p.subscriptions
            .set_fetch_state(&tp(p), FetchState::Fetching);
    }
    assert!(
        h.p.subscriptions.fetchable_partitions().is_empty(),
        "not fetchable while on_partitions_assigned runs (KAFKA-16107)"
    );
    h.complete(id);
    assert_eq!(h.p.subscriptions.fetchable_partitions(), vec![tp(0), tp(2)]);
    let identity = h.m.identity();
    assert_eq!(
        (identity.generation_id, identity.member_id.as_str()),
        (1, "m-1")
    );
    assert!(identity.stable && !identity.rebalancing);
}

#[test]
fn leader_assigns_every_member_with_the_chosen_assignor() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    let subscription = encode_subscription(&Subscription::new(["t"]), 3).expect("encodes");
    let members = ["m-1", "m-2"]
        .into_iter()
        .map(|id| {
            JoinGroupResponseMember::default()
                .with_member_id(s(id))
                .with_metadata(subscription.clone())
        })
        .collect();
    let ResponseBody::JoinGroup(response) = join_response(3, "m-1", "m-1", "range") else {
        unreachable!()
    };
    h.respond(
        token,
        ResponseBody::JoinGroup(response.with_members(members)),
    );
    let (_, body) = h.one_request();
    let RequestBody::SyncGroup(sync) = body else {
        panic!("expected SyncGroup, got {body:?}");
    };
    let mut by_member: Vec<(String, Vec<TopicPartition>)> = sync
        .assignments
        .iter()
        .map(|a| {
            let assignment = decode_assignment(&a.assignment).expect("decodes");
            (a.member_id.to_string(), assignment.partitions)
        })
        .collect();
    by_member.sort();
    assert_eq!(
        by_member,
        vec![
            ("m-1".to_owned(), vec![tp(0), tp(1)]),
            ("m-2".to_owned(), vec![tp(2), tp(3)]),
        ],
        "range splits the 4 partitions"
    );
    assert_eq!(
        h.p.subscriptions.metadata_topics(),
        ["t".to_owned()].into_iter().collect()
    );
}

#[test]
fn leader_waits_for_metadata_of_topics_it_has_not_seen() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    let other = encode_subscription(&Subscription::new(["u"]), 3).expect("encodes");
    let ResponseBody::JoinGroup(response) = join_response(1, "m-1", "m-1", "range") else {
        unreachable!()
    };
    let members = vec![JoinGroupResponseMember::default()
        .with_member_id(s("m-1"))
        .with_metadata(other)];
    h.respond(
        token,
        ResponseBody::JoinGroup(response.with_members(members)),
    );
    assert!(
        h.p.effects.metadata_refresh,
        "the leader asks for the topics' metadata"
    );
    assert!(
        h.poll().requests.is_empty(),
        "no SyncGroup before the refresh"
    );
    h.p.metadata_version += 1;
    let (_, body) = h.one_request();
    assert!(matches!(body, RequestBody::SyncGroup(_)), "{body:?}");
}

#[test]
fn heartbeats_every_interval_and_rebalance_in_progress_revokes_then_rejoins() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    h.p.advance_ms(2_999);
    assert!(h.poll().requests.is_empty(), "not due yet");
    h.p.advance_ms(1);
    let (token, body) = h.one_request();
    let RequestBody::Heartbeat(hb) = body else {
        panic!("expected Heartbeat, got {body:?}");
    };
    assert_eq!((hb.generation_id, hb.member_id.as_str()), (1, "m-1"));
    h.respond(
        token,
        heartbeat_response(Some(ResponseError::RebalanceInProgress)),
    );

    // Eager: everything is revoked (and stops fetching) before JoinGroup goes out.
    assert!(
        h.poll().requests.is_empty(),
        "JoinGroup waits for the revoke callback"
    );
    let callbacks = h.callbacks();
    assert_eq!(callbacks.len(), 1);
    let (revoke_id, kind, partitions) = callbacks[0].clone();
    assert_eq!(
        (kind, partitions),
        (RebalanceCallback::Revoked, set(&[0, 1]))
    );
    h.p.subscriptions
        .set_fetch_state(&tp(0), FetchState::Fetching);
    assert!(
        h.p.subscriptions.fetchable_partitions().is_empty(),
        "revoking stops fetching"
    );
    assert!(
        h.m.identity().stable,
        "commits still allowed inside the callback"
    );
    h.complete(revoke_id);
    assert!(h.p.subscriptions.assigned().is_empty());
    let (_, body) = h.one_request();
    let RequestBody::JoinGroup(join) = body else {
        panic!("expected JoinGroup, got {body:?}");
    };
    assert_eq!(join.member_id.as_str(), "m-1", "rejoins with its member id");
}

#[test]
fn a_stale_heartbeat_error_does_not_reset_a_newer_generation() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    h.p.advance_ms(3_000);
    let (token, _) = h.one_request();
    // Meanwhile the member moved to generation 2 (simulated by answering a rejoin).
    h.m.generation.generation_id = 2;
    h.respond(
        token,
        heartbeat_response(Some(ResponseError::IllegalGeneration)),
    );
    assert_eq!(h.m.generation().generation_id, 2, "KAFKA-9823");
    assert_eq!(h.m.state(), MemberState::Stable);
}

#[test]
fn unknown_member_resets_the_generation_and_the_partitions_are_lost() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    h.p.advance_ms(3_000);
    let (token, _) = h.one_request();
    h.respond(
        token,
        heartbeat_response(Some(ResponseError::UnknownMemberId)),
    );
    assert_eq!(h.m.state(), MemberState::Unjoined);
    assert_eq!(h.m.generation(), &Generation::none());
    assert!(h.poll().requests.is_empty());
    let callbacks = h.callbacks();
    assert_eq!(callbacks.len(), 1);
    assert_eq!(
        (callbacks[0].1, callbacks[0].2.clone()),
        (RebalanceCallback::Lost, set(&[0, 1])),
        "lost, not revoked: another member may own them already"
    );
    h.complete(callbacks[0].0);
    let (_, body) = h.one_request();
    let RequestBody::JoinGroup(join) = body else {
        panic!("expected JoinGroup, got {body:?}");
    };
    assert_eq!(
        join.member_id.as_str(),
        "",
        "UNKNOWN_MEMBER_ID drops the member id"
    );
}

#[test]
fn commit_reset_for_an_old_generation_is_ignored_and_for_the_current_one_applies() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(4, &[0]);
    h.complete(id);
    let stale = GenerationReset {
        generation_id: 3,
        keep_member_id: true,
        reason: "late commit response".into(),
    };
    h.m.on_generation_reset(&mut h.p.ctx(), &stale);
    assert_eq!(h.m.state(), MemberState::Stable);
    let current = GenerationReset {
        generation_id: 4,
        ..stale
    };
    h.m.on_generation_reset(&mut h.p.ctx(), &current);
    assert_eq!(h.m.state(), MemberState::Unjoined);
    assert_eq!(
        h.m.generation().member_id,
        "m-1",
        "ILLEGAL_GENERATION keeps the id"
    );
}

#[test]
fn poll_timeout_leaves_and_rejoins_only_after_the_next_poll() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    // Keep the session alive; the application never polls again.
    let mut left = None;
    for _ in 0..25 {
        h.p.advance_ms(3_000);
        let result = h.poll();
        for request in result.requests {
            match request.body {
                RequestBody::Heartbeat(_) => {
                    h.respond(request.token, heartbeat_response(None));
                }
                RequestBody::LeaveGroup(leave) => left = Some(leave),
                other => panic!("unexpected {other:?}"),
            }
        }
        if left.is_some() {
            break;
        }
    }
    let leave = left.expect("a LeaveGroup after max.poll.interval.ms");
    assert_eq!(leave.members[0].member_id.as_str(), "m-1");
    assert_eq!(h.m.state(), MemberState::Unjoined);
    // The loss is queued with the leave, so the next poll runs it before handing out any
    // buffered record of the lost partitions (kafka-8104 scenario).
    let callbacks = h.callbacks();
    assert_eq!(callbacks.len(), 1, "{callbacks:?}");
    assert_eq!(callbacks[0].1, RebalanceCallback::Lost);
    assert!(
        !h.p.subscriptions.fetchable_partitions().contains(&tp(0)),
        "fetching of the lost partition stopped"
    );
    h.p.advance_ms(10_000);
    assert!(h.poll().requests.is_empty(), "no rejoin without a poll");
    h.complete(callbacks[0].0);
    assert!(
        h.poll().requests.is_empty(),
        "still no rejoin without a poll"
    );
    h.app_polls();
    let (_, body) = h.one_request();
    assert!(matches!(body, RequestBody::JoinGroup(_)), "{body:?}");
}

#[test]
fn session_expiry_marks_the_coordinator_unknown() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    h.p.advance_ms(3_000);
    let _unanswered = h.one_request();
    h.p.advance_ms(7_000);
    h.poll();
    assert!(h.p.effects.coordinator_unknown.is_some());
}

#[test]
fn session_expiry_gives_up_the_unanswered_heartbeat() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    h.p.advance_ms(3_000);
    let (unanswered, body) = h.one_request();
    assert!(matches!(body, RequestBody::Heartbeat(_)), "{body:?}");
    h.p.advance_ms(7_000);
    h.poll();
    assert!(h.p.effects.coordinator_unknown.is_some());
    h.p.advance_ms(100);
    let (fresh, body) = h.one_request();
    assert!(
        matches!(body, RequestBody::Heartbeat(_)),
        "the rediscovered coordinator gets a new heartbeat, not a wait for the old one's request \
         timeout: {body:?}"
    );
    assert_ne!(fresh, unanswered);
}

/// Joins as a follower of generation 1 owning `owned`, then lets a whole session pass
/// without an answer to the heartbeat sent meanwhile.
fn lapsed_follower(owned: &[i32]) -> Harness {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, owned);
    h.complete(id);
    h.p.advance_ms(3_000);
    let (_, body) = h.one_request();
    assert!(matches!(body, RequestBody::Heartbeat(_)), "{body:?}");
    h.p.advance_ms(7_000);
    h.poll();
    assert!(h.m.session_lapsed());
    h
}

/// Java's heartbeat thread disconnects from the coordinator when the session lapses, which
/// fails the SyncGroup still out; the answer that arrives later (held behind a stalled
/// connection, or after a cut heals) is for a member the coordinator has most likely removed
/// already, and applying it made that member own partitions of the next generation.
#[test]
fn a_sync_group_answer_after_the_session_lapsed_is_not_applied() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    h.respond(token, join_response(1, "m-1", "x", "range"));
    let (sync_token, body) = h.one_request();
    assert!(matches!(body, RequestBody::SyncGroup(_)), "{body:?}");
    h.p.advance_ms(10_000);
    h.poll();
    assert!(h.p.effects.coordinator_unknown.is_some());
    assert!(h.m.session_lapsed());
    h.respond(sync_token, sync_response(&[0]));
    assert!(h.callbacks().is_empty(), "no partition assigned");
    assert!(h.p.subscriptions.assigned().is_empty());
    assert_eq!(h.m.state(), MemberState::Unjoined);
    h.p.advance_ms(1_000);
    let (_, body) = h.one_request();
    assert!(
        matches!(body, RequestBody::JoinGroup(_)),
        "rejoins instead: {body:?}"
    );
}

#[test]
fn closing_after_the_session_lapsed_loses_the_partitions() {
    let mut h = lapsed_follower(&[0, 1]);
    h.m.leave(None, GroupMembershipOperation::Default);
    h.poll();
    let callbacks = h.callbacks();
    assert_eq!(
        (callbacks[0].1, callbacks[0].2.clone()),
        (RebalanceCallback::Lost, set(&[0, 1]))
    );
}

#[test]
fn a_heartbeat_answer_ends_the_lapse() {
    let mut h = lapsed_follower(&[0]);
    h.p.advance_ms(3_000);
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::Heartbeat(_)), "{body:?}");
    h.respond(token, heartbeat_response(None));
    assert!(!h.m.session_lapsed());
    h.m.leave(None, GroupMembershipOperation::Default);
    h.poll();
    assert_eq!(h.callbacks()[0].1, RebalanceCallback::Revoked);
}

/// Java's heartbeat thread goes on while `close` runs `onPartitionsRevoked`: a listener slower
/// than the session must not get the member removed before it gave its partitions up.
#[test]
fn heartbeats_go_on_while_the_leave_waits_for_the_listener() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    h.m.leave(None, GroupMembershipOperation::Default);
    assert!(h.poll().requests.is_empty());
    assert_eq!(h.callbacks()[0].1, RebalanceCallback::Revoked);
    h.p.advance_ms(3_000);
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::Heartbeat(_)), "{body:?}");
    h.respond(token, heartbeat_response(None));
    assert!(!h.m.session_lapsed());
}

#[test]
fn cooperative_revokes_only_what_moved_then_rejoins() {
    let mut h = Harness::new(vec![Assignor::CooperativeSticky], false);
    assert_eq!(h.m.protocol(), RebalanceProtocol::Cooperative);
    let id = h.join_as_follower(1, &[0, 1, 2]);
    h.complete(id);
    h.m.request_rejoin("test");
    let (token, body) = h.one_request();
    let RequestBody::JoinGroup(join) = body else {
        panic!("expected JoinGroup, got {body:?}");
    };
    assert!(
        h.callbacks().is_empty(),
        "cooperative keeps its partitions while joining"
    );
    let metadata = crate::assignor::protocol::decode_subscription(&join.protocols[0].metadata)
        .expect("decodes");
    assert_eq!(metadata.owned_partitions, vec![tp(0), tp(1), tp(2)]);
    assert_eq!(metadata.generation_id, Some(1));
    h.respond(
        token,
        join_response(2, "m-1", "other", "cooperative-sticky"),
    );
    let (token, _) = h.one_request();
    h.respond(token, sync_response(&[0, 1]));
    let callbacks = h.callbacks();
    assert_eq!(callbacks.len(), 1);
    assert_eq!(
        (callbacks[0].1, callbacks[0].2.clone()),
        (RebalanceCallback::Revoked, set(&[2]))
    );
    h.complete(callbacks[0].0);
    let callbacks = h.callbacks();
    assert_eq!(
        (callbacks[0].1, callbacks[0].2.clone()),
        (RebalanceCallback::Assigned, BTreeSet::new()),
        "assigned is called even with nothing new"
    );
    h.complete(callbacks[0].0);
    assert_eq!(h.p.subscriptions.assigned(), set(&[0, 1]));
    let (_, body) = h.one_request();
    assert!(
        matches!(body, RequestBody::JoinGroup(_)),
        "revocation triggers a rejoin"
    );
}

#[test]
fn auto_commit_before_revocation_precedes_the_revoke_callback() {
    let mut h = Harness::new(vec![Assignor::Range], true);
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    h.commit.on_poll(
        h.p.now,
        [(tp(0), crate::types::OffsetAndMetadata::new(42))]
            .into_iter()
            .collect(),
    );
    h.m.request_rejoin("test");
    h.poll();
    assert!(
        h.callbacks().is_empty(),
        "the callback waits for the commit"
    );
    assert!(h.commit.has_pending_commits());
    // The commit manager sends it (stable member, generation 1).
    let mut ctx = h.p.ctx();
    let sent = h.commit.poll(&mut ctx);
    let RequestBody::OffsetCommit(commit) = &sent.requests[0].body else {
        panic!("expected OffsetCommit");
    };
    assert_eq!(commit.generation_id_or_member_epoch, 1);
    assert_eq!(commit.member_id.as_str(), "m-1");
    // The commit never answers: after half the rebalance timeout the callback goes out anyway.
    h.p.advance_ms(29_999);
    h.app_polls();
    h.poll();
    assert!(h.callbacks().is_empty(), "still waiting for the commit");
    h.p.advance_ms(1);
    h.poll();
    let callbacks = h.callbacks();
    assert_eq!(callbacks[0].1, RebalanceCallback::Revoked);
}

#[test]
fn leave_revokes_then_sends_leave_group_then_completes() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    let (completion, receiver) = Completion::new("unsubscribe", None, 0);
    h.m.leave(Some(completion), GroupMembershipOperation::Default);
    assert!(h.poll().requests.is_empty());
    let callbacks = h.callbacks();
    assert_eq!(
        (callbacks[0].1, callbacks[0].2.clone()),
        (RebalanceCallback::Revoked, set(&[0, 1]))
    );
    h.complete(callbacks[0].0);
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::LeaveGroup(_)), "{body:?}");
    assert!(
        receiver.borrow().is_none(),
        "done only when the leave is answered"
    );
    h.respond(
        token,
        ResponseBody::LeaveGroup(LeaveGroupResponse::default()),
    );
    assert!(matches!(receiver.borrow().as_ref(), Some(Ok(()))));
    assert!(!h.p.subscriptions.has_auto_assigned_partitions());
    assert_eq!(h.m.generation(), &Generation::none());
}

#[test]
fn static_members_leave_without_leave_group() {
    let mut settings = settings(vec![Assignor::Range], false);
    settings.group_instance_id = Some("i-1".into());
    let mut h = Harness::eager();
    h.m = ClassicMembershipManager::new(&settings, h.p.now)
        .expect("valid")
        .expect("group");
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    let (completion, receiver) = Completion::new("close", None, 0);
    h.m.leave(Some(completion), GroupMembershipOperation::Default);
    h.poll();
    let callbacks = h.callbacks();
    h.complete(callbacks[0].0);
    assert!(
        h.poll().requests.is_empty(),
        "KIP-345: a static member keeps its place until the session times out"
    );
    assert!(matches!(receiver.borrow().as_ref(), Some(Ok(()))));
}

#[test]
fn fenced_instance_is_fatal_and_reported_on_every_poll() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    h.respond(token, join_error(ResponseError::FencedInstanceId, ""));
    assert!(matches!(
        h.p.effects.errors.as_slice(),
        [Error::Fenced { .. }]
    ));
    h.p.effects.errors.clear();
    assert!(h.poll().requests.is_empty(), "a fenced member stops");
    h.app_polls();
    assert!(matches!(
        h.p.effects.errors.as_slice(),
        [Error::Fenced { .. }]
    ));
}

#[test]
fn coordinator_errors_back_off_and_mark_the_coordinator_unknown() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    h.respond(token, join_error(ResponseError::NotCoordinator, ""));
    assert!(h.p.effects.coordinator_unknown.is_some());
    assert!(h.poll().requests.is_empty(), "backing off");
    h.p.advance_ms(200);
    let (_, body) = h.one_request();
    assert!(matches!(body, RequestBody::JoinGroup(_)));
}

#[test]
fn a_late_sync_response_after_leaving_is_ignored() {
    let mut h = Harness::eager();
    h.app_polls();
    let (token, _) = h.one_request();
    h.respond(token, join_response(1, "m-1", "x", "range"));
    let (sync_token, _) = h.one_request();
    h.m.leave(None, GroupMembershipOperation::Default);
    h.poll();
    h.respond(sync_token, sync_response(&[0]));
    assert!(h.callbacks().is_empty());
    assert!(h.p.subscriptions.assigned().is_empty());
    h.p.advance_ms(Duration::from_secs(1).as_millis() as u64);
}

/// Java's `shouldSendLeaveGroupRequest`: which closes send LeaveGroup. Listeners see the
/// revocation either way.
#[test]
fn close_options_choose_whether_leave_group_is_sent() {
    use GroupMembershipOperation::{Default, LeaveGroup, RemainInGroup};
    let cases = [
        (None, Default, true),
        (None, LeaveGroup, true),
        (None, RemainInGroup, false),
        (Some("i-1"), Default, false),
        (Some("i-1"), LeaveGroup, true),
        (Some("i-1"), RemainInGroup, false),
    ];
    for (instance_id, operation, sends_leave_group) in cases {
        let mut settings = settings(vec![Assignor::Range], false);
        settings.group_instance_id = instance_id.map(str::to_owned);
        let mut h = Harness::eager();
        h.m = ClassicMembershipManager::new(&settings, h.p.now)
            .expect("valid")
            .expect("group");
        let id = h.join_as_follower(1, &[0]);
        h.complete(id);
        let (completion, receiver) = Completion::new("close", None, 0);
        h.m.leave(Some(completion), operation);
        h.poll();
        let callbacks = h.callbacks();
        assert_eq!(callbacks[0].1, RebalanceCallback::Revoked);
        h.complete(callbacks[0].0);
        let case = format!("{instance_id:?} {operation:?}");
        if sends_leave_group {
            let (token, body) = h.one_request();
            let RequestBody::LeaveGroup(leave) = body else {
                panic!("{case}: {body:?}")
            };
            assert_eq!(
                leave.members[0].group_instance_id.as_deref(),
                instance_id,
                "{case}"
            );
            h.respond(
                token,
                ResponseBody::LeaveGroup(LeaveGroupResponse::default()),
            );
        } else {
            assert!(h.poll().requests.is_empty(), "{case}");
        }
        assert!(matches!(receiver.borrow().as_ref(), Some(Ok(()))), "{case}");
    }
}

/// The application stalls while a revocation waits for it; the poll timer expires and the
/// member leaves: the revocation, not started yet, must run as a loss (the partitions may
/// already be someone else's), and no second callback tells the application about them.
#[test]
fn a_revocation_not_started_before_the_poll_timer_expired_runs_as_a_loss() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    h.p.advance_ms(3_000);
    let (token, _) = h.one_request();
    h.respond(
        token,
        heartbeat_response(Some(ResponseError::RebalanceInProgress)),
    );
    h.poll();
    let events: Vec<BackgroundEvent> = h.p.effects.background_events.drain(..).collect();
    let [BackgroundEvent::RebalanceCallbackNeeded {
        id: revoke_id,
        callback: RebalanceCallback::Revoked,
        became_lost,
        ..
    }] = events.as_slice()
    else {
        panic!("one revoke callback: {events:?}")
    };
    assert!(!became_lost.load(std::sync::atomic::Ordering::SeqCst));
    let mut left = false;
    for _ in 0..25 {
        h.p.advance_ms(3_000);
        for request in h.poll().requests {
            match request.body {
                RequestBody::Heartbeat(_) => {
                    h.respond(request.token, heartbeat_response(None));
                }
                RequestBody::LeaveGroup(_) => left = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        if left {
            break;
        }
    }
    assert!(left, "a LeaveGroup after max.poll.interval.ms");
    assert!(
        became_lost.load(std::sync::atomic::Ordering::SeqCst),
        "the queued revocation now runs as on_partitions_lost"
    );
    h.complete(*revoke_id);
    h.app_polls();
    h.poll();
    assert!(
        h.callbacks().is_empty(),
        "the partitions were reported once (lost), not again"
    );
    assert!(h.p.subscriptions.assigned().is_empty());
}

/// KAFKA-14196 (Java's `maybeMarkPartitionsPendingRevocation` and `canCommit`): an eager
/// join prepare with auto-commit starts right after an acknowledged poll, and everything owned
/// stops fetching before the commit goes out.
#[test]
fn eager_join_prepare_waits_for_an_acknowledged_poll_and_stops_fetching_before_committing() {
    let mut h = Harness::new(vec![Assignor::Range], true);
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    for p in [0, 1] {
        h.p.subscriptions
            .set_fetch_state(&tp(p), FetchState::Fetching);
    }
    h.commit.on_poll(
        h.p.now,
        [(tp(0), crate::types::OffsetAndMetadata::new(42))]
            .into_iter()
            .collect(),
    );
    h.m.request_rejoin("test");
    h.poll_once();
    assert!(std::mem::take(&mut h.p.effects.poll_requested));
    assert!(!h.commit.has_pending_commits(), "waits for the poll");
    assert_eq!(h.p.subscriptions.fetchable_partitions().len(), 2);
    h.app_polls();
    h.poll_once();
    assert!(h.commit.has_pending_commits());
    assert!(
        h.p.subscriptions.fetchable_partitions().is_empty(),
        "nothing fetched (or handed out) past what the commit carries"
    );
}

/// A metadata response holding topic `t` (4 partitions) and `u` (2 partitions, id 2).
fn metadata_with_u() -> crate::network::Metadata {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};
    let mut response = crate::internals::test_support::metadata_response(&[
        (0, 1, 1),
        (1, 1, 1),
        (2, 2, 1),
        (3, 2, 1),
    ]);
    let partitions = (0..2)
        .map(|p| {
            MetadataResponsePartition::default()
                .with_partition_index(p)
                .with_leader_id(BrokerId(1))
                .with_leader_epoch(1)
        })
        .collect();
    response.topics.push(
        MetadataResponseTopic::default()
            .with_name(Some(TopicName(s("u"))))
            .with_topic_id(uuid::Uuid::from_u128(2))
            .with_partitions(partitions),
    );
    let mut md = crate::network::Metadata::default();
    md.update(&response, crate::network::MetadataScope::AllTopics);
    md
}

/// Issue #27 bug 1: the group subscribes to `t` and `u`; `u` does not exist when the leader
/// assigns, so the assignment leaves it out. When `u` appears in the metadata the leader must
/// rejoin (Java's `assignmentSnapshot` vs `metadataSnapshot` over the group's topics), or `u`
/// is never consumed.
#[test]
fn leader_rejoins_when_a_subscribed_topic_appears_after_the_assignment() {
    let mut h = Harness::eager();
    h.p.subscriptions
        .subscribe(["t".to_owned(), "u".to_owned()].into_iter().collect());
    h.app_polls();
    let (token, _) = h.one_request();
    let subscription = encode_subscription(&Subscription::new(["t", "u"]), 3).expect("encodes");
    let ResponseBody::JoinGroup(response) = join_response(1, "m-1", "m-1", "range") else {
        unreachable!()
    };
    let members = vec![JoinGroupResponseMember::default()
        .with_member_id(s("m-1"))
        .with_metadata(subscription)];
    h.respond(
        token,
        ResponseBody::JoinGroup(response.with_members(members)),
    );
    // A metadata refresh answers without `u`: the leader assigns what exists.
    h.p.metadata_version += 1;
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::SyncGroup(_)), "{body:?}");
    h.respond(token, sync_response(&[0, 1, 2, 3]));
    let callbacks = h.callbacks();
    assert_eq!(callbacks.len(), 1, "{callbacks:?}");
    h.complete(callbacks[0].0);
    assert_eq!(h.m.state, MemberState::Stable);
    assert!(h.poll().requests.is_empty(), "stable: nothing to send yet");
    assert!(h.m.rejoin_reason.is_none(), "nothing changed yet");

    h.p.metadata = metadata_with_u();
    h.p.metadata_version += 1;
    h.poll();
    assert!(
        h.m.rejoin_reason.is_some(),
        "a subscribed topic appeared after the assignment: the leader must rejoin"
    );
}

/// Issue #18 (request storms): a coordinator that keeps refusing the member after letting it
/// join (here: every SyncGroup answered UNKNOWN_MEMBER_ID) used to get a JoinGroup and a
/// SyncGroup per round trip, since these errors rejoin at once (as in Java). The first three
/// refusals of a run still rejoin at once (a normal join takes a MEMBER_ID_REQUIRED and maybe a
/// REBALANCE_IN_PROGRESS); later ones wait a backoff from `retry.backoff.ms` doubling to
/// `retry.backoff.max.ms`, until a join completes.
#[test]
fn repeated_refusals_without_a_completed_join_back_off() {
    let mut h = Harness::eager();
    h.app_polls();
    let mut waits_ms = Vec::new();
    let mut join = Some(h.one_request());
    for round in 0..6 {
        let (token, body) = join.take().unwrap_or_else(|| h.one_request());
        assert!(matches!(body, RequestBody::JoinGroup(_)), "{body:?}");
        h.respond(token, join_response(round + 1, "m-1", "elsewhere", "range"));
        let (token, body) = h.one_request();
        assert!(matches!(body, RequestBody::SyncGroup(_)), "{body:?}");
        h.respond(
            token,
            ResponseBody::SyncGroup(
                SyncGroupResponse::default().with_error_code(ResponseError::UnknownMemberId.code()),
            ),
        );
        let r = h.poll();
        if round < 3 {
            assert_eq!(r.requests.len(), 1, "free retry {round}: at once");
            let request = r.requests.into_iter().next().expect("one");
            join = Some((request.token, request.body));
            continue;
        }
        assert!(r.requests.is_empty(), "round {round} waits: {r:?}");
        let wake = r.next_poll_at.expect("woken when the backoff ends");
        waits_ms.push((wake - h.p.now).as_millis());
        h.p.now = wake;
    }
    assert_eq!(waits_ms.len(), 3, "{waits_ms:?}");
    assert!((80..120).contains(&waits_ms[0]), "{waits_ms:?}");
    assert!((160..240).contains(&waits_ms[1]), "{waits_ms:?}");
    assert!((320..480).contains(&waits_ms[2]), "{waits_ms:?}");

    // A completed join ends the run: the next refusal rejoins at once.
    let (token, _) = h.one_request();
    h.respond(token, join_response(9, "m-1", "elsewhere", "range"));
    let (token, _) = h.one_request();
    h.respond(token, sync_response(&[]));
    for (id, _, _) in h.callbacks() {
        h.complete(id);
    }
    h.p.advance_ms(3_000);
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::Heartbeat(_)), "{body:?}");
    let rebalancing = heartbeat_response(Some(ResponseError::RebalanceInProgress));
    h.respond(token, rebalancing);
    h.app_polls();
    assert!(h.poll().requests.is_empty(), "join prepare first");
    for (id, _, _) in h.callbacks() {
        h.complete(id);
    }
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::JoinGroup(_)), "{body:?}");
    h.respond(token, join_error(ResponseError::UnknownMemberId, ""));
    let (_, body) = h.one_request();
    assert!(
        matches!(body, RequestBody::JoinGroup(_)),
        "a new run rejoins at once: {body:?}"
    );
}

/// `enforce_rebalance` (Java's `KafkaConsumer.enforceRebalance`): a member in a generation
/// revokes (eager: everything) at the next poll and rejoins with its member id; the reason is
/// the JoinGroup's reason.
#[test]
fn enforce_rebalance_revokes_and_rejoins_a_member_in_a_generation() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    assert!(h.poll().requests.is_empty(), "nothing due");
    // Through `Membership`, as the background task calls it.
    let fresh = ClassicMembershipManager::new(&h.p.settings, h.p.now)
        .expect("valid settings")
        .expect("a group");
    let mut membership = crate::internals::membership::Membership::Classic(Box::new(
        std::mem::replace(&mut h.m, fresh),
    ));
    membership.enforce_rebalance("the application asked".to_owned());
    let crate::internals::membership::Membership::Classic(m) = membership else {
        unreachable!("built as classic")
    };
    h.m = *m;
    assert!(
        h.poll().requests.is_empty(),
        "JoinGroup waits for the revoke callback"
    );
    let callbacks = h.callbacks();
    assert_eq!(callbacks.len(), 1, "{callbacks:?}");
    let (revoke_id, kind, partitions) = callbacks[0].clone();
    assert_eq!(
        (kind, partitions),
        (RebalanceCallback::Revoked, set(&[0, 1]))
    );
    h.complete(revoke_id);
    let (_, body) = h.one_request();
    let RequestBody::JoinGroup(join) = body else {
        panic!("expected JoinGroup, got {body:?}");
    };
    assert_eq!(join.member_id.as_str(), "m-1", "rejoins with its member id");
    let reason = join.reason.as_ref().map(|r| r.as_str().to_owned());
    assert!(
        reason
            .as_deref()
            .is_some_and(|r| r.contains("the application asked")),
        "{reason:?}"
    );
}

/// Only an auto-committing member waits for the application's next poll before it prepares to
/// rejoin (KAFKA-14196: the commit before revocation must not race records still being
/// handed out); without auto-commit nothing is committed there, so the revocation is asked
/// for at once.
#[test]
fn without_auto_commit_the_revocation_does_not_wait_for_the_application() {
    let mut h = Harness::eager();
    let id = h.join_as_follower(1, &[0, 1]);
    h.complete(id);
    h.p.advance_ms(3_000);
    let (token, body) = h.one_request();
    assert!(matches!(body, RequestBody::Heartbeat(_)), "{body:?}");
    h.respond(
        token,
        heartbeat_response(Some(ResponseError::RebalanceInProgress)),
    );
    let _ = h.poll_once();
    let callbacks = h.callbacks();
    assert_eq!(
        callbacks.len(),
        1,
        "the revocation is asked for without an application poll: {callbacks:?}"
    );
    assert_eq!(callbacks[0].1, RebalanceCallback::Revoked);
}

/// Before its first join a member has Java's `Generation.NO_GENERATION`: generation -1
/// (`OffsetCommitRequest.DEFAULT_GENERATION_ID`, what a commit outside the group carries) and
/// no member id, and it is not stable.
#[test]
fn a_member_without_a_generation_reports_generation_minus_one() {
    let mut h = Harness::eager();
    let identity = h.m.identity();
    assert_eq!(
        (
            identity.generation_id,
            identity.member_id.as_str(),
            identity.stable
        ),
        (-1, "", false)
    );
    let id = h.join_as_follower(4, &[0]);
    h.complete(id);
    assert_eq!(h.m.identity().generation_id, 4);
}

/// `is_leaving` says whether a leave (`unsubscribe` / `close`) is under way (a `subscribe`
/// meanwhile is refused): not for a member in its generation, yes once a leave started.
#[test]
fn is_leaving_only_once_a_leave_started() {
    let mut h = Harness::eager();
    assert!(!h.m.is_leaving(), "before joining");
    let id = h.join_as_follower(1, &[0]);
    h.complete(id);
    assert!(!h.m.is_leaving(), "in a generation");
    h.m.leave(None, GroupMembershipOperation::Default);
    assert!(h.m.is_leaving());
}
