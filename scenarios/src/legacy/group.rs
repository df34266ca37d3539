//! Group membership of Kafka 3.1.0's `AbstractCoordinator` / `ConsumerCoordinator`: member
//! state, generation, the rejoin flags, `joinFuture`, the `Heartbeat` timers, the heartbeat
//! thread's flags, and the JoinGroup / SyncGroup / Heartbeat / LeaveGroup response handlers.
//! The blocking loops that drive them (`ensureActiveGroup`, `joinGroupIfNeeded`, the
//! heartbeat thread's `run`) live in `super::consumer` and `super::heartbeat`.
//!
//! Line references are to `clients/src/main/java/org/apache/kafka/clients/consumer/internals/`
//! at tag 3.1.0.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_consumer::assignor::{
    self, protocol as consumer_protocol, Assignment, ClusterMetadata, ConsumerPartitionAssignor,
    GroupSubscription, Subscription, TopicPartition,
};
use kafka_consumer::network::NetworkError;
use sim::history::{Event, Tp};
use tokio::time::{Duration, Instant};

use super::coordinator::{ConsumerCoordinator, FutureError};
use super::network::{error_name, network_error_name, Body, ConsumerNetworkClient, Handler};
use super::requests;
use super::sticky_claims;
use super::version::LegacyVersion;

/// `AbstractCoordinator.MemberState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MemberState {
    /// The client is not part of a group.
    Unjoined,
    /// JoinGroup sent, no response yet.
    PreparingRebalance,
    /// JoinGroup response received, awaiting SyncGroup.
    CompletingRebalance,
    /// Joined and synced.
    Stable,
}

impl MemberState {
    /// `hasNotJoinedGroup()`.
    pub fn has_not_joined_group(self) -> bool {
        matches!(
            self,
            MemberState::Unjoined | MemberState::PreparingRebalance
        )
    }
}

/// `AbstractCoordinator.Generation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Generation {
    pub id: i32,
    pub member_id: String,
    pub protocol: Option<String>,
}

impl Generation {
    /// `Generation.NO_GENERATION`.
    pub fn none() -> Self {
        Self {
            id: -1,
            member_id: String::new(),
            protocol: None,
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Self::none()
    }
}

/// `Heartbeat`: the session, poll and heartbeat timers, as deadlines.
#[derive(Debug, Clone)]
pub(super) struct HeartbeatTimers {
    session_timeout: Duration,
    max_poll_interval: Duration,
    interval: Duration,
    retry_backoff: Duration,
    session_deadline: Instant,
    poll_deadline: Instant,
    heartbeat_deadline: Instant,
}

impl HeartbeatTimers {
    pub fn new(
        session_timeout: Duration,
        max_poll_interval: Duration,
        interval: Duration,
        retry_backoff: Duration,
    ) -> Self {
        let now = Instant::now();
        Self {
            session_timeout,
            max_poll_interval,
            interval,
            retry_backoff,
            session_deadline: now + session_timeout,
            poll_deadline: now + max_poll_interval,
            heartbeat_deadline: now + interval,
        }
    }

    /// `resetTimeouts()`: when the heartbeat thread is enabled.
    pub fn reset_timeouts(&mut self, now: Instant) {
        self.session_deadline = now + self.session_timeout;
        self.poll_deadline = now + self.max_poll_interval;
        self.heartbeat_deadline = now + self.interval;
    }

    /// `resetSessionTimeout()`: on discovering a coordinator.
    pub fn reset_session_timeout(&mut self, now: Instant) {
        self.session_deadline = now + self.session_timeout;
    }

    /// `poll(now)`: the application called `poll()`.
    pub fn poll(&mut self, now: Instant) {
        self.poll_deadline = now + self.max_poll_interval;
    }

    /// `sentHeartbeat(now)`.
    pub fn sent_heartbeat(&mut self, now: Instant) {
        self.heartbeat_deadline = now + self.interval;
    }

    /// `failHeartbeat()`: retry after the backoff.
    pub fn fail_heartbeat(&mut self, now: Instant) {
        self.heartbeat_deadline = now + self.retry_backoff;
    }

    /// `receiveHeartbeat()`.
    pub fn receive_heartbeat(&mut self, now: Instant) {
        self.session_deadline = now + self.session_timeout;
    }

    pub fn should_heartbeat(&self, now: Instant) -> bool {
        now >= self.heartbeat_deadline
    }

    pub fn session_timeout_expired(&self, now: Instant) -> bool {
        now >= self.session_deadline
    }

    pub fn poll_timeout_expired(&self, now: Instant) -> bool {
        now >= self.poll_deadline
    }

    /// `timeToNextHeartbeat(now)`: zero once due.
    pub fn time_to_next_heartbeat(&self, now: Instant) -> Duration {
        self.heartbeat_deadline.saturating_duration_since(now)
    }
}

/// The heartbeat thread's own flags (`HeartbeatThread.enabled/closed/failed`).
#[derive(Debug, Clone, Default)]
pub(super) struct HeartbeatThreadFlags {
    pub enabled: bool,
    pub closed: bool,
    /// `failed`: the exception that ended the thread.
    pub failed: Option<String>,
}

/// `joinFuture`: JoinGroup chained with SyncGroup; its value is the member's assignment.
#[derive(Debug, Clone, Default)]
pub(super) struct JoinFuture {
    pub outcome: Option<Result<Bytes, FutureError>>,
}

/// Subscribe-mode state of the coordinator.
pub(super) struct GroupState {
    pub state: MemberState,
    pub generation: Generation,
    pub rejoin_needed: bool,
    pub needs_join_prepare: bool,
    pub join_future: Option<JoinFuture>,
    pub heartbeat: HeartbeatTimers,
    /// `heartbeatThread`: `None` until `startHeartbeatThreadIfNeeded`, and again after
    /// `pollHeartbeat` has rethrown its failure.
    pub heartbeat_thread: Option<HeartbeatThreadFlags>,
    pub subscription: Vec<String>,
    pub assignors: Vec<Box<dyn ConsumerPartitionAssignor>>,
    /// `RebalanceProtocol.COOPERATIVE`: every configured assignor supports it and the release
    /// is one the model runs cooperatively ([`LegacyVersion::models_cooperative`]).
    pub cooperative: bool,
    /// The release whose JoinGroup subscription and leader assignment the member follows.
    pub version: LegacyVersion,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub is_leader: bool,
    /// 3.2.1's `joinPrepareTimer`: when `onJoinPrepare` stops waiting for its commit.
    pub join_prepare_deadline: Option<Instant>,
    /// 3.2.1's `autoCommitOffsetRequestFuture`: the pre-revocation commit in flight.
    pub join_prepare_commit: Option<u64>,
}

fn to_tp(tp: &TopicPartition) -> Tp {
    Tp::new(tp.topic.to_string(), tp.partition)
}

fn to_topic_partition(tp: &Tp) -> TopicPartition {
    TopicPartition::new(tp.topic.as_str(), tp.partition)
}

/// `JOIN_GROUP_TIMEOUT_LAPSE`: a JoinGroup may wait on the coordinator for the whole rebalance
/// timeout, so its request timeout is at least that plus 5 s (since KIP-266, Kafka 2.0).
const JOIN_GROUP_TIMEOUT_LAPSE_MS: u64 = 5_000;

impl GroupState {
    pub fn new(
        subscription: Vec<String>,
        assignors: Vec<Box<dyn ConsumerPartitionAssignor>>,
        version: LegacyVersion,
        session_timeout_ms: i32,
        rebalance_timeout_ms: i32,
        heartbeat: HeartbeatTimers,
    ) -> Self {
        let cooperative = version.models_cooperative()
            && !assignors.is_empty()
            && assignors.iter().all(|a| {
                a.supported_protocols()
                    .contains(&assignor::RebalanceProtocol::Cooperative)
            });
        Self {
            state: MemberState::Unjoined,
            generation: Generation::none(),
            rejoin_needed: true,
            needs_join_prepare: true,
            join_future: None,
            heartbeat,
            heartbeat_thread: None,
            subscription,
            assignors,
            cooperative,
            version,
            session_timeout_ms,
            rebalance_timeout_ms,
            is_leader: false,
            join_prepare_deadline: None,
            join_prepare_commit: None,
        }
    }

    /// `rejoinNeededOrPending()`.
    pub fn rejoin_needed_or_pending(&self) -> bool {
        self.rejoin_needed || self.join_future.is_some()
    }

    /// `generationIfStable()`.
    pub fn generation_if_stable(&self) -> Option<&Generation> {
        (self.state == MemberState::Stable).then_some(&self.generation)
    }

    /// `rebalanceInProgress()`.
    pub fn rebalance_in_progress(&self) -> bool {
        matches!(
            self.state,
            MemberState::PreparingRebalance | MemberState::CompletingRebalance
        )
    }

    /// `requestRejoin(reason)`.
    pub fn request_rejoin(&mut self, client: &ConsumerNetworkClient, reason: &str) {
        if !self.rejoin_needed {
            client.ctx().record(Event::Note {
                text: format!("request joining group due to: {reason}"),
            });
        }
        self.rejoin_needed = true;
    }

    /// `resetStateAndRejoin(reason)`: UNJOINED, NO_GENERATION, rejoin, prepare again.
    pub fn reset_state_and_rejoin(&mut self, client: &ConsumerNetworkClient, reason: &str) {
        client.ctx().record(Event::Note {
            text: format!("resetting generation due to: {reason}"),
        });
        self.state = MemberState::Unjoined;
        self.generation = Generation::none();
        self.request_rejoin(client, reason);
        self.needs_join_prepare = true;
    }

    /// The heartbeat thread's `enable()`.
    fn enable_heartbeat_thread(&mut self, now: Instant) {
        if let Some(thread) = self.heartbeat_thread.as_mut() {
            thread.enabled = true;
            self.heartbeat.reset_timeouts(now);
        }
    }

    /// `metadata()`: one JoinGroup protocol per assignor, with this member's subscription.
    /// 3.4 sends the partitions it owns (`owned`) and its current generation
    /// (ConsumerProtocol v2); the model's other releases run eager only, where nothing is owned
    /// when joining, and send neither.
    pub fn protocols(&self, owned: &[Tp]) -> Vec<(String, Bytes)> {
        let topics: BTreeSet<String> = self.subscription.iter().cloned().collect();
        let (owned_partitions, generation_id, version) = if self.version.is_3_4() {
            let owned = owned.iter().map(to_topic_partition).collect();
            (owned, Some(self.generation.id), 2)
        } else {
            (
                Vec::new(),
                None,
                consumer_protocol::CONSUMER_PROTOCOL_VERSION,
            )
        };
        self.assignors
            .iter()
            .map(|a| {
                let subscription = Subscription {
                    user_data: a.subscription_user_data(&topics),
                    owned_partitions: owned_partitions.clone(),
                    generation_id,
                    ..Subscription::new(self.subscription.clone())
                };
                let bytes = consumer_protocol::encode_subscription(&subscription, version)
                    .unwrap_or_default();
                (a.name().to_owned(), bytes)
            })
            .collect()
    }
}

impl ConsumerCoordinator {
    fn group_mut(&mut self) -> &mut GroupState {
        self.group
            .as_mut()
            .expect("group handlers run in subscribe mode only")
    }

    /// `generationUnchanged()`: the generation a response's request was sent with is still
    /// the current one.
    fn generation_unchanged(&self, sent: i32) -> bool {
        self.group
            .as_ref()
            .is_some_and(|g| g.generation.id == sent && !g.generation.member_id.is_empty())
    }

    /// `initiateJoinGroup()` (AbstractCoordinator.java:490): PREPARING_REBALANCE and a
    /// JoinGroup, unless a join is already pending; `owned` is what the member owns now.
    pub fn initiate_join_group(&mut self, client: &mut ConsumerNetworkClient, owned: &[Tp]) {
        let coordinator = self.coordinator;
        let group_id = self.group_id.clone();
        let group = self.group_mut();
        if group.join_future.is_some() {
            return;
        }
        group.state = MemberState::PreparingRebalance;
        let Some(node) = coordinator else {
            // `RequestFuture.coordinatorNotAvailable()`.
            group.join_future = Some(JoinFuture {
                outcome: Some(Err(FutureError {
                    error: "COORDINATOR_NOT_AVAILABLE".to_owned(),
                    retriable: true,
                })),
            });
            return;
        };
        group.join_future = Some(JoinFuture::default());
        let generation = group.generation.clone();
        let request = requests::join_group(
            &group_id,
            &generation.member_id,
            group.session_timeout_ms,
            group.rebalance_timeout_ms,
            &group.protocols(owned),
        );
        // `joinGroupTimeoutMs`: Kafka 2.0 on; before it JoinGroup had the default timeout.
        let timeout_ms = match group.version {
            LegacyVersion::Kip62Trunk | LegacyVersion::V0_9_0_0 | LegacyVersion::V1_0_0 => None,
            _ => {
                let rebalance_ms = group.rebalance_timeout_ms.max(0) as u64;
                let default_ms = u64::from(client.ctx().config.request_timeout_ms());
                Some(default_ms.max(rebalance_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS))
            }
        };
        client.send_join_group(
            node,
            request,
            generation.id,
            (generation.member_id, generation.id),
            timeout_ms,
        );
    }

    fn fail_join(&mut self, error: &str, retriable: bool) {
        if let Some(future) = self.group_mut().join_future.as_mut() {
            if future.outcome.is_none() {
                future.outcome = Some(Err(FutureError {
                    error: error.to_owned(),
                    retriable,
                }));
            }
        }
    }

    /// Runs the handler of a group-membership response.
    pub fn handle_group(
        &mut self,
        client: &mut ConsumerNetworkClient,
        handler: Handler,
        result: Result<Body, NetworkError>,
    ) {
        match (handler, result) {
            (handler, Err(e)) => {
                // `CoordinatorResponseHandler.onFailure` (AbstractCoordinator.java:1182).
                let error = network_error_name(&e);
                if error == "DISCONNECTED" {
                    self.mark_coordinator_unknown(client, &e.to_string());
                }
                match handler {
                    Handler::JoinGroup { .. } | Handler::SyncGroup { .. } => {
                        self.fail_join(&error, true)
                    }
                    Handler::Heartbeat { .. } => {
                        self.group_mut().heartbeat.fail_heartbeat(Instant::now())
                    }
                    _ => {}
                }
            }
            (Handler::JoinGroup { generation }, Ok(Body::JoinGroup(r))) => {
                self.on_join_group(client, generation, r)
            }
            (Handler::SyncGroup { generation }, Ok(Body::SyncGroup(r))) => {
                self.on_sync_group(client, generation, r)
            }
            (Handler::Heartbeat { generation }, Ok(Body::Heartbeat(r))) => {
                self.on_heartbeat(client, generation, error_name(r.error_code))
            }
            (Handler::LeaveGroup, _) => {}
            (handler, Ok(_)) => unreachable!("mismatched response for {handler:?}"),
        }
    }

    /// `JoinGroupResponseHandler.handle` (AbstractCoordinator.java:566).
    fn on_join_group(
        &mut self,
        client: &mut ConsumerNetworkClient,
        sent: i32,
        r: kafka_protocol::messages::JoinGroupResponse,
    ) {
        let now = Instant::now();
        match error_name(r.error_code).as_deref() {
            None => {
                let group = self.group_mut();
                if group.state != MemberState::PreparingRebalance {
                    // UnjoinedGroupException: woken up, or left meanwhile.
                    self.fail_join("UNJOINED_GROUP", true);
                    return;
                }
                group.state = MemberState::CompletingRebalance;
                group.enable_heartbeat_thread(now);
                group.generation = Generation {
                    id: r.generation_id,
                    member_id: r.member_id.to_string(),
                    protocol: r.protocol_name.as_ref().map(|p| p.to_string()),
                };
                client.ctx().record(Event::Note {
                    text: format!(
                        "joined group with generation {} as {}{}",
                        r.generation_id,
                        r.member_id.as_str(),
                        if r.leader == r.member_id {
                            " (leader)"
                        } else {
                            ""
                        }
                    ),
                });
                let assignments = if r.leader == r.member_id {
                    match self.perform_assignment(client, &r) {
                        Ok(a) => a,
                        Err(e) => {
                            self.fail_join(&e, false);
                            return;
                        }
                    }
                } else {
                    Vec::new()
                };
                self.send_sync_group(client, assignments);
            }
            Some("COORDINATOR_LOAD_IN_PROGRESS") => {
                self.fail_join("COORDINATOR_LOAD_IN_PROGRESS", true)
            }
            Some("UNKNOWN_MEMBER_ID") => {
                if self.generation_unchanged(sent) {
                    self.group_mut()
                        .reset_state_and_rejoin(client, "UNKNOWN_MEMBER_ID from JoinGroup");
                }
                self.fail_join("UNKNOWN_MEMBER_ID", true);
            }
            Some(e @ ("COORDINATOR_NOT_AVAILABLE" | "NOT_COORDINATOR")) => {
                self.mark_coordinator_unknown(client, &format!("error response {e}"));
                self.fail_join(e, true);
            }
            Some("MEMBER_ID_REQUIRED") => {
                let group = self.group_mut();
                group.generation = Generation {
                    id: -1,
                    member_id: r.member_id.to_string(),
                    protocol: None,
                };
                group.request_rejoin(client, "need to re-join with the given member-id");
                self.fail_join("MEMBER_ID_REQUIRED", true);
            }
            Some("REBALANCE_IN_PROGRESS") => self.fail_join("REBALANCE_IN_PROGRESS", true),
            Some(e) => self.fail_join(e, false),
        }
    }

    /// `onJoinLeader` → `ConsumerCoordinator.performAssignment` (ConsumerCoordinator.java:620):
    /// decode every member's subscription, run the group's protocol's assignor over the
    /// metadata this member has, encode each member's assignment.
    fn perform_assignment(
        &mut self,
        client: &mut ConsumerNetworkClient,
        r: &kafka_protocol::messages::JoinGroupResponse,
    ) -> Result<Vec<(String, Bytes)>, String> {
        let protocol = r
            .protocol_name
            .as_ref()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let mut subscriptions: GroupSubscription = BTreeMap::new();
        for m in &r.members {
            let sub = consumer_protocol::decode_subscription(&m.metadata)
                .map_err(|e| format!("INCONSISTENT_GROUP_PROTOCOL: {e}"))?;
            subscriptions.insert(m.member_id.to_string(), sub);
        }
        if self.group_mut().version == LegacyVersion::V3_4_0 {
            sticky_claims::drop_claims_below_highest_generation(&protocol, &mut subscriptions);
        }
        let topics: BTreeSet<&str> = subscriptions
            .values()
            .flat_map(|s| s.topics.iter().map(String::as_str))
            .collect();
        let mut cluster = ClusterMetadata::new();
        for topic in topics {
            if let Some(t) = client.inner().metadata().topic(topic) {
                cluster.add_topic(topic, t.partitions.len());
            }
        }
        let group = self.group_mut();
        group.is_leader = true;
        let assignor = group
            .assignors
            .iter()
            .find(|a| a.name() == protocol)
            .ok_or_else(|| format!("unknown assignor {protocol}"))?;
        let assignment = assignor
            .assign(&cluster, &subscriptions)
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for (member, a) in assignment {
            let bytes = consumer_protocol::encode_assignment(
                &a,
                consumer_protocol::CONSUMER_PROTOCOL_VERSION,
            )
            .map_err(|e| e.to_string())?;
            out.push((member, bytes));
        }
        Ok(out)
    }

    /// `sendSyncGroupRequest`.
    fn send_sync_group(
        &mut self,
        client: &mut ConsumerNetworkClient,
        assignments: Vec<(String, Bytes)>,
    ) {
        let Some(node) = self.coordinator else {
            self.fail_join("COORDINATOR_NOT_AVAILABLE", true);
            return;
        };
        let group_id = self.group_id.clone();
        let generation = self.group_mut().generation.clone();
        let request = requests::sync_group(
            &group_id,
            &generation.member_id,
            generation.id,
            generation.protocol.as_deref().unwrap_or_default(),
            assignments,
        );
        client.send_as(
            node,
            request,
            requests::SYNC_GROUP_VERSION,
            Handler::SyncGroup {
                generation: generation.id,
            },
            Body::SyncGroup,
            Some((generation.member_id, generation.id)),
        );
    }

    /// `SyncGroupResponseHandler.handle` (AbstractCoordinator.java:738).
    fn on_sync_group(
        &mut self,
        client: &mut ConsumerNetworkClient,
        sent: i32,
        r: kafka_protocol::messages::SyncGroupResponse,
    ) {
        match error_name(r.error_code).as_deref() {
            None => {
                let group = self.group_mut();
                if !group.generation.is_none() && group.state == MemberState::CompletingRebalance {
                    group.state = MemberState::Stable;
                    group.rejoin_needed = false;
                    if let Some(f) = group.join_future.as_mut() {
                        f.outcome = Some(Ok(r.assignment.clone()));
                    }
                } else {
                    client.ctx().record(Event::Note {
                        text: "generation data was cleared by the heartbeat thread before the \
                               SyncGroup response; retrying"
                            .to_owned(),
                    });
                    self.fail_join("ILLEGAL_GENERATION", true);
                }
            }
            Some("REBALANCE_IN_PROGRESS") => self.fail_join("REBALANCE_IN_PROGRESS", true),
            Some(e @ ("UNKNOWN_MEMBER_ID" | "ILLEGAL_GENERATION")) => {
                if self.generation_unchanged(sent) {
                    self.group_mut()
                        .reset_state_and_rejoin(client, &format!("{e} from SyncGroup"));
                }
                self.fail_join(e, true);
            }
            Some(e @ ("COORDINATOR_NOT_AVAILABLE" | "NOT_COORDINATOR")) => {
                self.mark_coordinator_unknown(client, &format!("error response {e}"));
                self.fail_join(e, true);
            }
            Some(e) => self.fail_join(e, false),
        }
    }

    /// `HeartbeatResponseHandler.handle` (AbstractCoordinator.java:1124) and the heartbeat
    /// thread's listener on the future (AbstractCoordinator.java:1460).
    fn on_heartbeat(
        &mut self,
        client: &mut ConsumerNetworkClient,
        sent: i32,
        error: Option<String>,
    ) {
        let now = Instant::now();
        match error.as_deref() {
            None => self.group_mut().heartbeat.receive_heartbeat(now),
            Some(e @ ("COORDINATOR_NOT_AVAILABLE" | "NOT_COORDINATOR")) => {
                self.mark_coordinator_unknown(client, &format!("error response {e}"));
                self.group_mut().heartbeat.fail_heartbeat(now);
            }
            Some("REBALANCE_IN_PROGRESS") => {
                let group = self.group_mut();
                if group.state == MemberState::Stable {
                    group.request_rejoin(client, "group is already rebalancing");
                }
                // Still a sign of liveness either way.
                group.heartbeat.receive_heartbeat(now);
            }
            Some(e @ ("ILLEGAL_GENERATION" | "UNKNOWN_MEMBER_ID" | "FENCED_INSTANCE_ID")) => {
                if self.generation_unchanged(sent) {
                    let group = self.group_mut();
                    group.reset_state_and_rejoin(client, &format!("{e} from Heartbeat"));
                    group.heartbeat.fail_heartbeat(now);
                } else {
                    self.group_mut().heartbeat.receive_heartbeat(now);
                }
            }
            Some(_) => self.group_mut().heartbeat.fail_heartbeat(now),
        }
    }

    /// `sendHeartbeatRequest()`.
    pub fn send_heartbeat(&mut self, client: &mut ConsumerNetworkClient) {
        let Some(node) = self.coordinator else {
            return;
        };
        let group_id = self.group_id.clone();
        let generation = self.group_mut().generation.clone();
        client.send_as(
            node,
            requests::heartbeat(&group_id, &generation.member_id, generation.id),
            requests::HEARTBEAT_VERSION,
            Handler::Heartbeat {
                generation: generation.id,
            },
            Body::Heartbeat,
            Some((generation.member_id, generation.id)),
        );
    }

    /// `maybeLeaveGroup(reason)` (AbstractCoordinator.java:1035) up to its `pollNoWakeup`,
    /// which the caller performs: LeaveGroup if joined and the coordinator is known, then
    /// `resetGenerationOnLeaveGroup`.
    pub fn maybe_leave_group(&mut self, client: &mut ConsumerNetworkClient, reason: &str) {
        let coordinator = self.coordinator;
        let group_id = self.group_id.clone();
        let group = self.group_mut();
        if let Some(node) = coordinator {
            if group.state != MemberState::Unjoined && !group.generation.member_id.is_empty() {
                client.ctx().record(Event::Leave {
                    reason: reason.to_owned(),
                });
                let generation = group.generation.clone();
                client.send_as(
                    node,
                    requests::leave_group(&group_id, &generation.member_id),
                    requests::LEAVE_GROUP_VERSION,
                    Handler::LeaveGroup,
                    Body::LeaveGroup,
                    Some((generation.member_id, generation.id)),
                );
            }
        }
        group.reset_state_and_rejoin(client, "consumer pro-actively leaving the group");
    }
}

/// Decodes the member's assignment from the SyncGroup bytes.
pub(super) fn decode_assignment(bytes: &Bytes) -> Result<Vec<Tp>, String> {
    let a: Assignment = consumer_protocol::decode_assignment(bytes).map_err(|e| e.to_string())?;
    Ok(a.partitions.iter().map(to_tp).collect())
}

/// The assignors of `partition.assignment.strategy`, by preference.
pub(super) fn assignors(
    names: &[String],
) -> Result<Vec<Box<dyn ConsumerPartitionAssignor>>, String> {
    assignor::assignors_for_strategy(names).map_err(|e| e.to_string())
}
