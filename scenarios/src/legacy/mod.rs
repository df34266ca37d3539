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
//! uncontended today; subscribe mode will add a heartbeat task taking the same lock.
//!
//! **Coordinator state** (`coordinator.rs`): the coordinator node, `findCoordinatorFuture`
//! with its listeners, `pendingAsyncCommits`, `completedOffsetCommits`, with 3.1.0's order of
//! operations in `lookupCoordinator`, `ensureCoordinatorReady`, `commitOffsetsAsync`,
//! `doCommitOffsetsAsync`, `invokeCompletedOffsetCommitCallbacks` and manual-assignment `poll`
//! (`consumer.rs`). There is no switch that turns a bug on: KAFKA-13563 follows from
//! that order (see `crate::jira::kafka_13563`).
//!
//! Simplifications, none on the coordinator path: one connection per broker (Java opens a
//! separate one to the coordinator, id `MAX_VALUE - nodeId`); `client.isUnavailable` is not
//! probed (disconnects arrive as failed requests); `markCoordinatorUnknown` does not
//! `disconnectAsync` the old coordinator, so requests already in flight to it still get their
//! responses; `auto.offset.reset` is `earliest` = 0; fetches are sessionless.

mod consumer;
mod coordinator;
mod fetcher;
mod network;
mod requests;

use std::sync::Arc;

use kafka_consumer::network::{NetworkClient, NetworkConfig};
use sim::history::{Event, Tp};
use tokio::sync::Mutex;
use tokio::time::Duration;

use self::consumer::KafkaConsumer;
use crate::subject::{CommitCompletion, Delivered, Subject, SubjectContext, SubjectError};

/// The classic consumer model, driven by the runner's application loop.
pub struct LegacyConsumer {
    ctx: SubjectContext,
    shared: Arc<Mutex<KafkaConsumer>>,
}

impl LegacyConsumer {
    /// A consumer for `ctx.config`; fails when the configuration has no `group.id` (the
    /// model only covers the group paths) or its bootstrap servers do not parse.
    pub fn new(ctx: SubjectContext) -> Result<Self, SubjectError> {
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
        );
        Ok(Self {
            ctx,
            shared: Arc::new(Mutex::new(consumer)),
        })
    }
}

impl Subject for LegacyConsumer {
    async fn assign(&mut self, partitions: Vec<Tp>) {
        self.ctx.record(Event::ManualAssign {
            partitions: partitions.clone(),
        });
        self.shared.lock().await.assign(partitions);
    }

    async fn poll(&mut self, timeout: Duration) -> Result<Vec<Delivered>, SubjectError> {
        self.shared.lock().await.poll(timeout).await
    }

    async fn commit_async(&mut self, id: u64, offsets: Vec<(Tp, i64)>) {
        self.shared.lock().await.commit_async(id, offsets).await;
    }

    async fn close(&mut self, timeout: Duration) -> Result<(), SubjectError> {
        self.shared.lock().await.close(timeout).await;
        Ok(())
    }

    async fn take_completed_commits(&mut self) -> Vec<CommitCompletion> {
        self.shared.lock().await.take_completed_commits()
    }
}
