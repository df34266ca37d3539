//! Consumer configuration: Java's `ConsumerConfig` keys, defaults and validators (Kafka 4.x),
//! in a typed, checked struct.
//!
//! Build one from Java-style `key = value` pairs ([`ConsumerConfig::from_pairs`]), from a Java
//! `.properties` file ([`ConsumerConfig::from_properties_str`]) or with the typed
//! [`ConsumerConfig::builder`]. All three go through the same checks, so a config copied from
//! a Java application means the same thing here, and a mistake fails at construction with an
//! error naming the key, rather than later or never.
//!
//! Where this differs from Java, it is stricter, on purpose:
//! - unknown keys are errors (Java only logs them), with a "did you mean" suggestion;
//! - Java plugin keys (deserializers, interceptors, metrics reporters) are accepted, checked
//!   and ignored with a [`ConfigWarning`], since they name Java classes;
//! - features not implemented (JKS/PKCS12 stores, GSSAPI, Java callback handlers, canonical
//!   DNS lookup) are refused with [`ConfigError::Unsupported`] instead of being silently
//!   ignored.
//!
//! Secrets (`sasl.jaas.config`, `ssl.keystore.key`, …) are never shown by `Debug`, `Display`
//! or errors, and the copies this module keeps are zeroized on drop.

mod builder;
mod error;
mod jaas;
mod keys;
mod oidc;
mod parse;
mod properties;
mod security;
mod validate;
mod values;

#[cfg(test)]
mod properties_proptests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use zeroize::Zeroizing;

use crate::assignor::RegisteredAssignor;
use crate::network::sasl::TokenProvider;
use crate::network::SecurityConfig;

pub use builder::ConsumerConfigBuilder;
pub use error::{ConfigError, ConfigWarning};
pub use properties::parse_properties;
pub use values::{
    Assignor, AutoOffsetReset, GroupProtocol, IsolationLevel, MetadataRecoveryStrategy,
};
pub(crate) use values::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};

use keys::{Role, KEYS};
use parse::Resolver;

/// A checked consumer configuration. Field names carry their units; each getter names the
/// Java key it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    bootstrap_servers: Vec<String>,
    client_id: String,
    client_rack: String,
    group_id: Option<String>,
    group_instance_id: Option<String>,
    group_protocol: GroupProtocol,
    group_remote_assignor: Option<String>,
    partition_assignment_strategy: Vec<Assignor>,
    session_timeout_ms: i32,
    heartbeat_interval_ms: i32,
    max_poll_interval_ms: u32,
    max_poll_records: u32,
    enable_auto_commit: bool,
    auto_commit_interval_ms: u32,
    auto_offset_reset: AutoOffsetReset,
    isolation_level: IsolationLevel,
    fetch_min_bytes: u32,
    fetch_max_bytes: u32,
    max_partition_fetch_bytes: u32,
    fetch_max_wait_ms: u32,
    check_crcs: bool,
    allow_auto_create_topics: bool,
    exclude_internal_topics: bool,
    enable_metrics_push: bool,
    request_timeout_ms: u32,
    default_api_timeout_ms: u32,
    retry_backoff_ms: u64,
    retry_backoff_max_ms: u64,
    reconnect_backoff_ms: u64,
    reconnect_backoff_max_ms: u64,
    socket_connection_setup_timeout_ms: i64,
    socket_connection_setup_timeout_max_ms: i64,
    metadata_max_age_ms: u64,
    metadata_recovery_strategy: MetadataRecoveryStrategy,
    metadata_recovery_rebootstrap_trigger_ms: u64,
    connections_max_idle_ms: i64,
    metrics_num_samples: u32,
    metrics_sample_window_ms: u64,
    send_buffer_bytes: i32,
    receive_buffer_bytes: i32,
    security: SecurityConfig,
    /// The supplied non-secret `ssl.*`/`sasl.*` values, for `to_properties`.
    security_pairs: Vec<(&'static str, String)>,
    /// The supplied secret keys, shown as `[hidden]` by `Display`.
    secrets_set: Vec<&'static str>,
    /// Assignors the application registered; `partition.assignment.strategy` may name them.
    custom_assignors: Vec<RegisteredAssignor>,
}

/// A configuration together with the warnings its construction produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The checked configuration.
    pub config: ConsumerConfig,
    /// Everything worth a warning, in the order found; already logged with `tracing::warn!`.
    pub warnings: Vec<ConfigWarning>,
}

impl ConsumerConfig {
    /// A typed builder; `build()` runs the same checks as [`ConsumerConfig::from_pairs`].
    pub fn builder() -> ConsumerConfigBuilder {
        ConsumerConfigBuilder::default()
    }

    /// Checks Java-style pairs and returns the configuration and its warnings. A repeated key
    /// takes its last value, as in a properties file. Warnings are also logged.
    pub fn parse<I, K, V>(pairs: I) -> Result<Parsed, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        Self::parse_with_provider(pairs, None, None, Vec::new())
    }

    /// [`ConsumerConfig::parse`] with an OAUTHBEARER token provider and an allow-list of token
    /// endpoint URLs (replacing `KAFKA_SASL_OAUTHBEARER_ALLOWED_URLS`) from the builder.
    pub(crate) fn parse_with_provider<I, K, V>(
        pairs: I,
        provider: Option<Arc<dyn TokenProvider>>,
        allowed_urls: Option<&[String]>,
        custom_assignors: Vec<RegisteredAssignor>,
    ) -> Result<Parsed, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        let mut supplied = BTreeMap::new();
        for (key, value) in pairs {
            let key = key.as_ref();
            let value = Zeroizing::new(value.into());
            let Some(spec) = keys::spec(key) else {
                return Err(refuse_unknown(key));
            };
            supplied.insert(spec.name, value);
        }
        let resolver = Resolver::new(supplied);
        if let Some(clash) = custom_assignors.iter().enumerate().find_map(|(i, a)| {
            let builtin = Assignor::parse(a.name()).is_some();
            let repeated = custom_assignors[..i].iter().any(|b| b.name() == a.name());
            (builtin || repeated).then_some(a.name())
        }) {
            return Err(ConfigError::InvalidValue {
                key: "partition.assignment.strategy",
                value: format!("\"{clash}\""),
                expected: "registered assignors with names of their own (not a built-in \
                           assignor's, not registered twice)"
                    .to_owned(),
            });
        }
        let mut config = Self::from_resolver(&resolver, &custom_assignors)?;
        config.custom_assignors = custom_assignors;
        let mut warnings = validate::check_unstored_keys(&resolver)?;
        config.security = security::resolve(&resolver, provider, allowed_urls, &mut warnings)?;
        for spec in KEYS {
            let security_key = spec.name.starts_with("ssl.") || spec.name.starts_with("sasl.");
            if !security_key || spec.role != Role::Field || !resolver.is_supplied(spec.name) {
                continue;
            }
            if keys::is_secret(spec.name) {
                config.secrets_set.push(spec.name);
            } else if let Some(value) = resolver.string(spec.name)? {
                config.security_pairs.push((spec.name, value));
            }
        }
        validate::cross_checks(&resolver, &mut config, &mut warnings)?;
        for warning in &warnings {
            tracing::warn!(%warning, "consumer configuration");
        }
        Ok(Parsed { config, warnings })
    }

    /// Checks Java-style pairs; warnings are logged. See [`ConsumerConfig::parse`].
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<String>,
    {
        Self::parse(pairs).map(|parsed| parsed.config)
    }

    /// Checks a map of Java-style pairs; warnings are logged.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        Self::from_pairs(map.iter().map(|(k, v)| (k.as_str(), v.clone())))
    }

    /// Reads Java `.properties` text (see [`parse_properties`]); warnings are logged.
    pub fn from_properties_str(text: &str) -> Result<Self, ConfigError> {
        Self::from_pairs(parse_properties(text)?)
    }

    /// Reads a Java `.properties` file (UTF-8); warnings are logged.
    pub fn from_properties_file(path: impl AsRef<std::path::Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
            path: path.display().to_string(),
            message: error.to_string(),
        })?;
        Self::from_properties_str(&text)
    }

    /// The effective values as Java-style pairs, sorted by key, leaving out unset optional
    /// keys. Holds no secrets: secret keys (`sasl.jaas.config`, `ssl.keystore.key`, …) are
    /// left out. Feeding the pairs back to [`ConsumerConfig::from_pairs`] gives an equal
    /// configuration when no secret key was set.
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let list = |items: &[String]| items.join(",");
        let mut pairs = vec![
            (
                "allow.auto.create.topics",
                self.allow_auto_create_topics.to_string(),
            ),
            (
                "auto.commit.interval.ms",
                self.auto_commit_interval_ms.to_string(),
            ),
            ("auto.offset.reset", self.auto_offset_reset.to_string()),
            ("bootstrap.servers", list(&self.bootstrap_servers)),
            ("check.crcs", self.check_crcs.to_string()),
            ("client.id", self.client_id.clone()),
            ("client.rack", self.client_rack.clone()),
            (
                "connections.max.idle.ms",
                self.connections_max_idle_ms.to_string(),
            ),
            (
                "default.api.timeout.ms",
                self.default_api_timeout_ms.to_string(),
            ),
            ("enable.auto.commit", self.enable_auto_commit.to_string()),
            ("enable.metrics.push", self.enable_metrics_push.to_string()),
            (
                "exclude.internal.topics",
                self.exclude_internal_topics.to_string(),
            ),
            ("fetch.max.bytes", self.fetch_max_bytes.to_string()),
            ("fetch.max.wait.ms", self.fetch_max_wait_ms.to_string()),
            ("fetch.min.bytes", self.fetch_min_bytes.to_string()),
            ("group.protocol", self.group_protocol.as_str().to_owned()),
            (
                "heartbeat.interval.ms",
                self.heartbeat_interval_ms.to_string(),
            ),
            ("isolation.level", self.isolation_level.as_str().to_owned()),
            (
                "max.partition.fetch.bytes",
                self.max_partition_fetch_bytes.to_string(),
            ),
            (
                "max.poll.interval.ms",
                self.max_poll_interval_ms.to_string(),
            ),
            ("max.poll.records", self.max_poll_records.to_string()),
            ("metadata.max.age.ms", self.metadata_max_age_ms.to_string()),
            (
                "metadata.recovery.rebootstrap.trigger.ms",
                self.metadata_recovery_rebootstrap_trigger_ms.to_string(),
            ),
            (
                "metadata.recovery.strategy",
                self.metadata_recovery_strategy.as_str().to_owned(),
            ),
            ("metrics.num.samples", self.metrics_num_samples.to_string()),
            (
                "metrics.sample.window.ms",
                self.metrics_sample_window_ms.to_string(),
            ),
            (
                "partition.assignment.strategy",
                self.partition_assignment_strategy
                    .iter()
                    .map(|a| a.class_name())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            (
                "receive.buffer.bytes",
                self.receive_buffer_bytes.to_string(),
            ),
            (
                "reconnect.backoff.max.ms",
                self.reconnect_backoff_max_ms.to_string(),
            ),
            (
                "reconnect.backoff.ms",
                self.reconnect_backoff_ms.to_string(),
            ),
            ("request.timeout.ms", self.request_timeout_ms.to_string()),
            (
                "retry.backoff.max.ms",
                self.retry_backoff_max_ms.to_string(),
            ),
            ("retry.backoff.ms", self.retry_backoff_ms.to_string()),
            ("send.buffer.bytes", self.send_buffer_bytes.to_string()),
            ("session.timeout.ms", self.session_timeout_ms.to_string()),
            (
                "socket.connection.setup.timeout.max.ms",
                self.socket_connection_setup_timeout_max_ms.to_string(),
            ),
            (
                "socket.connection.setup.timeout.ms",
                self.socket_connection_setup_timeout_ms.to_string(),
            ),
        ];
        pairs.push((
            "security.protocol",
            self.security.protocol.as_str().to_owned(),
        ));
        pairs.extend(self.security_pairs.iter().cloned());
        let optional = [
            ("group.id", &self.group_id),
            ("group.instance.id", &self.group_instance_id),
            ("group.remote.assignor", &self.group_remote_assignor),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                pairs.push((key, value.clone()));
            }
        }
        pairs.sort_unstable_by_key(|(key, _)| *key);
        pairs
    }

    fn from_resolver(
        r: &Resolver,
        custom_assignors: &[RegisteredAssignor],
    ) -> Result<Self, ConfigError> {
        let non_blank = |value: Option<String>| value.filter(|v| !v.is_empty());
        Ok(Self {
            bootstrap_servers: r.typed_list(
                "bootstrap.servers",
                false,
                values::normalize_address,
            )?,
            client_id: r.string("client.id")?.unwrap_or_default(),
            client_rack: r.string("client.rack")?.unwrap_or_default(),
            group_id: r.string("group.id")?,
            group_instance_id: r.typed("group.instance.id", |id| {
                values::is_valid_group_instance_id(id).then(|| id.to_owned())
            })?,
            group_protocol: r
                .typed("group.protocol", GroupProtocol::parse)?
                .unwrap_or_default(),
            group_remote_assignor: non_blank(r.string("group.remote.assignor")?),
            partition_assignment_strategy: r.typed_list(
                "partition.assignment.strategy",
                true,
                |name| {
                    Assignor::parse(name).or_else(|| {
                        custom_assignors
                            .iter()
                            .find(|a| a.name() == name)
                            .map(|a| Assignor::Custom(a.name()))
                    })
                },
            )?,
            session_timeout_ms: r.int("session.timeout.ms")?,
            heartbeat_interval_ms: r.int("heartbeat.interval.ms")?,
            max_poll_interval_ms: r.non_negative_int("max.poll.interval.ms")?,
            max_poll_records: r.non_negative_int("max.poll.records")?,
            enable_auto_commit: r.bool("enable.auto.commit")?,
            auto_commit_interval_ms: r.non_negative_int("auto.commit.interval.ms")?,
            auto_offset_reset: r
                .typed("auto.offset.reset", AutoOffsetReset::parse)?
                .unwrap_or_default(),
            isolation_level: r
                .typed("isolation.level", IsolationLevel::parse)?
                .unwrap_or_default(),
            fetch_min_bytes: r.non_negative_int("fetch.min.bytes")?,
            fetch_max_bytes: r.non_negative_int("fetch.max.bytes")?,
            max_partition_fetch_bytes: r.non_negative_int("max.partition.fetch.bytes")?,
            fetch_max_wait_ms: r.non_negative_int("fetch.max.wait.ms")?,
            check_crcs: r.bool("check.crcs")?,
            allow_auto_create_topics: r.bool("allow.auto.create.topics")?,
            exclude_internal_topics: r.bool("exclude.internal.topics")?,
            enable_metrics_push: r.bool("enable.metrics.push")?,
            request_timeout_ms: r.non_negative_int("request.timeout.ms")?,
            default_api_timeout_ms: r.non_negative_int("default.api.timeout.ms")?,
            retry_backoff_ms: r.non_negative_long("retry.backoff.ms")?,
            retry_backoff_max_ms: r.non_negative_long("retry.backoff.max.ms")?,
            reconnect_backoff_ms: r.non_negative_long("reconnect.backoff.ms")?,
            reconnect_backoff_max_ms: r.non_negative_long("reconnect.backoff.max.ms")?,
            socket_connection_setup_timeout_ms: r.long("socket.connection.setup.timeout.ms")?,
            socket_connection_setup_timeout_max_ms: r
                .long("socket.connection.setup.timeout.max.ms")?,
            metadata_max_age_ms: r.non_negative_long("metadata.max.age.ms")?,
            metadata_recovery_strategy: r
                .typed(
                    "metadata.recovery.strategy",
                    MetadataRecoveryStrategy::parse,
                )?
                .unwrap_or_default(),
            metadata_recovery_rebootstrap_trigger_ms: r
                .non_negative_long("metadata.recovery.rebootstrap.trigger.ms")?,
            connections_max_idle_ms: r.long("connections.max.idle.ms")?,
            metrics_num_samples: r.non_negative_int("metrics.num.samples")?,
            metrics_sample_window_ms: r.non_negative_long("metrics.sample.window.ms")?,
            send_buffer_bytes: r.int("send.buffer.bytes")?,
            receive_buffer_bytes: r.int("receive.buffer.bytes")?,
            security: SecurityConfig::default(),
            security_pairs: Vec::new(),
            secrets_set: Vec::new(),
            custom_assignors: Vec::new(),
        })
    }

    /// One line on what a Java consumer key is for, or `None` if the key is unknown. Covers
    /// every key accepted, including ignored ones.
    pub fn key_doc(key: &str) -> Option<&'static str> {
        keys::spec(key).map(|spec| spec.doc)
    }

    /// `bootstrap.servers`, each normalized to `host:port` (IPv6 hosts bracketed).
    pub fn bootstrap_servers(&self) -> &[String] {
        &self.bootstrap_servers
    }

    /// `client.id`; empty means the consumer should generate one, as Java does
    /// (`consumer-<group.id>-<group.instance.id or sequence number>`).
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// `client.rack`; empty means unknown.
    pub fn client_rack(&self) -> &str {
        &self.client_rack
    }

    /// `group.id`; `None` means no group: only `assign`, no committed offsets.
    pub fn group_id(&self) -> Option<&str> {
        self.group_id.as_deref()
    }

    /// `group.instance.id`: the static member id, if any.
    pub fn group_instance_id(&self) -> Option<&str> {
        self.group_instance_id.as_deref()
    }

    /// `group.remote.assignor`; `None` lets the broker choose.
    pub fn group_remote_assignor(&self) -> Option<&str> {
        self.group_remote_assignor.as_deref()
    }

    /// `security.protocol` with its resolved `ssl.*` and `sasl.*` settings.
    pub fn security(&self) -> &SecurityConfig {
        &self.security
    }

    /// `partition.assignment.strategy`, by preference.
    pub fn partition_assignment_strategy(&self) -> &[Assignor] {
        &self.partition_assignment_strategy
    }

    /// The assignors the application registered with
    /// [`ConsumerConfigBuilder::assignor`]; those named in `partition.assignment.strategy`
    /// take part in the group.
    pub fn custom_assignors(&self) -> &[RegisteredAssignor] {
        &self.custom_assignors
    }
}

/// Getters for the `Copy` fields, each documented with its key.
macro_rules! copy_getters {
    ($($key:literal $name:ident: $ty:ty;)*) => {
        impl ConsumerConfig {
            $(
                #[doc = concat!("`", $key, "`.")]
                pub fn $name(&self) -> $ty {
                    self.$name
                }
            )*
        }
    };
}

copy_getters! {
    "group.protocol" group_protocol: GroupProtocol;
    "session.timeout.ms" session_timeout_ms: i32;
    "heartbeat.interval.ms" heartbeat_interval_ms: i32;
    "max.poll.interval.ms" max_poll_interval_ms: u32;
    "max.poll.records" max_poll_records: u32;
    "enable.auto.commit (forced to false without a group.id, as in Java)" enable_auto_commit: bool;
    "auto.commit.interval.ms" auto_commit_interval_ms: u32;
    "auto.offset.reset" auto_offset_reset: AutoOffsetReset;
    "isolation.level" isolation_level: IsolationLevel;
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
    "reconnect.backoff.max.ms (pinned to reconnect.backoff.ms when only that is set, as in Java)" reconnect_backoff_max_ms: u64;
    "socket.connection.setup.timeout.ms" socket_connection_setup_timeout_ms: i64;
    "socket.connection.setup.timeout.max.ms" socket_connection_setup_timeout_max_ms: i64;
    "metadata.max.age.ms" metadata_max_age_ms: u64;
    "metadata.recovery.strategy" metadata_recovery_strategy: MetadataRecoveryStrategy;
    "metadata.recovery.rebootstrap.trigger.ms" metadata_recovery_rebootstrap_trigger_ms: u64;
    "connections.max.idle.ms (negative disables closing idle connections)" connections_max_idle_ms: i64;
    "metrics.num.samples" metrics_num_samples: u32;
    "metrics.sample.window.ms" metrics_sample_window_ms: u64;
    "send.buffer.bytes (-1: OS default)" send_buffer_bytes: i32;
    "receive.buffer.bytes (-1: OS default)" receive_buffer_bytes: i32;
}

/// Refuses a key that is not in the table: TLS/SASL families as unsupported, the rest as
/// unknown with the closest known key.
fn refuse_unknown(key: &str) -> ConfigError {
    match keys::UNSUPPORTED_PREFIXES
        .iter()
        .find(|(prefix, _)| key.starts_with(prefix))
    {
        Some((_, reason)) => ConfigError::Unsupported {
            key: key.to_owned(),
            reason,
        },
        None => ConfigError::UnknownKey {
            key: key.to_owned(),
            suggestion: keys::suggest(key),
        },
    }
}

/// Lists the effective configuration like Java's `ConsumerConfig values:` log line: every key
/// this client uses, sorted, `null` for unset optional ones.
impl fmt::Display for ConsumerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs = self.to_properties();
        writeln!(f, "ConsumerConfig values:")?;
        for spec in KEYS.iter().filter(|spec| spec.role == Role::Field) {
            let value = if self.secrets_set.contains(&spec.name) {
                "[hidden]"
            } else {
                pairs
                    .iter()
                    .find(|(key, _)| *key == spec.name)
                    .map_or("null", |(_, value)| value.as_str())
            };
            writeln!(f, "\t{} = {}", spec.name, parse::redacted(spec.name, value))?;
        }
        Ok(())
    }
}
