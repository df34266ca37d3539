//! SASL on the simulated brokers' listeners: the server side of Kafka's
//! `SaslServerAuthenticator` (SaslHandshake v0/v1, SaslAuthenticate v0–v2, KIP-368 session
//! lifetimes) with the PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER (unsecured JWS) mechanisms.
//!
//! - [`SaslServerConfig`]: `sasl.enabled.mechanisms`, `connections.max.reauth.ms`, the users
//!   and their credentials, the unsecured validator's options. It lives in the cluster's
//!   [`ClusterConfig`](crate::config::ClusterConfig), so faults can change it at run time
//!   (a password rotated, a user deleted, a shorter session lifetime).
//! - [`authenticator`]: the per-connection state machine, sans-IO; the connection task feeds
//!   it frames and does what it answers.
//! - [`plain`], [`scram`], [`oauthbearer`]: each mechanism's server, sans-IO.

pub(crate) mod authenticator;
pub(crate) mod oauthbearer;
pub(crate) mod plain;
pub(crate) mod scram;

use std::collections::BTreeMap;

use kafka_consumer::rt::SeededRng;

pub use scram::{ScramCredential, ScramMechanism};

/// Kafka's `ScramMechanism.minIterations()`; also the iteration count [`SaslServerConfig::add_user`]
/// uses (Kafka's `kafka-configs --add-config SCRAM-SHA-256=[password=…]` default).
pub const SCRAM_DEFAULT_ITERATIONS: u32 = 4096;

/// The security protocol of the brokers' listener (`listeners=NAME://…` with
/// `listener.security.protocol.map`). SSL listeners are not modelled (see `sim/FIDELITY.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListenerProtocol {
    /// `PLAINTEXT`: no authentication; SaslHandshake is answered ILLEGAL_SASL_STATE.
    #[default]
    Plaintext,
    /// `SASL_PLAINTEXT`: every connection authenticates before any request but ApiVersions.
    SaslPlaintext,
}

/// One user's credentials: Kafka keeps PLAIN passwords in the broker's JAAS file
/// (`user_<name>="…"`) and SCRAM credentials (salt, iterations, stored and server keys, never
/// the password) in the cluster metadata; here both live in one store.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslUser {
    /// PLAIN's password, if the user may use PLAIN.
    pub plain_password: Option<String>,
    /// SCRAM credentials per mechanism.
    pub scram: BTreeMap<ScramMechanism, ScramCredential>,
}

impl std::fmt::Debug for SaslUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslUser")
            .field(
                "plain_password",
                &self.plain_password.as_ref().map(|_| "[redacted]"),
            )
            .field("scram", &self.scram.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The options of Kafka's `OAuthBearerUnsecuredValidatorCallbackHandler`
/// (`unsecuredValidator*` JAAS options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidatorConfig {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim_name: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim_name: String,
    /// `unsecuredValidatorRequiredScope`: every element must be in the token's scope.
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0).
    pub allowable_clock_skew_ms: i64,
}

impl Default for UnsecuredValidatorConfig {
    fn default() -> Self {
        Self {
            principal_claim_name: "sub".to_owned(),
            scope_claim_name: "scope".to_owned(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: 0,
        }
    }
}

/// The brokers' SASL settings, named after Kafka's broker configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslServerConfig {
    /// The listener's security protocol.
    pub protocol: ListenerProtocol,
    /// `sasl.enabled.mechanisms`, in the order the handshake response lists them.
    pub enabled_mechanisms: Vec<String>,
    /// `connections.max.reauth.ms` (KIP-368); 0 = sessions do not expire (unless an
    /// OAUTHBEARER token does).
    pub connections_max_reauth_ms: i64,
    /// `listener.name.<listener>.<mechanism>.connections.max.reauth.ms`: per-mechanism
    /// overrides of `connections_max_reauth_ms`.
    pub max_reauth_ms_by_mechanism: BTreeMap<String, i64>,
    /// Users by name.
    pub users: BTreeMap<String, SaslUser>,
    /// OAUTHBEARER's validator.
    pub oauthbearer: UnsecuredValidatorConfig,
}

impl Default for SaslServerConfig {
    fn default() -> Self {
        Self {
            protocol: ListenerProtocol::Plaintext,
            enabled_mechanisms: ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
                .map(str::to_owned)
                .to_vec(),
            connections_max_reauth_ms: 0,
            max_reauth_ms_by_mechanism: BTreeMap::new(),
            users: BTreeMap::new(),
            oauthbearer: UnsecuredValidatorConfig::default(),
        }
    }
}

impl SaslServerConfig {
    /// A SASL_PLAINTEXT listener with every mechanism enabled and no users yet.
    pub fn sasl_plaintext() -> Self {
        Self {
            protocol: ListenerProtocol::SaslPlaintext,
            ..Self::default()
        }
    }

    /// Adds (or replaces) `name` with `password` for PLAIN and both SCRAM mechanisms, the SCRAM
    /// credentials salted from `rng` with [`SCRAM_DEFAULT_ITERATIONS`] (as `kafka-configs
    /// --alter --add-config 'SCRAM-SHA-256=[password=…]'` does with a random salt).
    pub fn add_user(&mut self, name: &str, password: &str, rng: &mut SeededRng) {
        let mut scram = BTreeMap::new();
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            // Kafka's `ScramFormatter.secureRandomBytes`: a random base-36 string's bytes.
            let salt = scram::secure_random_string(rng).into_bytes();
            scram.insert(
                mechanism,
                ScramCredential::new(mechanism, password, &salt, SCRAM_DEFAULT_ITERATIONS),
            );
        }
        self.users.insert(
            name.to_owned(),
            SaslUser {
                plain_password: Some(password.to_owned()),
                scram,
            },
        );
    }

    /// Removes `name`: its next authentication fails as for an unknown user.
    pub fn delete_user(&mut self, name: &str) -> bool {
        self.users.remove(name).is_some()
    }

    /// `connections.max.reauth.ms` for sessions of `mechanism`.
    pub fn max_reauth_ms(&self, mechanism: &str) -> i64 {
        self.max_reauth_ms_by_mechanism
            .get(mechanism)
            .copied()
            .unwrap_or(self.connections_max_reauth_ms)
    }

    /// `sasl.enabled.mechanisms` in the order Kafka's SaslHandshake response lists them: the
    /// broker copies the configured list into a `java.util.HashSet` and back
    /// (`SaslServerAuthenticator`), so the order is that set's iteration order, not the
    /// configured one.
    pub fn listed_mechanisms(&self) -> Vec<String> {
        java_hash_set_order(&self.enabled_mechanisms)
    }

    /// Whether connections must authenticate.
    pub fn requires_sasl(&self) -> bool {
        self.protocol == ListenerProtocol::SaslPlaintext
    }
}

/// The iteration order of `new HashSet<>(list)` in Java: duplicates dropped, buckets in
/// ascending order of `(h ^ h >>> 16) & (capacity - 1)` over `String.hashCode`, insertion order
/// within a bucket; capacity is the power of two at least `max(len / 0.75 + 1, 16)`.
fn java_hash_set_order(list: &[String]) -> Vec<String> {
    let mut unique: Vec<&String> = Vec::new();
    for name in list {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    let wanted = ((list.len() as f64 / 0.75) as usize + 1).max(16);
    let capacity = wanted.next_power_of_two() as u32;
    let bucket = |name: &str| {
        let hash = name.encode_utf16().fold(0i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        }) as u32;
        (hash ^ (hash >> 16)) & (capacity - 1)
    };
    let mut ordered: Vec<(u32, usize, &String)> = unique
        .into_iter()
        .enumerate()
        .map(|(position, name)| (bucket(name), position, name))
        .collect();
    ordered.sort();
    ordered
        .into_iter()
        .map(|(_, _, name)| name.clone())
        .collect()
}

/// What a broker's authenticator did, for tests and checkers (Kafka's
/// `successful-authentication-total`, `failed-authentication-total`,
/// `successful-reauthentication-total` and `expired-connections-killed-count` metrics, per event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthEvent {
    /// Virtual ms since the cluster was built.
    pub at_ms: u64,
    /// The broker.
    pub broker: i32,
    /// The connection ([`crate::controller::Controller::next_connection_id`]).
    pub connection_id: u64,
    /// What happened.
    pub kind: AuthEventKind,
}

/// See [`AuthEvent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthEventKind {
    /// A SaslHandshake for an enabled mechanism started an (re-)authentication.
    Started {
        /// The mechanism.
        mechanism: String,
        /// Whether it re-authenticates an authenticated connection (KIP-368).
        reauthentication: bool,
    },
    /// The exchange completed.
    Authenticated {
        /// The principal.
        principal: String,
        /// What SaslAuthenticate told the client (0: no limit).
        session_lifetime_ms: i64,
        /// Whether it was a re-authentication.
        reauthentication: bool,
    },
    /// The exchange failed (refused credentials, unsupported mechanism, illegal state, an
    /// injected error); the connection closes.
    Failed {
        /// The error code sent, if any.
        code: Option<i16>,
    },
    /// A request arrived on an expired session; the connection was closed.
    ExpiredClosed,
}

/// Why a mechanism refused the client's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MechanismError {
    /// Kafka's `SaslAuthenticationException`: its message goes to the client as is.
    Authentication(String),
    /// Kafka's `SaslException`: the client gets the generic "invalid credentials" message
    /// (the detail could tell whether the user exists); the detail is only logged.
    Sasl(String),
}

/// What a mechanism answered to one client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Evaluated {
    /// The bytes for the client (possibly empty).
    pub challenge: Vec<u8>,
    /// Set once the exchange completed successfully.
    pub completed: Option<Completed>,
}

/// A successful authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completed {
    /// The authenticated principal's name (`User:<name>`).
    pub principal: String,
    /// When the credential expires (Unix ms): an OAUTHBEARER token's `exp`; KIP-368 caps the
    /// session there.
    pub credential_expires_at_ms: Option<i64>,
}

/// One mechanism's server, a state machine fed the client's messages.
pub(crate) trait MechanismServer: Send {
    /// Evaluates one client message at wall-clock `now_ms` against `config`'s credentials.
    fn evaluate(
        &mut self,
        response: &[u8],
        now_ms: i64,
        config: &SaslServerConfig,
        rng: &mut SeededRng,
    ) -> Result<Evaluated, MechanismError>;
}

/// The server for an enabled mechanism's name, if we implement it.
pub(crate) fn server_for(mechanism: &str) -> Option<Box<dyn MechanismServer>> {
    match mechanism {
        "PLAIN" => Some(Box::new(plain::PlainServer::default())),
        "SCRAM-SHA-256" => Some(Box::new(scram::ScramServer::new(ScramMechanism::Sha256))),
        "SCRAM-SHA-512" => Some(Box::new(scram::ScramServer::new(ScramMechanism::Sha512))),
        "OAUTHBEARER" => Some(Box::new(oauthbearer::OAuthBearerServer::default())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanisms_are_listed_in_java_hash_set_order() {
        // As Kafka 4.1 answers for `sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,
        // OAUTHBEARER` (checked by the differential test against the real broker).
        assert_eq!(
            SaslServerConfig::default().listed_mechanisms(),
            ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER"]
        );
        let config = SaslServerConfig {
            enabled_mechanisms: vec!["PLAIN".to_owned(), "PLAIN".to_owned()],
            ..SaslServerConfig::default()
        };
        assert_eq!(config.listed_mechanisms(), ["PLAIN"]);
    }
}
