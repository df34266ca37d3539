//! Java's `Selector` metrics for a consumer: `consumer-metrics` over every connection and
//! `consumer-node-metrics` per broker (tagged `node-id` = `node-<id>`), measured from what the
//! network layer reports ([`NetworkObserver`](crate::network::NetworkObserver)), plus each
//! broker's fetch latency (Java's `FetchMetricsManager.recordLatency`).
//!
//! Two differences from Java, both from where the numbers come from: bytes are counted per
//! frame (size prefix included) when it is queued or decoded, where Java counts each socket
//! read and write, so `network-io-*` counts frames; and the selector's own timing
//! (`io-wait-ratio`, `select-rate`, …) has no counterpart in an async runtime and is absent.

use std::collections::BTreeMap;

use crate::metric::Metric;

use super::names::*;
use super::sensor::{metric, Sensor};
use super::stats::MetricConfig;

/// What a node task reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetworkEvent {
    ConnectionCreated,
    ConnectionClosed,
    /// A request frame of this many bytes.
    RequestSent(usize),
    /// A response frame of this many bytes.
    ResponseReceived(usize),
}

/// One broker's sensors (`consumer-node-metrics`).
#[derive(Debug, Clone)]
struct NodeSensors {
    requests: Sensor,
    outgoing: Sensor,
    responses: Sensor,
    incoming: Sensor,
    latency: Sensor,
}

impl NodeSensors {
    fn new() -> Self {
        Self {
            requests: Sensor::new()
                .count_meter(&NODE_REQUEST_RATE, &NODE_REQUEST_TOTAL)
                .avg(&NODE_REQUEST_SIZE_AVG)
                .max(&NODE_REQUEST_SIZE_MAX),
            outgoing: Sensor::new().meter(&NODE_OUTGOING_BYTE_RATE, &NODE_OUTGOING_BYTE_TOTAL),
            responses: Sensor::new().count_meter(&NODE_RESPONSE_RATE, &NODE_RESPONSE_TOTAL),
            incoming: Sensor::new().meter(&NODE_INCOMING_BYTE_RATE, &NODE_INCOMING_BYTE_TOTAL),
            latency: Sensor::new()
                .avg(&NODE_REQUEST_LATENCY_AVG)
                .max(&NODE_REQUEST_LATENCY_MAX),
        }
    }
}

/// The connection and traffic metrics of one consumer.
#[derive(Debug, Clone)]
pub(crate) struct NetworkMetrics {
    connection_creation: Sensor,
    connection_close: Sensor,
    /// Connections open now (`connection-count`).
    open_connections: u64,
    network_io: Sensor,
    outgoing: Sensor,
    requests: Sensor,
    incoming: Sensor,
    responses: Sensor,
    /// Registered at a node's first connection, kept after it closes (as Java's are).
    nodes: BTreeMap<i32, NodeSensors>,
}

impl Default for NetworkMetrics {
    fn default() -> Self {
        Self {
            connection_creation: Sensor::new()
                .meter(&CONNECTION_CREATION_RATE, &CONNECTION_CREATION_TOTAL),
            connection_close: Sensor::new().meter(&CONNECTION_CLOSE_RATE, &CONNECTION_CLOSE_TOTAL),
            open_connections: 0,
            network_io: Sensor::new().count_meter(&NETWORK_IO_RATE, &NETWORK_IO_TOTAL),
            outgoing: Sensor::new().meter(&OUTGOING_BYTE_RATE, &OUTGOING_BYTE_TOTAL),
            requests: Sensor::new()
                .count_meter(&REQUEST_RATE, &REQUEST_TOTAL)
                .avg(&REQUEST_SIZE_AVG)
                .max(&REQUEST_SIZE_MAX),
            incoming: Sensor::new().meter(&INCOMING_BYTE_RATE, &INCOMING_BYTE_TOTAL),
            responses: Sensor::new().count_meter(&RESPONSE_RATE, &RESPONSE_TOTAL),
            nodes: BTreeMap::new(),
        }
    }
}

impl NetworkMetrics {
    pub fn record(
        &mut self,
        config: &MetricConfig,
        node_id: i32,
        event: NetworkEvent,
        now_ms: u64,
    ) {
        match event {
            NetworkEvent::ConnectionCreated => {
                self.connection_creation.record(config, 1.0, now_ms);
                self.open_connections += 1;
                self.nodes.entry(node_id).or_insert_with(NodeSensors::new);
            }
            NetworkEvent::ConnectionClosed => {
                self.connection_close.record(config, 1.0, now_ms);
                self.open_connections = self.open_connections.saturating_sub(1);
            }
            NetworkEvent::RequestSent(bytes) => {
                let bytes = bytes as f64;
                self.network_io.record(config, bytes, now_ms);
                self.outgoing.record(config, bytes, now_ms);
                self.requests.record(config, bytes, now_ms);
                if let Some(node) = self.nodes.get_mut(&node_id) {
                    node.outgoing.record(config, bytes, now_ms);
                    node.requests.record(config, bytes, now_ms);
                }
            }
            NetworkEvent::ResponseReceived(bytes) => {
                let bytes = bytes as f64;
                self.network_io.record(config, bytes, now_ms);
                self.incoming.record(config, bytes, now_ms);
                self.responses.record(config, bytes, now_ms);
                if let Some(node) = self.nodes.get_mut(&node_id) {
                    node.incoming.record(config, bytes, now_ms);
                    node.responses.record(config, bytes, now_ms);
                }
            }
        }
    }

    /// A Fetch to `node_id` was answered after `latency_ms` (`request-latency-*`).
    pub fn record_fetch_latency(
        &mut self,
        config: &MetricConfig,
        node_id: i32,
        latency_ms: f64,
        now_ms: u64,
    ) {
        if let Some(node) = self.nodes.get_mut(&node_id) {
            node.latency.record(config, latency_ms, now_ms);
        }
    }

    /// Appends every metric's value: the client's tagged `client_id`, each node's tagged
    /// `client_id` and `node-<id>`.
    pub fn measure_into(
        &mut self,
        config: &MetricConfig,
        now_ms: u64,
        client_id: &str,
        out: &mut Vec<Metric>,
    ) {
        let client = [("client-id", client_id.to_owned())];
        for sensor in [
            &mut self.connection_creation,
            &mut self.connection_close,
            &mut self.network_io,
            &mut self.outgoing,
            &mut self.requests,
            &mut self.incoming,
            &mut self.responses,
        ] {
            sensor.measure_into(config, now_ms, &client, out);
        }
        out.push(metric(
            &CONNECTION_COUNT,
            &client,
            self.open_connections as f64,
        ));
        for (node_id, node) in &mut self.nodes {
            let tags = [
                ("client-id", client_id.to_owned()),
                ("node-id", format!("node-{node_id}")),
            ];
            for sensor in [
                &mut node.requests,
                &mut node.outgoing,
                &mut node.responses,
                &mut node.incoming,
                &mut node.latency,
            ] {
                sensor.measure_into(config, now_ms, &tags, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{CONSUMER_GROUP, NODE_GROUP};

    fn config() -> MetricConfig {
        MetricConfig {
            samples: 2,
            window_ms: 30_000,
        }
    }

    fn value(metrics: &[Metric], group: &str, name: &str, node: Option<&str>) -> f64 {
        metrics
            .iter()
            .find(|m| m.name.group == group && m.name.name == name && m.name.tag("node-id") == node)
            .unwrap_or_else(|| panic!("{group}:{name} ({node:?}) missing"))
            .value
    }

    #[test]
    fn frames_count_for_the_client_and_their_node() {
        let config = config();
        let mut metrics = NetworkMetrics::default();
        metrics.record(&config, -1, NetworkEvent::ConnectionCreated, 0);
        metrics.record(&config, -1, NetworkEvent::RequestSent(100), 1);
        metrics.record(&config, -1, NetworkEvent::ResponseReceived(400), 2);
        metrics.record(&config, 1, NetworkEvent::ConnectionCreated, 3);
        metrics.record(&config, 1, NetworkEvent::RequestSent(50), 4);
        metrics.record(&config, 1, NetworkEvent::RequestSent(150), 5);
        metrics.record(&config, 1, NetworkEvent::ResponseReceived(1_000), 6);
        metrics.record_fetch_latency(&config, 1, 12.0, 6);
        metrics.record(&config, -1, NetworkEvent::ConnectionClosed, 7);
        let mut out = Vec::new();
        metrics.measure_into(&config, 10, "c1", &mut out);

        let client = |name| value(&out, CONSUMER_GROUP, name, None);
        assert_eq!(client("connection-creation-total"), 2.0);
        assert_eq!(client("connection-close-total"), 1.0);
        assert_eq!(client("connection-count"), 1.0);
        assert_eq!(client("request-total"), 3.0);
        assert_eq!(client("request-size-avg"), 100.0);
        assert_eq!(client("request-size-max"), 150.0);
        assert_eq!(client("outgoing-byte-total"), 300.0);
        assert_eq!(client("response-total"), 2.0);
        assert_eq!(client("incoming-byte-total"), 1_400.0);
        assert_eq!(client("network-io-total"), 5.0);

        // The closed bootstrap connection's node keeps its metrics, as Java's do.
        let node = |id, name| value(&out, NODE_GROUP, name, Some(id));
        assert_eq!(node("node--1", "request-total"), 1.0);
        assert_eq!(node("node--1", "incoming-byte-total"), 400.0);
        assert!(node("node--1", "request-latency-avg").is_nan());
        assert_eq!(node("node-1", "request-total"), 2.0);
        assert_eq!(node("node-1", "request-size-max"), 150.0);
        assert_eq!(node("node-1", "outgoing-byte-total"), 200.0);
        assert_eq!(node("node-1", "response-total"), 1.0);
        assert_eq!(node("node-1", "incoming-byte-total"), 1_000.0);
        assert_eq!(node("node-1", "request-latency-avg"), 12.0);
        assert_eq!(node("node-1", "request-latency-max"), 12.0);
        let tags = &out
            .iter()
            .find(|m| m.name.group == NODE_GROUP)
            .unwrap()
            .name
            .tags;
        assert_eq!(tags[0], ("client-id", "c1".to_owned()));
    }

    #[test]
    fn a_node_never_connected_has_no_metrics() {
        let config = config();
        let mut metrics = NetworkMetrics::default();
        metrics.record_fetch_latency(&config, 3, 5.0, 0);
        let mut out = Vec::new();
        metrics.measure_into(&config, 1, "c1", &mut out);
        assert!(out.iter().all(|m| m.name.group != NODE_GROUP));
        assert_eq!(value(&out, CONSUMER_GROUP, "connection-count", None), 0.0);
        assert!(value(&out, CONSUMER_GROUP, "request-size-avg", None).is_nan());
    }
}
