//! One connection's SASL state, as Kafka's `SaslServerAuthenticator` plus the two checks
//! `SocketServer`/`KafkaChannel` make on an authenticated connection (KIP-368).
//!
//! Before authentication (`HandshakeOrVersions` → `Handshake` → `Authenticate`):
//! - ApiVersions is served, once, before the handshake; any other request but SaslHandshake
//!   closes the connection without a response (Kafka's `IllegalSaslStateException` "during SASL
//!   handshake"), and so does a second ApiVersions.
//! - SaslHandshake names the mechanism: enabled → NONE with the enabled list; otherwise
//!   UNSUPPORTED_SASL_MECHANISM with the list, then the connection closes. v1 switches to
//!   SaslAuthenticate requests; v0 to raw length-prefixed tokens (Kafka 0.10's framing).
//! - In `Authenticate`, a request other than SaslAuthenticate is answered with its own error
//!   response carrying ILLEGAL_SASL_STATE, then the connection closes.
//! - A refused SaslAuthenticate is answered SASL_AUTHENTICATION_FAILED, with the mechanism's
//!   message or Kafka's generic "invalid credentials" one, then the connection closes; a
//!   refused raw token just closes.
//!
//! After authentication (`Complete`): requests are served; a SaslHandshake starts a
//! re-authentication if the session has an expiry and the last one began at least a second
//! ago (otherwise the API answers ILLEGAL_SASL_STATE); any other request on an expired session
//! closes the connection. The re-authenticated principal and mechanism must be unchanged.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_consumer::rt::SeededRng;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, RequestHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Message, StrBytes};

use super::{server_for, AuthEventKind, MechanismError, MechanismServer, SaslServerConfig};
use crate::broker::dispatch::{encode_body, frame_response};

/// Kafka's `SaslAuthenticate`/`SaslHandshake` error codes.
pub(crate) const ILLEGAL_SASL_STATE: i16 = 34;
pub(crate) const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub(crate) const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// `KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS`.
const MIN_REAUTH_INTERVAL_MS: i64 = 1_000;

/// What the connection does with a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Serve it as usual (an authenticated request, or ApiVersions before the handshake).
    Serve,
    /// Serve it with this error code instead of handling it, then close.
    FailAndClose(i16),
    /// Write this frame (length prefix included).
    Respond(Bytes),
    /// Write this frame, then close.
    RespondAndClose(Bytes),
    /// Close without a response.
    Close,
}

/// What the authenticator needs from its broker for one frame.
pub(crate) struct Env<'a> {
    /// The cluster's current SASL settings and credentials.
    pub config: &'a SaslServerConfig,
    /// Wall-clock Unix ms (virtual under madsim): token expiry and session lifetimes.
    pub now_ms: i64,
    /// Sessions authenticated under an older generation count as expired (a fault).
    pub generation: u64,
    /// SCRAM's server nonces.
    pub rng: &'a mut SeededRng,
}

/// An authenticated session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    pub mechanism: String,
    pub principal: String,
    /// When the session expires (Unix ms), if it does.
    pub expires_at_ms: Option<i64>,
    pub generation: u64,
    /// When the last re-authentication began.
    pub reauth_started_ms: Option<i64>,
}

impl Session {
    fn expired(&self, env: &Env<'_>) -> bool {
        self.generation < env.generation || self.expires_at_ms.is_some_and(|at| env.now_ms > at)
    }
}

enum State {
    HandshakeOrVersions,
    Handshake,
    Authenticate {
        mechanism: String,
        server: Box<dyn MechanismServer>,
        /// SaslHandshake v0: raw tokens, no Kafka headers.
        raw: bool,
    },
    /// A re-authentication asked for another mechanism: the next token fails with this.
    ReauthBadMechanism(String),
    Complete(Session),
    Failed,
}

/// A connection's authenticator.
pub(crate) struct Authenticator {
    state: State,
    /// The session being re-authenticated.
    previous: Option<Session>,
    /// What happened since [`Authenticator::take_events`] was last called.
    events: Vec<AuthEventKind>,
    /// The error code of the failure response being sent.
    failure_code: Option<i16>,
}

/// A request's header fields the authenticator needs.
struct Header {
    api_key: i16,
    version: i16,
    correlation_id: i32,
}

fn peek_header(frame: &[u8]) -> Option<Header> {
    let &[k0, k1, v0, v1, c0, c1, c2, c3] = frame.get(..8)? else {
        return None;
    };
    Some(Header {
        api_key: i16::from_be_bytes([k0, k1]),
        version: i16::from_be_bytes([v0, v1]),
        correlation_id: i32::from_be_bytes([c0, c1, c2, c3]),
    })
}

/// The request body after its header, if the header parses at its version.
fn body(frame: &Bytes, api: ApiKey, version: i16) -> Option<Bytes> {
    let mut body = frame.clone();
    RequestHeader::decode(&mut body, api.request_header_version(version)).ok()?;
    Some(body)
}

impl Default for Authenticator {
    fn default() -> Self {
        Self {
            state: State::HandshakeOrVersions,
            previous: None,
            events: Vec::new(),
            failure_code: None,
        }
    }
}

impl Authenticator {
    /// The authenticated session, if the connection has one.
    #[cfg(test)]
    pub(crate) fn session(&self) -> Option<&Session> {
        match &self.state {
            State::Complete(session) => Some(session),
            _ => None,
        }
    }

    /// Whether frames are Kafka requests to serve normally unless they are SASL ones (the
    /// connection then needs no [`Env`] for them).
    pub(crate) fn is_complete(&self) -> bool {
        matches!(self.state, State::Complete(_))
    }

    /// Whether the next frame is a raw SASL token (after a SaslHandshake v0), not a request.
    pub(crate) fn expects_raw_token(&self) -> bool {
        matches!(self.state, State::Authenticate { raw: true, .. })
    }

    /// What happened since the last call (for the cluster's [`AuthEvent`](super::AuthEvent)s).
    pub(crate) fn take_events(&mut self) -> Vec<AuthEventKind> {
        std::mem::take(&mut self.events)
    }

    /// Decides about one frame (without its length prefix).
    pub(crate) fn on_frame(&mut self, frame: &Bytes, env: &mut Env<'_>) -> Action {
        let state = std::mem::replace(&mut self.state, State::Failed);
        let was_exchanging = !matches!(state, State::Complete(_) | State::Failed);
        let was_failed = matches!(state, State::Failed);
        let (next, action) = self.step(state, frame, env);
        if let State::Complete(session) = &next {
            if was_exchanging {
                self.events.push(AuthEventKind::Authenticated {
                    principal: session.principal.clone(),
                    session_lifetime_ms: session
                        .expires_at_ms
                        .map_or(0, |at| (at - env.now_ms).max(0)),
                    reauthentication: session.reauth_started_ms.is_some(),
                });
            }
        }
        if matches!(next, State::Failed) && !was_failed {
            let code = match &action {
                Action::FailAndClose(code) => Some(*code),
                _ => self.failure_code.take(),
            };
            self.events.push(if was_exchanging {
                AuthEventKind::Failed { code }
            } else {
                AuthEventKind::ExpiredClosed
            });
        }
        self.state = next;
        action
    }

    fn step(&mut self, state: State, frame: &Bytes, env: &mut Env<'_>) -> (State, Action) {
        match state {
            State::Failed => (State::Failed, Action::Close),
            State::Authenticate {
                mechanism,
                server,
                raw: true,
            } => self.raw_token(mechanism, server, frame, env),
            State::ReauthBadMechanism(message) => {
                // Kafka throws before parsing: no response, the connection closes.
                tracing::debug!(%message, "re-authentication with another mechanism");
                (State::Failed, Action::Close)
            }
            state => {
                let Some(header) = peek_header(frame) else {
                    return (State::Failed, Action::Close);
                };
                let Ok(api) = ApiKey::try_from(header.api_key) else {
                    // Kafka would take it for a GSSAPI token, which we do not enable.
                    return (State::Failed, Action::Close);
                };
                match state {
                    State::Complete(session) => {
                        self.authenticated(session, api, &header, frame, env)
                    }
                    State::HandshakeOrVersions | State::Handshake => {
                        let versions_allowed = matches!(state, State::HandshakeOrVersions);
                        match api {
                            ApiKey::ApiVersions if versions_allowed => {
                                // An unsupported version is answered and the state stays.
                                let next = if header.version <= ApiVersionsRequest::VERSIONS.max {
                                    State::Handshake
                                } else {
                                    State::HandshakeOrVersions
                                };
                                (next, Action::Serve)
                            }
                            ApiKey::SaslHandshake => self.handshake(&header, frame, env),
                            _ => (State::Failed, Action::Close),
                        }
                    }
                    State::Authenticate {
                        mechanism, server, ..
                    } => self.authenticate(mechanism, server, api, &header, frame, env),
                    State::Failed | State::ReauthBadMechanism(_) => (State::Failed, Action::Close),
                }
            }
        }
    }

    fn authenticated(
        &mut self,
        session: Session,
        api: ApiKey,
        header: &Header,
        frame: &Bytes,
        env: &mut Env<'_>,
    ) -> (State, Action) {
        let reauth_allowed = session.expires_at_ms.is_some()
            && session
                .reauth_started_ms
                .is_none_or(|at| env.now_ms - at >= MIN_REAUTH_INTERVAL_MS);
        if api == ApiKey::SaslHandshake && reauth_allowed {
            let mut previous = session;
            previous.reauth_started_ms = Some(env.now_ms);
            self.previous = Some(previous);
            return self.handshake(header, frame, env);
        }
        if session.expired(env) {
            tracing::debug!(principal = %session.principal, "expired SASL session: closing");
            return (State::Failed, Action::Close);
        }
        (State::Complete(session), Action::Serve)
    }

    fn handshake(&mut self, header: &Header, frame: &Bytes, env: &mut Env<'_>) -> (State, Action) {
        let request = body(frame, ApiKey::SaslHandshake, header.version)
            .and_then(|mut b| SaslHandshakeRequest::decode(&mut b, header.version).ok());
        let Some(request) = request else {
            return (State::Failed, Action::Close);
        };
        let mechanism = request.mechanism.to_string();
        let enabled: Vec<StrBytes> = env
            .config
            .listed_mechanisms()
            .into_iter()
            .map(StrBytes::from_string)
            .collect();
        let server = env
            .config
            .enabled_mechanisms
            .contains(&mechanism)
            .then(|| server_for(&mechanism))
            .flatten();
        let Some(server) = server else {
            let response = SaslHandshakeResponse::default()
                .with_error_code(UNSUPPORTED_SASL_MECHANISM)
                .with_mechanisms(enabled);
            self.failure_code = Some(UNSUPPORTED_SASL_MECHANISM);
            return (
                State::Failed,
                respond(header, ApiKey::SaslHandshake, &response, true),
            );
        };
        let response = SaslHandshakeResponse::default().with_mechanisms(enabled);
        let action = respond(header, ApiKey::SaslHandshake, &response, false);
        self.events.push(AuthEventKind::Started {
            mechanism: mechanism.clone(),
            reauthentication: self.previous.is_some(),
        });
        if let Some(previous) = &self.previous {
            if previous.mechanism != mechanism {
                let message = format!(
                    "SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of mechanism '{}'",
                    previous.mechanism
                );
                return (State::ReauthBadMechanism(message), action);
            }
        }
        (
            State::Authenticate {
                mechanism,
                server,
                raw: header.version == 0,
            },
            action,
        )
    }

    fn authenticate(
        &mut self,
        mechanism: String,
        mut server: Box<dyn MechanismServer>,
        api: ApiKey,
        header: &Header,
        frame: &Bytes,
        env: &mut Env<'_>,
    ) -> (State, Action) {
        if api != ApiKey::SaslAuthenticate {
            return (State::Failed, Action::FailAndClose(ILLEGAL_SASL_STATE));
        }
        let request = body(frame, api, header.version)
            .and_then(|mut b| SaslAuthenticateRequest::decode(&mut b, header.version).ok());
        let Some(request) = request else {
            return (State::Failed, Action::Close);
        };
        let failed = |message: String| {
            let response = SaslAuthenticateResponse::default()
                .with_error_code(SASL_AUTHENTICATION_FAILED)
                .with_error_message(Some(StrBytes::from_string(message)));
            (State::Failed, respond(header, api, &response, true))
        };
        match self.evaluate(&mechanism, server.as_mut(), &request.auth_bytes, env) {
            Ok((challenge, None)) => {
                let response =
                    SaslAuthenticateResponse::default().with_auth_bytes(challenge.into());
                (
                    State::Authenticate {
                        mechanism,
                        server,
                        raw: false,
                    },
                    respond(header, api, &response, false),
                )
            }
            Ok((challenge, Some(session))) => {
                let lifetime_ms = session
                    .expires_at_ms
                    .map_or(0, |at| (at - env.now_ms).max(0));
                let response = SaslAuthenticateResponse::default()
                    .with_auth_bytes(challenge.into())
                    .with_session_lifetime_ms(lifetime_ms);
                (
                    State::Complete(session),
                    respond(header, api, &response, false),
                )
            }
            Err(message) => {
                self.failure_code = Some(SASL_AUTHENTICATION_FAILED);
                failed(message)
            }
        }
    }

    fn raw_token(
        &mut self,
        mechanism: String,
        mut server: Box<dyn MechanismServer>,
        token: &Bytes,
        env: &mut Env<'_>,
    ) -> (State, Action) {
        match self.evaluate(&mechanism, server.as_mut(), token, env) {
            Ok((challenge, completed)) => {
                let mut out = BytesMut::with_capacity(4 + challenge.len());
                out.put_i32(challenge.len() as i32);
                out.put_slice(&challenge);
                let next = match completed {
                    Some(session) => State::Complete(session),
                    None => State::Authenticate {
                        mechanism,
                        server,
                        raw: true,
                    },
                };
                (next, Action::Respond(out.freeze()))
            }
            // Without Kafka headers there is no error response: the connection closes.
            Err(_) => (State::Failed, Action::Close),
        }
    }

    /// Runs the mechanism: the challenge and, once complete, the session; or the message of a
    /// SASL_AUTHENTICATION_FAILED.
    fn evaluate(
        &mut self,
        mechanism: &str,
        server: &mut dyn MechanismServer,
        client_bytes: &[u8],
        env: &mut Env<'_>,
    ) -> Result<(Vec<u8>, Option<Session>), String> {
        let reauthenticating = self.previous.is_some();
        let text = if reauthenticating {
            "re-authentication"
        } else {
            "authentication"
        };
        let evaluated = match server.evaluate(client_bytes, env.now_ms, env.config, env.rng) {
            Ok(evaluated) => evaluated,
            Err(MechanismError::Authentication(message)) => return Err(message),
            Err(MechanismError::Sasl(detail)) => {
                tracing::debug!(%detail, mechanism, "SASL exchange refused");
                return Err(format!(
                    "Authentication failed during {text} due to invalid credentials with SASL mechanism {mechanism}"
                ));
            }
        };
        let Some(completed) = evaluated.completed else {
            return Ok((evaluated.challenge, None));
        };
        let previous = self.previous.take();
        if let Some(previous) = &previous {
            if previous.principal != completed.principal {
                return Err(format!(
                    "Cannot change principals during re-authentication from User:{}: User:{}",
                    previous.principal, completed.principal
                ));
            }
        }
        // ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs.
        let max_reauth_ms = env.config.max_reauth_ms(mechanism);
        let expires_at_ms = match (completed.credential_expires_at_ms, max_reauth_ms > 0) {
            (None, false) => None,
            (None, true) => Some(env.now_ms + max_reauth_ms),
            (Some(credential), false) => Some(credential.max(env.now_ms)),
            (Some(credential), true) => {
                Some(credential.min(env.now_ms + max_reauth_ms).max(env.now_ms))
            }
        };
        Ok((
            evaluated.challenge,
            Some(Session {
                mechanism: mechanism.to_owned(),
                principal: completed.principal,
                expires_at_ms,
                generation: env.generation,
                reauth_started_ms: previous.and_then(|p| p.reauth_started_ms),
            }),
        ))
    }

    /// A fault forcing `code` on this SaslHandshake/SaslAuthenticate: its error response, then
    /// the connection closes (as a refused authentication does).
    pub(crate) fn injected_failure(&mut self, frame: &Bytes, code: i16) -> Action {
        self.state = State::Failed;
        self.events.push(AuthEventKind::Failed { code: Some(code) });
        let Some(header) = peek_header(frame) else {
            return Action::Close;
        };
        match ApiKey::try_from(header.api_key) {
            Ok(ApiKey::SaslHandshake) => {
                let response = SaslHandshakeResponse::default().with_error_code(code);
                respond(&header, ApiKey::SaslHandshake, &response, true)
            }
            Ok(ApiKey::SaslAuthenticate) => {
                let response = SaslAuthenticateResponse::default()
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_static_str(
                        "Authentication failed: injected by the simulation",
                    )));
                respond(&header, ApiKey::SaslAuthenticate, &response, true)
            }
            _ => Action::Close,
        }
    }
}

fn respond<M: kafka_protocol::protocol::Encodable>(
    header: &Header,
    api: ApiKey,
    response: &M,
    close: bool,
) -> Action {
    match encode_body(response, header.version) {
        Some(body) => {
            let frame = frame_response(
                header.correlation_id,
                api.response_header_version(header.version),
                &body,
            );
            if close {
                Action::RespondAndClose(frame)
            } else {
                Action::Respond(frame)
            }
        }
        None => Action::Close,
    }
}

#[cfg(test)]
#[path = "authenticator_tests.rs"]
mod tests;
