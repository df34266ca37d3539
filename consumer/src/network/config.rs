//! Network settings, named after the Kafka consumer configs they implement.

use super::{ObserverHandle, SecurityConfig};
use crate::config::MetadataRecoveryStrategy;
use crate::protocol::frame::DEFAULT_MAX_FRAME_SIZE_BYTES;

/// Settings of the [`NetworkClient`](super::NetworkClient).
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkConfig {
    /// `bootstrap.servers`: `host:port` addresses to find the cluster through.
    pub bootstrap_servers: Vec<String>,
    /// `client.id`: sent in every request header.
    pub client_id: String,
    /// `request.timeout.ms`: how long a request may wait for its response.
    pub request_timeout_ms: u64,
    /// `socket.connection.setup.timeout.ms`: how long the first attempt to set up a
    /// connection (TCP connect, TLS handshake) may take.
    pub socket_connection_setup_timeout_ms: u64,
    /// `socket.connection.setup.timeout.max.ms`: the cap on that timeout as it doubles with
    /// each setup that fails in a row.
    pub socket_connection_setup_timeout_max_ms: u64,
    /// `reconnect.backoff.ms`: the first delay before reconnecting to a failed broker.
    pub reconnect_backoff_ms: u64,
    /// `reconnect.backoff.max.ms`: the cap on that delay as failures repeat.
    pub reconnect_backoff_max_ms: u64,
    /// `connections.max.idle.ms`: close a connection idle this long (`None`: never).
    pub connections_max_idle_ms: Option<u64>,
    /// `send.buffer.bytes`: the socket's `SO_SNDBUF` (`None`: the OS default, Java's -1).
    pub send_buffer_bytes: Option<u32>,
    /// `receive.buffer.bytes`: the socket's `SO_RCVBUF` (`None`: the OS default, Java's -1).
    pub receive_buffer_bytes: Option<u32>,
    /// `max.in.flight.requests.per.connection`: requests written but not yet answered.
    pub max_in_flight_requests_per_connection: usize,
    /// The largest response frame accepted; a longer length prefix closes the connection.
    pub max_response_size_bytes: usize,
    /// Requests waiting for a broker's connection beyond this fail with `QueueFull`.
    pub max_queued_requests_per_node: usize,
    /// `metadata.recovery.strategy`: whether the client goes back to `bootstrap_servers` once
    /// the brokers Metadata named cannot help (KIP-899).
    pub metadata_recovery_strategy: MetadataRecoveryStrategy,
    /// `metadata.recovery.rebootstrap.trigger.ms`: rebootstrap after wanting metadata this long
    /// without a successful response (KIP-1102).
    pub metadata_recovery_rebootstrap_trigger_ms: u64,
    /// `security.protocol` and its `ssl.*` / `sasl.*` settings.
    pub security: SecurityConfig,
    /// Told of every connection and frame (the consumer's network metrics); `None`: nobody.
    pub observer: Option<ObserverHandle>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            bootstrap_servers: Vec::new(),
            client_id: "kafka-consumer-rs".to_owned(),
            request_timeout_ms: 30_000,
            socket_connection_setup_timeout_ms: 10_000,
            socket_connection_setup_timeout_max_ms: 30_000,
            reconnect_backoff_ms: 50,
            reconnect_backoff_max_ms: 1_000,
            connections_max_idle_ms: Some(540_000),
            send_buffer_bytes: Some(131_072),
            receive_buffer_bytes: Some(65_536),
            max_in_flight_requests_per_connection: 5,
            max_response_size_bytes: DEFAULT_MAX_FRAME_SIZE_BYTES,
            max_queued_requests_per_node: 1_000,
            metadata_recovery_strategy: MetadataRecoveryStrategy::Rebootstrap,
            metadata_recovery_rebootstrap_trigger_ms: 300_000,
            security: SecurityConfig::default(),
            observer: None,
        }
    }
}
