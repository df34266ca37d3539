//! What can go wrong building a [`ConsumerConfig`](super::ConsumerConfig), and what is only
//! worth a warning.
//!
//! Errors name the key, the offending value and what was expected, like Java's
//! `ConfigException`, except that the value of a secret key is never shown.

use std::fmt;

use super::values::GroupProtocol;

/// A configuration that cannot be used: the consumer refuses to start with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The key is not a consumer configuration (Java only logs these; we refuse them so a
    /// typo cannot silently leave a default in place).
    #[error("unknown configuration key `{key}`{}", Suggestion(*.suggestion))]
    UnknownKey {
        /// The key as given.
        key: String,
        /// The closest known key, if one is close enough to be a likely typo.
        suggestion: Option<&'static str>,
    },
    /// A key without a default was not given.
    #[error("missing required configuration `{key}`, which has no default value")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// The value does not parse or is out of the range Java's validator allows.
    #[error("invalid value {value} for configuration `{key}`: {expected}")]
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value as given, quoted, or `[hidden]` for secret keys.
        value: String,
        /// What a valid value looks like.
        expected: String,
    },
    /// A Java feature this client does not implement (JKS stores, GSSAPI, …).
    #[error("configuration `{key}` is not supported yet: {reason}")]
    Unsupported {
        /// The key as given.
        key: String,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// Keys the chosen group protocol does not use, explicitly set (Java 4.x's
    /// `checkUnsupportedConfigsPostProcess` throws for these).
    #[error("{} cannot be set when group.protocol={}", .keys.join(", "), .protocol.java_name())]
    NotForGroupProtocol {
        /// The offending keys, in Java's order.
        keys: Vec<&'static str>,
        /// The protocol in force.
        protocol: GroupProtocol,
    },
    /// Auto-commit needs a group to commit to.
    #[error("enable.auto.commit cannot be set to true when default group id (null) is used")]
    AutoCommitWithoutGroupId,
    /// The `.properties` text is malformed.
    #[error("properties line {line}: {message}")]
    Properties {
        /// 1-based line number of the logical line's start.
        line: usize,
        /// What is wrong.
        message: &'static str,
    },
    /// A properties file could not be read.
    #[error("cannot read properties file {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error, as text (so the error stays `Clone` and `Eq`).
        message: String,
    },
}

struct Suggestion(Option<&'static str>);

impl fmt::Display for Suggestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(key) => write!(f, " (did you mean `{key}`?)"),
            None => Ok(()),
        }
    }
}

/// A configuration that works, but not as its author may think. Returned as data by
/// [`ConsumerConfig::parse`](super::ConsumerConfig::parse) and also logged with
/// `tracing::warn!`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// A Java key this client accepts (its value is checked as Java would) but has no use for.
    Ignored {
        /// The key.
        key: &'static str,
        /// Why it has no effect here.
        reason: &'static str,
    },
    /// `reconnect.backoff.ms` was set without `reconnect.backoff.max.ms`, so the maximum is
    /// set to the same value and reconnect backoff stops growing (Java's
    /// `postProcessReconnectBackoffConfigs`).
    ReconnectBackoffNotExponential {
        /// The value now used for both.
        backoff_ms: u64,
    },
    /// A base value exceeds its maximum, so the maximum is applied as a static value (Java's
    /// `warnDisablingExponentialBackoff`).
    BaseAboveMax {
        /// The base key, e.g. `retry.backoff.ms`.
        key: &'static str,
        /// Its value.
        value: i64,
        /// The maximum key, e.g. `retry.backoff.max.ms`.
        max_key: &'static str,
        /// Its value, which will be applied.
        max_value: i64,
    },
    /// `ssl.endpoint.identification.algorithm` is empty: the broker's certificate is checked
    /// against the trusted CAs but not against its host name, so any certificate from those
    /// CAs is accepted.
    HostnameVerificationDisabled,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ignored { key, reason } => {
                write!(f, "configuration `{key}` is ignored: {reason}")
            }
            Self::ReconnectBackoffNotExponential { backoff_ms } => write!(
                f,
                "disabling exponential reconnect backoff because reconnect.backoff.ms is set \
                 but reconnect.backoff.max.ms is not; both are {backoff_ms}"
            ),
            Self::HostnameVerificationDisabled => write!(
                f,
                "ssl.endpoint.identification.algorithm is empty: broker host names are not \
                 verified, so any certificate signed by a trusted CA is accepted"
            ),
            Self::BaseAboveMax {
                key,
                value,
                max_key,
                max_value,
            } => write!(
                f,
                "configuration `{key}` with value {value} is greater than `{max_key}` with value \
                 {max_value}; a static value of {max_value} will be applied"
            ),
        }
    }
}
