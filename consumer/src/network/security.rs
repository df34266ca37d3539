//! How connections to brokers are secured: Kafka's `security.protocol` and the TLS and SASL
//! settings it turns on.

use std::fmt;

use super::sasl::SaslConfig;
use super::tls::TlsConfig;

/// `security.protocol`: whether connections use TLS, SASL, both or neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SecurityProtocol {
    /// Plain TCP, no authentication.
    #[default]
    Plaintext,
    /// TLS (server verification, optionally a client certificate).
    Ssl,
    /// SASL authentication over plain TCP.
    SaslPlaintext,
    /// SASL authentication inside TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name for the protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl => "SSL",
            Self::SaslPlaintext => "SASL_PLAINTEXT",
            Self::SaslSsl => "SASL_SSL",
        }
    }

    /// Parses Kafka's name, case-insensitively (Java upper-cases it).
    pub fn parse(value: &str) -> Option<Self> {
        [
            Self::Plaintext,
            Self::Ssl,
            Self::SaslPlaintext,
            Self::SaslSsl,
        ]
        .into_iter()
        .find(|p| p.as_str().eq_ignore_ascii_case(value))
    }

    /// Whether connections start with a TLS handshake.
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    /// Whether connections authenticate with SASL after ApiVersions.
    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything needed to secure a connection. `tls` is used when the protocol says TLS, `sasl`
/// when it says SASL (it must then be set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecurityConfig {
    /// `security.protocol`.
    pub protocol: SecurityProtocol,
    /// The `ssl.*` settings.
    pub tls: TlsConfig,
    /// The `sasl.*` settings.
    pub sasl: Option<SaslConfig>,
}
