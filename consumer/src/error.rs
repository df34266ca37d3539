//! The consumer's one error type.
//!
//! Every variant says what kind of failure it is so callers can decide without string matching:
//! retry ([`Error::is_retriable`]), give up (fatal, fenced, authorization), or fix the call
//! (invalid argument, illegal state). Broker error codes are kept where there is one.

use std::sync::Arc;

use crate::config::ConfigError;
pub use crate::error_code::ErrorCode;
pub use crate::network::{CloseReason, NetworkError};
pub use crate::protocol::versions::{ApiVersionRange, ApiVersionsError};
use crate::protocol::ResponseError;
pub use crate::protocol::{Api, ProtocolError, UnsupportedApi};
use crate::records::RecordsError;
use crate::types::TopicPartition;

/// `Result` with the consumer's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a consumer call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A transient broker or cluster condition; the same call may succeed later.
    #[error("retriable error{}: {message}", code_suffix(.code))]
    Retriable {
        /// The broker's error code, if the broker sent one.
        code: Option<ErrorCode>,
        /// What happened.
        message: String,
    },
    /// The consumer cannot continue (e.g. an unexpected broker error, an unsupported API).
    #[error("fatal error{}: {message}", code_suffix(.code))]
    Fatal {
        /// The broker's error code, if any.
        code: Option<ErrorCode>,
        /// What happened.
        message: String,
    },
    /// Another instance took over this consumer's identity (e.g. FENCED_INSTANCE_ID).
    #[error("fenced{}: {message}", code_suffix(.code))]
    Fenced {
        /// The broker's error code.
        code: Option<ErrorCode>,
        /// What happened.
        message: String,
    },
    /// Not authorized for the group or for topics.
    #[error("not authorized ({code}): {message}")]
    Authorization {
        /// GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, ...
        code: ErrorCode,
        /// What was refused.
        message: String,
    },
    /// The operation did not complete before its deadline.
    #[error("{operation} timed out after {timeout_ms} ms")]
    Timeout {
        /// The operation, e.g. `commit_sync`.
        operation: &'static str,
        /// The time it was given.
        timeout_ms: u64,
    },
    /// [`WakeupHandle::wakeup`](crate::consumer::WakeupHandle::wakeup) interrupted the call.
    #[error("woken up")]
    Wakeup,
    /// The commit cannot succeed by retrying (the group moved on, or closing without a
    /// coordinator).
    #[error("commit failed{}: {message}", code_suffix(.code))]
    CommitFailed {
        /// The broker's error code, if any.
        code: Option<ErrorCode>,
        /// Why.
        message: String,
    },
    /// The group is rebalancing; complete it with `poll` and retry.
    #[error("rebalance in progress: {message}")]
    RebalanceInProgress {
        /// Details.
        message: String,
    },
    /// A rebalance listener method failed or panicked; the rebalance went on regardless.
    #[error("rebalance listener {callback} failed: {message}")]
    RebalanceCallback {
        /// `on_partitions_revoked`, `on_partitions_assigned` or `on_partitions_lost`.
        callback: &'static str,
        /// The callback's error, or its panic message.
        message: String,
    },
    /// Topic names Kafka does not allow (Java's `InvalidTopicException`): refused when the
    /// application names them (`subscribe`, `assign`), or reported by a broker's Metadata
    /// (INVALID_TOPIC_EXCEPTION) for topics the consumer needs or `partitions_for` asked about.
    #[error("invalid topics [{}]: {reason}", .topics.join(", "))]
    InvalidTopic {
        /// The topics, as the application or the broker named them.
        topics: Vec<String>,
        /// What is wrong with them.
        reason: String,
    },
    /// An argument is invalid (negative offset, empty topic name, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The call is not valid in the consumer's current state (poll without assignment, commit of
    /// an unassigned partition, use after close, ...).
    #[error("illegal state: {0}")]
    IllegalState(String),
    /// Partitions have no valid position and `auto.offset.reset` is `none`.
    #[error("no offset for partitions {} and auto.offset.reset is none", list(.partitions))]
    NoOffsetForPartition {
        /// The partitions.
        partitions: Vec<TopicPartition>,
    },
    /// A fetch position is out of range and `auto.offset.reset` is `none`.
    #[error("offsets out of range with no reset policy: {}", list_offsets(.offsets))]
    OffsetOutOfRange {
        /// The partitions and their out-of-range positions.
        offsets: Vec<(TopicPartition, i64)>,
    },
    /// The log was truncated below the consumer's position (KIP-320) and `auto.offset.reset` is
    /// `none`.
    #[error("log truncation detected: {}", list_offsets(.divergent_offsets))]
    LogTruncation {
        /// The partitions and the end offset of the last epoch the leader shares with us.
        divergent_offsets: Vec<(TopicPartition, i64)>,
    },
    /// Fetched data could not be read (corrupt CRC, bad compression, ...).
    #[error(transparent)]
    Records(#[from] RecordsError),
    /// A network failure that outlived every retry.
    #[error(transparent)]
    Network(#[from] NetworkError),
    /// The consumer is closed (or its background task has stopped).
    #[error("the consumer is closed")]
    Closed,
    /// The background task failed: a bug, reported rather than hidden.
    #[error("background task failed: {0}")]
    Internal(Arc<str>),
    /// A broker refused our credentials (SASL), or TLS failed to verify the broker (untrusted
    /// CA, host name mismatch) or the broker refused our certificate. Not retriable: fix the
    /// configuration. Java's `AuthenticationException` family.
    #[error("authentication with {broker} using {mechanism} failed{}: {message}", code_suffix(.code))]
    Authentication {
        /// The broker, e.g. `node -1 (localhost:9093)`.
        broker: String,
        /// `SSL`, or the SASL mechanism as `SASL/<name>`.
        mechanism: String,
        /// The broker's error code, when it sent one (SASL_AUTHENTICATION_FAILED, …).
        code: Option<ErrorCode>,
        /// What failed; never a credential.
        message: String,
    },
    /// The configuration is invalid (Java's `ConfigException`): a key unknown or unsupported,
    /// a value of the wrong type or out of range, keys that exclude each other. Converts from
    /// [`ConfigError`], so a function returning this crate's `Result` can build its
    /// configuration with `?`.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl Error {
    /// Whether retrying the same call may succeed.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Retriable { .. } | Self::Timeout { .. } | Self::RebalanceInProgress { .. } => {
                true
            }
            Self::Network(error) => error.is_retriable(),
            _ => false,
        }
    }

    /// The broker's error code behind this error, if there is one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Retriable { code, .. }
            | Self::Fatal { code, .. }
            | Self::Fenced { code, .. }
            | Self::CommitFailed { code, .. } => *code,
            Self::Authorization { code, .. } => Some(*code),
            Self::InvalidTopic { .. } => Some(ErrorCode::INVALID_TOPIC_EXCEPTION),
            Self::Authentication { code, .. } => *code,
            _ => None,
        }
    }

    /// Classifies a broker error code the way Kafka's exception hierarchy does.
    pub(crate) fn from_code(code: ResponseError, message: impl Into<String>) -> Self {
        let message = message.into();
        let wire = ErrorCode::of(code);
        match code {
            ResponseError::GroupAuthorizationFailed
            | ResponseError::TopicAuthorizationFailed
            | ResponseError::ClusterAuthorizationFailed
            | ResponseError::TransactionalIdAuthorizationFailed => Self::Authorization {
                code: wire,
                message,
            },
            ResponseError::FencedInstanceId => Self::Fenced {
                code: Some(wire),
                message,
            },
            ResponseError::RebalanceInProgress => Self::RebalanceInProgress { message },
            code if code.is_retriable() => Self::Retriable {
                code: Some(wire),
                message,
            },
            _ => Self::Fatal {
                code: Some(wire),
                message,
            },
        }
    }
}

impl Error {
    /// The typed error for a network error: authentication failures become
    /// [`Error::Authentication`], the rest stay [`Error::Network`].
    pub(crate) fn from_network(error: NetworkError) -> Self {
        match error {
            NetworkError::Authentication {
                broker,
                mechanism,
                code,
                message,
            } => Self::Authentication {
                broker,
                mechanism,
                code,
                message,
            },
            other => Self::Network(other),
        }
    }
}

/// The message of a caught panic (`panic!` with a literal or a formatted message).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

fn code_suffix(code: &Option<ErrorCode>) -> String {
    code.map(|c| format!(" ({c})")).unwrap_or_default()
}

fn list(partitions: &[TopicPartition]) -> String {
    partitions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_offsets(offsets: &[(TopicPartition, i64)]) -> String {
    offsets
        .iter()
        .map(|(tp, offset)| format!("{tp} at {offset}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_classified_like_kafka() {
        let e = Error::from_code(ResponseError::NotCoordinator, "x");
        assert!(e.is_retriable());
        assert_eq!(e.code(), Some(ErrorCode::NOT_COORDINATOR));
        let e = Error::from_code(ResponseError::GroupAuthorizationFailed, "g");
        assert!(matches!(e, Error::Authorization { .. }));
        assert!(!e.is_retriable());
        let e = Error::from_code(ResponseError::FencedInstanceId, "f");
        assert!(matches!(e, Error::Fenced { .. }));
        let e = Error::from_code(ResponseError::InvalidCommitOffsetSize, "c");
        assert!(matches!(e, Error::Fatal { .. }));
        assert!(!e.is_retriable());
        assert!(Error::Timeout {
            operation: "poll",
            timeout_ms: 1
        }
        .is_retriable());
        assert!(!Error::Wakeup.is_retriable());
    }

    #[test]
    fn authentication_failures_are_typed_and_final() {
        let e = Error::from_network(NetworkError::Authentication {
            broker: "node -1 (localhost:9094)".into(),
            mechanism: "SASL/SCRAM-SHA-512".into(),
            code: Some(ErrorCode::SASL_AUTHENTICATION_FAILED),
            message: "Authentication failed during authentication due to invalid credentials"
                .into(),
        });
        assert!(matches!(e, Error::Authentication { .. }));
        assert!(!e.is_retriable());
        assert_eq!(e.code(), Some(ErrorCode::SASL_AUTHENTICATION_FAILED));
        let text = e.to_string();
        assert!(
            text.contains("node -1 (localhost:9094)") && text.contains("SASL/SCRAM-SHA-512"),
            "{text}"
        );
        let other = Error::from_network(NetworkError::NoNodeAvailable);
        assert!(matches!(
            other,
            Error::Network(NetworkError::NoNodeAvailable)
        ));
    }

    #[test]
    fn messages_name_partitions() {
        let e = Error::NoOffsetForPartition {
            partitions: vec![TopicPartition::new("t", 0), TopicPartition::new("t", 1)],
        };
        assert_eq!(
            e.to_string(),
            "no offset for partitions t-0, t-1 and auto.offset.reset is none"
        );
    }
}
