//! Real mode: the same brokers on real tokio, as a local in-memory Kafka for development and
//! for tests (`LocalCluster::start` binds 127.0.0.1, port 0 unless told otherwise).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::broker::{serve, BrokerSpec};
use crate::config::ClusterConfig;
use crate::controller::Controller;
use crate::coordinator::GroupShardFactory;
use crate::fault::FaultControls;
use crate::group::classic::ClassicGroupConfig;
use crate::group::consumer::ConsumerGroupConfig;
use crate::group::shard::GroupCoordinatorFactory;

/// How to start a [`LocalCluster`].
#[derive(Clone, Default)]
pub struct LocalClusterOptions {
    /// Number of brokers (node ids 1..=n).
    pub brokers: usize,
    /// First port; brokers take consecutive ports. 0: each gets an ephemeral port.
    pub base_port: u16,
    /// Cluster settings.
    pub config: ClusterConfig,
    /// The group coordinator; without it the group APIs are not offered.
    pub group_shards: Option<Arc<dyn GroupShardFactory>>,
}

impl LocalClusterOptions {
    /// What `sim serve` runs: `brokers` brokers from `base_port`, topics auto-created, and both
    /// group protocols with the group settings of the repo's real-broker harness
    /// (`testing/kafka/run`), so the two answer alike: initial rebalance delay 0, classic minimum
    /// session 1 s, KIP-848 heartbeat 500 ms and session 6 s.
    pub fn serve(brokers: usize, base_port: u16) -> Self {
        Self {
            brokers,
            base_port,
            config: ClusterConfig {
                auto_create_topics_enable: true,
                ..ClusterConfig::default()
            },
            group_shards: Some(Arc::new(GroupCoordinatorFactory {
                classic: ClassicGroupConfig {
                    group_initial_rebalance_delay_ms: 0,
                    group_min_session_timeout_ms: 1_000,
                    ..ClassicGroupConfig::default()
                },
                consumer: ConsumerGroupConfig {
                    heartbeat_interval_ms: 500,
                    session_timeout_ms: 6_000,
                    ..ConsumerGroupConfig::default()
                },
                seed: 0,
                ..GroupCoordinatorFactory::default()
            })),
        }
    }
}

struct Running {
    address: SocketAddr,
    stop: Option<watch::Sender<bool>>,
}

/// A cluster of brokers on loopback. Durable state (metadata, logs) lives in memory for the
/// life of the value; a restarted broker keeps it and loses its sessions and connections.
pub struct LocalCluster {
    controller: Controller,
    faults: FaultControls,
    group_shards: Option<Arc<dyn GroupShardFactory>>,
    brokers: BTreeMap<i32, Running>,
}

impl LocalCluster {
    /// Binds every broker, then starts them.
    pub async fn start(options: LocalClusterOptions) -> io::Result<Self> {
        let count = options.brokers.max(1);
        let mut listeners = Vec::new();
        for i in 0..count {
            let port = if options.base_port == 0 {
                0
            } else {
                options.base_port + i as u16
            };
            let listener = TcpListener::bind(("127.0.0.1", port)).await?;
            listeners.push((i as i32 + 1, listener.local_addr()?, listener));
        }
        let addresses: Vec<(i32, String, u16)> = listeners
            .iter()
            .map(|(id, address, _)| (*id, address.ip().to_string(), address.port()))
            .collect();
        let controller = Controller::new(options.config.clone(), &addresses);
        let faults = FaultControls::new(options.config.seed);
        let mut cluster = Self {
            controller,
            faults,
            group_shards: options.group_shards,
            brokers: BTreeMap::new(),
        };
        for (node_id, address, listener) in listeners {
            cluster.spawn(node_id, address, listener);
        }
        Ok(cluster)
    }

    fn spawn(&mut self, node_id: i32, address: SocketAddr, listener: TcpListener) {
        let (stop, stopped) = watch::channel(false);
        let spec = BrokerSpec {
            node_id,
            controller: self.controller.clone(),
            faults: self.faults.clone(),
            group_shards: self.group_shards.clone(),
            wire_tap: None,
        };
        tokio::spawn(serve(spec, listener, stopped));
        self.brokers.insert(
            node_id,
            Running {
                address,
                stop: Some(stop),
            },
        );
    }

    /// `host:port` of every broker, for `bootstrap.servers`.
    pub fn bootstrap_servers(&self) -> Vec<String> {
        self.brokers
            .values()
            .map(|b| b.address.to_string())
            .collect()
    }

    /// Node ids, ascending.
    pub fn node_ids(&self) -> Vec<i32> {
        self.brokers.keys().copied().collect()
    }

    /// The shared cluster state (metadata image, logs).
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// The response-level fault hooks.
    pub fn faults(&self) -> &FaultControls {
        &self.faults
    }

    /// Stops a broker: its listener and connections close; leadership moves away.
    pub fn stop_broker(&mut self, node_id: i32) {
        if let Some(stop) = self.brokers.get_mut(&node_id).and_then(|b| b.stop.take()) {
            let _ = stop.send(true);
            self.controller
                .update(|state| state.broker_stopped(node_id));
        }
    }

    /// Restarts a broker on its address: fresh in-memory state, same durable state.
    pub async fn restart_broker(&mut self, node_id: i32) -> io::Result<()> {
        self.stop_broker(node_id);
        let Some(address) = self.brokers.get(&node_id).map(|b| b.address) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no broker {node_id}"),
            ));
        };
        // The old listener closes asynchronously; retry the bind briefly.
        let mut attempt = 0;
        let listener = loop {
            match TcpListener::bind(address).await {
                Ok(listener) => break listener,
                Err(error) if attempt >= 50 => return Err(error),
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(kafka_consumer::rt::Duration::from_millis(10)).await;
                }
            }
        };
        self.spawn(node_id, address, listener);
        Ok(())
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for broker in self.brokers.values_mut() {
            if let Some(stop) = broker.stop.take() {
                let _ = stop.send(true);
            }
        }
    }
}
