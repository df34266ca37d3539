//! Simulation mode: brokers as madsim nodes (`broker-N` at 10.0.1.N:9092) sharing one
//! [`Controller`], plus fault application and fault-plan running.
//!
//! Each node's `init` closure captures the controller (the durable part), so `restart` re-runs
//! the broker with its logs intact and its memory (sessions, connections, shards) fresh.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use kafka_consumer::rt::{Duration, Instant};
use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::broker::{serve_listeners, BrokerSpec, WireEvent, WireTap};
use crate::config::ClusterConfig;
use crate::controller::{Controller, OFFSETS_TOPIC};
use crate::coordinator::GroupShardFactory;
use crate::fault::{Direction, Fault, FaultControls, FaultPlan};

/// The Kafka port every simulated broker listens on.
pub const BROKER_PORT: u16 = 9092;

/// Builds a [`Cluster`].
#[derive(Default)]
pub struct ClusterBuilder {
    brokers: usize,
    config: ClusterConfig,
    group_shards: Option<Arc<dyn GroupShardFactory>>,
    record_wire: bool,
    buggify: bool,
}

impl ClusterBuilder {
    /// Number of brokers (1–9; node ids 1..=n).
    pub fn brokers(mut self, n: usize) -> Self {
        self.brokers = n.clamp(1, 9);
        self
    }

    /// A topic created at start.
    pub fn topic(mut self, name: &str, partitions: i32) -> Self {
        self.config.topics.insert(name.to_owned(), partitions);
        self
    }

    /// `offsets.topic.num.partitions`.
    pub fn offsets_partitions(mut self, n: i32) -> Self {
        self.config.offsets_partitions = n;
        self
    }

    /// Any other setting.
    pub fn config(mut self, f: impl FnOnce(&mut ClusterConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The group coordinator the brokers host.
    pub fn group_shards(mut self, factory: Arc<dyn GroupShardFactory>) -> Self {
        self.group_shards = Some(factory);
        self
    }

    /// Records every frame the brokers read and write ([`Cluster::wire_events`]).
    pub fn record_wire(mut self) -> Self {
        self.record_wire = true;
        self
    }

    /// Turns on the brokers' buggify sites (legal perturbations: early long-poll answers,
    /// shorter fetch responses), activated per site once per run from the seed.
    pub fn buggify(mut self) -> Self {
        self.buggify = true;
        self
    }

    /// Creates the broker nodes and waits until they listen. Must run inside madsim.
    pub async fn build(self) -> Cluster {
        let handle = Handle::current();
        let mut config = self.config;
        config.seed ^= handle.seed();
        let count = self.brokers.max(1);
        let addresses: Vec<(i32, SocketAddr)> = (1..=count)
            .map(|n| {
                let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 1, n as u8));
                (n as i32, SocketAddr::new(ip, BROKER_PORT))
            })
            .collect();
        let listed: Vec<(i32, String, u16)> = addresses
            .iter()
            .map(|(id, a)| {
                let port = config.advertised_port.unwrap_or(a.port());
                (*id, a.ip().to_string(), port)
            })
            .collect();
        let controller = Controller::new(config.clone(), &listed);
        let faults = FaultControls::new(config.seed);
        if self.buggify {
            faults.enable_buggify(config.seed);
        }
        let wire_tap = self.record_wire.then(WireTap::new);
        let mut nodes = BTreeMap::new();
        for (node_id, address) in &addresses {
            let spec = BrokerSpec {
                node_id: *node_id,
                controller: controller.clone(),
                faults: faults.clone(),
                group_shards: self.group_shards.clone(),
                wire_tap: wire_tap.clone(),
            };
            let address = *address;
            let node = handle
                .create_node()
                .name(format!("broker-{node_id}"))
                .ip(address.ip())
                .init(move || {
                    let spec = spec.clone();
                    async move {
                        // The bootstrap listener, and the advertised one if that is another
                        // port (read on every start: `MoveListeners` changes it).
                        let advertised = spec.controller.read().config.advertised_port;
                        let mut addresses = vec![address];
                        addresses.extend(
                            advertised
                                .filter(|port| *port != address.port())
                                .map(|port| SocketAddr::new(address.ip(), port)),
                        );
                        let mut listeners = Vec::with_capacity(addresses.len());
                        for address in addresses {
                            match TcpListener::bind(address).await {
                                Ok(listener) => listeners.push(listener),
                                Err(error) => {
                                    tracing::error!(%error, %address, "broker cannot listen");
                                    return;
                                }
                            }
                        }
                        // Never stopped by signal: madsim kills the node instead.
                        serve_listeners(spec, listeners, watch::channel(false).1).await;
                    }
                })
                .build();
            nodes.insert(*node_id, (node.id(), address));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        Cluster {
            handle,
            controller,
            faults,
            nodes,
            wire_tap,
        }
    }
}

/// A running simulated cluster.
pub struct Cluster {
    handle: Handle,
    controller: Controller,
    faults: FaultControls,
    nodes: BTreeMap<i32, (NodeId, SocketAddr)>,
    wire_tap: Option<WireTap>,
}

impl Cluster {
    /// A builder.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// `10.0.1.N:9092` for each broker.
    pub fn bootstrap_servers(&self) -> Vec<String> {
        self.nodes.values().map(|(_, a)| a.to_string()).collect()
    }

    /// Node ids, ascending.
    pub fn node_ids(&self) -> Vec<i32> {
        self.nodes.keys().copied().collect()
    }

    /// The shared cluster state (metadata image, logs); `append` is the direct-produce helper.
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// The response-level fault hooks.
    pub fn faults(&self) -> &FaultControls {
        &self.faults
    }

    /// Every frame the brokers read and wrote so far, if built with
    /// [`record_wire`](ClusterBuilder::record_wire).
    pub fn wire_events(&self) -> Vec<WireEvent> {
        self.wire_tap
            .as_ref()
            .map_or_else(Vec::new, WireTap::events)
    }

    fn node(&self, name: &str) -> Option<NodeId> {
        self.handle.get_node(name).map(|n| n.id())
    }

    fn broker_node(&self, broker: i32) -> Option<NodeId> {
        self.nodes.get(&broker).map(|(id, _)| *id)
    }

    /// Applies one fault now.
    pub fn apply(&self, fault: &Fault) {
        let net = NetSim::current();
        match fault {
            Fault::Response(rule) => self.faults.add(*rule),
            Fault::ClearResponses { api_key } => self.faults.clear(*api_key),
            Fault::ResetConnections { broker } => self.faults.reset_connections(*broker),
            Fault::KillBroker { broker } => {
                if let Some(node) = self.broker_node(*broker) {
                    self.handle.kill(node);
                    self.controller.update(|s| s.broker_stopped(*broker));
                }
            }
            Fault::UpgradeBroker { broker, version } => {
                self.controller
                    .update(|s| s.set_broker_version(*broker, *version));
                self.apply(&Fault::RestartBroker { broker: *broker });
            }
            Fault::MoveListeners { port } => {
                // Every broker comes back advertising (and listening on) the new port; the
                // old advertised port is closed. Clients that know the brokers only by
                // their old addresses must go back to the bootstrap listener.
                self.controller.update(|s| s.move_listeners(*port));
                for broker in self.node_ids() {
                    self.apply(&Fault::RestartBroker { broker });
                }
            }
            Fault::RestartBroker { broker } => {
                if let Some(node) = self.broker_node(*broker) {
                    // Registration on start (in `serve`) brings it back into the image.
                    self.controller.update(|s| s.broker_stopped(*broker));
                    // madsim's `restart` alone does not reset the node's sockets, so the old
                    // listener would keep the port (the new one could not bind) and accept
                    // connections nobody serves; `kill` resets them first.
                    self.handle.kill(node);
                    self.handle.restart(node);
                }
            }
            Fault::PauseBroker { broker } => {
                if let Some(node) = self.broker_node(*broker) {
                    self.handle.pause(node);
                }
            }
            Fault::ResumeBroker { broker } => {
                if let Some(node) = self.broker_node(*broker) {
                    self.handle.resume(node);
                }
            }
            Fault::ClogLink { from, to } => {
                if let (Some(from), Some(to)) = (self.node(from), self.node(to)) {
                    net.clog_link(from, to);
                }
            }
            Fault::UnclogLink { from, to } => {
                if let (Some(from), Some(to)) = (self.node(from), self.node(to)) {
                    net.unclog_link(from, to);
                }
            }
            Fault::ClogNode { node, direction } => {
                if let Some(node) = self.node(node) {
                    match direction {
                        Direction::In => net.clog_node_in(node),
                        Direction::Out => net.clog_node_out(node),
                        Direction::Both => net.clog_node(node),
                    }
                }
            }
            Fault::UnclogNode { node, direction } => {
                if let Some(node) = self.node(node) {
                    match direction {
                        Direction::In => net.unclog_node_in(node),
                        Direction::Out => net.unclog_node_out(node),
                        Direction::Both => net.unclog_node(node),
                    }
                }
            }
            Fault::Latency { min_ms, max_ms } => {
                let range = Duration::from_millis(*min_ms)
                    ..Duration::from_millis((*max_ms).max(*min_ms + 1));
                net.update_config(|c| c.send_latency = range);
            }
            Fault::MoveLeader {
                topic,
                partition,
                to,
            } => {
                self.controller
                    .update(|s| s.move_leader(topic, *partition, *to));
            }
            Fault::MoveCoordinator {
                offsets_partition,
                to,
            } => {
                self.controller
                    .update(|s| s.move_leader(OFFSETS_TOPIC, *offsets_partition, *to));
            }
            Fault::DeleteRecords {
                topic,
                partition,
                before_offset,
            } => {
                self.controller.update(|s| {
                    s.partition_mut(topic, *partition)
                        .map(|p| p.log.delete_before(*before_offset))
                });
            }
            Fault::UncleanLeaderElection {
                topic,
                partition,
                lost_records,
            } => {
                self.controller
                    .update(|s| s.unclean_elect(topic, *partition, *lost_records));
            }
            Fault::DeleteTopic { topic } => {
                if let Err(error) = self.controller.update(|s| s.delete_topic(topic)) {
                    tracing::warn!(?error, %topic, "delete-topic fault: no such topic");
                }
            }
            Fault::CreateTopic { topic, partitions } => {
                let created = self
                    .controller
                    .update(|s| s.create_topic(topic, *partitions, 1, None));
                if let Err(error) = created {
                    tracing::warn!(?error, %topic, "create-topic fault refused");
                }
            }
            Fault::CreatePartitions { topic, count } => {
                let grown = self
                    .controller
                    .update(|s| s.create_partitions(topic, *count, None));
                if let Err(error) = grown {
                    tracing::warn!(?error, %topic, count, "create-partitions fault refused");
                }
            }
            Fault::SaslSetPassword { user, password } => {
                self.controller
                    .update(|s| s.sasl_set_password(user, password));
            }
            Fault::SaslDeleteUser { user } => {
                if !self.controller.update(|s| s.config.sasl.delete_user(user)) {
                    tracing::warn!(%user, "sasl-delete-user fault: no such user");
                }
            }
            Fault::SaslMaxReauth { max_reauth_ms } => {
                self.controller
                    .update(|s| s.config.sasl.connections_max_reauth_ms = *max_reauth_ms);
            }
            Fault::SaslExpireSessions { broker } => self.faults.expire_sasl_sessions(*broker),
        }
    }

    /// Runs a plan: each fault at its virtual time, counted from now.
    pub async fn run_plan(&self, plan: &FaultPlan) {
        let start = Instant::now();
        let mut plan = plan.clone();
        plan.sort_by_key(|(at_ms, _)| *at_ms);
        for (at_ms, fault) in plan {
            tokio::time::sleep_until(start + Duration::from_millis(at_ms)).await;
            tracing::info!(at_ms, ?fault, "applying fault");
            self.apply(&fault);
        }
    }
}
