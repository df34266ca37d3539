//! A broker's configs as DescribeConfigs reports them (`ConfigHelper.createBrokerConfigEntry`).
//!
//! The simulated broker has no `server.properties`; its settings are the [`ClusterConfig`]. A
//! setting that differs from Kafka's default is reported as a static broker config (what a line
//! in `server.properties` gives), with Kafka's default as its second synonym; one that equals
//! the default is reported as the default. `node.id` and `broker.id` are always static, as every
//! KRaft broker sets `node.id`. Defaults and read-only flags are Kafka 4.1.1's.
//!
//! [`ClusterConfig`]: crate::config::ClusterConfig

use kafka_protocol::error::ResponseError;

use super::config_resource::ApiError;
use crate::controller::ClusterState;
use crate::topic_config::{ConfigSource, ConfigType, DescribedConfig, BROKER_LOG_CONFIGS};

/// The configs of BROKER resource `name` on broker `node_id`: the cluster-wide dynamic defaults
/// for the empty name, this broker's configs for its id.
pub(crate) fn broker_entries(
    state: &ClusterState,
    node_id: i32,
    name: &str,
) -> Result<Vec<DescribedConfig>, ApiError> {
    if name.is_empty() {
        // `createBrokerConfigEntry(perBrokerConfig = false)`: only the dynamic defaults, each
        // with its dynamic-default synonym alone.
        return Ok(vec![min_insync_replicas(false)]);
    }
    // `ConfigHelper` words this check differently from the alter path.
    let id: i32 = name.parse().map_err(|_| {
        ApiError::new(
            ResponseError::InvalidRequest,
            format!("Broker id must be an integer, but it is: {name}"),
        )
    })?;
    if id != node_id {
        return Err(ApiError::new(
            ResponseError::InvalidRequest,
            format!(
                "Unexpected broker id, expected {node_id} or empty string, but received {name}"
            ),
        ));
    }
    let config = &state.config;
    let brokers = state.brokers.len();
    let rack = state.brokers.get(&node_id).and_then(|b| b.rack.clone());
    let id = node_id.to_string();
    let mut entries = vec![
        setting(
            "auto.create.topics.enable",
            ConfigType::Boolean,
            Some("true"),
            Some(config.auto_create_topics_enable.to_string()),
            true,
        ),
        setting(
            "broker.id",
            ConfigType::Int,
            Some("-1"),
            Some(id.clone()),
            true,
        ),
        setting("broker.rack", ConfigType::String, None, rack, true),
        setting(
            "default.replication.factor",
            ConfigType::Int,
            Some("1"),
            Some(config.default_replication_factor(brokers).to_string()),
            true,
        ),
        setting(
            "max.incremental.fetch.session.cache.slots",
            ConfigType::Int,
            Some("1000"),
            Some(config.fetch_session_cache_slots.to_string()),
            true,
        ),
        setting(
            "message.max.bytes",
            ConfigType::Int,
            Some("1048588"),
            Some(config.max_message_bytes.to_string()),
            false,
        ),
        min_insync_replicas(true),
        setting("node.id", ConfigType::Int, None, Some(id), true),
        setting(
            "num.partitions",
            ConfigType::Int,
            Some("1"),
            Some(config.num_partitions.to_string()),
            true,
        ),
        setting(
            "offsets.topic.num.partitions",
            ConfigType::Int,
            Some("50"),
            Some(config.offsets_partitions.to_string()),
            true,
        ),
        setting(
            "offsets.topic.replication.factor",
            ConfigType::Short,
            Some("3"),
            Some(config.offsets_replication_factor(brokers).to_string()),
            true,
        ),
    ];
    entries.extend(
        BROKER_LOG_CONFIGS
            .iter()
            .map(|(name, kind, default, read_only)| {
                setting(
                    name,
                    *kind,
                    *default,
                    default.map(str::to_owned),
                    *read_only,
                )
            }),
    );
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// A broker setting with value `value` where Kafka's default is `default`.
fn setting(
    name: &str,
    kind: ConfigType,
    default: Option<&str>,
    value: Option<String>,
    read_only: bool,
) -> DescribedConfig {
    let mut synonyms = Vec::new();
    let is_default = value.as_deref() == default;
    if !is_default || (name == "node.id" || name == "broker.id") {
        synonyms.push((
            name.to_owned(),
            value.clone(),
            ConfigSource::StaticBrokerConfig,
        ));
    }
    if let Some(default) = default {
        synonyms.push((
            name.to_owned(),
            Some(default.to_owned()),
            ConfigSource::DefaultConfig,
        ));
    }
    DescribedConfig {
        name: name.to_owned(),
        value,
        source: synonyms
            .first()
            .map_or(ConfigSource::DefaultConfig, |s| s.2),
        read_only,
        kind,
        synonyms,
    }
}

/// The cluster-wide `min.insync.replicas=1` a Kafka 4.x KRaft cluster is formatted with;
/// `per_broker` adds the default behind it.
fn min_insync_replicas(per_broker: bool) -> DescribedConfig {
    let mut synonyms = vec![(
        "min.insync.replicas".to_owned(),
        Some("1".to_owned()),
        ConfigSource::DynamicDefaultBrokerConfig,
    )];
    if per_broker {
        synonyms.push((
            "min.insync.replicas".to_owned(),
            Some("1".to_owned()),
            ConfigSource::DefaultConfig,
        ));
    }
    DescribedConfig {
        name: "min.insync.replicas".to_owned(),
        value: Some("1".to_owned()),
        source: ConfigSource::DynamicDefaultBrokerConfig,
        read_only: false,
        kind: ConfigType::Int,
        synonyms,
    }
}
