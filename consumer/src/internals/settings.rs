//! The consumer's resolved settings: typed, defaulted like Java's `ConsumerConfig`.
//!
//! The user-facing, validated [`ConsumerConfig`] converts into this struct
//! ([`ConsumerSettings::from_config`]); the internals read nothing else. It is crate-internal:
//! `ConsumerConfig` is the one public way to configure a consumer.

use crate::config::{
    Assignor, AutoOffsetReset, ConsumerConfig, GroupProtocol, IsolationLevel,
    MetadataRecoveryStrategy,
};
use crate::internals::metrics::MetricConfig;
use crate::network::{NetworkConfig, SecurityConfig};
use crate::rt::next_client_id_sequence;

/// Resolved consumer settings, named after the Kafka configs they implement; defaults are
/// Java's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConsumerSettings {
    /// `bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    /// `client.id`.
    pub client_id: String,
    /// `group.id`: commits, committed offsets and (later) membership need it.
    pub group_id: Option<String>,
    /// `group.instance.id`: static membership.
    pub group_instance_id: Option<String>,
    /// `group.protocol`.
    pub group_protocol: GroupProtocol,
    /// `session.timeout.ms` (classic protocol).
    pub session_timeout_ms: u64,
    /// `heartbeat.interval.ms` (classic protocol).
    pub heartbeat_interval_ms: u64,
    /// `max.poll.interval.ms`: the longest the application may stay away from `poll` before
    /// the member leaves the group; also the rebalance timeout sent in JoinGroup.
    pub max_poll_interval_ms: u64,
    /// `partition.assignment.strategy` (classic protocol), in preference order.
    pub partition_assignment_strategy: Vec<Assignor>,
    /// The application's registered assignors, for the [`Assignor::Custom`] entries above.
    pub custom_assignors: Vec<crate::assignor::RegisteredAssignor>,
    /// `group.remote.assignor` (consumer protocol): the server-side assignor to ask for;
    /// `None` lets the broker choose.
    pub group_remote_assignor: Option<String>,
    /// `exclude.internal.topics`: a pattern never matches internal topics.
    pub exclude_internal_topics: bool,
    /// `auto.offset.reset`.
    pub auto_offset_reset: AutoOffsetReset,
    /// `enable.auto.commit` (only effective with a `group.id`).
    pub enable_auto_commit: bool,
    /// `enable.metrics.push`: KIP-714 client telemetry.
    pub enable_metrics_push: bool,
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
    /// `socket.connection.setup.timeout.max.ms`.
    pub socket_connection_setup_timeout_max_ms: u64,
    /// `metadata.max.age.ms`.
    pub metadata_max_age_ms: u64,
    /// `allow.auto.create.topics`.
    pub allow_auto_create_topics: bool,
    /// `connections.max.idle.ms` (`None` when negative: never close idle connections).
    pub connections_max_idle_ms: Option<u64>,
    /// `metrics.num.samples` and `metrics.sample.window.ms`.
    pub metric_config: MetricConfig,
    /// `send.buffer.bytes` (`None` when -1: the OS default).
    pub send_buffer_bytes: Option<u32>,
    /// `receive.buffer.bytes` (`None` when -1: the OS default).
    pub receive_buffer_bytes: Option<u32>,
    /// `metadata.recovery.strategy`.
    pub metadata_recovery_strategy: MetadataRecoveryStrategy,
    /// `metadata.recovery.rebootstrap.trigger.ms`.
    pub metadata_recovery_rebootstrap_trigger_ms: u64,
    /// `check.crcs`.
    pub check_crcs: bool,
    /// `client.rack`: sent in Fetch for follower fetching (KIP-392).
    pub client_rack: String,
    /// `security.protocol` and its TLS and SASL settings.
    pub security: SecurityConfig,
}

impl Default for ConsumerSettings {
    fn default() -> Self {
        Self {
            bootstrap_servers: Vec::new(),
            client_id: "kafka-consumer-rs".to_owned(),
            group_id: None,
            group_instance_id: None,
            group_protocol: GroupProtocol::Classic,
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 3_000,
            max_poll_interval_ms: 300_000,
            partition_assignment_strategy: vec![Assignor::Range, Assignor::CooperativeSticky],
            custom_assignors: Vec::new(),
            group_remote_assignor: None,
            exclude_internal_topics: true,
            auto_offset_reset: AutoOffsetReset::Latest,
            enable_auto_commit: true,
            enable_metrics_push: true,
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
            socket_connection_setup_timeout_max_ms: 30_000,
            metadata_max_age_ms: 300_000,
            allow_auto_create_topics: true,
            connections_max_idle_ms: Some(540_000),
            metric_config: MetricConfig::default(),
            send_buffer_bytes: Some(131_072),
            receive_buffer_bytes: Some(65_536),
            metadata_recovery_strategy: MetadataRecoveryStrategy::Rebootstrap,
            metadata_recovery_rebootstrap_trigger_ms: 300_000,
            check_crcs: true,
            client_rack: String::new(),
            security: SecurityConfig::default(),
        }
    }
}

impl From<&ConsumerConfig> for ConsumerSettings {
    fn from(config: &ConsumerConfig) -> Self {
        Self::from_config(config)
    }
}

impl ConsumerSettings {
    /// The settings a validated configuration stands for. An empty `client.id` becomes Java's
    /// generated one: `consumer-<group.id>-<group.instance.id>` for a static member, else
    /// `consumer-<group.id>-<n>` with `n` from [`next_client_id_sequence`] (`group.id` printed
    /// as `null` when unset, as Java does).
    pub fn from_config(config: &ConsumerConfig) -> Self {
        let client_id = if config.client_id().is_empty() {
            let member = config
                .group_instance_id()
                .map_or_else(|| next_client_id_sequence().to_string(), str::to_owned);
            format!("consumer-{}-{member}", config.group_id().unwrap_or("null"))
        } else {
            config.client_id().to_owned()
        };
        // The config's integer ranges are Java's (`int`, non-negative where Java checks it),
        // so these conversions only saturate values Java would refuse too.
        let int = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
        Self {
            bootstrap_servers: config.bootstrap_servers().to_vec(),
            client_id,
            group_id: config.group_id().map(str::to_owned),
            group_instance_id: config.group_instance_id().map(str::to_owned),
            group_protocol: config.group_protocol(),
            session_timeout_ms: u64::try_from(config.session_timeout_ms()).unwrap_or(0),
            heartbeat_interval_ms: u64::try_from(config.heartbeat_interval_ms()).unwrap_or(0),
            max_poll_interval_ms: config.max_poll_interval_ms().into(),
            partition_assignment_strategy: config.partition_assignment_strategy().to_vec(),
            custom_assignors: config.custom_assignors().to_vec(),
            group_remote_assignor: config.group_remote_assignor().map(str::to_owned),
            exclude_internal_topics: config.exclude_internal_topics(),
            auto_offset_reset: config.auto_offset_reset(),
            enable_auto_commit: config.enable_auto_commit(),
            enable_metrics_push: config.enable_metrics_push(),
            auto_commit_interval_ms: config.auto_commit_interval_ms().into(),
            max_poll_records: usize::try_from(config.max_poll_records()).unwrap_or(usize::MAX),
            fetch_min_bytes: int(config.fetch_min_bytes()),
            fetch_max_bytes: int(config.fetch_max_bytes()),
            max_partition_fetch_bytes: int(config.max_partition_fetch_bytes()),
            fetch_max_wait_ms: int(config.fetch_max_wait_ms()),
            isolation_level: config.isolation_level(),
            request_timeout_ms: config.request_timeout_ms().into(),
            default_api_timeout_ms: config.default_api_timeout_ms().into(),
            retry_backoff_ms: config.retry_backoff_ms(),
            retry_backoff_max_ms: config.retry_backoff_max_ms(),
            reconnect_backoff_ms: config.reconnect_backoff_ms(),
            reconnect_backoff_max_ms: config.reconnect_backoff_max_ms(),
            socket_connection_setup_timeout_ms: u64::try_from(
                config.socket_connection_setup_timeout_ms(),
            )
            .unwrap_or(0),
            socket_connection_setup_timeout_max_ms: u64::try_from(
                config.socket_connection_setup_timeout_max_ms(),
            )
            .unwrap_or(0),
            metadata_max_age_ms: config.metadata_max_age_ms(),
            allow_auto_create_topics: config.allow_auto_create_topics(),
            connections_max_idle_ms: u64::try_from(config.connections_max_idle_ms()).ok(),
            metric_config: MetricConfig {
                samples: usize::try_from(config.metrics_num_samples()).unwrap_or(2),
                window_ms: config.metrics_sample_window_ms(),
            },
            send_buffer_bytes: u32::try_from(config.send_buffer_bytes()).ok(),
            receive_buffer_bytes: u32::try_from(config.receive_buffer_bytes()).ok(),
            metadata_recovery_strategy: config.metadata_recovery_strategy(),
            metadata_recovery_rebootstrap_trigger_ms: config
                .metadata_recovery_rebootstrap_trigger_ms(),
            check_crcs: config.check_crcs(),
            client_rack: config.client_rack().to_owned(),
            security: config.security().clone(),
        }
    }

    /// Settings for `bootstrap_servers`, everything else default.
    #[cfg(test)]
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
            socket_connection_setup_timeout_max_ms: self.socket_connection_setup_timeout_max_ms,
            connections_max_idle_ms: self.connections_max_idle_ms,
            send_buffer_bytes: self.send_buffer_bytes,
            receive_buffer_bytes: self.receive_buffer_bytes,
            metadata_recovery_strategy: self.metadata_recovery_strategy,
            metadata_recovery_rebootstrap_trigger_ms: self.metadata_recovery_rebootstrap_trigger_ms,
            reconnect_backoff_ms: self.reconnect_backoff_ms,
            reconnect_backoff_max_ms: self.reconnect_backoff_max_ms,
            security: self.security.clone(),
            ..NetworkConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key ConsumerSettings reads, set away from its default in a properties text, and
    /// what the settings must then hold.
    #[test]
    fn properties_text_to_settings_carries_every_value() {
        #[allow(clippy::type_complexity)]
        let table: &[(&str, &str, &str, fn(&ConsumerSettings) -> String)] = &[
            (
                "bootstrap.servers",
                "b1:9092,PLAINTEXT://b2:9093",
                "b1:9092,b2:9093",
                |s| s.bootstrap_servers.join(","),
            ),
            ("client.id", "client-7", "client-7", |s| s.client_id.clone()),
            ("group.id", "orders", "Some(\"orders\")", |s| {
                format!("{:?}", s.group_id)
            }),
            ("group.instance.id", "i-1", "Some(\"i-1\")", |s| {
                format!("{:?}", s.group_instance_id)
            }),
            (
                "auto.offset.reset",
                "by_duration:PT1H",
                "by_duration:PT3600S",
                |s| s.auto_offset_reset.to_string(),
            ),
            ("enable.auto.commit", "false", "false", |s| {
                s.enable_auto_commit.to_string()
            }),
            ("enable.metrics.push", "false", "false", |s| {
                s.enable_metrics_push.to_string()
            }),
            ("auto.commit.interval.ms", "1234", "1234", |s| {
                s.auto_commit_interval_ms.to_string()
            }),
            ("max.poll.records", "77", "77", |s| {
                s.max_poll_records.to_string()
            }),
            ("fetch.min.bytes", "10", "10", |s| {
                s.fetch_min_bytes.to_string()
            }),
            ("fetch.max.bytes", "1000000", "1000000", |s| {
                s.fetch_max_bytes.to_string()
            }),
            ("max.partition.fetch.bytes", "2000", "2000", |s| {
                s.max_partition_fetch_bytes.to_string()
            }),
            ("fetch.max.wait.ms", "250", "250", |s| {
                s.fetch_max_wait_ms.to_string()
            }),
            ("isolation.level", "read_committed", "read_committed", |s| {
                s.isolation_level.as_str().to_owned()
            }),
            ("request.timeout.ms", "31000", "31000", |s| {
                s.request_timeout_ms.to_string()
            }),
            ("default.api.timeout.ms", "61000", "61000", |s| {
                s.default_api_timeout_ms.to_string()
            }),
            ("retry.backoff.ms", "150", "150", |s| {
                s.retry_backoff_ms.to_string()
            }),
            ("retry.backoff.max.ms", "1500", "1500", |s| {
                s.retry_backoff_max_ms.to_string()
            }),
            ("reconnect.backoff.ms", "60", "60", |s| {
                s.reconnect_backoff_ms.to_string()
            }),
            ("reconnect.backoff.max.ms", "1600", "1600", |s| {
                s.reconnect_backoff_max_ms.to_string()
            }),
            (
                "socket.connection.setup.timeout.ms",
                "11000",
                "11000",
                |s| s.socket_connection_setup_timeout_ms.to_string(),
            ),
            (
                "socket.connection.setup.timeout.max.ms",
                "31000",
                "31000",
                |s| s.socket_connection_setup_timeout_max_ms.to_string(),
            ),
            ("metadata.max.age.ms", "200000", "200000", |s| {
                s.metadata_max_age_ms.to_string()
            }),
            ("allow.auto.create.topics", "false", "false", |s| {
                s.allow_auto_create_topics.to_string()
            }),
            ("connections.max.idle.ms", "-1", "None", |s| {
                format!("{:?}", s.connections_max_idle_ms)
            }),
            ("metrics.num.samples", "3", "3", |s| {
                s.metric_config.samples.to_string()
            }),
            ("metrics.sample.window.ms", "1000", "1000", |s| {
                s.metric_config.window_ms.to_string()
            }),
            ("send.buffer.bytes", "-1", "None", |s| {
                format!("{:?}", s.send_buffer_bytes)
            }),
            ("receive.buffer.bytes", "262144", "Some(262144)", |s| {
                format!("{:?}", s.receive_buffer_bytes)
            }),
            ("metadata.recovery.strategy", "NONE", "None", |s| {
                format!("{:?}", s.metadata_recovery_strategy)
            }),
            (
                "metadata.recovery.rebootstrap.trigger.ms",
                "1000",
                "1000",
                |s| s.metadata_recovery_rebootstrap_trigger_ms.to_string(),
            ),
            ("check.crcs", "false", "false", |s| s.check_crcs.to_string()),
            ("client.rack", "rack-a", "rack-a", |s| s.client_rack.clone()),
            ("session.timeout.ms", "12000", "12000", |s| {
                s.session_timeout_ms.to_string()
            }),
            ("heartbeat.interval.ms", "1000", "1000", |s| {
                s.heartbeat_interval_ms.to_string()
            }),
            ("max.poll.interval.ms", "90000", "90000", |s| {
                s.max_poll_interval_ms.to_string()
            }),
            (
                "partition.assignment.strategy",
                "roundrobin",
                "[RoundRobin]",
                |s| format!("{:?}", s.partition_assignment_strategy),
            ),
            ("exclude.internal.topics", "false", "false", |s| {
                s.exclude_internal_topics.to_string()
            }),
        ];
        let text: String = table
            .iter()
            .map(|(key, value, _, _)| format!("{key} = {value}\n"))
            .collect();
        let config = ConsumerConfig::from_properties_str(&text).unwrap();
        let settings = ConsumerSettings::from(&config);
        let defaults = ConsumerSettings::default();
        for (key, _, expected, get) in table {
            assert_eq!(get(&settings), *expected, "{key}");
            assert_ne!(
                get(&defaults),
                *expected,
                "{key} must differ from its default"
            );
        }
        // Every field is in the table: a new field fails to compile here until it is added.
        let ConsumerSettings {
            bootstrap_servers: _,
            client_id: _,
            group_id: _,
            group_instance_id: _,
            auto_offset_reset: _,
            enable_auto_commit: _,
            enable_metrics_push: _,
            auto_commit_interval_ms: _,
            max_poll_records: _,
            fetch_min_bytes: _,
            fetch_max_bytes: _,
            max_partition_fetch_bytes: _,
            fetch_max_wait_ms: _,
            isolation_level: _,
            request_timeout_ms: _,
            default_api_timeout_ms: _,
            retry_backoff_ms: _,
            retry_backoff_max_ms: _,
            reconnect_backoff_ms: _,
            reconnect_backoff_max_ms: _,
            socket_connection_setup_timeout_ms: _,
            socket_connection_setup_timeout_max_ms: _,
            metadata_max_age_ms: _,
            allow_auto_create_topics: _,
            connections_max_idle_ms: _,
            metric_config: _,
            send_buffer_bytes: _,
            receive_buffer_bytes: _,
            metadata_recovery_strategy: _,
            metadata_recovery_rebootstrap_trigger_ms: _,
            check_crcs: _,
            client_rack: _,
            group_protocol: _, // checked below: its classic-only keys exclude `consumer` here
            session_timeout_ms: _,
            heartbeat_interval_ms: _,
            max_poll_interval_ms: _,
            partition_assignment_strategy: _,
            custom_assignors: _,
            exclude_internal_topics: _,
            group_remote_assignor: _, // checked below: a consumer-protocol key
            security: _,              // checked below: needs several keys together
        } = settings;
        assert_eq!(table.len(), 38);
        let secured = ConsumerConfig::from_properties_str(
            "bootstrap.servers = b:1\nsecurity.protocol = SASL_PLAINTEXT\nsasl.mechanism = PLAIN\n\
             sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule \
             required username=\"u\" password=\"p\";",
        )
        .unwrap();
        let settings = ConsumerSettings::from(&secured);
        assert_eq!(&settings.security, secured.security());
        assert_eq!(settings.network_config().security, settings.security);
        assert_ne!(settings.security, ConsumerSettings::default().security);
        let config = ConsumerConfig::from_properties_str(
            "bootstrap.servers = b:1\ngroup.protocol = consumer",
        )
        .unwrap();
        assert_eq!(
            ConsumerSettings::from(&config).group_protocol,
            GroupProtocol::Consumer
        );
        assert_eq!(ConsumerSettings::from(&config).group_remote_assignor, None);
        let config = ConsumerConfig::from_properties_str(
            "bootstrap.servers = b:1\ngroup.protocol = consumer\ngroup.remote.assignor = range",
        )
        .unwrap();
        assert_eq!(
            ConsumerSettings::from(&config)
                .group_remote_assignor
                .as_deref(),
            Some("range")
        );
    }

    #[test]
    fn defaults_match_an_empty_config_but_the_generated_client_id() {
        let config = ConsumerConfig::from_pairs([("bootstrap.servers", "b:1")]).unwrap();
        let settings = ConsumerSettings::from_config(&config);
        assert!(settings.client_id.starts_with("consumer-null-"));
        assert_eq!(
            settings,
            ConsumerSettings {
                client_id: settings.client_id.clone(),
                // Java forces auto-commit off without a group.id.
                enable_auto_commit: false,
                ..ConsumerSettings::new(["b:1"])
            }
        );
    }

    #[test]
    fn empty_client_id_is_generated_like_java() {
        let settings = |pairs: &[(&str, &str)]| {
            let config = ConsumerConfig::from_pairs(
                [("bootstrap.servers", "b:1")].iter().chain(pairs).copied(),
            )
            .unwrap();
            ConsumerSettings::from_config(&config).client_id
        };
        let number =
            |id: String, prefix: &str| -> u64 { id.strip_prefix(prefix).unwrap().parse().unwrap() };
        let first = number(settings(&[("group.id", "g")]), "consumer-g-");
        let second = number(settings(&[("group.id", "g")]), "consumer-g-");
        assert!(
            second > first,
            "a process-wide sequence: {first} then {second}"
        );
        assert!(number(settings(&[]), "consumer-null-") > second);
        assert_eq!(
            settings(&[("group.id", "g"), ("group.instance.id", "static-1")]),
            "consumer-g-static-1"
        );
        assert_eq!(settings(&[("client.id", "mine")]), "mine");
    }
}
