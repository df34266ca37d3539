//! Topic configs by Kafka's names: which exist, what values they take, and how a topic's
//! configs are described (DescribeConfigs) and changed (CreateTopics, AlterConfigs,
//! IncrementalAlterConfigs).
//!
//! A topic keeps the configs set on it (Kafka's dynamic topic configs, `ConfigRecord`s in the
//! metadata log) as normalized strings; everything else is the default in [`table`]. Values are
//! checked as Kafka's `LogConfig.validate` checks them (`ConfigDef` parsing and validators), with
//! its messages, so a bad value is INVALID_CONFIG with the words Kafka uses. Kafka's cross-field
//! checks (compaction lags, remote storage, local retention) are not made.
//!
//! What the simulator does with them: `message.timestamp.type` (LogAppendTime stamps batches),
//! `max.message.bytes` (the Produce size limit) and `cleanup.policy` (DeleteRecords refuses a
//! topic without `delete`). The others are stored and described but change nothing: there is no
//! retention, compaction, segment or flush in the simulator.

pub(crate) mod table;

use std::collections::BTreeMap;
use std::fmt;

pub(crate) use table::{BROKER_LOG_CONFIGS, TOPIC_CONFIGS};

/// Kafka's `ConfigDef.Type`, numbered as DescribeConfigs v3+ reports it (`ConfigType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// `BOOLEAN`.
    Boolean = 1,
    /// `STRING`.
    String = 2,
    /// `INT`.
    Int = 3,
    /// `SHORT`.
    Short = 4,
    /// `LONG`.
    Long = 5,
    /// `DOUBLE`.
    Double = 6,
    /// `LIST`.
    List = 7,
}

/// Where a described value comes from: Kafka's `ConfigSource` ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// Set on the topic (`DYNAMIC_TOPIC_CONFIG`).
    DynamicTopicConfig = 1,
    /// Set cluster-wide at run time (`DYNAMIC_DEFAULT_BROKER_CONFIG`).
    DynamicDefaultBrokerConfig = 3,
    /// The broker's `server.properties` (`STATIC_BROKER_CONFIG`).
    StaticBrokerConfig = 4,
    /// Kafka's default (`DEFAULT_CONFIG`).
    DefaultConfig = 5,
}

/// A value check, as Kafka's validators for topic configs make it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Check {
    /// Any value of the type.
    None,
    /// `Range.atLeast`.
    AtLeast(i64),
    /// `Range.between`.
    Between(i64, i64),
    /// `CompressionType`'s gzip level: 1 to 9, or -1.
    GzipLevel,
    /// `ValidString.in`: one of these, case-sensitive.
    OneOf(&'static [&'static str]),
    /// `ValidList.in`: each element one of these.
    EachOneOf(&'static [&'static str]),
    /// `Range.between(0, 1)` on a double.
    Ratio,
    /// `ThrottledReplicaListValidator`: `*` or `partition:broker` pairs.
    ThrottledReplicas,
}

/// One topic config.
#[derive(Debug)]
pub(crate) struct TopicConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The default, as DescribeConfigs prints it.
    pub default: &'static str,
    pub check: Check,
    /// The broker configs DescribeConfigs lists as synonyms when the topic does not set it.
    pub synonyms: &'static [(&'static str, &'static str, ConfigSource)],
}

/// A config Kafka would refuse: INVALID_CONFIG with this message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidConfig(pub String);

impl fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidConfig {}

/// The definition of topic config `name`, if Kafka has one.
pub(crate) fn definition(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Whether `name` is a LIST config (IncrementalAlterConfigs' APPEND and SUBTRACT need one).
pub fn is_list(name: &str) -> bool {
    definition(name).is_some_and(|d| d.kind == ConfigType::List)
}

/// Checks `value` for topic config `name` and returns it as Kafka describes it afterwards
/// (`ConfigDef.convertToString` of the parsed value: trimmed, `TRUE` → `true`, list elements
/// joined by `,`).
pub fn normalize(name: &str, value: &str) -> Result<String, InvalidConfig> {
    let def = definition(name)
        .ok_or_else(|| InvalidConfig(format!("Unknown topic config name: {name}")))?;
    let invalid = |shown: &str, why: &str| {
        InvalidConfig(format!(
            "Invalid value {shown} for configuration {name}: {why}"
        ))
    };
    let trimmed = value.trim();
    match def.kind {
        ConfigType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
            b @ ("true" | "false") => Ok(b.to_owned()),
            _ => Err(invalid(
                trimmed,
                "Expected value to be either true or false",
            )),
        },
        ConfigType::Int | ConfigType::Short | ConfigType::Long => {
            let number = match def.kind {
                ConfigType::Long => trimmed.parse::<i64>().ok(),
                ConfigType::Short => trimmed.parse::<i16>().ok().map(i64::from),
                _ => trimmed.parse::<i32>().ok().map(i64::from),
            };
            let type_name = match def.kind {
                ConfigType::Long => "LONG",
                ConfigType::Short => "SHORT",
                _ => "INT",
            };
            let number = number
                .ok_or_else(|| invalid(trimmed, &format!("Not a number of type {type_name}")))?;
            check_number(def.check, number).map_err(|why| invalid(&number.to_string(), &why))?;
            Ok(number.to_string())
        }
        ConfigType::Double => {
            let number = trimmed
                .parse::<f64>()
                .map_err(|_| invalid(trimmed, "Not a number of type DOUBLE"))?;
            let shown = java_double(number);
            if matches!(def.check, Check::Ratio) {
                if number < 0.0 {
                    return Err(invalid(&shown, "Value must be at least 0"));
                }
                if number > 1.0 {
                    return Err(invalid(&shown, "Value must be no more than 1"));
                }
            }
            Ok(shown)
        }
        ConfigType::String => match def.check {
            Check::OneOf(allowed) if !allowed.contains(&trimmed) => Err(invalid(
                trimmed,
                &format!("String must be one of: {}", allowed.join(", ")),
            )),
            _ => Ok(trimmed.to_owned()),
        },
        ConfigType::List => {
            // `ConfigDef.parseType`: empty is the empty list; otherwise split on commas with
            // the blanks around them, keeping empty elements.
            let elements: Vec<&str> = if trimmed.is_empty() {
                Vec::new()
            } else {
                trimmed.split(',').map(str::trim).collect()
            };
            match def.check {
                Check::EachOneOf(allowed) => {
                    if let Some(bad) = elements.iter().find(|e| !allowed.contains(e)) {
                        return Err(invalid(
                            bad,
                            &format!("String must be one of: {}", allowed.join(", ")),
                        ));
                    }
                }
                Check::ThrottledReplicas if !valid_throttled_replicas(&elements) => {
                    return Err(invalid(
                        &format!("[{}]", elements.join(", ")),
                        &format!(
                            "{name} must be the literal '*' or a list of replicas in the \
                             following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                        ),
                    ));
                }
                _ => {}
            }
            Ok(elements.join(","))
        }
    }
}

fn check_number(check: Check, number: i64) -> Result<(), String> {
    match check {
        Check::AtLeast(min) if number < min => Err(format!("Value must be at least {min}")),
        Check::Between(min, _) if number < min => Err(format!("Value must be at least {min}")),
        Check::Between(_, max) if number > max => Err(format!("Value must be no more than {max}")),
        Check::GzipLevel if number != -1 && !(1..=9).contains(&number) => {
            Err("Value must be between 1 and 9 or equal to -1".to_owned())
        }
        _ => Ok(()),
    }
}

/// `*` alone, or `partition:broker` pairs of digits.
fn valid_throttled_replicas(elements: &[&str]) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    elements == ["*"]
        || elements.iter().all(|e| {
            e.split_once(':')
                .is_some_and(|(partition, broker)| digits(partition) && digits(broker))
        })
}

/// Java's `Double.toString` for the values a ratio takes (`0.5`, `1.0`, `10.0`).
fn java_double(number: f64) -> String {
    if number.is_finite() && number.fract() == 0.0 && number.abs() < 1e7 {
        format!("{number:.1}")
    } else {
        number.to_string()
    }
}

/// One described config, as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    /// Its name.
    pub name: String,
    /// Its value (`None`: no value, described as null).
    pub value: Option<String>,
    /// Where the value comes from.
    pub source: ConfigSource,
    /// Not changeable at run time.
    pub read_only: bool,
    /// Its type.
    pub kind: ConfigType,
    /// Where else it is set, highest precedence first: (name, value, source).
    pub synonyms: Vec<(String, Option<String>, ConfigSource)>,
}

/// Every config of a topic whose own settings are `overrides` (`ConfigHelper`'s
/// `createTopicConfigEntry`): a set config comes from the topic, with the broker synonyms after
/// it; any other from its first synonym, or Kafka's default.
pub fn describe_topic(overrides: &BTreeMap<String, String>) -> Vec<DescribedConfig> {
    TOPIC_CONFIGS
        .iter()
        .map(|def| {
            let mut synonyms: Vec<(String, Option<String>, ConfigSource)> = def
                .synonyms
                .iter()
                .map(|(name, value, source)| {
                    ((*name).to_owned(), Some((*value).to_owned()), *source)
                })
                .collect();
            let value = match overrides.get(def.name) {
                Some(value) => {
                    synonyms.insert(
                        0,
                        (
                            def.name.to_owned(),
                            Some(value.clone()),
                            ConfigSource::DynamicTopicConfig,
                        ),
                    );
                    value.clone()
                }
                None => def.default.to_owned(),
            };
            DescribedConfig {
                name: def.name.to_owned(),
                value: Some(value),
                source: synonyms
                    .first()
                    .map_or(ConfigSource::DefaultConfig, |s| s.2),
                read_only: false,
                kind: def.kind,
                synonyms,
            }
        })
        .collect()
}

/// The effect of a topic's configs on what the simulator models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HonouredConfigs {
    /// `message.timestamp.type=LogAppendTime`.
    pub log_append_time: bool,
    /// `max.message.bytes`, if set on the topic.
    pub max_message_bytes: Option<usize>,
    /// `cleanup.policy` includes `delete` (DeleteRecords is allowed).
    pub delete_policy: bool,
}

/// What `overrides` (normalized values) change in the simulator.
pub fn honoured(overrides: &BTreeMap<String, String>) -> HonouredConfigs {
    HonouredConfigs {
        log_append_time: overrides
            .get("message.timestamp.type")
            .is_some_and(|v| v == "LogAppendTime"),
        max_message_bytes: overrides
            .get("max.message.bytes")
            .and_then(|v| v.parse().ok()),
        delete_policy: overrides
            .get("cleanup.policy")
            .is_none_or(|v| v.split(',').any(|p| p == "delete")),
    }
}

#[cfg(test)]
mod tests;
