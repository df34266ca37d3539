//! One broker: a TCP listener, one task per connection, the Kafka APIs (one file each under
//! [`api`]), in-memory fetch sessions and the coordinator runtime.
//!
//! Everything here is in-memory broker state and dies with the broker task; the durable part
//! (metadata image and logs) is the shared [`Controller`].

pub(crate) mod api;
mod connection;
pub(crate) mod dispatch;
mod fetch_session;
mod wire_tap;

use std::sync::{Arc, Mutex};

use kafka_consumer::rt::SeededRng;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::controller::Controller;
use crate::coordinator::runtime::CoordinatorRuntime;
use crate::coordinator::GroupShardFactory;
use crate::fault::FaultControls;
use crate::kafka_version::KafkaVersion;
use fetch_session::FetchSessionCache;
pub use wire_tap::{WireEvent, WireKind, WireTap};

/// A broker's shared pieces, handed to every connection.
pub(crate) struct Broker {
    pub(crate) node_id: i32,
    /// The release this incarnation runs (fixed until the broker restarts).
    pub(crate) version: KafkaVersion,
    pub(crate) controller: Controller,
    pub(crate) faults: FaultControls,
    pub(crate) sessions: Mutex<FetchSessionCache>,
    pub(crate) coordinator: Option<Arc<CoordinatorRuntime>>,
    pub(crate) wire_tap: Option<WireTap>,
    stop: watch::Receiver<bool>,
}

#[cfg(test)]
impl Broker {
    /// Broker `node_id` of `controller`'s cluster without a listener or a group coordinator,
    /// for calling API handlers in unit tests.
    pub(crate) fn for_tests(node_id: i32, controller: Controller) -> Self {
        let version = controller.read().broker_version(node_id);
        Self {
            node_id,
            version,
            controller,
            faults: FaultControls::new(0),
            sessions: Mutex::new(FetchSessionCache::new(10, SeededRng::seed_from_u64(0))),
            coordinator: None,
            wire_tap: None,
            stop: watch::channel(false).1,
        }
    }
}

/// What a broker process needs to run.
#[derive(Clone)]
pub struct BrokerSpec {
    /// `node.id`.
    pub node_id: i32,
    /// The cluster's shared state.
    pub controller: Controller,
    /// The cluster's fault controls.
    pub faults: FaultControls,
    /// Builds group coordinator shards; without one the group APIs are not offered.
    pub group_shards: Option<Arc<dyn GroupShardFactory>>,
    /// Where to record every frame, for replay comparison; nothing is recorded without one.
    pub wire_tap: Option<WireTap>,
}

/// Runs a broker on `listener` until `stop` turns true (real mode) or the node is killed
/// (simulation). Registers the broker with the controller first, as a KRaft broker does.
pub async fn serve(spec: BrokerSpec, listener: TcpListener, stop: watch::Receiver<bool>) {
    serve_listeners(spec, vec![listener], stop).await;
}

/// [`serve`] on several listeners at once (a bootstrap listener and an advertised one), one
/// broker behind them all.
pub async fn serve_listeners(
    spec: BrokerSpec,
    listeners: Vec<TcpListener>,
    stop: watch::Receiver<bool>,
) {
    let BrokerSpec {
        node_id,
        controller,
        faults,
        group_shards,
        wire_tap,
    } = spec;
    controller.update(|state| state.broker_started(node_id));
    let (seed, slots, version) = {
        let state = controller.read();
        (
            state.config.seed,
            state.config.fetch_session_cache_slots,
            state.broker_version(node_id),
        )
    };
    // Per incarnation: a restarted broker must not hand out the same session ids again.
    let incarnation = controller.now_ms();
    let rng = SeededRng::seed_from_u64(seed ^ (u64::from(node_id as u32) << 32) ^ incarnation);
    let coordinator = group_shards.map(|factory| {
        Arc::new(CoordinatorRuntime::new(
            node_id,
            controller.clone(),
            factory,
        ))
    });
    let broker = Arc::new(Broker {
        node_id,
        version,
        controller,
        faults,
        sessions: Mutex::new(FetchSessionCache::new(slots, rng)),
        coordinator: coordinator.clone(),
        wire_tap,
        stop: stop.clone(),
    });
    if let Some(coordinator) = coordinator {
        let mut stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = coordinator.run() => {}
                () = stopped(&mut stop) => {}
            }
        });
    }
    // The first listener is served on this task, the others on tasks of their own: a broker
    // with one listener runs exactly as it always did (same tasks, same schedule per seed).
    let mut listeners = listeners.into_iter();
    let Some(first) = listeners.next() else {
        return;
    };
    for listener in listeners {
        tokio::spawn(accept_loop(node_id, listener, broker.clone(), stop.clone()));
    }
    accept_loop(node_id, first, broker, stop).await;
}

/// Accepts connections on `listener` for `broker` until `stop` turns true.
async fn accept_loop(
    node_id: i32,
    listener: TcpListener,
    broker: Arc<Broker>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stop) => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                tokio::spawn(connection::serve(stream, peer, broker.clone()));
            }
            Err(error) => tracing::warn!(node_id, %error, "accept failed"),
        }
    }
}

/// Resolves once `stop` turns true; never if its sender is gone without doing so.
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

impl Broker {
    pub(crate) fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.clone()
    }
}
