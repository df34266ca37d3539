//! The coordinator's view of our consumer, written into the history.
//!
//! The legacy model records its own requests; our production consumer records nothing about
//! its protocol (it has no history hooks, by design). The group coordinator sees what matters:
//! every group request a member sends, and the answer. [`ObservedShards`] wraps the cluster's
//! [`GroupCoordinatorFactory`] so each shard reports, for requests from a known client address:
//!
//! - `Request` / `Response` summaries of the group APIs (member id, generation or member epoch,
//!   error name), so checkers can see heartbeats and fencing;
//! - `Leave` for a leave heartbeat (epoch -1 or -2) or a `LeaveGroup`;
//! - `Expelled` when the coordinator removes a member on its own (a session, rejoin, sync or
//!   revocation deadline passed), under the client whose requests carried that member id —
//!   the one fact about a member fenced in silence that only the coordinator has;
//! - for a subject whose application never commits (`CommitPolicy::Auto`), each `OffsetCommit`
//!   as an `Auto` commit with its offsets and outcome, so the commit checkers judge auto-commit
//!   — or as `Abandoned` when it came on a connection older than one the client had already
//!   sent group requests to this broker on. Our consumer keeps one connection per broker and
//!   replaces it only after closing the old one (a request timed out, the connection failed),
//!   so such a request was written before the client gave up on it and reached the broker
//!   late (madsim, like TCP, still delivers what a closed connection had queued).
//!
//! Requests answered without reaching a shard (injected errors, `NOT_COORDINATOR` from a broker
//! that does not lead the group) are not seen: the recorded ones reached the live coordinator.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use sim::coordinator::{
    CoordinatorLog, ExpelledMember, GroupRequest, GroupRequestContext, GroupResponse, GroupShard,
    GroupShardFactory,
};
use sim::group::shard::GroupCoordinatorFactory;
use sim::history::{CommitMode, Event, SubjectRecorder, Tp};
use sim::kafka_version::KafkaVersion;
use tokio::time::Instant;

use crate::consumer_subject::code_name;

/// Commit ids of observed auto-commits start here, far above the application's own ids.
pub const AUTO_COMMIT_IDS: u64 = 1 << 32;

/// One observed client: who it is in the history and whether its commits are automatic.
#[derive(Debug, Clone)]
pub(super) struct ObservedClient {
    pub recorder: SubjectRecorder,
    /// The application never commits, so every `OffsetCommit` is an auto-commit.
    pub auto_commits: bool,
}

/// A [`GroupShardFactory`] whose shards report the group traffic of known clients.
#[derive(Debug, Clone)]
pub(super) struct ObservedShards {
    inner: GroupCoordinatorFactory,
    /// By Kafka's `clientHost` form, `/10.0.2.1`.
    clients: Arc<BTreeMap<String, ObservedClient>>,
    /// Virtual time zero of the run, known only once the cluster is up ([`Self::start`]).
    started: Arc<OnceLock<Instant>>,
    /// Shared by every shard (moves and restarts load new ones), so commit ids never collide.
    next_commit: Arc<AtomicU64>,
    /// (client host, broker) → the newest connection group requests came on.
    newest_connection: Arc<Mutex<BTreeMap<(String, i32), u64>>>,
    /// Member id → the client whose requests or answers carried it (shared across shards: a
    /// member keeps its id when the coordinator moves).
    members: Arc<Mutex<BTreeMap<String, ObservedClient>>>,
}

impl ObservedShards {
    pub fn new(inner: GroupCoordinatorFactory, clients: BTreeMap<String, ObservedClient>) -> Self {
        Self {
            inner,
            clients: Arc::new(clients),
            started: Arc::default(),
            next_commit: Arc::new(AtomicU64::new(AUTO_COMMIT_IDS)),
            newest_connection: Arc::default(),
            members: Arc::default(),
        }
    }
}

impl ObservedShards {
    /// Sets the run's time zero: history times are counted from it.
    pub fn start(&self, started: Instant) {
        let _ = self.started.set(started);
    }

    /// Whether a request came on a connection older than one its client already used to send
    /// group requests to the same broker (remembering the newer one otherwise).
    fn on_replaced_connection(&self, context: &GroupRequestContext) -> bool {
        let mut newest = self
            .newest_connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (context.client_host.clone(), context.broker_id);
        let seen = newest.entry(key).or_insert(context.connection_id);
        if context.connection_id < *seen {
            return true;
        }
        *seen = context.connection_id;
        false
    }

    /// Remembers that `member_id` is `client`'s.
    fn learn_member(&self, member_id: Option<&str>, client: &ObservedClient) {
        let Some(member_id) = member_id.filter(|id| !id.is_empty()) else {
            return;
        };
        self.members
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(member_id.to_owned(), client.clone());
    }

    /// The client a member id belongs to, if it is an observed one.
    fn client_of(&self, member_id: &str) -> Option<ObservedClient> {
        self.members
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(member_id)
            .cloned()
    }
}

impl GroupShardFactory for ObservedShards {
    fn load(
        &self,
        partition: i32,
        log: CoordinatorLog,
        now_ms: u64,
        version: KafkaVersion,
    ) -> Box<dyn GroupShard> {
        Box::new(ObservedShard {
            inner: self.inner.load(partition, log, now_ms, version),
            observer: self.clone(),
            pending: BTreeMap::new(),
        })
    }
}

/// A request awaiting its answer.
struct Pending {
    client: ObservedClient,
    api: &'static str,
    commit_id: Option<u64>,
}

struct ObservedShard {
    inner: Box<dyn GroupShard>,
    observer: ObservedShards,
    pending: BTreeMap<u64, Pending>,
}

impl ObservedShard {
    fn now_ms(&self) -> u64 {
        self.observer
            .started
            .get()
            .map_or(0, |started| started.elapsed().as_millis() as u64)
    }

    /// Records an auto-commit request (`abandoned`: it came on a replaced connection) and
    /// returns its id.
    fn record_commit(
        &self,
        client: &ObservedClient,
        request: &OffsetCommitRequest,
        abandoned: bool,
    ) -> u64 {
        let id = self.observer.next_commit.fetch_add(1, Ordering::Relaxed);
        let offsets = request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    (
                        Tp::new(t.name.to_string(), p.partition_index),
                        p.committed_offset,
                    )
                })
            })
            .collect();
        client.recorder.record(
            self.now_ms(),
            Event::CommitRequested {
                id,
                mode: if abandoned {
                    CommitMode::Abandoned
                } else {
                    CommitMode::Auto
                },
                generation: Some(request.generation_id_or_member_epoch),
                offsets,
            },
        );
        id
    }

    /// Records each member the coordinator just removed on its own under its client.
    fn record_expelled(&mut self) {
        let at_ms = self.now_ms();
        for ExpelledMember {
            member_id, reason, ..
        } in self.inner.take_expelled()
        {
            if let Some(client) = self.observer.client_of(&member_id) {
                client.recorder.record(
                    at_ms,
                    Event::Expelled {
                        member_id,
                        reason: reason.to_owned(),
                    },
                );
            }
        }
    }
}

/// The API name, member id and generation (or member epoch) of a group request.
fn summary(request: &GroupRequest) -> (&'static str, Option<String>, Option<i32>) {
    match request {
        GroupRequest::ConsumerGroupHeartbeat(r) => (
            "ConsumerGroupHeartbeat",
            Some(r.member_id.to_string()),
            Some(r.member_epoch),
        ),
        GroupRequest::OffsetCommit(r) => (
            "OffsetCommit",
            Some(r.member_id.to_string()),
            Some(r.generation_id_or_member_epoch),
        ),
        GroupRequest::JoinGroup(r) => ("JoinGroup", Some(r.member_id.to_string()), None),
        GroupRequest::SyncGroup(r) => (
            "SyncGroup",
            Some(r.member_id.to_string()),
            Some(r.generation_id),
        ),
        GroupRequest::Heartbeat(r) => (
            "Heartbeat",
            Some(r.member_id.to_string()),
            Some(r.generation_id),
        ),
        GroupRequest::LeaveGroup(_) => ("LeaveGroup", None, None),
        GroupRequest::OffsetFetch(_) => ("OffsetFetch", None, None),
        GroupRequest::DescribeGroups(_) => ("DescribeGroups", None, None),
        GroupRequest::ListGroups(_) => ("ListGroups", None, None),
        GroupRequest::ConsumerGroupDescribe(_) => ("ConsumerGroupDescribe", None, None),
        GroupRequest::DeleteGroups(_) => ("DeleteGroups", None, None),
        GroupRequest::OffsetDelete(_) => ("OffsetDelete", None, None),
    }
}

/// The first error of an OffsetCommit response (per partition), if any.
fn commit_error(response: &OffsetCommitResponse) -> Option<i16> {
    response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| p.error_code)
        .find(|code| *code != 0)
}

/// The error code, member id and generation (or member epoch) of a group response.
fn response_summary(response: &GroupResponse) -> (i16, Option<String>, Option<i32>) {
    match response {
        GroupResponse::ConsumerGroupHeartbeat(r) => (
            r.error_code,
            r.member_id.as_ref().map(ToString::to_string),
            Some(r.member_epoch),
        ),
        GroupResponse::OffsetCommit(r) => (commit_error(r).unwrap_or(0), None, None),
        GroupResponse::JoinGroup(r) => (
            r.error_code,
            Some(r.member_id.to_string()),
            Some(r.generation_id),
        ),
        GroupResponse::SyncGroup(r) => (r.error_code, None, None),
        GroupResponse::Heartbeat(r) => (r.error_code, None, None),
        GroupResponse::LeaveGroup(r) => (r.error_code, None, None),
        GroupResponse::OffsetFetch(r) => (r.error_code, None, None),
        GroupResponse::DescribeGroups(_)
        | GroupResponse::ListGroups(_)
        | GroupResponse::ConsumerGroupDescribe(_)
        | GroupResponse::DeleteGroups(_) => (0, None, None),
        GroupResponse::OffsetDelete(r) => (r.error_code, None, None),
    }
}

impl GroupShard for ObservedShard {
    fn handle(&mut self, now_ms: u64, context: GroupRequestContext, request: GroupRequest) {
        if let Some(client) = self.observer.clients.get(&context.client_host).cloned() {
            let abandoned = self.observer.on_replaced_connection(&context);
            let (api, member_id, generation) = summary(&request);
            self.observer.learn_member(member_id.as_deref(), &client);
            let at_ms = self.now_ms();
            client.recorder.record(
                at_ms,
                Event::Request {
                    api: api.to_owned(),
                    correlation: context.request_id as i32,
                    node: "coordinator".to_owned(),
                    member_id,
                    generation,
                },
            );
            let leave = match &request {
                GroupRequest::ConsumerGroupHeartbeat(r) if r.member_epoch < 0 => {
                    Some(format!("heartbeat epoch {}", r.member_epoch))
                }
                GroupRequest::LeaveGroup(_) => Some("LeaveGroup".to_owned()),
                _ => None,
            };
            if let Some(reason) = leave {
                client.recorder.record(at_ms, Event::Leave { reason });
            }
            let commit_id = match &request {
                GroupRequest::OffsetCommit(r) if client.auto_commits => {
                    Some(self.record_commit(&client, r, abandoned))
                }
                _ => None,
            };
            self.pending.insert(
                context.request_id,
                Pending {
                    client,
                    api,
                    commit_id,
                },
            );
        }
        self.inner.handle(now_ms, context, request);
        self.record_expelled();
    }

    fn take_responses(&mut self) -> Vec<(u64, GroupResponse)> {
        let responses = self.inner.take_responses();
        let at_ms = self.now_ms();
        for (id, response) in &responses {
            let Some(pending) = self.pending.remove(id) else {
                continue;
            };
            let (code, member_id, generation) = response_summary(response);
            self.observer
                .learn_member(member_id.as_deref(), &pending.client);
            let error = (code != 0).then(|| code_name(code));
            pending.client.recorder.record(
                at_ms,
                Event::Response {
                    api: pending.api.to_owned(),
                    correlation: *id as i32,
                    node: "coordinator".to_owned(),
                    error: error.clone(),
                    member_id,
                    generation,
                },
            );
            if let Some(commit) = pending.commit_id {
                pending
                    .client
                    .recorder
                    .record(at_ms, Event::CommitCompleted { id: commit, error });
            }
        }
        responses
    }

    fn poll(&mut self, now_ms: u64) {
        self.inner.poll(now_ms);
        self.record_expelled();
    }

    fn next_deadline_ms(&self) -> Option<u64> {
        self.inner.next_deadline_ms()
    }

    fn on_loaded(&mut self, now_ms: u64) {
        self.inner.on_loaded(now_ms);
    }
}
