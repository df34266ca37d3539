//! Hosting shards on a broker: one task per loaded shard, created when the broker becomes
//! leader of an offsets partition and dropped when it stops being one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kafka_consumer::rt::{Duration, Instant};
use kafka_protocol::error::ResponseError;
use tokio::sync::{mpsc, oneshot};

use super::{
    CoordinatorLog, GroupRequest, GroupRequestContext, GroupResponse, GroupShard, GroupShardFactory,
};
use crate::controller::{Controller, OFFSETS_TOPIC};

struct ShardCommand {
    context: GroupRequestContext,
    request: GroupRequest,
    reply: oneshot::Sender<GroupResponse>,
}

struct ShardHandle {
    leader_epoch: i32,
    /// Until then the shard is "loading" (`COORDINATOR_LOAD_IN_PROGRESS`).
    loaded_at_ms: u64,
    commands: mpsc::UnboundedSender<ShardCommand>,
}

/// A broker's coordinator runtime: its loaded shards.
pub(crate) struct CoordinatorRuntime {
    node_id: i32,
    controller: Controller,
    factory: Arc<dyn GroupShardFactory>,
    shards: Mutex<BTreeMap<i32, ShardHandle>>,
    next_request_id: AtomicU64,
}

impl CoordinatorRuntime {
    pub(crate) fn new(
        node_id: i32,
        controller: Controller,
        factory: Arc<dyn GroupShardFactory>,
    ) -> Self {
        Self {
            node_id,
            controller,
            factory,
            shards: Mutex::new(BTreeMap::new()),
            next_request_id: AtomicU64::new(1),
        }
    }

    /// Reconciles with the metadata image on every change, so loading starts at election
    /// (not at the first request). Runs until the broker's tasks are dropped.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut changes = self.controller.subscribe();
        loop {
            self.reconcile();
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Loads a shard for each offsets partition this broker now leads (at its current epoch)
    /// and unloads the rest.
    fn reconcile(&self) {
        let led: Vec<(i32, i32)> = {
            let state = self.controller.read();
            state
                .topics
                .get(OFFSETS_TOPIC)
                .map(|t| {
                    t.partitions
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| p.leader == self.node_id)
                        .map(|(i, p)| (i as i32, p.leader_epoch))
                        .collect()
                })
                .unwrap_or_default()
        };
        let load_ms = self.controller.read().config.coordinator_load_ms;
        let mut shards = self.lock();
        shards.retain(|partition, handle| {
            led.iter()
                .any(|(p, epoch)| p == partition && *epoch == handle.leader_epoch)
        });
        for (partition, leader_epoch) in led {
            if shards.contains_key(&partition) {
                continue;
            }
            let now_ms = self.controller.now_ms();
            let log = CoordinatorLog::new(self.controller.clone(), partition, leader_epoch);
            let version = self.controller.read().broker_version(self.node_id);
            let shard = self.factory.load(partition, log, now_ms, version);
            let (commands, rx) = mpsc::unbounded_channel();
            tokio::spawn(run_shard(
                shard,
                rx,
                self.controller.clone(),
                now_ms + load_ms,
            ));
            shards.insert(
                partition,
                ShardHandle {
                    leader_epoch,
                    loaded_at_ms: now_ms + load_ms,
                    commands,
                },
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<i32, ShardHandle>> {
        self.shards
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Offsets partitions with an active (loaded) shard here.
    pub(crate) fn active_partitions(&self) -> Result<Vec<i32>, ResponseError> {
        self.reconcile();
        let now_ms = self.controller.now_ms();
        let shards = self.lock();
        if shards.values().any(|s| s.loaded_at_ms > now_ms) {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        Ok(shards.keys().copied().collect())
    }

    /// Hands `request` to the shard of `partition` and waits for its response. Errors are
    /// Kafka's coordinator-level ones: `NOT_COORDINATOR` (no shard here, or it was unloaded
    /// while the request waited) and `COORDINATOR_LOAD_IN_PROGRESS`.
    pub(crate) async fn call(
        &self,
        partition: i32,
        mut context: GroupRequestContext,
        request: GroupRequest,
    ) -> Result<GroupResponse, ResponseError> {
        self.reconcile();
        let receiver = {
            let shards = self.lock();
            let shard = shards
                .get(&partition)
                .ok_or(ResponseError::NotCoordinator)?;
            if shard.loaded_at_ms > self.controller.now_ms() {
                return Err(ResponseError::CoordinatorLoadInProgress);
            }
            context.request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
            let (reply, receiver) = oneshot::channel();
            let command = ShardCommand {
                context,
                request,
                reply,
            };
            shard
                .commands
                .send(command)
                .map_err(|_| ResponseError::NotCoordinator)?;
            receiver
        };
        receiver.await.map_err(|_| ResponseError::NotCoordinator)
    }
}

/// The shard's single thread: requests in, timers fired, responses routed to their waiters.
/// At `loaded_at_ms`, when loading completes, the shard's `on_loaded` runs (before any request:
/// the runtime refuses requests until then). Ends (dropping every waiter, who then answers
/// `NOT_COORDINATOR`) when the shard is unloaded.
async fn run_shard(
    mut shard: Box<dyn GroupShard>,
    mut commands: mpsc::UnboundedReceiver<ShardCommand>,
    controller: Controller,
    loaded_at_ms: u64,
) {
    let mut waiting: BTreeMap<u64, oneshot::Sender<GroupResponse>> = BTreeMap::new();
    let mut loaded = false;
    loop {
        if !loaded && controller.now_ms() >= loaded_at_ms {
            loaded = true;
            shard.on_loaded(controller.now_ms());
        }
        let next_deadline_ms = if loaded {
            shard.next_deadline_ms()
        } else {
            Some(loaded_at_ms)
        };
        let deadline = next_deadline_ms.map(|deadline_ms| {
            let wait_ms = deadline_ms.saturating_sub(controller.now_ms());
            Instant::now() + Duration::from_millis(wait_ms)
        });
        tokio::select! {
            command = commands.recv() => {
                let Some(command) = command else { return };
                let now_ms = controller.now_ms();
                shard.poll(now_ms);
                waiting.insert(command.context.request_id, command.reply);
                shard.handle(now_ms, command.context, command.request);
            }
            () = sleep_until_or_forever(deadline) => {
                if loaded {
                    shard.poll(controller.now_ms());
                }
            }
        }
        for (request_id, response) in shard.take_responses() {
            if let Some(reply) = waiting.remove(&request_id) {
                // The connection may be gone; its response is simply dropped.
                let _ = reply.send(response);
            }
        }
        waiting.retain(|_, reply| !reply.is_closed());
    }
}

async fn sleep_until_or_forever(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
