//! The consumer's resolved settings: typed, defaulted like Java's `ConsumerConfig`.
//!
//! The configuration layer (property names, validation, files) converts into this struct; the
//! internals read nothing else.

use crate::config::{AutoOffsetReset, IsolationLevel};
use crate::network::NetworkConfig;

/// Resolved consumer settings, named after the Kafka configs they implement; defaults are
/// Java's.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerSettings {
    /// `bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    /// `client.id`.
    pub client_id: String,
    /// `group.id`: commits, committed offsets and (later) membership need it.
    pub group_id: Option<String>,
    /// `group.instance.id`: static membership.
    pub group_instance_id: Option<String>,
    /// `auto.offset.reset`.
    pub auto_offset_reset: AutoOffsetReset,
    /// `enable.auto.commit` (only effective with a `group.id`).
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms`.
    pub auto_commit_interval_ms: u64,
    /// `max.poll.records`.
    pub max_poll_records: usize,
    /// `fetch.min.bytes`.
    pub fetch_min_bytes: i32,
    /// `fetch.max.bytes`.
    pub fetch_max_bytes: i32,
    /// `max.partition.fetch.bytes`.
    pub max_partition_fetch_bytes: i32,
    /// `fetch.max.wait.ms`.
    pub fetch_max_wait_ms: i32,
    /// `isolation.level`.
    pub isolation_level: IsolationLevel,
    /// `request.timeout.ms`.
    pub request_timeout_ms: u64,
    /// `default.api.timeout.ms`: the deadline of calls that take no timeout.
    pub default_api_timeout_ms: u64,
    /// `retry.backoff.ms`.
    pub retry_backoff_ms: u64,
    /// `retry.backoff.max.ms`.
    pub retry_backoff_max_ms: u64,
    /// `reconnect.backoff.ms`.
    pub reconnect_backoff_ms: u64,
    /// `reconnect.backoff.max.ms`.
    pub reconnect_backoff_max_ms: u64,
    /// `socket.connection.setup.timeout.ms`.
    pub socket_connection_setup_timeout_ms: u64,
    /// `metadata.max.age.ms`.
    pub metadata_max_age_ms: u64,
    /// `check.crcs`.
    pub check_crcs: bool,
    /// `client.rack`: sent in Fetch for follower fetching (KIP-392).
    pub client_rack: String,
}

impl Default for ConsumerSettings {
    fn default() -> Self {
        Self {
            bootstrap_servers: Vec::new(),
            client_id: "kafka-consumer-rs".to_owned(),
            group_id: None,
            group_instance_id: None,
            auto_offset_reset: AutoOffsetReset::Latest,
            enable_auto_commit: true,
            auto_commit_interval_ms: 5_000,
            max_poll_records: 500,
            fetch_min_bytes: 1,
            fetch_max_bytes: 52_428_800,
            max_partition_fetch_bytes: 1_048_576,
            fetch_max_wait_ms: 500,
            isolation_level: IsolationLevel::ReadUncommitted,
            request_timeout_ms: 30_000,
            default_api_timeout_ms: 60_000,
            retry_backoff_ms: 100,
            retry_backoff_max_ms: 1_000,
            reconnect_backoff_ms: 50,
            reconnect_backoff_max_ms: 1_000,
            socket_connection_setup_timeout_ms: 10_000,
            metadata_max_age_ms: 300_000,
            check_crcs: true,
            client_rack: String::new(),
        }
    }
}

impl ConsumerSettings {
    /// Settings for `bootstrap_servers`, everything else default.
    pub fn new(bootstrap_servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            bootstrap_servers: bootstrap_servers.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Whether auto-commit is in effect: it needs a group to commit to.
    pub fn auto_commit(&self) -> bool {
        self.enable_auto_commit && self.group_id.is_some()
    }

    /// The network client's share of the settings.
    pub(crate) fn network_config(&self) -> NetworkConfig {
        NetworkConfig {
            bootstrap_servers: self.bootstrap_servers.clone(),
            client_id: self.client_id.clone(),
            request_timeout_ms: self.request_timeout_ms,
            socket_connection_setup_timeout_ms: self.socket_connection_setup_timeout_ms,
            reconnect_backoff_ms: self.reconnect_backoff_ms,
            reconnect_backoff_max_ms: self.reconnect_backoff_max_ms,
            ..NetworkConfig::default()
        }
    }
}
