//! Checks that involve more than one key, each following a named piece of Java 4.x.

use super::error::{ConfigError, ConfigWarning};
use super::keys::{self, DefaultValue, Role, KEYS};
use super::parse::Resolver;
use super::values::GroupProtocol;
use super::ConsumerConfig;

/// Keys refused when explicitly set (non-blank) under each protocol: Java 4.x
/// `ConsumerConfig.CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS` and
/// `CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`, checked by `checkUnsupportedConfigsPostProcess`.
/// `share.acknowledgement.mode` is in both: it belongs to share consumers.
pub(crate) fn not_for_protocol(protocol: GroupProtocol) -> &'static [&'static str] {
    match protocol {
        GroupProtocol::Classic => &["group.remote.assignor", "share.acknowledgement.mode"],
        GroupProtocol::Consumer => &[
            "partition.assignment.strategy",
            "heartbeat.interval.ms",
            "session.timeout.ms",
            "share.acknowledgement.mode",
        ],
    }
}

/// Checks the keys that have no field (default-only and ignored ones) and returns a warning
/// for each ignored key the user set.
pub(crate) fn check_unstored_keys(resolver: &Resolver) -> Result<Vec<ConfigWarning>, ConfigError> {
    let mut warnings = Vec::new();
    for spec in KEYS {
        match spec.role {
            Role::Field => {}
            Role::OnlyDefault(reason) => {
                let chosen = resolver.check(spec)?;
                let default = match spec.default {
                    DefaultValue::Value(value) => Some(value),
                    DefaultValue::Null | DefaultValue::Required => None,
                };
                if chosen != default {
                    return Err(ConfigError::Unsupported {
                        key: spec.name.to_owned(),
                        reason,
                    });
                }
            }
            Role::Ignored(reason) => {
                resolver.check(spec)?;
                if resolver.is_supplied(spec.name) {
                    warnings.push(ConfigWarning::Ignored {
                        key: spec.name,
                        reason,
                    });
                }
            }
        }
    }
    Ok(warnings)
}

/// Java's `ConsumerConfig.postProcessParsedConfig` and the group checks of the consumer
/// constructors, in Java's order. May adjust `config` where Java does.
pub(crate) fn cross_checks(
    resolver: &Resolver,
    config: &mut ConsumerConfig,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<(), ConfigError> {
    // CommonClientConfigs.warnDisablingExponentialBackoff: a warning, not an error.
    let pairs = [
        (
            "retry.backoff.ms",
            config.retry_backoff_ms as i64,
            "retry.backoff.max.ms",
            config.retry_backoff_max_ms as i64,
        ),
        (
            "socket.connection.setup.timeout.ms",
            config.socket_connection_setup_timeout_ms,
            "socket.connection.setup.timeout.max.ms",
            config.socket_connection_setup_timeout_max_ms,
        ),
    ];
    for (key, value, max_key, max_value) in pairs {
        if value > max_value {
            warnings.push(ConfigWarning::BaseAboveMax {
                key,
                value,
                max_key,
                max_value,
            });
        }
    }

    // CommonClientConfigs.postProcessReconnectBackoffConfigs: an explicit base without an
    // explicit maximum pins the maximum to the base.
    if resolver.is_supplied("reconnect.backoff.ms")
        && !resolver.is_supplied("reconnect.backoff.max.ms")
    {
        config.reconnect_backoff_max_ms = config.reconnect_backoff_ms;
        warnings.push(ConfigWarning::ReconnectBackoffNotExponential {
            backoff_ms: config.reconnect_backoff_ms,
        });
    }

    // ConsumerConfig.maybeOverrideEnableAutoCommit: without a group, auto-commit defaults to
    // off, and asking for it explicitly is an error.
    if config.group_id.is_none() {
        if !resolver.is_supplied("enable.auto.commit") {
            config.enable_auto_commit = false;
        } else if config.enable_auto_commit {
            return Err(ConfigError::AutoCommitWithoutGroupId);
        }
    }

    // ConsumerConfig.checkUnsupportedConfigsPostProcess.
    let refused: Vec<&'static str> = not_for_protocol(config.group_protocol)
        .iter()
        .copied()
        .filter(|key| resolver.is_set_non_blank(key))
        .collect();
    if !refused.is_empty() {
        return Err(ConfigError::NotForGroupProtocol {
            keys: refused,
            protocol: config.group_protocol,
        });
    }

    // ClassicKafkaConsumer and AsyncKafkaConsumer constructors: InvalidGroupIdException
    // "The configured group.id should not be an empty string or whitespace."
    if config.group_id.as_deref() == Some("") {
        let spec = keys::spec("group.id").expect("group.id is in the table");
        return Err(super::parse::invalid(
            spec,
            "",
            "a non-blank group id (leave group.id unset to consume without a group)",
        ));
    }
    Ok(())
}
