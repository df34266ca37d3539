//! SASL authentication, as Kafka's `SaslClientAuthenticator` does it: after ApiVersions, a
//! SaslHandshake names the mechanism, then SaslAuthenticate requests carry the mechanism's
//! messages until it completes.
//!
//! Each mechanism is a sans-IO state machine ([`SaslClient`]): it is given the server's bytes
//! and answers with the next message, so it is unit-tested without a broker (SCRAM against the
//! RFC 7677 test vector). `Connection::authenticate` is the thin I/O shell.

mod oauthbearer;
/// Absent under `--cfg madsim`: real HTTP on an OS thread cannot run in the simulation.
#[cfg(all(feature = "oidc", not(madsim)))]
mod oidc;
mod plain;
mod scram;

use std::fmt;
use std::sync::Arc;

use zeroize::Zeroizing;

pub(crate) use oauthbearer::OAuthBearerClient;
pub use oauthbearer::{OAuthBearerToken, TokenProvider, UnsecuredJwtProvider};
#[cfg(all(feature = "oidc", not(madsim)))]
pub use oidc::{
    OidcError, OidcTokenProvider, OidcTokenProviderBuilder, RefreshConfig, ALLOWED_URLS_ENV,
    ALLOWED_URLS_PROPERTY, LOGIN_CALLBACK_HANDLER_CLASSES,
};
pub(crate) use plain::PlainClient;
pub(crate) use scram::{ScramClient, ScramHash};

use super::secret::Secret;
use crate::rt::SeededRng;

/// `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616): the password is sent as is; use it inside TLS.
    Plain,
    /// `SCRAM-SHA-256` (RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628, KIP-255).
    OAuthBearer,
}

impl SaslMechanism {
    /// Kafka's (IANA's) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Parses the name (exact, as Java compares it).
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Plain,
            Self::ScramSha256,
            Self::ScramSha512,
            Self::OAuthBearer,
        ]
        .into_iter()
        .find(|m| m.as_str() == name)
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the client authenticates with.
#[derive(Clone)]
pub enum SaslCredentials {
    /// PLAIN and SCRAM: a user name and password (Java's `username`/`password` JAAS options).
    Password {
        /// The user name.
        username: String,
        /// The password.
        password: Secret,
    },
    /// OAUTHBEARER: tokens from a provider, asked on every new connection.
    Token(Arc<dyn TokenProvider>),
}

impl fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Password { username, password } => f
                .debug_struct("Password")
                .field("username", username)
                .field("password", password)
                .finish(),
            Self::Token(provider) => f.debug_tuple("Token").field(provider).finish(),
        }
    }
}

/// Providers compare by identity: two configs are equal only if they share the provider.
impl PartialEq for SaslCredentials {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Password {
                    username: a,
                    password: p,
                },
                Self::Password {
                    username: b,
                    password: q,
                },
            ) => a == b && p == q,
            (Self::Token(a), Self::Token(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for SaslCredentials {}

/// The SASL settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslConfig {
    /// `sasl.mechanism`.
    pub mechanism: SaslMechanism,
    /// From `sasl.jaas.config` or the builder.
    pub credentials: SaslCredentials,
}

/// Why authentication failed on the client's side of the exchange.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// The credentials do not fit the mechanism (e.g. a token provider for SCRAM).
    #[error("{mechanism} needs {needs}")]
    WrongCredentials {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// What it needs.
        needs: &'static str,
    },
    /// The server's message broke the mechanism's rules (a forged or corrupt exchange).
    #[error("invalid server message: {0}")]
    InvalidServerMessage(String),
    /// The server reported an error inside the mechanism (SCRAM `e=`, OAUTHBEARER status).
    #[error("server rejected the credentials: {0}")]
    Rejected(String),
    /// The token provider failed.
    #[error("token provider failed: {0}")]
    TokenProvider(String),
}

/// One mechanism's side of the exchange.
pub(crate) trait SaslClient: Send {
    /// The first message, sent in the first SaslAuthenticate.
    fn initial_response(&mut self) -> Result<Zeroizing<Vec<u8>>, SaslError>;

    /// The server's bytes from a successful SaslAuthenticate response: the next message to
    /// send, or `None` once authentication is complete.
    fn evaluate(&mut self, challenge: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, SaslError>;
}

/// The state machine for `config`'s mechanism. The RNG supplies SCRAM's nonce: seeded in
/// simulation, from OS entropy in real mode (see `rt`).
pub(crate) fn client_for(
    config: &SaslConfig,
    rng: &mut SeededRng,
) -> Result<Box<dyn SaslClient>, SaslError> {
    let mechanism = config.mechanism;
    match (&config.credentials, mechanism) {
        (SaslCredentials::Password { username, password }, SaslMechanism::Plain) => {
            Ok(Box::new(PlainClient::new(username, password)))
        }
        (SaslCredentials::Password { username, password }, SaslMechanism::ScramSha256) => Ok(
            Box::new(ScramClient::new(ScramHash::Sha256, username, password, rng)),
        ),
        (SaslCredentials::Password { username, password }, SaslMechanism::ScramSha512) => Ok(
            Box::new(ScramClient::new(ScramHash::Sha512, username, password, rng)),
        ),
        (SaslCredentials::Token(provider), SaslMechanism::OAuthBearer) => {
            Ok(Box::new(OAuthBearerClient::new(provider.clone())))
        }
        (SaslCredentials::Token(_), _) => Err(SaslError::WrongCredentials {
            mechanism,
            needs: "a username and password",
        }),
        (SaslCredentials::Password { .. }, SaslMechanism::OAuthBearer) => {
            Err(SaslError::WrongCredentials {
                mechanism,
                needs: "a token provider",
            })
        }
    }
}
