//! `NetworkClient`: the background task's one handle on the cluster.
//!
//! It maps node ids to broker addresses (bootstrap servers as nodes -1, -2, … like the Java
//! client, then the brokers from Metadata), starts one task per node lazily, and turns each
//! request into a `'static` [`ResponseFuture`] at once, without awaiting anything, so one loop
//! can keep many requests to many brokers in flight.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kafka_protocol::messages::MetadataResponse;
use kafka_protocol::protocol::{Request, StrBytes};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, Notify};

use super::backoff::ExponentialBackoff;
use super::connection::ConnectionSettings;
use super::metadata::{Broker, LeaderHint, Metadata, MetadataScope};
use super::node::{read_status, ConnectionSecurity, NodeEvent, NodeStatus, NodeTask, SharedStatus};
use super::rebootstrap::MetadataRecovery;
use super::request::{Command, LoadGuard, ResponseFuture, TypedRequest};
use super::socket::SocketBuffers;
use super::tls::{self, TlsSetupError};
use super::{NetworkConfig, NetworkError};
use crate::protocol::{Api, ApiVersionsTable, ResponseError};
use crate::rt::{Duration, Instant, SeededRng};

/// Mixed into a node's seed to seed its setup-timeout jitter apart from its other draws.
const SETUP_TIMEOUT_SEED_SALT: u64 = 0x5e70_7115_e0c7_a11e;

/// Where to send a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A broker by node id (negative ids are the bootstrap servers).
    Node(i32),
    /// The broker with the fewest unanswered requests, preferring connected ones; the
    /// bootstrap servers until Metadata has named brokers.
    LeastLoaded,
}

/// Per-request options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestOptions {
    /// Send at exactly this version (fails with `UnsupportedApi` if the broker lacks it);
    /// otherwise the highest version both sides support.
    pub version: Option<i16>,
    /// Overrides `request_timeout_ms` for this request.
    pub timeout_ms: Option<u64>,
}

/// A node's address and its task's handles.
struct NodeHandle {
    host: String,
    port: u16,
    broker: String,
    commands: mpsc::Sender<Command>,
    status: SharedStatus,
    outstanding: Arc<AtomicUsize>,
    connect: Arc<Notify>,
}

/// A connected node's negotiated versions and its unanswered requests, as the background task
/// sees them when it builds requests.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectedNode {
    /// The node id.
    pub node_id: i32,
    /// What its connection negotiated.
    pub versions: ApiVersionsTable,
    /// Requests sent to it and not answered yet.
    pub outstanding: usize,
    /// Whether cluster-wide requests may go to it: a broker from Metadata, or a bootstrap
    /// server before Metadata named any broker (what `least_loaded_node` chooses among).
    pub least_loaded_candidate: bool,
}

/// The network client. Owned by the background task; `send` never blocks.
pub struct NetworkClient {
    config: NetworkConfig,
    settings: ConnectionSettings,
    security: ConnectionSecurity,
    bootstrap: Vec<(String, u16)>,
    metadata: Metadata,
    nodes: BTreeMap<i32, NodeHandle>,
    /// Nodes registered by address rather than known from Metadata (the group coordinator's
    /// own connection, under a synthetic id as Java does).
    registered: BTreeMap<i32, (String, u16)>,
    /// When to forget Metadata's brokers and start over from the bootstrap servers.
    recovery: MetadataRecovery,
    rng: SeededRng,
    events_tx: mpsc::UnboundedSender<NodeEvent>,
    events_rx: mpsc::UnboundedReceiver<NodeEvent>,
}

impl NetworkClient {
    /// A client for `config`; fails if a bootstrap address is not `host:port` or the TLS or
    /// SASL settings cannot be used. Connects nothing.
    pub fn new(config: NetworkConfig) -> Result<Self, NetworkError> {
        let protocol = config.security.protocol;
        let security = ConnectionSecurity {
            tls: if protocol.uses_tls() {
                Some(tls::client_config(&config.security.tls)?)
            } else {
                None
            },
            sasl: if protocol.uses_sasl() {
                let sasl = config.security.sasl.clone().ok_or_else(|| TlsSetupError {
                    what: "sasl.jaas.config",
                    message: format!("security.protocol={protocol} needs SASL credentials"),
                })?;
                Some(sasl)
            } else {
                None
            },
        };
        let bootstrap = config
            .bootstrap_servers
            .iter()
            .map(|address| parse_address(address))
            .collect::<Result<Vec<_>, _>>()?;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let settings = ConnectionSettings {
            client_id: Some(StrBytes::from_string(config.client_id.clone())),
            max_in_flight: config.max_in_flight_requests_per_connection.max(1),
            max_response_size_bytes: config.max_response_size_bytes,
            request_timeout_ms: config.request_timeout_ms,
            connections_max_idle_ms: config.connections_max_idle_ms,
            socket_buffers: SocketBuffers {
                send_bytes: config.send_buffer_bytes,
                receive_bytes: config.receive_buffer_bytes,
            },
            observer: config.observer.clone(),
        };
        let recovery = MetadataRecovery::new(
            config.metadata_recovery_strategy,
            config.metadata_recovery_rebootstrap_trigger_ms,
        );
        Ok(Self {
            config,
            settings,
            security,
            bootstrap,
            metadata: Metadata::default(),
            nodes: BTreeMap::new(),
            registered: BTreeMap::new(),
            recovery,
            rng: SeededRng::from_runtime(),
            events_tx,
            events_rx,
        })
    }

    /// Sends `request` at the highest version both sides support.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn send<R>(&mut self, target: Target, request: R) -> ResponseFuture<R::Response>
    where
        R: Request + Send + 'static,
        R::Response: Send + 'static,
    {
        self.send_with(target, request, RequestOptions::default())
    }

    /// Sends `request` with per-request options. Must be called inside the runtime (it may
    /// spawn the node's task). The request is queued at once; the returned future only waits.
    pub fn send_with<R>(
        &mut self,
        target: Target,
        request: R,
        options: RequestOptions,
    ) -> ResponseFuture<R::Response>
    where
        R: Request + Send + 'static,
        R::Response: Send + 'static,
    {
        let node_id = match target {
            Target::Node(node_id) => node_id,
            Target::LeastLoaded => match self.least_loaded_node() {
                Some(node_id) => node_id,
                None => {
                    return ResponseFuture::failed(String::new(), NetworkError::NoNodeAvailable)
                }
            },
        };
        let timeout_ms = options.timeout_ms.unwrap_or(self.config.request_timeout_ms);
        let queue_limit = self.config.max_queued_requests_per_node;
        let Some(node) = self.node(node_id) else {
            return ResponseFuture::failed(String::new(), NetworkError::UnknownNode { node_id });
        };
        let (typed, future) = TypedRequest::new(
            request,
            options.version,
            node_id,
            node.broker.clone(),
            LoadGuard::new(&node.outstanding),
        );
        let command = Command {
            request: Box::new(typed),
            deadline: Instant::now() + Duration::from_millis(timeout_ms),
            timeout_ms,
        };
        if let Err(error) = node.commands.try_send(command) {
            let (command, error) = match error {
                TrySendError::Full(command) => (
                    command,
                    NetworkError::QueueFull {
                        broker: node.broker.clone(),
                        limit: queue_limit,
                    },
                ),
                // Unreachable while we hold the handle (the task exits only once it is dropped),
                // but a dead task must not leave the caller waiting.
                TrySendError::Closed(command) => (
                    command,
                    NetworkError::ConnectionClosed {
                        broker: node.broker.clone(),
                        reason: super::CloseReason::Shutdown,
                    },
                ),
            };
            command.request.fail(error);
        }
        future
    }

    /// The node's handle, starting its task if needed; `None` for an unknown node id.
    fn node(&mut self, node_id: i32) -> Option<&NodeHandle> {
        let (host, port) = self.address(node_id)?;
        let stale = self
            .nodes
            .get(&node_id)
            .is_some_and(|n| n.host != host || n.port != port);
        if stale {
            // The broker moved: dropping the handle lets the old task finish and exit.
            self.nodes.remove(&node_id);
        }
        if !self.nodes.contains_key(&node_id) {
            let handle = self.start_node(node_id, host, port);
            self.nodes.insert(node_id, handle);
        }
        self.nodes.get(&node_id)
    }

    fn address(&self, node_id: i32) -> Option<(String, u16)> {
        if let Some(address) = self.registered.get(&node_id) {
            return Some(address.clone());
        }
        if node_id < 0 {
            let index = usize::try_from(-(i64::from(node_id)) - 1).ok()?;
            return self.bootstrap.get(index).cloned();
        }
        let broker = self.metadata.broker(node_id)?;
        Some((broker.host.clone(), broker.port))
    }

    fn start_node(&mut self, node_id: i32, host: String, port: u16) -> NodeHandle {
        let broker = format!("node {node_id} ({host}:{port})");
        let (commands, receiver) = mpsc::channel(self.config.max_queued_requests_per_node.max(1));
        let status = SharedStatus::default();
        let connect = Arc::new(Notify::new());
        let seed = rand::RngCore::next_u64(&mut self.rng);
        NodeTask {
            node_id,
            host: host.clone(),
            port,
            broker: broker.clone(),
            settings: self.settings.clone(),
            security: self.security.clone(),
            setup_timeout: ExponentialBackoff::connection_setup_timeout(
                self.config.socket_connection_setup_timeout_ms,
                self.config.socket_connection_setup_timeout_max_ms,
            ),
            setup_timeout_rng: SeededRng::seed_from_u64(seed ^ SETUP_TIMEOUT_SEED_SALT),
            backoff: ExponentialBackoff::reconnect(
                self.config.reconnect_backoff_ms,
                self.config.reconnect_backoff_max_ms,
            ),
            rng: SeededRng::seed_from_u64(seed),
            commands: receiver,
            status: status.clone(),
            connect: Arc::clone(&connect),
            events: self.events_tx.clone(),
        }
        .spawn();
        NodeHandle {
            host,
            port,
            broker,
            commands,
            status,
            outstanding: Arc::new(AtomicUsize::new(0)),
            connect,
        }
    }

    /// The node to send cluster-wide requests to: among the brokers in Metadata (or the
    /// bootstrap servers before that), not backing off, connected, fewest unanswered requests,
    /// in that order of preference; ties are broken at random like the Java client.
    pub fn least_loaded_node(&mut self) -> Option<i32> {
        let candidates: Vec<i32> = if self.metadata.brokers().next().is_some() {
            self.metadata.brokers().map(|b| b.node_id).collect()
        } else {
            (1..=self.bootstrap.len())
                .filter_map(|i| i32::try_from(i).ok().map(|i| -i))
                .collect()
        };
        if candidates.is_empty() {
            return None;
        }
        let now = Instant::now();
        let offset = self.rng.below_inclusive(candidates.len() as u64 - 1) as usize;
        (0..candidates.len())
            .map(|i| candidates[(offset + i) % candidates.len()])
            .min_by_key(|&node_id| {
                let (status, outstanding) = match self.nodes.get(&node_id) {
                    Some(n) => (
                        read_status(&n.status),
                        n.outstanding.load(Ordering::Relaxed),
                    ),
                    None => (NodeStatus::default(), 0),
                };
                let backing_off = status.reconnect_at.is_some_and(|at| at > now);
                (backing_off, status.versions.is_none(), outstanding)
            })
    }

    /// The client is about to ask the least-loaded node for metadata. Starts the rebootstrap
    /// trigger's clock (KIP-1102) and, with `metadata.recovery.strategy=rebootstrap`, when no
    /// broker Metadata named may be tried now (each is backing off after failed attempts),
    /// rebootstraps first so that the request goes to a bootstrap server (KIP-899, Java's
    /// `maybeUpdate` when `leastLoadedNode` has no node available). Returns whether it
    /// rebootstrapped.
    pub fn prepare_metadata_request(&mut self) -> bool {
        let now = Instant::now();
        self.recovery.on_metadata_wanted(now);
        let known = self.metadata.brokers().next().is_some();
        if !self.recovery.enabled() || !known {
            return false;
        }
        let reachable = self.metadata.brokers().any(|broker| {
            self.nodes.get(&broker.node_id).is_none_or(|node| {
                read_status(&node.status)
                    .reconnect_at
                    .is_none_or(|at| at <= now)
            })
        });
        if reachable {
            return false;
        }
        self.rebootstrap(now, "no broker from Metadata can be reached");
        true
    }

    /// Rebootstraps if a broker asked for it or metadata has been wanted for longer than
    /// `metadata.recovery.rebootstrap.trigger.ms` (KIP-1102; Java checks on every
    /// `NetworkClient.poll`). The background task calls it once per round. Returns whether it
    /// rebootstrapped.
    pub fn poll_metadata_recovery(&mut self) -> bool {
        let now = Instant::now();
        if !self.recovery.due(now) {
            return false;
        }
        self.rebootstrap(
            now,
            "no metadata within metadata.recovery.rebootstrap.trigger.ms, or a broker asked for it",
        );
        true
    }

    /// Forgets the brokers Metadata named, closing their connections, so that requests go to
    /// the bootstrap servers again (Java's `Metadata.rebootstrap` and the disconnects of
    /// `handleRebootstrap`). The topics are kept until the next full response replaces them:
    /// Java empties its cache too, but an empty topic view would make a pattern subscription
    /// drop its topics meanwhile. Nodes registered by address (the group coordinator) stay.
    fn rebootstrap(&mut self, now: Instant, reason: &str) {
        tracing::info!(
            reason,
            bootstrap_servers = ?self.config.bootstrap_servers,
            "rebootstrapping"
        );
        self.metadata.forget_brokers();
        let registered = &self.registered;
        self.nodes
            .retain(|&node_id, _| node_id < 0 || registered.contains_key(&node_id));
        self.recovery.on_rebootstrapped(now);
    }

    /// Registers a node by address under `node_id`, outside Metadata. The consumer gives the
    /// group coordinator the id `i32::MAX - broker id` (Java's convention) so coordinator traffic
    /// has a connection of its own. Re-registering a moved node restarts its connection.
    pub fn register_node(&mut self, node_id: i32, host: &str, port: u16) {
        self.registered.insert(node_id, (host.to_owned(), port));
    }

    /// Forgets a registered node; its task finishes what is in flight and exits.
    pub fn unregister_node(&mut self, node_id: i32) {
        if self.registered.remove(&node_id).is_some() {
            self.nodes.remove(&node_id);
        }
    }

    /// Starts connecting to a node that is not connected, without a request: a caller that
    /// must choose a request's version (and the fields that depend on it) from the node's own
    /// ApiVersions waits for [`NodeEvent::Connected`]. A node backing off after a failed
    /// attempt connects when the backoff ends. Returns `false` for an unknown node id.
    pub fn connect(&mut self, node_id: i32) -> bool {
        let Some(node) = self.node(node_id) else {
            return false;
        };
        let status = read_status(&node.status);
        if status.versions.is_none() {
            node.connect.notify_one();
        }
        true
    }

    /// The next connection made or attempt failed on any node (cancel-safe).
    pub async fn next_node_event(&mut self) -> NodeEvent {
        match self.events_rx.recv().await {
            Some(event) => event,
            // The client holds a sender itself, so the channel never closes.
            None => std::future::pending().await,
        }
    }

    /// Every connected node with its own negotiated versions: request builders choose each
    /// request's version from its target's entry, never from another broker's (brokers of
    /// one cluster differ during a rolling upgrade).
    pub fn connected_nodes(&self) -> Vec<ConnectedNode> {
        let from_metadata = self.metadata.brokers().next().is_some();
        self.nodes
            .iter()
            .filter_map(|(&node_id, handle)| {
                let versions = read_status(&handle.status).versions?;
                let least_loaded_candidate = if from_metadata {
                    self.metadata.broker(node_id).is_some()
                } else {
                    node_id < 0 && !self.registered.contains_key(&node_id)
                };
                Some(ConnectedNode {
                    node_id,
                    versions,
                    outstanding: handle.outstanding.load(Ordering::Relaxed),
                    least_loaded_candidate,
                })
            })
            .collect()
    }

    /// The versions negotiated with a node, while it is connected.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn api_versions(&self, node_id: i32) -> Option<ApiVersionsTable> {
        read_status(&self.nodes.get(&node_id)?.status).versions
    }

    /// The version `send` would use for `R` on a connected node.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn negotiated_version<R: Request>(&self, node_id: i32) -> Option<i16> {
        self.api_versions(node_id)?
            .select(Api(R::KEY), R::VERSIONS)
            .ok()
    }

    /// Whether a node currently has an established, negotiated connection.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn is_connected(&self, node_id: i32) -> bool {
        self.api_versions(node_id).is_some()
    }

    /// The cluster metadata known so far.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Applies KIP-951 leader hints ([`Metadata::update_partition_leadership`]); returns the
    /// partitions whose leader moved.
    pub fn update_partition_leadership(
        &mut self,
        hints: &[LeaderHint],
        endpoints: &[Broker],
    ) -> Vec<(String, i32)> {
        self.metadata.update_partition_leadership(hints, endpoints)
    }

    /// Applies a Metadata response: brokers' addresses take effect for the next request. As
    /// Java's `DefaultMetadataUpdater`, a response without brokers (a broker still starting)
    /// is not applied, and one with the top-level error `REBOOTSTRAP_REQUIRED` (KIP-1102) is
    /// not applied either but makes the client rebootstrap on its next
    /// [`NetworkClient::poll_metadata_recovery`].
    pub fn update_metadata(&mut self, response: &MetadataResponse, scope: MetadataScope) {
        if ResponseError::try_from_code(response.error_code)
            == Some(ResponseError::RebootstrapRequired)
        {
            tracing::info!("a broker asked for a rebootstrap (REBOOTSTRAP_REQUIRED)");
            self.recovery.on_rebootstrap_required();
            return;
        }
        if response.brokers.is_empty() {
            tracing::debug!("a Metadata response without brokers is not applied");
            return;
        }
        self.recovery.on_metadata_received();
        self.metadata.update(response, scope);
        // Forget brokers that left; their tasks finish what is in flight and exit.
        let metadata = &self.metadata;
        let registered = &self.registered;
        self.nodes.retain(|&node_id, _| {
            node_id < 0 || metadata.broker(node_id).is_some() || registered.contains_key(&node_id)
        });
    }
}

/// Parses `host:port` (IPv6 hosts in brackets: `[::1]:9092`).
fn parse_address(address: &str) -> Result<(String, u16), NetworkError> {
    let invalid = |reason| NetworkError::InvalidAddress {
        address: address.to_owned(),
        reason,
    };
    let (host, port) = address.rsplit_once(':').ok_or_else(|| invalid("no port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid("no host"));
    }
    let port = port
        .parse::<u16>()
        .map_err(|_| invalid("port is not a number in 0..=65535"))?;
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bootstrap_addresses() {
        assert_eq!(
            parse_address("localhost:9092").unwrap(),
            ("localhost".to_owned(), 9092)
        );
        assert_eq!(
            parse_address("[::1]:19092").unwrap(),
            ("::1".to_owned(), 19092)
        );
        for bad in ["localhost", ":9092", "h:99999", "h:x"] {
            let err = parse_address(bad).unwrap_err();
            assert!(
                matches!(err, NetworkError::InvalidAddress { .. }),
                "{bad}: {err}"
            );
            assert!(!err.is_retriable());
        }
    }
}
