//! The KIP-848 membership manager on a fake clock: joining, the heartbeat field rules,
//! reconciliation order (and its abort when fenced), fencing, the poll timer, leaving, static
//! members, and every fatal error code.

use std::collections::BTreeSet;

use kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment, TopicPartitions as ResponseTopicPartitions,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, OffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::internals::context::testing::Parts;
use crate::internals::events::BackgroundEvent;
use crate::internals::requests::{topic_name, RequestBody};
use crate::internals::subscription_state::FetchState;
use crate::internals::test_support::{all_versions, metadata};
use crate::types::OffsetAndMetadata;

const COORDINATOR: i32 = i32::MAX - 1;
const TOPIC: Uuid = Uuid::from_u128(1);
const UNKNOWN_TOPIC: Uuid = Uuid::from_u128(99);

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn set(partitions: &[i32]) -> BTreeSet<TopicPartition> {
    partitions.iter().map(|&p| tp(p)).collect()
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

fn settings(auto_commit: bool, instance_id: Option<&str>) -> ConsumerSettings {
    ConsumerSettings {
        group_id: Some("g".into()),
        group_instance_id: instance_id.map(str::to_owned),
        group_protocol: crate::config::GroupProtocol::Consumer,
        group_remote_assignor: Some("uniform".into()),
        enable_auto_commit: auto_commit,
        max_poll_interval_ms: 60_000,
        ..ConsumerSettings::default()
    }
}

struct Harness {
    p: Parts,
    m: ConsumerMembershipManager,
    commit: CommitRequestManager,
}

impl Harness {
    fn with(auto_commit: bool, instance_id: Option<&str>) -> Self {
        let settings = settings(auto_commit, instance_id);
        let commit = CommitRequestManager::new(&settings);
        let mut p = Parts::new(settings);
        p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
        p.coordinator = Some(COORDINATOR);
        p.metadata = metadata(&[(0, 1, 1), (1, 1, 1), (2, 2, 1), (3, 2, 1)]);
        p.subscriptions
            .subscribe(["t".to_owned()].into_iter().collect());
        let m = ConsumerMembershipManager::new(&p.settings, p.now).expect("a group");
        Self { p, m, commit }
    }

    fn new() -> Self {
        Self::with(false, None)
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

    fn respond(&mut self, token: u64, body: ConsumerGroupHeartbeatResponse) {
        let mut ctx = self.p.ctx();
        self.m.on_response(
            &mut ctx,
            token,
            Ok((ResponseBody::ConsumerGroupHeartbeat(body), 1)),
        );
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

    /// Expects exactly one callback of `kind` with `partitions`; returns its id.
    fn one_callback(&mut self, kind: RebalanceCallback, partitions: &[i32]) -> u64 {
        let callbacks = self.callbacks();
        assert_eq!(callbacks.len(), 1, "{callbacks:?}");
        let (id, k, ps) = callbacks.into_iter().next().expect("one");
        assert_eq!(k, kind);
        assert_eq!(ps, set(partitions));
        id
    }

    fn complete(&mut self, id: u64) {
        let mut ctx = self.p.ctx();
        self.m.on_callback_completed(&mut ctx, id);
    }

    /// Polls; expects exactly one heartbeat and returns it.
    fn heartbeat(&mut self) -> (u64, ConsumerGroupHeartbeatRequest) {
        let result = self.poll();
        assert_eq!(result.requests.len(), 1, "requests: {:?}", result.requests);
        let request = result.requests.into_iter().next().expect("one request");
        assert_eq!(request.target, crate::network::Target::Node(COORDINATOR));
        match request.body {
            RequestBody::ConsumerGroupHeartbeat(r) => (request.token, r),
            other => panic!("expected ConsumerGroupHeartbeat, got {other:?}"),
        }
    }

    fn no_requests(&mut self) {
        let result = self.poll();
        assert!(result.requests.is_empty(), "{:?}", result.requests);
    }

    /// Joins and reconciles `assigned` to Stable: returns the member id.
    fn join_stable(&mut self, epoch: i32, assigned: &[i32]) -> String {
        self.app_polls();
        let (token, hb) = self.heartbeat();
        assert_eq!(hb.member_epoch, 0);
        self.respond(token, ok(hb.member_id.as_str(), epoch, Some(assigned)));
        assert_eq!(self.m.state(), MemberState::Reconciling);
        self.poll_reconcile();
        let id = self.one_callback(RebalanceCallback::Assigned, assigned);
        self.complete(id);
        assert_eq!(self.m.state(), MemberState::Acknowledging);
        let (token, ack) = self.heartbeat();
        assert_eq!(owned(&ack), Some(set(assigned)));
        assert_eq!(self.m.state(), MemberState::Stable);
        self.respond(token, ok(hb.member_id.as_str(), epoch, None));
        hb.member_id.to_string()
    }

    /// Polls expecting no heartbeat (one is in flight or not due); reconciliation may run.
    fn poll_reconcile(&mut self) {
        let result = self.poll();
        assert!(
            result
                .requests
                .iter()
                .all(|r| !matches!(r.body, RequestBody::ConsumerGroupHeartbeat(_))),
            "{:?}",
            result.requests
        );
    }
}

fn ok(member: &str, epoch: i32, assigned: Option<&[i32]>) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default()
        .with_member_id(Some(s(member)))
        .with_member_epoch(epoch)
        .with_heartbeat_interval_ms(1_000)
        .with_assignment(assigned.map(|ps| assignment(&[(TOPIC, ps)])))
}

fn assignment(topics: &[(Uuid, &[i32])]) -> Assignment {
    Assignment::default().with_topic_partitions(
        topics
            .iter()
            .map(|(id, ps)| {
                ResponseTopicPartitions::default()
                    .with_topic_id(*id)
                    .with_partitions(ps.to_vec())
            })
            .collect(),
    )
}

fn error(code: ResponseError) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(code.code())
        .with_member_epoch(-1)
}

/// The OffsetCommit requests the commit manager sends now (OffsetFetch for positions aside).
fn offset_commits(h: &mut Harness) -> Vec<UnsentRequest> {
    h.p.member = Some(h.m.identity());
    h.commit
        .poll(&mut h.p.ctx())
        .requests
        .into_iter()
        .filter(|r| matches!(r.body, RequestBody::OffsetCommit(_)))
        .collect()
}

/// The coordinator accepts the OffsetCommit sent with `token`.
fn commit_succeeds(h: &mut Harness, token: u64) {
    h.commit.on_response(
        &mut h.p.ctx(),
        token,
        Ok((
            ResponseBody::OffsetCommit(OffsetCommitResponse::default()),
            9,
        )),
    );
}

/// The owned partitions a heartbeat carries (`None`: unchanged, not sent).
fn owned(hb: &ConsumerGroupHeartbeatRequest) -> Option<BTreeSet<TopicPartition>> {
    hb.topic_partitions.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|t| {
                assert_eq!(t.topic_id, TOPIC);
                t.partitions.iter().map(|&p| tp(p))
            })
            .collect()
    })
}

#[test]
fn joins_on_poll_with_a_client_generated_member_id_and_every_field() {
    let mut h = Harness::new();
    h.no_requests();
    assert_eq!(
        h.m.state(),
        MemberState::Unsubscribed,
        "joining waits for poll()"
    );
    h.app_polls();
    assert_eq!(h.m.state(), MemberState::Joining);
    h.p.coordinator = None;
    h.no_requests();
    h.p.coordinator = Some(COORDINATOR);
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.group_id.0.as_str(), "g");
    assert_eq!(hb.member_epoch, 0);
    let id = Uuid::parse_str(hb.member_id.as_str()).expect("a UUID member id");
    assert_eq!(id.get_version_num(), 4);
    assert_eq!(hb.rebalance_timeout_ms, 60_000);
    assert_eq!(hb.subscribed_topic_names, Some(vec![topic_name("t")]));
    assert_eq!(hb.server_assignor.as_deref(), Some("uniform"));
    assert_eq!(
        hb.topic_partitions,
        Some(vec![]),
        "owned partitions (none) sent"
    );
    assert_eq!(hb.instance_id, None);

    // The id comes from the seeded generator: same seed, same id.
    let mut again = Harness::new();
    again.app_polls();
    let (_, hb2) = again.heartbeat();
    assert_eq!(hb2.member_id, hb.member_id);
}

#[test]
fn one_heartbeat_in_flight_interval_from_the_broker_and_fields_only_when_changed() {
    let mut h = Harness::new();
    let member = h.join_stable(3, &[0, 1]);
    assert_eq!(h.m.identity().generation_id, 3, "commits carry the epoch");
    assert!(h.m.identity().stable);
    h.no_requests();
    h.p.advance_ms(999);
    h.no_requests();
    h.p.advance_ms(1);
    let (token, hb) = h.heartbeat();
    assert_eq!(hb.member_epoch, 3);
    assert_eq!(hb.member_id.as_str(), member);
    assert_eq!(hb.rebalance_timeout_ms, -1, "unchanged: not sent");
    assert_eq!(hb.subscribed_topic_names, None);
    assert_eq!(hb.server_assignor, None);
    assert_eq!(hb.topic_partitions, None);

    // In flight: nothing more, however late.
    h.p.advance_ms(10_000);
    h.no_requests();
    h.respond(
        token,
        ok(&member, 3, None).with_heartbeat_interval_ms(2_500),
    );
    let (token, _) = h.heartbeat();
    h.respond(
        token,
        ok(&member, 3, None).with_heartbeat_interval_ms(2_500),
    );
    h.p.advance_ms(2_499);
    h.no_requests();
    h.p.advance_ms(1);

    // A changed subscription is sent, alone.
    h.p.subscriptions
        .subscribe(["t".to_owned(), "u".to_owned()].into_iter().collect());
    let (token, hb) = h.heartbeat();
    assert_eq!(
        hb.subscribed_topic_names,
        Some(vec![topic_name("t"), topic_name("u")])
    );
    assert_eq!(hb.rebalance_timeout_ms, -1);
    assert_eq!(hb.topic_partitions, None);

    // A failed heartbeat clears the in-flight slot, backs off, and the next one re-sends
    // every field.
    h.respond(token, error(ResponseError::CoordinatorLoadInProgress));
    h.no_requests();
    h.p.advance_ms(2_500);
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.rebalance_timeout_ms, 60_000);
    assert!(hb.subscribed_topic_names.is_some());
    assert_eq!(hb.server_assignor.as_deref(), Some("uniform"));
    assert_eq!(owned(&hb), Some(set(&[0, 1])));
}

#[test]
fn a_broker_side_regex_is_sent_when_joining_and_when_changed_and_cleared_with_an_empty_one() {
    let mut h = Harness::new();
    h.p.subscriptions.unsubscribe();
    h.p.subscriptions.subscribe_regex("t|u.*".to_owned());
    assert!(
        h.p.subscriptions.needs_all_topics_metadata(),
        "names come from metadata"
    );
    let member = h.join_stable(1, &[0]);
    h.p.advance_ms(1_000);
    let (token, hb) = h.heartbeat();
    assert_eq!(hb.subscribed_topic_regex, None, "unchanged: not sent");
    assert_eq!(hb.subscribed_topic_names, None);
    h.respond(token, ok(&member, 1, None));

    h.p.subscriptions.subscribe_regex("v.*".to_owned());
    h.p.advance_ms(1_000);
    let (token, hb) = h.heartbeat();
    assert_eq!(hb.subscribed_topic_regex.as_deref(), Some("v.*"));
    assert_eq!(hb.subscribed_topic_names, None, "the names did not change");
    h.respond(token, ok(&member, 1, None));

    // Back to topic names: the broker must drop the regex it holds.
    h.p.subscriptions.unsubscribe();
    h.p.subscriptions
        .subscribe(["t".to_owned()].into_iter().collect());
    h.p.advance_ms(1_000);
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.subscribed_topic_regex.as_deref(), Some(""));
    assert_eq!(hb.subscribed_topic_names, Some(vec![topic_name("t")]));
}

#[test]
fn a_joining_member_sends_its_regex_and_empty_topic_names() {
    let mut h = Harness::new();
    h.p.subscriptions.unsubscribe();
    h.p.subscriptions.subscribe_regex("t.*".to_owned());
    h.app_polls();
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.subscribed_topic_regex.as_deref(), Some("t.*"));
    assert_eq!(hb.subscribed_topic_names, Some(vec![]));
}

/// A client-side pattern is matched again on every round: a topic that appears after the
/// member joined reaches the coordinator with the next heartbeat (Java's
/// `updatePatternSubscription`, which the classic path had and this one lacked).
#[test]
fn a_pattern_picks_up_a_topic_created_after_joining() {
    let mut h = Harness::new();
    let cluster = std::mem::take(&mut h.p.metadata);
    h.p.subscriptions.unsubscribe();
    h.p.subscriptions
        .subscribe_pattern(crate::internals::subscription_state::TopicPattern::new("t.*").unwrap());
    assert!(
        h.p.subscriptions.subscribed_topics().is_empty(),
        "nothing matches yet"
    );
    h.join_stable(1, &[]);
    h.p.metadata = cluster;
    h.p.advance_ms(1_000);
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.subscribed_topic_names, Some(vec![topic_name("t")]));
    assert!(h.p.effects.metadata_refresh, "metadata for the new match");
}

#[test]
fn network_errors_clear_the_heartbeat_in_flight() {
    let mut h = Harness::new();
    h.app_polls();
    let (token, _) = h.heartbeat();
    h.no_requests();
    {
        let mut ctx = h.p.ctx();
        h.m.on_response(
            &mut ctx,
            token,
            Err(NetworkError::RequestTimedOut {
                broker: "b1".into(),
                api: crate::protocol::Api(68),
                timeout_ms: 30_000,
            }),
        );
    }
    assert!(h.p.effects.coordinator_unknown.is_some());
    h.no_requests();
    h.p.advance_ms(1_000);
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.member_epoch, 0, "still joining, all fields");
    assert!(hb.subscribed_topic_names.is_some());
}

#[test]
fn reconciliation_commits_then_revokes_then_assigns_then_acknowledges() {
    let mut h = Harness::with(true, None);
    let member = h.join_stable(1, &[0, 1]);
    for p in [0, 1] {
        h.p.subscriptions
            .set_fetch_state(&tp(p), FetchState::Fetching);
    }
    assert_eq!(h.p.subscriptions.fetchable_partitions(), [tp(0), tp(1)]);
    h.commit.on_poll(
        h.p.now,
        [(tp(0), OffsetAndMetadata::new(42))].into_iter().collect(),
    );

    // Target {1, 2}: 0 is revoked, 2 added.
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1, 2])));
    assert_eq!(h.m.state(), MemberState::Reconciling);
    assert_eq!(h.m.identity().generation_id, 2, "the newest epoch");
    h.poll_reconcile();
    assert!(h.callbacks().is_empty(), "the auto-commit comes first");

    // The commit manager sends the auto-commit with the new epoch.
    let requests = h.commit.poll(&mut h.p.ctx()).requests;
    assert_eq!(requests.len(), 1);
    let RequestBody::OffsetCommit(commit) = &requests[0].body else {
        panic!("{:?}", requests[0].body);
    };
    assert_eq!(commit.generation_id_or_member_epoch, 2);
    assert_eq!(commit.member_id.as_str(), member);
    h.poll_reconcile();
    assert!(h.callbacks().is_empty(), "still waiting for the commit");
    commit_succeeds(&mut h, requests[0].token);

    h.poll_reconcile();
    let revoke = h.one_callback(RebalanceCallback::Revoked, &[0]);
    assert_eq!(
        h.p.subscriptions.fetchable_partitions(),
        [tp(1)],
        "revoked partitions stop fetching before the callback"
    );
    h.complete(revoke);
    let assign = h.one_callback(RebalanceCallback::Assigned, &[2]);
    assert_eq!(h.p.subscriptions.assigned(), set(&[1, 2]));
    h.p.subscriptions
        .set_fetch_state(&tp(2), FetchState::Fetching);
    assert_eq!(
        h.p.subscriptions.fetchable_partitions(),
        [tp(1)],
        "new partitions wait for on_partitions_assigned"
    );
    assert_eq!(h.m.state(), MemberState::Reconciling);
    h.complete(assign);
    assert_eq!(h.p.subscriptions.fetchable_partitions(), [tp(1), tp(2)]);
    assert_eq!(h.m.state(), MemberState::Acknowledging);

    // The ack goes out at once, with the new owned partitions.
    let (_, ack) = h.heartbeat();
    assert_eq!(ack.member_epoch, 2);
    assert_eq!(owned(&ack), Some(set(&[1, 2])));
    assert_eq!(h.m.state(), MemberState::Stable);
}

#[test]
fn a_newer_target_that_takes_back_an_added_partition_supersedes_the_reconciliation() {
    let mut h = Harness::with(true, None);
    let member = h.join_stable(1, &[0]);
    h.commit.on_poll(
        h.p.now,
        [(tp(0), OffsetAndMetadata::new(7))].into_iter().collect(),
    );
    // Target {0, 1}: the auto-commit goes out first and its answer is slow.
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[0, 1])));
    h.poll_reconcile();
    let commits = offset_commits(&mut h);
    assert_eq!(commits.len(), 1);
    // Meanwhile a newer target takes 1 back (the heartbeat reported it as about to be owned,
    // so the coordinator keeps it pending until this member lets it go).
    h.p.advance_ms(1_000);
    let (token, hb) = h.heartbeat();
    assert_eq!(
        owned(&hb),
        Some(set(&[0, 1])),
        "reports what it is about to take"
    );
    h.respond(token, ok(&member, 3, Some(&[0, 2])));
    commit_succeeds(&mut h, commits[0].token);
    h.poll_reconcile();
    // The stale reconciliation never assigns 1; the next one reconciles {0, 2}.
    for _ in 0..3 {
        let callbacks = h.callbacks();
        if let Some((id, kind, partitions)) = callbacks.into_iter().next() {
            assert_eq!(kind, RebalanceCallback::Assigned);
            assert_eq!(partitions, set(&[2]), "never the superseded target's 1");
            h.complete(id);
            break;
        }
        let commits = offset_commits(&mut h);
        for c in commits {
            commit_succeeds(&mut h, c.token);
        }
        h.app_polls();
        h.poll_reconcile();
    }
    assert_eq!(h.p.subscriptions.assigned(), set(&[0, 2]));
    assert_eq!(h.m.state(), MemberState::Acknowledging);
}

/// A member stable with {0} gets {0, 1} at epoch 2 and is running `on_partitions_assigned`
/// for 1: returns its member id and that callback's id.
fn assigning_partition_1(h: &mut Harness) -> (String, u64) {
    let member = h.join_stable(1, &[0]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[0, 1])));
    h.poll_reconcile();
    let assign = h.one_callback(RebalanceCallback::Assigned, &[1]);
    (member, assign)
}

#[test]
fn partitions_being_assigned_are_reported_owned_and_acknowledged_again() {
    let mut h = Harness::new();
    let (member, assign) = assigning_partition_1(&mut h);
    // The listener is slow: a heartbeat meanwhile reports what the member holds.
    h.p.advance_ms(1_000);
    let (token, hb) = h.heartbeat();
    assert_eq!(owned(&hb), Some(set(&[0, 1])), "not the acknowledged {{0}}");
    h.respond(token, ok(&member, 2, None));
    h.complete(assign);
    assert_eq!(h.m.state(), MemberState::Acknowledging);
    let (_, ack) = h.heartbeat();
    assert_eq!(
        owned(&ack),
        Some(set(&[0, 1])),
        "the acknowledgement goes out"
    );
}

#[test]
fn an_acknowledgement_with_a_newer_target_known_also_reports_what_it_will_take() {
    let mut h = Harness::new();
    let (member, assign) = assigning_partition_1(&mut h);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 3, Some(&[0, 1, 2])));
    h.complete(assign);
    // {0, 1} is acknowledged while {0, 1, 2} waits: 2 is reported too, so a target after it
    // that takes 2 elsewhere leaves it pending until this member lets it go.
    let (_, ack) = h.heartbeat();
    assert_eq!(owned(&ack), Some(set(&[0, 1, 2])));
}

#[test]
fn assigned_callback_runs_even_with_nothing_new_and_equal_sets_are_acknowledged() {
    let mut h = Harness::new();
    let member = h.join_stable(1, &[0]);
    // Target {0, 1} then back to {0} before reconciling: a new local epoch, acknowledged.
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[0, 1])));
    h.poll_reconcile();
    let assign = h.one_callback(RebalanceCallback::Assigned, &[1]);
    h.complete(assign);
    let (token, ack) = h.heartbeat();
    assert_eq!(owned(&ack), Some(set(&[0, 1])));
    h.respond(token, ok(&member, 3, Some(&[0])));
    h.poll_reconcile();
    let revoke = h.one_callback(RebalanceCallback::Revoked, &[1]);
    h.complete(revoke);
    let assign = h.one_callback(RebalanceCallback::Assigned, &[]);
    h.complete(assign);
    let (_, ack) = h.heartbeat();
    assert_eq!(owned(&ack), Some(set(&[0])));
    assert_eq!(h.m.state(), MemberState::Stable);
}

#[test]
fn unknown_topic_ids_refresh_metadata_and_wait() {
    let mut h = Harness::new();
    h.app_polls();
    let (token, hb) = h.heartbeat();
    h.respond(
        token,
        ok(hb.member_id.as_str(), 1, None)
            .with_assignment(Some(assignment(&[(UNKNOWN_TOPIC, &[0])]))),
    );
    assert_eq!(h.m.state(), MemberState::Reconciling);
    h.p.effects.metadata_refresh = false;
    h.poll_reconcile();
    assert!(
        h.p.effects.metadata_refresh,
        "metadata asked for the topic id"
    );
    let assign = h.one_callback(RebalanceCallback::Assigned, &[]);
    h.complete(assign);
    assert_eq!(h.m.state(), MemberState::Acknowledging);
    let (_, ack) = h.heartbeat();
    assert_eq!(
        ack.topic_partitions,
        Some(vec![]),
        "only the resolvable part"
    );
    assert_eq!(
        h.m.state(),
        MemberState::Reconciling,
        "the rest is still to do"
    );
    h.poll_reconcile();
    assert!(
        h.callbacks().is_empty(),
        "nothing to do until metadata knows the id"
    );
    assert_eq!(h.m.state(), MemberState::Reconciling);
}

#[test]
fn fenced_mid_reconciliation_aborts_loses_partitions_and_rejoins_with_epoch_zero() {
    for code in [
        ResponseError::FencedMemberEpoch,
        ResponseError::UnknownMemberId,
    ] {
        let mut h = Harness::new();
        let member = h.join_stable(4, &[0]);
        h.p.advance_ms(1_000);
        let (token, _) = h.heartbeat();
        h.respond(token, ok(&member, 5, Some(&[0, 1])));
        h.poll_reconcile();
        let assign = h.one_callback(RebalanceCallback::Assigned, &[1]);

        // While on_partitions_assigned runs, the next heartbeat is fenced.
        h.p.advance_ms(1_000);
        let (token, hb) = h.heartbeat();
        assert_eq!(hb.member_epoch, 5);
        h.respond(token, error(code));
        assert_eq!(h.m.state(), MemberState::Fenced, "{code}");
        assert!(!h.m.identity().stable, "no commits while fenced");
        let lost = h.one_callback(RebalanceCallback::Lost, &[0, 1]);
        h.p.advance_ms(10_000);
        h.no_requests();

        // The stale assigned callback completes: the reconciliation is abandoned.
        h.complete(assign);
        assert_eq!(h.m.state(), MemberState::Fenced);
        h.p.subscriptions
            .set_fetch_state(&tp(1), FetchState::Fetching);
        assert!(
            !h.p.subscriptions.fetchable_partitions().contains(&tp(1)),
            "an abandoned assignment is not enabled"
        );

        h.complete(lost);
        assert_eq!(h.m.state(), MemberState::Joining);
        assert!(h.p.subscriptions.assigned().is_empty());
        let (_, hb) = h.heartbeat();
        assert_eq!(hb.member_epoch, 0, "never the old epoch after fencing");
        assert_eq!(hb.member_id.as_str(), member, "the same member id");
        assert_eq!(hb.topic_partitions, Some(vec![]));
        assert!(
            hb.subscribed_topic_names.is_some(),
            "all fields when joining"
        );
    }
}

#[test]
fn a_commit_answered_unknown_member_for_the_current_epoch_fences_the_member() {
    let mut h = Harness::with(false, None);
    let member = h.join_stable(3, &[0, 1]);
    let (completion, _receiver) = Completion::new("commit", None, 1_000);
    h.commit.commit(
        [(tp(0), OffsetAndMetadata::new(5))].into_iter().collect(),
        false,
        completion,
    );
    let requests = offset_commits(&mut h);
    assert_eq!(requests.len(), 1);
    let unknown =
        OffsetCommitResponse::default().with_topics(vec![OffsetCommitResponseTopic::default()
            .with_name(topic_name("t"))
            .with_partitions(vec![OffsetCommitResponsePartition::default()
                .with_partition_index(0)
                .with_error_code(ResponseError::UnknownMemberId.code())])]);
    h.commit.on_response(
        &mut h.p.ctx(),
        requests[0].token,
        Ok((ResponseBody::OffsetCommit(unknown), 9)),
    );
    let reset =
        h.p.effects
            .generation_reset
            .take()
            .expect("a generation reset");
    assert_eq!(reset.generation_id, 3);

    // A late answer for an older epoch changes nothing.
    let older = GenerationReset {
        generation_id: 2,
        ..reset.clone()
    };
    h.m.on_commit_unknown_member(&mut h.p.ctx(), &older);
    assert_eq!(h.m.state(), MemberState::Stable);

    h.m.on_commit_unknown_member(&mut h.p.ctx(), &reset);
    assert_eq!(h.m.state(), MemberState::Fenced);
    let lost = h.one_callback(RebalanceCallback::Lost, &[0, 1]);
    h.complete(lost);
    assert_eq!(h.m.state(), MemberState::Joining);
    let (_, hb) = h.heartbeat();
    assert_eq!(
        hb.member_epoch, 0,
        "rejoins with epoch 0 under its member id"
    );
    assert_eq!(hb.member_id.as_str(), member);
}

#[test]
fn fenced_during_the_auto_commit_abandons_before_any_callback() {
    let mut h = Harness::with(true, None);
    let member = h.join_stable(1, &[0, 1]);
    h.commit.on_poll(
        h.p.now,
        [(tp(0), OffsetAndMetadata::new(7))].into_iter().collect(),
    );
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    h.poll_reconcile();
    let commit_requests = offset_commits(&mut h);
    assert_eq!(commit_requests.len(), 1);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, error(ResponseError::FencedMemberEpoch));
    let lost = h.one_callback(RebalanceCallback::Lost, &[0, 1]);
    commit_succeeds(&mut h, commit_requests[0].token);
    h.no_requests();
    assert!(h.callbacks().is_empty(), "no revoke after the fence");
    h.complete(lost);
    assert_eq!(h.m.state(), MemberState::Joining);
}

#[test]
fn poll_timer_expiry_leaves_goes_stale_loses_and_rejoins_on_the_next_poll() {
    let mut h = Harness::new();
    let member = h.join_stable(2, &[0]);
    // Heartbeats keep flowing without polls until max.poll.interval.ms.
    let mut at = 0;
    while at + 1_000 < 60_000 {
        h.p.advance_ms(1_000);
        at += 1_000;
        let (token, _) = h.heartbeat();
        h.respond(token, ok(&member, 2, None));
    }
    h.p.advance_ms(60_000 - at);
    let (_, leave) = h.heartbeat();
    assert_eq!(leave.member_epoch, -1);
    assert_eq!(leave.member_id.as_str(), member);
    assert_eq!(h.m.state(), MemberState::Stale);
    let lost = h.one_callback(RebalanceCallback::Lost, &[0]);
    h.p.advance_ms(5_000);
    h.no_requests();
    h.complete(lost);
    assert_eq!(h.m.state(), MemberState::Stale, "rejoins only on poll");
    assert!(h.p.subscriptions.assigned().is_empty());
    h.no_requests();
    h.app_polls();
    assert_eq!(h.m.state(), MemberState::Joining);
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.member_epoch, 0);
}

#[test]
fn unsubscribe_revokes_then_leaves_and_completes_on_the_response() {
    let mut h = Harness::new();
    let member = h.join_stable(2, &[0, 1]);
    let (completion, receiver) = Completion::new("unsubscribe", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    assert_eq!(h.m.state(), MemberState::PrepareLeaving);
    h.poll_reconcile();
    let revoke = h.one_callback(RebalanceCallback::Revoked, &[0, 1]);
    h.complete(revoke);
    let (token, leave) = h.heartbeat();
    assert_eq!(leave.member_epoch, -1);
    assert_eq!(leave.member_id.as_str(), member);
    assert_eq!(h.m.state(), MemberState::Unsubscribed);
    assert!(h.p.subscriptions.assigned().is_empty());
    assert!(!h.p.subscriptions.has_auto_assigned_partitions());
    assert!(
        receiver.borrow().is_none(),
        "done only when the leave is answered"
    );
    h.respond(token, ok(&member, -1, None));
    assert!(matches!(*receiver.borrow(), Some(Ok(()))));
    assert!(!h.m.is_leaving());
    h.p.advance_ms(10_000);
    h.no_requests();
}

#[test]
fn static_member_leaves_with_epoch_minus_two() {
    let mut h = Harness::with(false, Some("instance-1"));
    h.app_polls();
    let (token, hb) = h.heartbeat();
    assert_eq!(hb.instance_id.as_deref(), Some("instance-1"));
    h.respond(token, ok(hb.member_id.as_str(), 1, Some(&[])));
    h.poll_reconcile();
    let assign = h.one_callback(RebalanceCallback::Assigned, &[]);
    h.complete(assign);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(hb.member_id.as_str(), 1, None));
    let (completion, receiver) = Completion::new("close", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    let (token, leave) = h.heartbeat();
    assert!(h.callbacks().is_empty(), "nothing owned: no callback");
    assert_eq!(leave.member_epoch, -2);
    assert_eq!(leave.instance_id.as_deref(), Some("instance-1"));
    h.respond(token, ok(hb.member_id.as_str(), -2, None));
    assert!(matches!(*receiver.borrow(), Some(Ok(()))));
}

#[test]
fn leave_without_a_coordinator_completes_at_once() {
    let mut h = Harness::new();
    h.join_stable(1, &[]);
    h.p.coordinator = None;
    let (completion, receiver) = Completion::new("unsubscribe", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    h.no_requests();
    assert!(matches!(*receiver.borrow(), Some(Ok(()))));
    assert_eq!(h.m.state(), MemberState::Unsubscribed);
}

#[test]
fn coordinator_moves_are_followed_by_an_immediate_heartbeat() {
    let mut h = Harness::new();
    let member = h.join_stable(1, &[0]);
    h.p.advance_ms(1_000);
    for code in [
        ResponseError::NotCoordinator,
        ResponseError::CoordinatorNotAvailable,
    ] {
        let (token, _) = h.heartbeat();
        h.respond(token, error(code));
        assert!(h.p.effects.coordinator_unknown.take().is_some(), "{code}");
        assert_eq!(h.m.state(), MemberState::Stable);
    }
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.member_epoch, 1);
    assert_eq!(hb.member_id.as_str(), member);
}

#[test]
fn fatal_errors_are_reported_stop_the_member_and_lose_its_partitions() {
    let cases = [
        (ResponseError::GroupAuthorizationFailed, "heartbeat"),
        (ResponseError::InvalidRequest, "heartbeat"),
        (ResponseError::GroupMaxSizeReached, "heartbeat"),
        (ResponseError::UnsupportedAssignor, "heartbeat"),
        (ResponseError::InvalidRegularExpression, "heartbeat"),
        (ResponseError::UnsupportedVersion, "group.protocol=classic"),
        (
            ResponseError::UnreleasedInstanceId,
            "still used by another member",
        ),
        (ResponseError::FencedInstanceId, "took this member's place"),
    ];
    for (code, text) in cases {
        let mut h = Harness::with(false, Some("i-1"));
        let member = h.join_stable(1, &[0]);
        h.p.advance_ms(1_000);
        let (token, _) = h.heartbeat();
        h.respond(token, error(code));
        assert_eq!(h.m.state(), MemberState::Fatal, "{code}");
        let errors = std::mem::take(&mut h.p.effects.errors);
        assert_eq!(errors.len(), 1, "{code}: {errors:?}");
        assert_eq!(
            errors[0].code(),
            Some(crate::error::ErrorCode::of(code)),
            "{errors:?}"
        );
        assert!(
            errors[0].to_string().contains(text),
            "{code}: {}",
            errors[0]
        );
        assert!(
            h.m.take_new_fatal().is_some(),
            "pending commits fail at once"
        );
        assert!(!h.m.identity().stable);
        assert_eq!(h.m.group_metadata(), (-1, member.as_str()));
        let lost = h.one_callback(RebalanceCallback::Lost, &[0]);
        h.complete(lost);
        assert!(h.p.subscriptions.assigned().is_empty());
        h.p.advance_ms(10_000);
        h.no_requests();
        h.app_polls();
        assert_eq!(h.m.state(), MemberState::Fatal, "fatal is terminal");
        assert_eq!(h.p.effects.errors.len(), 1, "reported again on poll");
    }
}

/// A broker (Redpanda, Kafka 3.x without KIP-848 enabled) that does not offer
/// ConsumerGroupHeartbeat.
fn versions_without_consumer_group_heartbeat() -> crate::protocol::ApiVersionsTable {
    crate::internals::test_support::versions_without(&[
        kafka_protocol::messages::ApiKey::ConsumerGroupHeartbeat,
    ])
}

#[test]
fn a_broker_without_consumer_group_heartbeat_is_fatal_with_a_hint() {
    let mut h = Harness::new();
    h.p.versions = crate::internals::node_versions::NodeVersions::every_node(
        versions_without_consumer_group_heartbeat(),
    );
    h.app_polls();
    h.no_requests();
    assert_eq!(h.m.state(), MemberState::Fatal);
    let errors = std::mem::take(&mut h.p.effects.errors);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code(), Some(ErrorCode::UNSUPPORTED_VERSION));
    assert!(errors[0].to_string().contains("group.protocol=classic"));
}

/// A rolling upgrade half done: broker 1 (the lowest id, so the first connected) is still old
/// and lacks ConsumerGroupHeartbeat, the coordinator is new. The heartbeat is built from the
/// coordinator's own versions: the member joins, nothing is fatal.
#[test]
fn an_old_broker_that_is_not_the_coordinator_does_not_make_the_member_fatal() {
    use crate::internals::node_versions::NodeVersions;
    let mut h = Harness::new();
    h.p.versions = NodeVersions::default()
        .with_node(1, versions_without_consumer_group_heartbeat())
        .with_node(COORDINATOR, all_versions());
    h.app_polls();
    let (_, request) = h.heartbeat();
    assert_eq!(request.member_epoch, 0);
    assert_ne!(h.m.state(), MemberState::Fatal);
    assert!(h.p.effects.errors.is_empty(), "{:?}", h.p.effects.errors);
}

/// The other half: the coordinator is old, another broker new. The coordinator's versions
/// decide: fatal, with Java's hint, not a heartbeat pinned to a version it lacks.
#[test]
fn an_old_coordinator_is_fatal_even_when_another_broker_is_new() {
    use crate::internals::node_versions::NodeVersions;
    let mut h = Harness::new();
    h.p.versions = NodeVersions::default()
        .with_node(1, all_versions())
        .with_node(COORDINATOR, versions_without_consumer_group_heartbeat());
    h.app_polls();
    h.no_requests();
    assert_eq!(h.m.state(), MemberState::Fatal);
    let errors = std::mem::take(&mut h.p.effects.errors);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code(), Some(ErrorCode::UNSUPPORTED_VERSION));
    assert!(!errors[0].is_retriable());
    let message = errors[0].to_string();
    assert!(message.contains("group.protocol=classic"), "{message}");
    assert!(message.contains("coordinator"), "{message}");
}

/// The coordinator's connection is not up yet: no heartbeat (whose version would be a
/// guess), the loop is asked to connect it.
#[test]
fn the_heartbeat_waits_for_the_coordinators_connection() {
    use crate::internals::node_versions::NodeVersions;
    let mut h = Harness::new();
    h.p.versions = NodeVersions::default().with_node(1, all_versions());
    h.app_polls();
    h.no_requests();
    assert!(h.p.effects.connect_nodes.contains(&COORDINATOR));
    assert_ne!(h.m.state(), MemberState::Fatal);
    h.p.versions = h.p.versions.clone().with_node(COORDINATOR, all_versions());
    let (_, request) = h.heartbeat();
    assert_eq!(request.member_epoch, 0);
}

#[test]
fn stale_member_epoch_is_retried_for_the_revocation_commit_only() {
    let mut h = Harness::with(true, None);
    let member = h.join_stable(1, &[0, 1]);
    h.commit.on_poll(
        h.p.now,
        [(tp(0), OffsetAndMetadata::new(7))].into_iter().collect(),
    );
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    h.poll_reconcile();
    let stale =
        OffsetCommitResponse::default().with_topics(vec![OffsetCommitResponseTopic::default()
            .with_name(topic_name("t"))
            .with_partitions(vec![OffsetCommitResponsePartition::default()
                .with_partition_index(0)
                .with_error_code(ResponseError::StaleMemberEpoch.code())])]);
    let requests = offset_commits(&mut h);
    assert_eq!(requests.len(), 1);
    h.commit.on_response(
        &mut h.p.ctx(),
        requests[0].token,
        Ok((ResponseBody::OffsetCommit(stale.clone()), 9)),
    );
    h.poll_reconcile();
    assert!(h.callbacks().is_empty(), "retrying, not revoking yet");
    // A newer epoch arrives; the retry carries it.
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 3, None));
    h.p.member = Some(h.m.identity());
    let requests = offset_commits(&mut h);
    assert_eq!(requests.len(), 1, "retried after the backoff");
    let RequestBody::OffsetCommit(retry) = &requests[0].body else {
        panic!("{:?}", requests[0].body);
    };
    assert_eq!(retry.generation_id_or_member_epoch, 3);
    commit_succeeds(&mut h, requests[0].token);
    h.poll_reconcile();
    h.one_callback(RebalanceCallback::Revoked, &[0]);

    // A user commit with a stale epoch fails with COMMIT_FAILED.
    let (completion, receiver) = Completion::new("commit_sync", None, 0);
    h.commit.commit(
        [(tp(1), OffsetAndMetadata::new(3))].into_iter().collect(),
        true,
        completion,
    );
    let requests = offset_commits(&mut h);
    assert_eq!(requests.len(), 1);
    h.commit.on_response(
        &mut h.p.ctx(),
        requests[0].token,
        Ok((ResponseBody::OffsetCommit(stale), 9)),
    );
    assert!(matches!(
        *receiver.borrow(),
        Some(Err(Error::CommitFailed {
            code: Some(ErrorCode::STALE_MEMBER_EPOCH),
            ..
        }))
    ));
}

#[test]
fn offset_fetch_carries_the_member_epoch_and_retries_a_stale_one() {
    use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
    use kafka_protocol::messages::OffsetFetchResponse;
    let mut h = Harness::new();
    let member = h.join_stable(3, &[0]);
    assert_eq!(
        h.p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Initializing)
    );
    h.p.member = Some(h.m.identity());
    let requests = h.commit.poll(&mut h.p.ctx()).requests;
    assert_eq!(requests.len(), 1);
    let RequestBody::OffsetFetch(fetch) = &requests[0].body else {
        panic!("{:?}", requests[0].body);
    };
    let group = &fetch.groups[0];
    assert_eq!(group.member_id.as_deref(), Some(member.as_str()));
    assert_eq!(group.member_epoch, 3);
    let stale =
        OffsetFetchResponse::default().with_groups(vec![OffsetFetchResponseGroup::default()
            .with_group_id(kafka_protocol::messages::GroupId(s("g")))
            .with_error_code(ResponseError::StaleMemberEpoch.code())]);
    h.commit.on_response(
        &mut h.p.ctx(),
        requests[0].token,
        Ok((ResponseBody::OffsetFetch(stale), 9)),
    );
    assert!(h.p.effects.errors.is_empty(), "retried, not reported");
    assert_eq!(
        h.p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Initializing),
        "never a fall-back to the reset policy"
    );
    h.p.advance_ms(1_000);
    let requests = h.commit.poll(&mut h.p.ctx()).requests;
    assert_eq!(requests.len(), 1, "retried after the backoff");
    assert!(matches!(requests[0].body, RequestBody::OffsetFetch(_)));
}

#[test]
fn leaving_waits_for_a_revoke_callback_already_out_and_never_revokes_twice() {
    let mut h = Harness::new();
    let member = h.join_stable(1, &[0, 1]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    h.poll_reconcile();
    let revoke = h.one_callback(RebalanceCallback::Revoked, &[0]);
    let (completion, receiver) = Completion::new("unsubscribe", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    h.poll_reconcile();
    assert!(
        h.callbacks().is_empty(),
        "the reconciliation's callback finishes first"
    );
    h.complete(revoke);
    assert!(
        h.callbacks().is_empty(),
        "the abandoned reconciliation assigns nothing"
    );
    h.poll_reconcile();
    let leave_revoke = h.one_callback(RebalanceCallback::Revoked, &[1]);
    h.complete(leave_revoke);
    let (token, leave) = h.heartbeat();
    assert_eq!(leave.member_epoch, -1);
    h.respond(token, ok(&member, -1, None));
    assert!(matches!(*receiver.borrow(), Some(Ok(()))));
}

#[test]
fn a_leaving_member_past_its_poll_deadline_never_asks_for_a_wake_up_in_the_past() {
    let mut h = Harness::new();
    let member = h.join_stable(1, &[0]);
    let (completion, _receiver) = Completion::new("close", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    h.poll_reconcile();
    h.one_callback(RebalanceCallback::Revoked, &[0]);
    // The application runs the callback for longer than max.poll.interval.ms.
    h.p.advance_ms(61_000);
    let result = h.poll();
    assert!(
        result.next_poll_at.is_none_or(|at| at > h.p.now),
        "a wake-up at {:?} with now {:?} would spin the loop",
        result.next_poll_at,
        h.p.now
    );
    assert_eq!(
        h.m.state(),
        MemberState::PrepareLeaving,
        "no poll-timeout leave"
    );
    for request in &result.requests {
        let RequestBody::ConsumerGroupHeartbeat(hb) = &request.body else {
            panic!("{request:?}");
        };
        assert_eq!(
            hb.member_epoch, 1,
            "{member}: still a member until it leaves"
        );
    }
}

/// Java's `CloseOptions`: what each member kind sends for each membership operation.
#[test]
fn close_options_choose_the_leave_heartbeat() {
    use GroupMembershipOperation::{Default, LeaveGroup, RemainInGroup};
    // (instance id, operation) → the leave heartbeat's epoch, or none at all.
    let cases = [
        (None, Default, Some(-1)),
        (None, LeaveGroup, Some(-1)),
        (None, RemainInGroup, None),
        (Some("i-1"), Default, Some(-2)),
        (Some("i-1"), LeaveGroup, Some(-1)),
        (Some("i-1"), RemainInGroup, Some(-2)),
    ];
    for (instance_id, operation, expected_epoch) in cases {
        let mut h = Harness::with(false, instance_id);
        let member = h.join_stable(1, &[0]);
        let (completion, receiver) = Completion::new("close", None, 0);
        {
            let mut ctx = h.p.ctx();
            h.m.leave(&mut ctx, Some(completion), operation);
        }
        h.poll_reconcile();
        let revoke = h.one_callback(RebalanceCallback::Revoked, &[0]);
        h.complete(revoke);
        let case = format!("{instance_id:?} {operation:?}");
        match expected_epoch {
            Some(epoch) => {
                let (token, leave) = h.heartbeat();
                assert_eq!(leave.member_epoch, epoch, "{case}");
                h.respond(token, ok(&member, epoch, None));
            }
            None => h.no_requests(),
        }
        assert!(matches!(*receiver.borrow(), Some(Ok(()))), "{case}");
        assert_eq!(h.m.state(), MemberState::Unsubscribed, "{case}");
        h.p.advance_ms(10_000);
        h.no_requests();
    }
}

/// Java's `canCommit` (KAFKA-14196): a reconciliation that revokes (or auto-commits) starts
/// only in the round right after an acknowledged poll, asked for once; fetching of the
/// partitions to revoke stops before the commit goes out.
#[test]
fn a_revoking_reconciliation_waits_for_an_acknowledged_poll_and_stops_fetching_first() {
    let mut h = Harness::with(true, None);
    let member = h.join_stable(1, &[0, 1]);
    for p in [0, 1] {
        h.p.subscriptions
            .set_fetch_state(&tp(p), FetchState::Fetching);
    }
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    h.poll_once();
    assert!(
        h.p.effects.poll_requested,
        "the application is asked to poll"
    );
    h.p.effects.poll_requested = false;
    h.poll_once();
    assert!(!h.p.effects.poll_requested, "asked once");
    assert!(
        !h.commit.has_pending_commits(),
        "nothing starts before the poll"
    );
    assert_eq!(
        h.p.subscriptions.fetchable_partitions(),
        [tp(0), tp(1)],
        "still fetching"
    );
    h.commit.on_poll(
        h.p.now,
        [(tp(0), OffsetAndMetadata::new(42))].into_iter().collect(),
    );
    h.app_polls();
    h.poll_once();
    assert!(
        h.commit.has_pending_commits(),
        "the commit before revocation"
    );
    assert_eq!(
        h.p.subscriptions.fetchable_partitions(),
        [tp(1)],
        "the partition to revoke stopped fetching before the commit went out"
    );
}

/// A plain (unacknowledged) poll does not open the gate: only the poll that waits for the
/// round guarantees no records are collected meanwhile.
#[test]
fn an_unacknowledged_poll_does_not_start_a_revoking_reconciliation() {
    let mut h = Harness::with(true, None);
    let member = h.join_stable(1, &[0, 1]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    {
        let mut ctx = h.p.ctx();
        h.m.on_poll(&mut ctx, false);
    }
    h.poll_once();
    assert!(!h.commit.has_pending_commits());
    assert!(h.callbacks().is_empty());
}

/// Issue #18 (request storms): the first fence rejoins with epoch 0 at once, as Java does; but
/// a coordinator that keeps fencing the rejoin (it still holds the old epoch) used to get a
/// heartbeat per round trip until the session expired (~70 a second in the simulator). A
/// fence with no successful heartbeat since the previous one waits a backoff growing from
/// `retry.backoff.ms` (100) to `retry.backoff.max.ms` (1 000) before rejoining; a successful
/// heartbeat ends the run.
#[test]
fn a_repeated_fence_rejoins_after_an_exponential_backoff() {
    let mut h = Harness::new();
    let member = h.join_stable(4, &[]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, error(ResponseError::FencedMemberEpoch));
    assert_eq!(
        h.m.state(),
        MemberState::Joining,
        "nothing owned: no callback"
    );
    let (token, hb) = h.heartbeat();
    assert_eq!(hb.member_epoch, 0, "the first fence rejoins at once");

    let mut waits_ms = Vec::new();
    let mut token = token;
    for _ in 0..6 {
        h.respond(token, error(ResponseError::FencedMemberEpoch));
        let start = h.p.now;
        let r = h.poll();
        assert!(r.requests.is_empty(), "a repeated fence waits: {r:?}");
        let wake = r.next_poll_at.expect("woken when the backoff ends");
        waits_ms.push((wake - start).as_millis());
        h.p.now = wake;
        let (next, hb) = h.heartbeat();
        assert_eq!(hb.member_epoch, 0);
        token = next;
    }
    assert!((80..120).contains(&waits_ms[0]), "{waits_ms:?}");
    assert!((160..240).contains(&waits_ms[1]), "{waits_ms:?}");
    assert!(waits_ms[5] <= 1_000 && waits_ms[5] >= 800, "{waits_ms:?}");

    // The coordinator accepts the rejoin: a later fence rejoins at once again.
    h.respond(token, ok(&member, 7, Some(&[])));
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, error(ResponseError::UnknownMemberId));
    let (_, hb) = h.heartbeat();
    assert_eq!(hb.member_epoch, 0);
}

/// Java's `maybeReconcile(canCommit)` (KAFKA-14196): a reconciliation that revokes starts only
/// right after the application polled, also without auto-commit (the revocation must not race
/// records still being handed out); the background asks for that poll and waits.
#[test]
fn a_revoking_reconciliation_waits_for_the_applications_poll_without_auto_commit() {
    let mut h = Harness::new();
    let member = h.join_stable(1, &[0, 1]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    assert_eq!(h.m.state(), MemberState::Reconciling);
    let _ = h.poll_once();
    assert!(
        h.callbacks().is_empty(),
        "no revocation before the application polls"
    );
    assert!(
        std::mem::take(&mut h.p.effects.poll_requested),
        "the background asks for a poll"
    );
    h.app_polls();
    let _ = h.poll_once();
    h.one_callback(RebalanceCallback::Revoked, &[0]);
}

/// The rebalance metrics (`rebalance-total`, `rebalance-latency-*`) read `Membership::
/// rebalance_stats`: a reconciliation completes when its assigned callback does, and its
/// duration runs from the new target to that completion.
#[test]
fn a_completed_reconciliation_counts_as_a_rebalance_with_its_duration() {
    let mut h = Harness::new();
    let stats = |h: &mut Harness| {
        let fresh = ConsumerMembershipManager::new(&h.p.settings, h.p.now).expect("a group");
        let membership = crate::internals::membership::Membership::Consumer(Box::new(
            std::mem::replace(&mut h.m, fresh),
        ));
        let stats = membership.rebalance_stats();
        let crate::internals::membership::Membership::Consumer(m) = membership else {
            unreachable!("built as consumer")
        };
        h.m = *m;
        stats
    };
    assert_eq!(
        (stats(&mut h).completed, stats(&mut h).last_ms),
        (0, 0),
        "no rebalance before the first assignment"
    );
    h.app_polls();
    let (token, hb) = h.heartbeat();
    h.respond(token, ok(hb.member_id.as_str(), 1, Some(&[0, 1])));
    h.poll_reconcile();
    let assign = h.one_callback(RebalanceCallback::Assigned, &[0, 1]);
    h.p.advance_ms(250);
    assert_eq!(
        (stats(&mut h).completed, stats(&mut h).last_ms),
        (0, 0),
        "not complete while the callback runs"
    );
    h.complete(assign);
    let done = stats(&mut h);
    assert_eq!((done.completed, done.last_ms, done.failed), (1, 250, 0));
}

/// A fenced member's lost callback is out when the application unsubscribes: the member is
/// out of the group for good, and the callback's completion must not make it rejoin (only a
/// member still `Fenced` rejoins after its partitions are lost, as Java's
/// `transitionToJoining` after `onPartitionsLost` only when still fenced).
#[test]
fn a_member_that_unsubscribed_while_its_lost_callback_ran_does_not_rejoin() {
    let mut h = Harness::new();
    let member = h.join_stable(3, &[0]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, error(ResponseError::FencedMemberEpoch));
    assert_eq!(h.m.state(), MemberState::Fenced);
    let lost = h.one_callback(RebalanceCallback::Lost, &[0]);
    let (completion, receiver) = Completion::new("unsubscribe", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    assert!(matches!(*receiver.borrow(), Some(Ok(()))));
    assert_eq!(h.m.state(), MemberState::Unsubscribed);
    h.complete(lost);
    assert_eq!(h.m.state(), MemberState::Unsubscribed, "{member} rejoined");
    h.p.advance_ms(10_000);
    h.no_requests();
}

/// `unsubscribe` gave up (its deadline passed, nobody waits) while the revoke callback of the
/// leave is still out: the member finishes leaving at once, through `Leaving` to
/// `Unsubscribed`, its assignment released, and sends nothing more.
#[test]
fn a_leave_the_caller_gave_up_on_finishes_without_waiting_for_its_callback() {
    let mut h = Harness::new();
    h.join_stable(2, &[0, 1]);
    let (completion, receiver) = Completion::new("unsubscribe", None, 0);
    {
        let mut ctx = h.p.ctx();
        h.m.leave(
            &mut ctx,
            Some(completion),
            GroupMembershipOperation::Default,
        );
    }
    h.poll_reconcile();
    let _revoke = h.one_callback(RebalanceCallback::Revoked, &[0, 1]);
    assert_eq!(h.m.state(), MemberState::PrepareLeaving);
    drop(receiver);
    h.poll_reconcile();
    assert_eq!(h.m.state(), MemberState::Unsubscribed);
    assert!(!h.m.is_leaving());
    assert!(h.p.subscriptions.assigned().is_empty());
    h.p.advance_ms(10_000);
    h.no_requests();
}

/// While `onPartitionsRevoked` runs, the member still holds the partitions being revoked, and
/// a heartbeat must report them owned (Java reports `subscriptions.assignedPartitions()`, which
/// keeps them until the callback completes): reporting only the target would let the
/// coordinator hand them to another member while this one's application still processes them.
#[test]
fn partitions_being_revoked_are_reported_owned_until_the_revocation_is_done() {
    let mut h = Harness::new();
    let member = h.join_stable(1, &[0, 1]);
    h.p.advance_ms(1_000);
    let (token, _) = h.heartbeat();
    h.respond(token, ok(&member, 2, Some(&[1])));
    h.poll_reconcile();
    let revoke = h.one_callback(RebalanceCallback::Revoked, &[0]);
    let reported = |h: &mut Harness| {
        let ctx = h.p.ctx();
        let (holding, reconciling) = h.m.owned_for_heartbeat(&ctx);
        let partitions: BTreeSet<i32> = holding.partitions.values().flatten().copied().collect();
        (partitions, reconciling)
    };
    assert_eq!(reported(&mut h), ([0, 1].into(), true));
    h.complete(revoke);
    h.poll_reconcile();
    assert_eq!(reported(&mut h), ([1].into(), true));
}
