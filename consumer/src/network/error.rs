//! Network errors: what failed, against which broker, and whether retrying can help.

use std::io;
use std::sync::Arc;

use super::tls::TlsSetupError;
use crate::protocol::versions::ApiVersionsError;
use crate::protocol::{Api, ProtocolError, UnsupportedApi};

/// Why a request failed at the network layer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NetworkError {
    /// The TCP connection could not be established.
    #[error("cannot connect to {broker}: {source}")]
    ConnectFailed {
        /// The broker, e.g. `node 1 (10.0.0.1:9092)`.
        broker: String,
        /// The OS error.
        #[source]
        source: Arc<io::Error>,
    },
    /// Connection setup took longer than `socket_connection_setup_timeout_ms`.
    #[error("connecting to {broker} timed out after {timeout_ms} ms")]
    ConnectTimedOut {
        /// The broker.
        broker: String,
        /// The limit that expired.
        timeout_ms: u64,
    },
    /// The ApiVersions handshake on a new connection failed.
    #[error("ApiVersions handshake with {broker} failed: {source}")]
    ApiVersions {
        /// The broker.
        broker: String,
        /// What the broker said.
        #[source]
        source: ApiVersionsError,
    },
    /// The connection closed (or was closed by us) before this request was answered.
    #[error("connection to {broker} closed: {reason}")]
    ConnectionClosed {
        /// The broker.
        broker: String,
        /// Why it closed.
        reason: CloseReason,
    },
    /// No response within the request's timeout (`request_timeout_ms`). If the request had been
    /// written, the connection was closed too, as its stream state is unknown.
    #[error("{api} request to {broker} timed out after {timeout_ms} ms")]
    RequestTimedOut {
        /// The request's API.
        api: Api,
        /// The broker.
        broker: String,
        /// The timeout that expired.
        timeout_ms: u64,
    },
    /// The broker supports no version of this API that we support (or of the pinned version).
    #[error("{broker}: {source}")]
    UnsupportedApi {
        /// The broker.
        broker: String,
        /// The API and both version ranges.
        #[source]
        source: UnsupportedApi,
    },
    /// The broker's response to this request was malformed; the connection was closed.
    #[error("protocol error from {broker}: {source}")]
    Protocol {
        /// The broker.
        broker: String,
        /// What was wrong.
        #[source]
        source: ProtocolError,
    },
    /// The request could not be encoded at the negotiated version.
    #[error("request to {broker} not sent: {source}")]
    Encode {
        /// The broker.
        broker: String,
        /// Why encoding failed.
        #[source]
        source: ProtocolError,
    },
    /// There is no broker to send to (no metadata and no bootstrap servers).
    #[error("no broker is available")]
    NoNodeAvailable,
    /// The target node id is neither a bootstrap node nor in the metadata.
    #[error("unknown broker node {node_id}")]
    UnknownNode {
        /// The requested node id.
        node_id: i32,
    },
    /// Too many requests are waiting for this broker's connection.
    #[error("{limit} requests already queued for {broker}")]
    QueueFull {
        /// The broker.
        broker: String,
        /// `max_queued_requests_per_node`.
        limit: usize,
    },
    /// The broker refused our credentials, or TLS could not verify the broker (untrusted CA,
    /// wrong host name) or the broker refused our certificate. Not retriable: the same
    /// credentials will fail again, so the node fails requests at once until its reconnect
    /// backoff ends instead of reconnecting in a loop.
    #[error("authentication with {broker} using {mechanism} failed: {message}")]
    Authentication {
        /// The broker.
        broker: String,
        /// `SSL` for TLS failures, else the SASL mechanism, e.g. `SASL/SCRAM-SHA-512`.
        mechanism: String,
        /// The broker's error code, when it sent one (SASL_AUTHENTICATION_FAILED,
        /// ILLEGAL_SASL_STATE, UNSUPPORTED_SASL_MECHANISM).
        code: Option<crate::error::ErrorCode>,
        /// What failed; never contains a credential.
        message: String,
    },
    /// The TLS settings cannot be used (a certificate that does not parse, a key that does not
    /// match its certificate).
    #[error("TLS configuration: {0}")]
    TlsSetup(#[from] TlsSetupError),
    /// A configured address is not `host:port`.
    #[error("invalid broker address {address:?}: {reason}")]
    InvalidAddress {
        /// The address as configured.
        address: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl NetworkError {
    /// Whether the same request may succeed if retried (after a backoff, possibly on another
    /// connection). Follows Kafka's split: connectivity and timeouts are retriable; version
    /// mismatches and our own encoding or configuration errors are not.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::ConnectFailed { .. }
            | Self::ConnectTimedOut { .. }
            | Self::RequestTimedOut { .. }
            | Self::Protocol { .. }
            | Self::NoNodeAvailable
            | Self::UnknownNode { .. }
            | Self::QueueFull { .. } => true,
            Self::ConnectionClosed { reason, .. } => {
                !matches!(reason, CloseReason::Shutdown | CloseReason::Tls { .. })
            }
            Self::ApiVersions { source, .. } => match source {
                ApiVersionsError::Broker { error, .. } => error.is_retriable(),
                ApiVersionsError::Unsupported(_) => false,
            },
            Self::UnsupportedApi { .. }
            | Self::Encode { .. }
            | Self::InvalidAddress { .. }
            | Self::Authentication { .. }
            | Self::TlsSetup(_) => false,
        }
    }
}

/// Why a connection closed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CloseReason {
    /// The broker closed the stream between frames.
    #[error("the broker closed the connection")]
    PeerClosed,
    /// A read or write failed.
    #[error("I/O error ({kind:?}): {message}")]
    Io {
        /// The error's kind.
        kind: io::ErrorKind,
        /// The error's text.
        message: String,
    },
    /// The broker sent something we cannot read; the stream cannot be trusted after it.
    #[error(transparent)]
    Protocol(ProtocolError),
    /// A written request got no answer in time; Kafka closes the connection then too.
    #[error("{api} request (correlation id {correlation_id}) timed out after {timeout_ms} ms")]
    RequestTimedOut {
        /// The timed-out request's API.
        api: Api,
        /// Its correlation id.
        correlation_id: i32,
        /// Its timeout.
        timeout_ms: u64,
    },
    /// TLS failed on an established connection (e.g. the broker's alert that it requires a
    /// client certificate arrives after a TLS 1.3 handshake completes on our side).
    #[error("TLS error: {message}")]
    Tls {
        /// rustls's description.
        message: String,
    },
    /// KIP-368 re-authentication of an established connection failed; a reconnect
    /// authenticates afresh.
    #[error("re-authentication failed: {message}")]
    Reauthentication {
        /// Why.
        message: String,
    },
    /// The client stopped using this broker (shutdown or a new address for the node).
    #[error("the client shut the connection down")]
    Shutdown,
    /// No traffic for `connections.max.idle.ms`; the next request reconnects.
    #[error("idle for {idle_ms} ms (connections.max.idle.ms)")]
    Idle {
        /// The idle limit.
        idle_ms: u64,
    },
}

impl CloseReason {
    pub(crate) fn io(error: &io::Error) -> Self {
        if let Some(tls) = super::tls::tls_error(error) {
            return Self::Tls {
                message: tls.to_string(),
            };
        }
        Self::Io {
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retriability_follows_kafka() {
        let closed = NetworkError::ConnectionClosed {
            broker: "node 1 (h:1)".into(),
            reason: CloseReason::PeerClosed,
        };
        assert!(closed.is_retriable());
        assert_eq!(
            closed.to_string(),
            "connection to node 1 (h:1) closed: the broker closed the connection"
        );
        let unsupported = NetworkError::UnsupportedApi {
            broker: "node 1 (h:1)".into(),
            source: UnsupportedApi {
                api: Api(1),
                ours: crate::protocol::versions::ApiVersionRange { min: 4, max: 18 },
                broker: None,
            },
        };
        assert!(!unsupported.is_retriable());
        assert!(unsupported.to_string().contains("Fetch"));
        let shutdown = NetworkError::ConnectionClosed {
            broker: "b".into(),
            reason: CloseReason::Shutdown,
        };
        assert!(!shutdown.is_retriable());
    }
}
