//! `AbstractCoordinator` + `ConsumerCoordinator` state of Kafka 3.1.0: the coordinator node,
//! `findCoordinatorFuture`, the commit machinery with the classic error mapping, and (subscribe
//! mode) the group state of `super::group`. The blocking loops (`ensureCoordinatorReady`,
//! `fetchCommittedOffsets`) live in `super::consumer`, which owns the network client they
//! poll; this file holds the synchronous steps and the response handlers (the Java listeners).
//!
//! Line references are to `clients/src/main/java/org/apache/kafka/clients/consumer/internals/`
//! at tag 3.1.0.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_consumer::network::NetworkError;
use sim::history::{Event, Tp};

use super::group::GroupState;
use super::network::{
    error_name, network_error_name, node_name, Body, ConsumerNetworkClient, Handler,
};
use super::requests;
use super::version::LegacyVersion;
use crate::subject::CommitCompletion;

/// A failed `RequestFuture`: the error and whether it is a `RetriableException`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FutureError {
    pub error: String,
    pub retriable: bool,
}

/// A `commitAsync` chained on the coordinator lookup (`lookupCoordinator().addListener(..)`,
/// ConsumerCoordinator.java:957).
#[derive(Debug, Clone)]
struct ChainedCommit {
    id: u64,
    offsets: Vec<(Tp, i64)>,
}

/// The `RequestFuture<Void>` of one FindCoordinator request and its listeners. Once completed
/// it stays completed.
#[derive(Debug, Default)]
struct FindCoordinatorFuture {
    outcome: Option<Result<(), FutureError>>,
    listeners: Vec<ChainedCommit>,
}

/// What `lookupCoordinator()` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lookup {
    /// `findCoordinatorFuture` (new or the one already set): the lookup with this id.
    Future(u64),
    /// `RequestFuture.noBrokersAvailable()`: not stored.
    NoBrokersAvailable,
}

/// A FindCoordinator request `client.send` has queued, before `compose` chains
/// `FindCoordinatorResponseHandler` on it and `lookupCoordinator` stores the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SentLookup {
    pub id: u64,
    pub correlation: i32,
}

/// The committed offsets `fetchCommittedOffsets` waits for (`pendingCommittedOffsetRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum OffsetFetchState {
    Idle,
    InFlight,
    Done(Result<Vec<(Tp, i64)>, FutureError>),
}

pub(super) struct ConsumerCoordinator {
    pub group_id: String,
    /// `AbstractCoordinator.coordinator`.
    pub coordinator: Option<i32>,
    /// Group membership, in subscribe mode (`subscriptions.hasAutoAssignedPartitions()`).
    pub group: Option<GroupState>,
    /// The release whose FindCoordinator handling the coordinator follows.
    version: LegacyVersion,
    /// Futures of synchronous commits (`commitOffsetsSync`) by commit id: `None` in flight.
    pub sync_commits: BTreeMap<u64, Option<Result<(), FutureError>>>,
    /// Ids of auto-commits whose callback has not run yet.
    pub auto_commit_ids: BTreeSet<u64>,
    /// Futures of asynchronous commits someone holds, by commit id: `None` in flight.
    watched_commits: BTreeMap<u64, Option<Result<(), FutureError>>>,
    /// An auto-commit callback saw a retriable failure since the last look.
    failed_auto_commit: bool,
    /// `findCoordinatorFuture`: the id of the stored lookup. Only
    /// `clearFindCoordinatorFuture()` empties it (AbstractCoordinator.java:292).
    find_coordinator_future: Option<u64>,
    /// Every lookup future still referenced: the stored one, and completed ones a caller may
    /// still look at (dropped when the next lookup starts).
    lookups: BTreeMap<u64, FindCoordinatorFuture>,
    next_lookup_id: u64,
    /// `completedOffsetCommits`: finished commits whose callbacks have not run yet.
    completed_offset_commits: VecDeque<CommitCompletion>,
    /// Callbacks that ran, for the application to observe.
    invoked: Vec<CommitCompletion>,
    /// `pendingAsyncCommits`: commits chained on a lookup that has not completed.
    pub pending_async_commits: usize,
    pub offset_fetch: OffsetFetchState,
}

fn retriable(error: &str) -> bool {
    !matches!(
        error,
        "GROUP_AUTHORIZATION_FAILED" | "INVALID_GROUP_ID" | "INVALID_REQUEST"
    )
}

impl ConsumerCoordinator {
    pub fn new(group_id: String, version: LegacyVersion) -> Self {
        Self {
            group_id,
            coordinator: None,
            group: None,
            version,
            sync_commits: BTreeMap::new(),
            auto_commit_ids: BTreeSet::new(),
            watched_commits: BTreeMap::new(),
            failed_auto_commit: false,
            find_coordinator_future: None,
            lookups: BTreeMap::new(),
            next_lookup_id: 0,
            completed_offset_commits: VecDeque::new(),
            invoked: Vec::new(),
            pending_async_commits: 0,
            offset_fetch: OffsetFetchState::Idle,
        }
    }

    /// `coordinatorUnknown()` = `checkAndGetCoordinator() == null` (AbstractCoordinator.java:883).
    /// Its `client.isUnavailable(coordinator)` probe is not modelled: our network client
    /// reconnects lazily, so a lost connection reaches the coordinator the other way Kafka has,
    /// through the failed in-flight request (`CoordinatorResponseHandler.onFailure`).
    pub fn coordinator_unknown(&self) -> bool {
        self.coordinator.is_none()
    }

    /// `markCoordinatorUnknown(cause)` (AbstractCoordinator.java:914). It forgets the node and
    /// nothing else: `findCoordinatorFuture` is left as it is.
    pub fn mark_coordinator_unknown(&mut self, client: &ConsumerNetworkClient, cause: &str) {
        if let Some(old) = self.coordinator.take() {
            client.ctx().record(Event::Note {
                text: format!(
                    "coordinator {} unavailable or invalid: {cause}",
                    node_name(old)
                ),
            });
        }
    }

    /// `lookupCoordinator()` (AbstractCoordinator.java:278): sends FindCoordinator only when no
    /// future is set, and returns the future either way. `compose` follows `client.send` with
    /// nothing in between: the request cannot have completed yet (the thread that sends holds
    /// the coordinator's monitor, and no one else polls the client here).
    pub fn lookup_coordinator(&mut self, client: &mut ConsumerNetworkClient) -> Lookup {
        if let Some(id) = self.find_coordinator_future {
            return Lookup::Future(id);
        }
        match self.send_find_coordinator(client) {
            Some(sent) => {
                self.store_find_coordinator_future(sent.id);
                Lookup::Future(sent.id)
            }
            None => Lookup::NoBrokersAvailable,
        }
    }

    /// The first half of `lookupCoordinator()` once it found no future set:
    /// `sendFindCoordinatorRequest(leastLoadedNode())` up to `client.send`, which queues the
    /// request. `None` when no broker is available. The caller composes and stores.
    pub fn send_find_coordinator(
        &mut self,
        client: &mut ConsumerNetworkClient,
    ) -> Option<SentLookup> {
        let node = client.least_loaded_node()?;
        let id = self.next_lookup_id;
        self.next_lookup_id += 1;
        // Futures of earlier lookups that completed and are no longer stored have no one left
        // to look at them.
        let stored = self.find_coordinator_future;
        self.lookups
            .retain(|&l, f| Some(l) == stored || f.outcome.is_none());
        self.lookups.insert(id, FindCoordinatorFuture::default());
        let correlation = client.send(
            node,
            requests::find_coordinator(&self.group_id),
            requests::FIND_COORDINATOR_VERSION,
            Handler::FindCoordinator { lookup: id },
            Body::FindCoordinator,
        );
        Some(SentLookup { id, correlation })
    }

    /// `findCoordinatorFuture = <the composed future>`: the last step of `lookupCoordinator()`.
    pub fn store_find_coordinator_future(&mut self, id: u64) {
        self.find_coordinator_future = Some(id);
    }

    /// The outcome of the lookup `id`, once it is done.
    pub fn lookup_outcome(&self, id: u64) -> Option<Result<(), FutureError>> {
        self.lookups.get(&id).and_then(|f| f.outcome.clone())
    }

    /// `clearFindCoordinatorFuture()`: called from `ensureCoordinatorReady` and the heartbeat
    /// thread since 2.8.0, only from `FindCoordinatorResponseHandler` before it
    /// ([`LegacyVersion::V2_6_1`]).
    pub fn clear_find_coordinator_future(&mut self) {
        self.find_coordinator_future = None;
    }

    /// Whether `FindCoordinatorResponseHandler` clears `findCoordinatorFuture` (before
    /// KAFKA-10793's fix), rather than `ensureCoordinatorReady` and the heartbeat thread.
    pub fn clears_lookup_in_handler(&self) -> bool {
        self.version == LegacyVersion::V2_6_1
    }

    /// `invokeCompletedOffsetCommitCallbacks()` (ConsumerCoordinator.java:929).
    pub fn invoke_completed_offset_commit_callbacks(&mut self) {
        for c in self.completed_offset_commits.drain(..) {
            if self.auto_commit_ids.remove(&c.id)
                && c.error
                    .as_deref()
                    .is_some_and(super::app::retriable_commit_error)
            {
                self.failed_auto_commit = true;
            }
            self.invoked.push(c);
        }
    }

    /// Completes the future of an asynchronous commit: its callback is queued for
    /// `invokeCompletedOffsetCommitCallbacks`, and a caller holding the future (3.2's
    /// `onJoinPrepare`) sees the outcome.
    fn complete_async(&mut self, id: u64, outcome: Result<(), FutureError>) {
        if let Some(slot) = self.watched_commits.get_mut(&id) {
            *slot = Some(outcome.clone());
        }
        self.completed_offset_commits.push_back(CommitCompletion {
            id,
            error: outcome.err().map(|e| e.error),
        });
    }

    /// Keeps the future of the asynchronous commit `id` (a `RequestFuture` someone holds).
    pub fn watch_commit(&mut self, id: u64, outcome: Option<Result<(), FutureError>>) {
        self.watched_commits.insert(id, outcome);
    }

    /// The outcome of a watched commit, `None` while in flight (or not watched).
    pub fn watched_outcome(&self, id: u64) -> Option<Result<(), FutureError>> {
        self.watched_commits.get(&id).cloned().flatten()
    }

    /// Drops a watched commit's future.
    pub fn unwatch_commit(&mut self, id: u64) {
        self.watched_commits.remove(&id);
    }

    /// Reports a finished commit the consumer made on its own, after the callbacks that ran
    /// before it.
    pub fn push_invoked(&mut self, completion: CommitCompletion) {
        self.invoked.push(completion);
    }

    /// Whether an auto-commit callback saw a retriable failure since the last call.
    pub fn take_failed_auto_commits(&mut self) -> bool {
        std::mem::take(&mut self.failed_auto_commit)
    }

    /// Whether `findCoordinatorFuture` is set.
    pub fn has_find_coordinator_future(&self) -> bool {
        self.find_coordinator_future.is_some()
    }

    /// The callbacks that ran since the last call.
    pub fn take_invoked(&mut self) -> Vec<CommitCompletion> {
        std::mem::take(&mut self.invoked)
    }

    /// `commitOffsetsAsync(offsets, callback)` (ConsumerCoordinator.java:944), up to its final
    /// `client.pollNoWakeup()`, which the caller performs.
    pub fn commit_offsets_async(
        &mut self,
        client: &mut ConsumerNetworkClient,
        id: u64,
        offsets: Vec<(Tp, i64)>,
    ) {
        self.invoke_completed_offset_commit_callbacks();
        if !self.coordinator_unknown() {
            self.do_commit_offsets_async(client, id, offsets);
            return;
        }
        // "we don't know the current coordinator, so try to find it and then send the commit
        // or fail": the commit is chained on whatever lookupCoordinator() returns — after the
        // first rediscovery by a commit, that is a future nobody clears (KAFKA-13563).
        self.pending_async_commits += 1;
        let chained = ChainedCommit { id, offsets };
        match self.lookup_coordinator(client) {
            Lookup::NoBrokersAvailable => self.fire_lookup_listener(
                client,
                Err(FutureError {
                    error: "NO_BROKERS_AVAILABLE".to_owned(),
                    retriable: true,
                }),
                chained,
            ),
            Lookup::Future(id) => {
                let future = self
                    .lookups
                    .get_mut(&id)
                    .expect("lookup_coordinator keeps the future it returns");
                match future.outcome.clone() {
                    // RequestFuture.addListener on a completed future fires at once.
                    Some(outcome) => self.fire_lookup_listener(client, outcome, chained),
                    None => future.listeners.push(chained),
                }
            }
        }
    }

    /// The listener of ConsumerCoordinator.java:957–971.
    fn fire_lookup_listener(
        &mut self,
        client: &mut ConsumerNetworkClient,
        outcome: Result<(), FutureError>,
        chained: ChainedCommit,
    ) {
        self.pending_async_commits -= 1;
        match outcome {
            Ok(()) => self.do_commit_offsets_async(client, chained.id, chained.offsets),
            Err(e) => self.complete_async(chained.id, Err(e)),
        }
    }

    /// `doCommitOffsetsAsync` → `sendOffsetCommitRequest` (ConsumerCoordinator.java:980,
    /// 1122): with the coordinator unknown the future fails at once with
    /// `COORDINATOR_NOT_AVAILABLE`, no request sent.
    fn do_commit_offsets_async(
        &mut self,
        client: &mut ConsumerNetworkClient,
        id: u64,
        offsets: Vec<(Tp, i64)>,
    ) {
        if let Err(e) = self.send_offset_commit_request(client, id, offsets) {
            self.complete_async(id, Err(e));
        }
    }

    /// `sendOffsetCommitRequest(offsets)` (ConsumerCoordinator.java:1122): fails at once
    /// without a coordinator, and in subscribe mode without a stable generation
    /// (`RebalanceInProgressException` while rebalancing, else `CommitFailedException`).
    /// Manual assignment commits with `NO_GENERATION`.
    pub fn send_offset_commit_request(
        &mut self,
        client: &mut ConsumerNetworkClient,
        id: u64,
        offsets: Vec<(Tp, i64)>,
    ) -> Result<(), FutureError> {
        let Some(node) = self.coordinator else {
            return Err(FutureError {
                error: "COORDINATOR_NOT_AVAILABLE".to_owned(),
                retriable: true,
            });
        };
        let (generation, member_id) = match &self.group {
            None => (-1, String::new()),
            Some(group) => match group.generation_if_stable() {
                Some(g) => (g.id, g.member_id.clone()),
                None if group.rebalance_in_progress() => {
                    return Err(FutureError {
                        error: "REBALANCE_IN_PROGRESS".to_owned(),
                        retriable: false,
                    })
                }
                None => {
                    return Err(FutureError {
                        error: "COMMIT_FAILED".to_owned(),
                        retriable: false,
                    })
                }
            },
        };
        let member = self
            .group
            .is_some()
            .then(|| (member_id.clone(), generation));
        client.send_as(
            node,
            requests::offset_commit(&self.group_id, generation, &member_id, &offsets),
            requests::OFFSET_COMMIT_VERSION,
            Handler::OffsetCommit {
                commit: id,
                offsets,
                generation,
            },
            Body::OffsetCommit,
            member,
        );
        Ok(())
    }

    /// `OffsetCommitResponseHandler.handle` (ConsumerCoordinator.java:1195): the error and
    /// whether it is retriable, with the side effects of 3.1's mapping.
    fn on_offset_commit(
        &mut self,
        client: &mut ConsumerNetworkClient,
        generation: i32,
        result: Result<Body, NetworkError>,
    ) -> Option<FutureError> {
        let error = self.coordinator_error(client, result, |body| match body {
            Body::OffsetCommit(r) => r
                .topics
                .iter()
                .flat_map(|t| &t.partitions)
                .find_map(|p| error_name(p.error_code)),
            _ => None,
        })?;
        let retriable = match error.as_str() {
            "COORDINATOR_LOAD_IN_PROGRESS"
            | "UNKNOWN_TOPIC_OR_PARTITION"
            | "COORDINATOR_NOT_AVAILABLE"
            | "NOT_COORDINATOR"
            | "REQUEST_TIMED_OUT"
            | "DISCONNECTED" => true,
            "REBALANCE_IN_PROGRESS" => {
                if let Some(group) = self.group.as_mut() {
                    group.request_rejoin(
                        client,
                        "offset commit failed since group is already rebalancing",
                    );
                }
                false
            }
            "UNKNOWN_MEMBER_ID" | "ILLEGAL_GENERATION" => {
                if let Some(group) = self.group.as_mut() {
                    let unchanged = group.generation.id == generation;
                    if !unchanged && group.state == super::group::MemberState::PreparingRebalance {
                        return Some(FutureError {
                            error: "REBALANCE_IN_PROGRESS".to_owned(),
                            retriable: false,
                        });
                    }
                    group.reset_state_and_rejoin(client, &format!("{error} from OffsetCommit"));
                }
                return Some(FutureError {
                    error: "COMMIT_FAILED".to_owned(),
                    retriable: false,
                });
            }
            _ => false,
        };
        Some(FutureError { error, retriable })
    }

    /// Sends OffsetFetch for `partitions` to the known coordinator.
    pub fn send_offset_fetch(&mut self, client: &mut ConsumerNetworkClient, partitions: &[Tp]) {
        let Some(node) = self.coordinator else {
            self.offset_fetch = OffsetFetchState::Done(Err(FutureError {
                error: "COORDINATOR_NOT_AVAILABLE".to_owned(),
                retriable: true,
            }));
            return;
        };
        client.send(
            node,
            requests::offset_fetch(&self.group_id, partitions),
            requests::OFFSET_FETCH_VERSION,
            Handler::OffsetFetch,
            Body::OffsetFetch,
        );
        self.offset_fetch = OffsetFetchState::InFlight;
    }

    /// Runs the response handler of a coordinator request.
    pub fn handle(
        &mut self,
        client: &mut ConsumerNetworkClient,
        handler: Handler,
        result: Result<Body, NetworkError>,
    ) {
        match (handler, result) {
            (Handler::FindCoordinator { lookup }, result) => {
                self.on_find_coordinator(client, lookup, result)
            }
            (
                Handler::OffsetCommit {
                    commit, generation, ..
                },
                result,
            ) => {
                let error = self.on_offset_commit(client, generation, result);
                match self.sync_commits.get_mut(&commit) {
                    Some(slot) => *slot = Some(error.map_or(Ok(()), Err)),
                    None => self.complete_async(commit, error.map_or(Ok(()), Err)),
                }
            }
            (Handler::OffsetFetch, Ok(Body::OffsetFetch(r))) => {
                let ok = Ok(Body::OffsetFetch(r.clone()));
                self.offset_fetch = match self.coordinator_error(client, ok, |_| {
                    error_name(r.error_code).or_else(|| {
                        r.topics
                            .iter()
                            .flat_map(|t| &t.partitions)
                            .find_map(|p| error_name(p.error_code))
                    })
                }) {
                    Some(error) => OffsetFetchState::Done(Err(FutureError {
                        retriable: retriable(&error),
                        error,
                    })),
                    None => OffsetFetchState::Done(Ok(r
                        .topics
                        .iter()
                        .flat_map(|t| {
                            t.partitions.iter().map(|p| {
                                (
                                    Tp::new(t.name.0.to_string(), p.partition_index),
                                    p.committed_offset,
                                )
                            })
                        })
                        .collect())),
                };
            }
            (Handler::OffsetFetch, result) => {
                let error = self
                    .coordinator_error(client, result, |_| None)
                    .unwrap_or_else(|| "UNEXPECTED_RESPONSE".to_owned());
                self.offset_fetch = OffsetFetchState::Done(Err(FutureError {
                    retriable: retriable(&error),
                    error,
                }));
            }
            (Handler::Fetch { .. } | Handler::Metadata, _) => {
                unreachable!("fetch and metadata responses go to the fetcher")
            }
            (
                handler @ (Handler::JoinGroup { .. }
                | Handler::SyncGroup { .. }
                | Handler::Heartbeat { .. }
                | Handler::LeaveGroup),
                result,
            ) => self.handle_group(client, handler, result),
        }
    }

    /// The error of a coordinator response, marking the coordinator unknown where Kafka does:
    /// a disconnect (`CoordinatorResponseHandler.onFailure`, AbstractCoordinator.java:1183) or
    /// `COORDINATOR_NOT_AVAILABLE` / `NOT_COORDINATOR` / `REQUEST_TIMED_OUT` in the body
    /// (`OffsetCommitResponseHandler`, `OffsetFetchResponseHandler`).
    fn coordinator_error(
        &mut self,
        client: &ConsumerNetworkClient,
        result: Result<Body, NetworkError>,
        body_error: impl FnOnce(&Body) -> Option<String>,
    ) -> Option<String> {
        match result {
            Err(e) => {
                let error = network_error_name(&e);
                if error == "DISCONNECTED" {
                    self.mark_coordinator_unknown(client, &e.to_string());
                }
                Some(error)
            }
            Ok(body) => {
                let error = body_error(&body)?;
                if matches!(
                    error.as_str(),
                    "COORDINATOR_NOT_AVAILABLE" | "NOT_COORDINATOR" | "REQUEST_TIMED_OUT"
                ) {
                    self.mark_coordinator_unknown(client, &format!("error response {error}"));
                }
                Some(error)
            }
        }
    }

    /// `FindCoordinatorResponseHandler` (AbstractCoordinator.java:830): sets the coordinator
    /// and completes the future, then its listeners run in the order they were added. Since
    /// KAFKA-10793's fix (2.8.0) it leaves `findCoordinatorFuture` alone; 2.6.1's clears it
    /// first, whichever lookup it holds (AbstractCoordinator.java:827 and :856 at 2.6.1).
    fn on_find_coordinator(
        &mut self,
        client: &mut ConsumerNetworkClient,
        lookup: u64,
        result: Result<Body, NetworkError>,
    ) {
        if self.clears_lookup_in_handler() {
            self.clear_find_coordinator_future();
        }
        let outcome = match result {
            Ok(Body::FindCoordinator(r)) => match error_name(r.error_code) {
                None => {
                    self.coordinator = Some(r.node_id.0);
                    if let Some(group) = self.group.as_mut() {
                        group
                            .heartbeat
                            .reset_session_timeout(tokio::time::Instant::now());
                    }
                    client.ctx().record(Event::Note {
                        text: format!("discovered group coordinator {}", node_name(r.node_id.0)),
                    });
                    Ok(())
                }
                Some(error) => Err(FutureError {
                    retriable: retriable(&error),
                    error,
                }),
            },
            Ok(_) => Err(FutureError {
                error: "UNEXPECTED_RESPONSE".to_owned(),
                retriable: false,
            }),
            Err(e) => Err(FutureError {
                error: network_error_name(&e),
                retriable: true,
            }),
        };
        let Some(future) = self
            .lookups
            .get_mut(&lookup)
            .filter(|f| f.outcome.is_none())
        else {
            return;
        };
        future.outcome = Some(outcome.clone());
        let listeners = std::mem::take(&mut future.listeners);
        for chained in listeners {
            self.fire_lookup_listener(client, outcome.clone(), chained);
        }
    }
}
