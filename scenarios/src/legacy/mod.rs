//! The legacy model: Apache Kafka 3.1.0's classic consumer, reduced to its threading and
//! coordinator state machine, as a test subject that must fail the Jira scenarios through
//! upstream's own mechanism. Never part of the production crate.
//!
//! **Threading.** The classic consumer runs an application thread and, once it joins a group,
//! a heartbeat thread; both use one `ConsumerNetworkClient` under a lock, and response
//! listeners run on whichever thread polls it. Here the application thread is the task calling
//! [`LegacyConsumer`]'s methods, the client and coordinator state sit behind one
//! `tokio::sync::Mutex` (madsim-compatible), and listeners run inside `poll` as in Java
//! (`network.rs`). Manual assignment never starts the heartbeat thread, so the lock is
//! uncontended there. In subscribe mode (`app.rs`, `group.rs`, `heartbeat.rs`) the heartbeat
//! thread is a task of its own taking the same lock: Java's coordinator monitor and the
//! client's lock are one lock here (a simplification: Java's heartbeat thread holds the monitor
//! while it waits for the client lock, so the two rarely differ in effect). They differ where
//! the application thread's unmonitored fetch poll completes a request the heartbeat thread is
//! still composing (KAFKA-10793, 2.6.1 only): there the model's I/O, which runs in tasks of its
//! own, completes it while the heartbeat thread is off the CPU for a seeded time (`heartbeat.rs`).
//!
//! **Group membership** (`group.rs`, `app.rs`, `heartbeat.rs`): `MemberState`, `Generation`,
//! `rejoinNeeded`, `needsJoinPrepare`, `joinFuture`, the `Heartbeat` timers; `ensureActiveGroup`
//! → `joinGroupIfNeeded` with `onJoinPrepare` (synchronous auto-commit bounded by the rebalance
//! timeout, then `onPartitionsRevoked`, or `onPartitionsLost` after a reset), JoinGroup, the
//! leader's assignor (the production crate's eager assignors through their public API),
//! SyncGroup, `onJoinComplete` (`onPartitionsAssigned`); the heartbeat thread (heartbeat,
//! session timeout → `markCoordinatorUnknown`, poll timeout → `maybeLeaveGroup`); 3.1's commit
//! error mapping. The eager protocol, and the cooperative one as 3.4.0 has it
//! ([`LegacyVersion::V3_4_0`]: owned partitions and generation in the subscription, revocation
//! of owned − assigned in `onJoinComplete` and a rejoin, 3.4.0's sticky ownership claims in
//! `sticky_claims.rs`); no pattern subscription; the leader assigns from the metadata it has
//! (Java refreshes it first).
//!
//! **Coordinator state** (`coordinator.rs`): the coordinator node, `findCoordinatorFuture`
//! with its listeners, `pendingAsyncCommits`, `completedOffsetCommits`, with 3.1.0's order of
//! operations in `lookupCoordinator`, `ensureCoordinatorReady`, `commitOffsetsAsync`,
//! `doCommitOffsetsAsync`, `invokeCompletedOffsetCommitCallbacks` and manual-assignment `poll`
//! (`consumer.rs`). There is no switch that turns a bug on: KAFKA-13563 follows from
//! that order (see `crate::jira::kafka_13563`), KAFKA-10793 from 2.6.1's handler clearing the
//! future ([`LegacyVersion::V2_6_1`], `crate::jira::kafka_10793`).
//!
//! Simplifications, none on the coordinator path: one connection per broker (Java opens a
//! separate one to the coordinator, id `MAX_VALUE - nodeId`); `client.isUnavailable` is not
//! probed (disconnects arrive as failed requests); `markCoordinatorUnknown` does not
//! `disconnectAsync` the old coordinator, so requests already in flight to it still get their
//! responses; `auto.offset.reset` is `earliest` = 0; fetches are sessionless.

mod app;
mod consumer;
mod coordinator;
mod fetcher;
mod group;
mod heartbeat;
mod network;
mod requests;
mod sticky_claims;
mod version;

use std::sync::Arc;

use kafka_consumer::network::{NetworkClient, NetworkConfig};
use sim::history::{Event, Tp};
use tokio::sync::{Mutex, Notify};
use tokio::time::Duration;

use self::app::AppThread;
use self::consumer::KafkaConsumer;
use self::group::{GroupState, HeartbeatTimers};
pub use self::version::LegacyVersion;
use crate::subject::{
    CommitCompletion, Delivered, ListenerBehaviour, Subject, SubjectContext, SubjectError,
};

/// The classic consumer model, driven by the runner's application loop.
pub struct LegacyConsumer {
    ctx: SubjectContext,
    shared: Arc<Mutex<KafkaConsumer>>,
    /// Set by `subscribe`: the application thread's subscribe-mode loops.
    app: Option<AppThread>,
}

impl LegacyConsumer {
    /// A consumer for `ctx.config` following `version`'s code paths; fails when the
    /// configuration has no `group.id` (the model only covers the group paths) or its
    /// bootstrap servers do not parse.
    pub fn new(ctx: SubjectContext, version: LegacyVersion) -> Result<Self, SubjectError> {
        let config = &ctx.config;
        let group_id = config
            .group_id()
            .ok_or_else(|| SubjectError("the legacy model needs a group.id".to_owned()))?
            .to_owned();
        let network = NetworkClient::new(NetworkConfig {
            bootstrap_servers: config.bootstrap_servers().to_vec(),
            client_id: config.client_id().to_owned(),
            request_timeout_ms: u64::from(config.request_timeout_ms()),
            reconnect_backoff_ms: config.reconnect_backoff_ms(),
            reconnect_backoff_max_ms: config.reconnect_backoff_max_ms(),
            socket_connection_setup_timeout_ms: non_negative(
                config.socket_connection_setup_timeout_ms(),
            ),
            socket_connection_setup_timeout_max_ms: non_negative(
                config.socket_connection_setup_timeout_max_ms(),
            ),
            connections_max_idle_ms: u64::try_from(config.connections_max_idle_ms()).ok(),
            // The same `security.protocol`/`ssl.*`/`sasl.*` (family-auth's SASL listener).
            security: config.security().clone(),
            ..NetworkConfig::default()
        })
        .map_err(|e| SubjectError(e.to_string()))?;
        ctx.record(Event::MemberStart {
            group: group_id.clone(),
        });
        let consumer = KafkaConsumer::new(
            network,
            ctx.clone(),
            group_id,
            Duration::from_millis(config.retry_backoff_ms()),
            config.fetch_max_wait_ms() as i32,
            config.max_poll_records() as usize,
            version,
        );
        Ok(Self {
            ctx,
            shared: Arc::new(Mutex::new(consumer)),
            app: None,
        })
    }
}

impl Subject for LegacyConsumer {
    async fn assign(&mut self, partitions: Vec<Tp>) {
        self.ctx.record(Event::ManualAssign {
            partitions: partitions.clone(),
        });
        let mut s = self.shared.lock().await;
        s.assign(partitions);
        let config = &self.ctx.config;
        if config.enable_auto_commit() {
            let interval = Duration::from_millis(u64::from(config.auto_commit_interval_ms()));
            s.auto_commit = Some((interval, tokio::time::Instant::now() + interval));
        }
    }

    async fn subscribe(&mut self, topics: Vec<String>, listener: ListenerBehaviour) {
        self.ctx.record(Event::Subscribe {
            topics: topics.clone(),
        });
        let config = &self.ctx.config;
        let names: Vec<String> = config
            .partition_assignment_strategy()
            .iter()
            .map(|a| a.name().to_owned())
            .collect();
        let mut s = self.shared.lock().await;
        let version = s.version;
        // Eager assignors only on the releases whose cooperative paths are not modelled.
        let names: Vec<String> = names
            .into_iter()
            .filter(|n| version.models_cooperative() || !n.contains("ooperative"))
            .collect();
        let assignors = group::assignors(&names).unwrap_or_default();
        let retry_backoff = Duration::from_millis(config.retry_backoff_ms());
        let max_poll = Duration::from_millis(u64::from(config.max_poll_interval_ms()));
        s.coordinator.group = Some(GroupState::new(
            topics.clone(),
            assignors,
            version,
            config.session_timeout_ms(),
            config.max_poll_interval_ms() as i32,
            HeartbeatTimers::new(
                Duration::from_millis(config.session_timeout_ms().max(0) as u64),
                max_poll,
                Duration::from_millis(config.heartbeat_interval_ms().max(0) as u64),
                retry_backoff,
            ),
        ));
        if config.enable_auto_commit() {
            let interval = Duration::from_millis(u64::from(config.auto_commit_interval_ms()));
            s.auto_commit = Some((interval, tokio::time::Instant::now() + interval));
        }
        drop(s);
        let app = AppThread {
            shared: self.shared.clone(),
            notify: Arc::new(Notify::new()),
            ctx: self.ctx.clone(),
            listener,
        };
        app.subscribe(topics).await;
        self.app = Some(app);
    }

    /// The model has no pattern subscription (no scenario of the old design needs one): the
    /// member records the call and never joins.
    async fn subscribe_pattern(&mut self, pattern: String, _listener: ListenerBehaviour) {
        self.ctx.record(Event::Subscribe { topics: Vec::new() });
        self.ctx.record(Event::Note {
            text: format!(
                "subscribe pattern {pattern}: the legacy model has no pattern subscription"
            ),
        });
    }

    async fn poll(&mut self, timeout: Duration) -> Result<Vec<Delivered>, SubjectError> {
        match &self.app {
            Some(app) => app.poll(timeout).await,
            None => self.shared.lock().await.poll(timeout).await,
        }
    }

    async fn commit_async(&mut self, id: u64, offsets: Vec<(Tp, i64)>) {
        self.shared.lock().await.commit_async(id, offsets).await;
    }

    async fn commit_sync(
        &mut self,
        offsets: Vec<(Tp, i64)>,
        timeout: Duration,
    ) -> Result<(), SubjectError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let id = {
            let mut s = self.shared.lock().await;
            let id = s.next_internal_commit;
            s.next_internal_commit += 1;
            id
        };
        match app::commit_offsets_sync(&self.shared, id, offsets, deadline).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(SubjectError("TIMEOUT".to_owned())),
            Err(e) => Err(SubjectError(e.error)),
        }
    }

    async fn close(&mut self, timeout: Duration) -> Result<(), SubjectError> {
        match &self.app {
            Some(app) => app.close(timeout).await,
            None => self.shared.lock().await.close(timeout).await,
        }
        Ok(())
    }

    async fn take_completed_commits(&mut self) -> Vec<CommitCompletion> {
        self.shared.lock().await.take_completed_commits()
    }
}

/// A millisecond setting Java types as a long, negative values read as 0 (as the consumer's own
/// settings do).
fn non_negative(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}
