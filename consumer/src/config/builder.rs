//! The typed builder. It only records Java-style pairs; `build()` hands them to the same
//! checks as a property map, so the builder and the map cannot disagree.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use zeroize::Zeroize;

use super::error::ConfigError;
use super::values::{
    Assignor, AutoOffsetReset, GroupProtocol, IsolationLevel, MetadataRecoveryStrategy,
};
use super::{ConsumerConfig, Parsed};
use crate::assignor::{ConsumerPartitionAssignor, RegisteredAssignor};
use crate::network::sasl::{SaslMechanism, TokenProvider};
use crate::network::SecurityProtocol;

/// Builds a [`ConsumerConfig`]; see [`ConsumerConfig::builder`]. Setting a key twice keeps the
/// last value. Values are zeroized when the builder is dropped, as some are secrets.
#[derive(Clone, Default)]
pub struct ConsumerConfigBuilder {
    pairs: Vec<(String, String)>,
    token_provider: Option<Arc<dyn TokenProvider>>,
    oauthbearer_allowed_urls: Option<Vec<String>>,
    assignors: Vec<RegisteredAssignor>,
}

impl Drop for ConsumerConfigBuilder {
    fn drop(&mut self) {
        for (_, value) in &mut self.pairs {
            value.zeroize();
        }
    }
}

/// Escapes a JAAS option value for a double-quoted string.
fn jaas_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Setters for keys whose value is written with `to_string()`.
macro_rules! setters {
    ($($key:literal $name:ident: $ty:ty;)*) => {
        $(
            #[doc = concat!("Sets `", $key, "`.")]
            pub fn $name(self, value: $ty) -> Self {
                self.set($key, value.to_string())
            }
        )*
    };
}

/// `Duration` setters for `*.ms` keys, named without the unit. The value is written in whole
/// milliseconds (rounded down); one too large for the key's type is refused by `build`, as
/// the same number of milliseconds would be.
macro_rules! duration_setters {
    ($($key:literal $name:ident;)*) => {
        $(
            #[doc = concat!("Sets `", $key, "` from a [`Duration`], in whole milliseconds.")]
            pub fn $name(self, value: Duration) -> Self {
                self.set($key, value.as_millis().to_string())
            }
        )*
    };
}

impl ConsumerConfigBuilder {
    /// Sets any key by its Java name, for keys without a typed setter.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.pairs.push((key.into(), value.into()));
        self
    }

    /// Sets `bootstrap.servers`.
    pub fn bootstrap_servers<I, S>(self, servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let joined: Vec<String> = servers.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self.set("bootstrap.servers", joined.join(","))
    }

    /// Sets `security.protocol`.
    pub fn security_protocol(self, protocol: SecurityProtocol) -> Self {
        self.set("security.protocol", protocol.as_str())
    }

    /// SASL with a user name and password: `sasl.mechanism` (PLAIN or SCRAM-SHA-256/512) and
    /// the `sasl.jaas.config` a Java client would use for it.
    pub fn sasl_password(self, mechanism: SaslMechanism, username: &str, password: &str) -> Self {
        let module = match mechanism {
            SaslMechanism::Plain | SaslMechanism::OAuthBearer => {
                "org.apache.kafka.common.security.plain.PlainLoginModule"
            }
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                "org.apache.kafka.common.security.scram.ScramLoginModule"
            }
        };
        let mut jaas = format!(
            "{module} required username={} password={};",
            jaas_quoted(username),
            jaas_quoted(password)
        );
        let builder = self
            .set("sasl.mechanism", mechanism.as_str())
            .set("sasl.jaas.config", jaas.clone());
        jaas.zeroize();
        builder
    }

    /// SASL/OAUTHBEARER with tokens from `provider` (asked on every new connection); sets
    /// `sasl.mechanism=OAUTHBEARER`, and no `sasl.jaas.config` is needed.
    pub fn sasl_oauthbearer(mut self, provider: Arc<dyn TokenProvider>) -> Self {
        self.token_provider = Some(provider);
        self.set("sasl.mechanism", SaslMechanism::OAuthBearer.as_str())
    }

    /// The token endpoint URLs `sasl.oauthbearer.token.endpoint.url` may name (Kafka's
    /// `org.apache.kafka.sasl.oauthbearer.allowed.urls` system property, which defaults to
    /// none); replaces the `KAFKA_SASL_OAUTHBEARER_ALLOWED_URLS` environment variable.
    pub fn sasl_oauthbearer_allowed_urls<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.oauthbearer_allowed_urls =
            Some(urls.into_iter().map(|u| u.as_ref().to_owned()).collect());
        self
    }

    /// Trusts only these PEM CA certificates (`ssl.truststore.type=PEM`,
    /// `ssl.truststore.certificates`).
    pub fn ssl_truststore_pem(self, certificates: impl Into<String>) -> Self {
        self.set("ssl.truststore.type", "PEM")
            .set("ssl.truststore.certificates", certificates)
    }

    /// Trusts only the PEM CA certificates in this file (`ssl.truststore.type=PEM`,
    /// `ssl.truststore.location`).
    pub fn ssl_truststore_location(self, path: impl Into<String>) -> Self {
        self.set("ssl.truststore.type", "PEM")
            .set("ssl.truststore.location", path)
    }

    /// A client certificate for mutual TLS: a PEM chain and unencrypted PEM key
    /// (`ssl.keystore.type=PEM`, `ssl.keystore.certificate.chain`, `ssl.keystore.key`).
    pub fn ssl_keystore_pem(
        self,
        certificate_chain: impl Into<String>,
        key: impl Into<String>,
    ) -> Self {
        self.set("ssl.keystore.type", "PEM")
            .set("ssl.keystore.certificate.chain", certificate_chain)
            .set("ssl.keystore.key", key)
    }

    /// Whether the broker's certificate must name its host (`https`, the default) or not
    /// (`ssl.endpoint.identification.algorithm` empty; a warning is logged).
    pub fn ssl_endpoint_identification(self, verify_hostname: bool) -> Self {
        self.set(
            "ssl.endpoint.identification.algorithm",
            if verify_hostname { "https" } else { "" },
        )
    }

    /// Sets `group.id`.
    pub fn group_id(self, group_id: impl Into<String>) -> Self {
        self.set("group.id", group_id)
    }

    /// Sets `group.instance.id` (static membership).
    pub fn group_instance_id(self, id: impl Into<String>) -> Self {
        self.set("group.instance.id", id)
    }

    /// Sets `group.remote.assignor` (consumer protocol only).
    pub fn group_remote_assignor(self, assignor: impl Into<String>) -> Self {
        self.set("group.remote.assignor", assignor)
    }

    /// Sets `client.id`.
    pub fn client_id(self, client_id: impl Into<String>) -> Self {
        self.set("client.id", client_id)
    }

    /// Sets `client.rack`.
    pub fn client_rack(self, rack: impl Into<String>) -> Self {
        self.set("client.rack", rack)
    }

    /// Sets `group.protocol`.
    pub fn group_protocol(self, protocol: GroupProtocol) -> Self {
        self.set("group.protocol", protocol.as_str())
    }

    /// Sets `isolation.level`.
    pub fn isolation_level(self, level: IsolationLevel) -> Self {
        self.set("isolation.level", level.as_str())
    }

    /// Sets `metadata.recovery.strategy`.
    pub fn metadata_recovery_strategy(self, strategy: MetadataRecoveryStrategy) -> Self {
        self.set("metadata.recovery.strategy", strategy.as_str())
    }

    /// Registers an assignor of the application's own for the classic protocol (Java: a
    /// `ConsumerPartitionAssignor` class named in `partition.assignment.strategy`). Its
    /// [`name`](crate::assignor::ConsumerPartitionAssignor::name) then works in
    /// `partition.assignment.strategy` like a built-in one (`"my-assignor,range"`, or
    /// [`Assignor::Custom`] in [`partition_assignment_strategy`](Self::partition_assignment_strategy));
    /// registering alone does not select it. `make` is called once per consumer for a fresh
    /// instance. A name of a built-in assignor, or one registered twice, fails `build`.
    ///
    /// ```
    /// use std::collections::BTreeSet;
    /// use kafka_consumer::assignor::{
    ///     AssignorError, ClusterMetadata, ConsumerPartitionAssignor, GroupAssignment,
    ///     GroupSubscription, RangeAssignor,
    /// };
    /// use kafka_consumer::config::Assignor;
    /// use kafka_consumer::ConsumerConfig;
    ///
    /// /// Range, under a name of its own.
    /// #[derive(Debug, Default)]
    /// struct MyAssignor;
    ///
    /// impl ConsumerPartitionAssignor for MyAssignor {
    ///     fn name(&self) -> &'static str {
    ///         "my-assignor"
    ///     }
    ///     fn assign(
    ///         &self,
    ///         cluster: &ClusterMetadata,
    ///         subscriptions: &GroupSubscription,
    ///     ) -> Result<GroupAssignment, AssignorError> {
    ///         RangeAssignor.assign(cluster, subscriptions)
    ///     }
    /// }
    ///
    /// let config = ConsumerConfig::builder()
    ///     .bootstrap_servers(["localhost:9092"])
    ///     .group_id("orders")
    ///     .assignor(MyAssignor::default)
    ///     .set("partition.assignment.strategy", "my-assignor,range")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(
    ///     config.partition_assignment_strategy(),
    ///     [Assignor::Custom("my-assignor"), Assignor::Range]
    /// );
    /// ```
    pub fn assignor<A, F>(mut self, make: F) -> Self
    where
        A: ConsumerPartitionAssignor + 'static,
        F: Fn() -> A + Send + Sync + 'static,
    {
        self.assignors.push(RegisteredAssignor::new(make));
        self
    }

    /// Sets `partition.assignment.strategy` (classic protocol only).
    pub fn partition_assignment_strategy(self, assignors: &[Assignor]) -> Self {
        let names: Vec<&str> = assignors.iter().map(|a| a.class_name()).collect();
        self.set("partition.assignment.strategy", names.join(","))
    }

    setters! {
        "auto.offset.reset" auto_offset_reset: AutoOffsetReset;
        "enable.auto.commit" enable_auto_commit: bool;
        "auto.commit.interval.ms" auto_commit_interval_ms: u32;
        "max.poll.records" max_poll_records: u32;
        "max.poll.interval.ms" max_poll_interval_ms: u32;
        "session.timeout.ms" session_timeout_ms: i32;
        "heartbeat.interval.ms" heartbeat_interval_ms: i32;
        "fetch.min.bytes" fetch_min_bytes: u32;
        "fetch.max.bytes" fetch_max_bytes: u32;
        "max.partition.fetch.bytes" max_partition_fetch_bytes: u32;
        "fetch.max.wait.ms" fetch_max_wait_ms: u32;
        "check.crcs" check_crcs: bool;
        "allow.auto.create.topics" allow_auto_create_topics: bool;
        "exclude.internal.topics" exclude_internal_topics: bool;
        "enable.metrics.push" enable_metrics_push: bool;
        "request.timeout.ms" request_timeout_ms: u32;
        "default.api.timeout.ms" default_api_timeout_ms: u32;
        "retry.backoff.ms" retry_backoff_ms: u64;
        "retry.backoff.max.ms" retry_backoff_max_ms: u64;
        "reconnect.backoff.ms" reconnect_backoff_ms: u64;
        "reconnect.backoff.max.ms" reconnect_backoff_max_ms: u64;
        "socket.connection.setup.timeout.ms" socket_connection_setup_timeout_ms: i64;
        "socket.connection.setup.timeout.max.ms" socket_connection_setup_timeout_max_ms: i64;
        "metadata.max.age.ms" metadata_max_age_ms: u64;
        "metadata.recovery.rebootstrap.trigger.ms" metadata_recovery_rebootstrap_trigger_ms: u64;
        "connections.max.idle.ms" connections_max_idle_ms: i64;
        "metrics.num.samples" metrics_num_samples: u32;
        "metrics.sample.window.ms" metrics_sample_window_ms: u64;
        "send.buffer.bytes" send_buffer_bytes: i32;
        "receive.buffer.bytes" receive_buffer_bytes: i32;
    }

    duration_setters! {
        "auto.commit.interval.ms" auto_commit_interval;
        "max.poll.interval.ms" max_poll_interval;
        "session.timeout.ms" session_timeout;
        "heartbeat.interval.ms" heartbeat_interval;
        "fetch.max.wait.ms" fetch_max_wait;
        "request.timeout.ms" request_timeout;
        "default.api.timeout.ms" default_api_timeout;
        "retry.backoff.ms" retry_backoff;
        "retry.backoff.max.ms" retry_backoff_max;
        "reconnect.backoff.ms" reconnect_backoff;
        "reconnect.backoff.max.ms" reconnect_backoff_max;
        "socket.connection.setup.timeout.ms" socket_connection_setup_timeout;
        "socket.connection.setup.timeout.max.ms" socket_connection_setup_timeout_max;
        "metadata.max.age.ms" metadata_max_age;
        "metadata.recovery.rebootstrap.trigger.ms" metadata_recovery_rebootstrap_trigger;
        "connections.max.idle.ms" connections_max_idle;
        "metrics.sample.window.ms" metrics_sample_window;
    }

    /// Checks and builds; warnings are logged.
    pub fn build(self) -> Result<ConsumerConfig, ConfigError> {
        self.build_with_warnings().map(|parsed| parsed.config)
    }

    /// Checks and builds, also returning the warnings.
    pub fn build_with_warnings(mut self) -> Result<Parsed, ConfigError> {
        let pairs = std::mem::take(&mut self.pairs);
        let allowed_urls = self.oauthbearer_allowed_urls.take();
        ConsumerConfig::parse_with_provider(
            pairs,
            self.token_provider.take(),
            allowed_urls.as_deref(),
            std::mem::take(&mut self.assignors),
        )
    }
}

/// Shows the pairs set so far, with the values of secret keys hidden.
impl fmt::Debug for ConsumerConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                self.pairs
                    .iter()
                    .map(|(key, value)| (key, super::parse::redacted(key, value))),
            )
            .finish()
    }
}
