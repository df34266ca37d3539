//! The authenticator's state machine, frame by frame, on a fake clock.

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{
    ApiVersionsRequest, MetadataRequest, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};

use super::*;

const NOW_MS: i64 = 1_700_000_000_000;

fn frame<R: Request + Encodable>(request: &R, version: i16, correlation_id: i32) -> Bytes {
    let mut out = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .encode(&mut out, R::header_version(version))
        .unwrap();
    request.encode(&mut out, version).unwrap();
    out.freeze()
}

fn config() -> SaslServerConfig {
    let mut config = SaslServerConfig::sasl_plaintext();
    config.enabled_mechanisms = vec!["PLAIN".to_owned(), "SCRAM-SHA-256".to_owned()];
    config.add_user("alice", "alice-secret", &mut SeededRng::seed_from_u64(1));
    config
}

struct Harness {
    auth: Authenticator,
    config: SaslServerConfig,
    now_ms: i64,
    generation: u64,
    rng: SeededRng,
}

impl Harness {
    fn new() -> Self {
        Self {
            auth: Authenticator::default(),
            config: config(),
            now_ms: NOW_MS,
            generation: 0,
            rng: SeededRng::seed_from_u64(5),
        }
    }

    fn send(&mut self, frame: &Bytes) -> Action {
        let mut env = Env {
            config: &self.config,
            now_ms: self.now_ms,
            generation: self.generation,
            rng: &mut self.rng,
        };
        self.auth.on_frame(frame, &mut env)
    }

    fn handshake(&mut self, mechanism: &'static str, version: i16) -> Action {
        let request =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        self.send(&frame(&request, version, 1))
    }

    fn authenticate(&mut self, bytes: &[u8], version: i16) -> Action {
        let request =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(bytes));
        self.send(&frame(&request, version, 2))
    }

    fn login(&mut self, password: &str) -> SaslAuthenticateResponse {
        assert!(matches!(self.handshake("PLAIN", 1), Action::Respond(_)));
        let action = self.authenticate(format!("\0alice\0{password}").as_bytes(), 2);
        authenticate_response(&action, 2)
    }
}

/// The response in a frame, checking the correlation id is echoed.
fn decode<M: Decodable>(action: &Action, header_version: i16, version: i16) -> M {
    let (Action::Respond(frame) | Action::RespondAndClose(frame)) = action else {
        panic!("no response: {action:?}");
    };
    let mut frame = frame.clone();
    let length = frame.get_i32();
    assert_eq!(length as usize, frame.len());
    ResponseHeader::decode(&mut frame, header_version).unwrap();
    M::decode(&mut frame, version).unwrap()
}

fn handshake_response(action: &Action) -> SaslHandshakeResponse {
    decode(action, 0, 1)
}

fn authenticate_response(action: &Action, version: i16) -> SaslAuthenticateResponse {
    decode(action, if version >= 2 { 1 } else { 0 }, version)
}

#[test]
fn api_versions_then_plain_completes_and_requests_are_served() {
    let mut h = Harness::new();
    assert_eq!(
        h.send(&frame(&ApiVersionsRequest::default(), 3, 0)),
        Action::Serve
    );
    let handshake = h.handshake("PLAIN", 1);
    let response = handshake_response(&handshake);
    assert_eq!(response.error_code, 0);
    assert_eq!(
        response.mechanisms,
        ["PLAIN", "SCRAM-SHA-256"].map(StrBytes::from_static_str)
    );
    let done = h.login_after_handshake("alice-secret");
    assert_eq!(done.error_code, 0);
    assert_eq!(done.session_lifetime_ms, 0, "no connections.max.reauth.ms");
    assert_eq!(h.auth.session().unwrap().principal, "alice");
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 3)),
        Action::Serve
    );
}

impl Harness {
    fn login_after_handshake(&mut self, password: &str) -> SaslAuthenticateResponse {
        let action = self.authenticate(format!("\0alice\0{password}").as_bytes(), 2);
        assert!(matches!(action, Action::Respond(_)), "{action:?}");
        authenticate_response(&action, 2)
    }
}

#[test]
fn a_request_before_the_handshake_closes_without_a_response() {
    let mut h = Harness::new();
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 0)),
        Action::Close
    );
    assert_eq!(
        h.handshake("PLAIN", 1),
        Action::Close,
        "the connection is done"
    );

    let mut h = Harness::new();
    assert_eq!(
        h.send(&frame(&ApiVersionsRequest::default(), 3, 0)),
        Action::Serve
    );
    assert_eq!(
        h.send(&frame(&ApiVersionsRequest::default(), 3, 1)),
        Action::Close,
        "second ApiVersions"
    );

    let mut h = Harness::new();
    assert_eq!(
        h.authenticate(b"\0alice\0alice-secret", 2),
        Action::Close,
        "authenticate before handshake"
    );
}

#[test]
fn an_unsupported_api_versions_version_is_answered_and_may_be_retried() {
    let mut h = Harness::new();
    assert_eq!(
        h.send(
            &frame(&ApiVersionsRequest::default(), 3, 0)[..]
                .to_vec()
                .into_with_version(99)
        ),
        Action::Serve
    );
    assert_eq!(
        h.send(&frame(&ApiVersionsRequest::default(), 3, 1)),
        Action::Serve
    );
    assert!(matches!(h.handshake("PLAIN", 1), Action::Respond(_)));
}

trait WithVersion {
    fn into_with_version(self, version: i16) -> Bytes;
}

impl WithVersion for Vec<u8> {
    fn into_with_version(mut self, version: i16) -> Bytes {
        self[2..4].copy_from_slice(&version.to_be_bytes());
        Bytes::from(self)
    }
}

#[test]
fn an_unknown_mechanism_lists_the_enabled_ones_and_closes() {
    let mut h = Harness::new();
    let action = h.handshake("OAUTHBEARER", 1);
    assert!(matches!(action, Action::RespondAndClose(_)), "{action:?}");
    let response = handshake_response(&action);
    assert_eq!(response.error_code, UNSUPPORTED_SASL_MECHANISM);
    assert_eq!(
        response.mechanisms,
        ["PLAIN", "SCRAM-SHA-256"].map(StrBytes::from_static_str)
    );
}

#[test]
fn a_wrong_password_fails_with_kafkas_message_and_closes() {
    let mut h = Harness::new();
    h.handshake("PLAIN", 1);
    let action = h.authenticate(b"\0alice\0wrong", 2);
    assert!(matches!(action, Action::RespondAndClose(_)), "{action:?}");
    let response = authenticate_response(&action, 2);
    assert_eq!(response.error_code, SASL_AUTHENTICATION_FAILED);
    assert_eq!(
        response.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
}

#[test]
fn scram_failures_get_the_generic_message() {
    let mut h = Harness::new();
    h.handshake("SCRAM-SHA-256", 1);
    let action = h.authenticate(b"n,,n=nobody,r=abc", 2);
    let response = authenticate_response(&action, 2);
    assert_eq!(response.error_code, SASL_AUTHENTICATION_FAILED);
    assert_eq!(
        response.error_message.as_deref(),
        Some("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    );
}

#[test]
fn another_request_during_authentication_is_illegal_sasl_state() {
    let mut h = Harness::new();
    h.handshake("SCRAM-SHA-256", 1);
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 3)),
        Action::FailAndClose(ILLEGAL_SASL_STATE)
    );
}

#[test]
fn handshake_v0_uses_raw_tokens() {
    let mut h = Harness::new();
    assert!(matches!(h.handshake("PLAIN", 0), Action::Respond(_)));
    let action = h.send(&Bytes::from_static(b"\0alice\0alice-secret"));
    assert_eq!(
        action,
        Action::Respond(Bytes::from_static(&[0, 0, 0, 0])),
        "empty raw challenge"
    );
    assert!(h.auth.is_complete());

    let mut h = Harness::new();
    h.handshake("PLAIN", 0);
    assert_eq!(
        h.send(&Bytes::from_static(b"\0alice\0wrong")),
        Action::Close
    );
}

#[test]
fn authenticate_v0_and_v1_answer_at_their_versions() {
    for version in [0, 1] {
        let mut h = Harness::new();
        h.handshake("PLAIN", 1);
        let action = h.authenticate(b"\0alice\0alice-secret", version);
        assert_eq!(authenticate_response(&action, version).error_code, 0);
    }
}

#[test]
fn session_lifetime_is_max_reauth_and_an_expired_session_closes_on_its_next_request() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    assert_eq!(h.login("alice-secret").session_lifetime_ms, 10_000);
    h.now_ms += 10_000;
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 3)),
        Action::Serve,
        "not yet past"
    );
    h.now_ms += 1;
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 4)),
        Action::Close
    );
}

#[test]
fn reauthentication_renews_the_session() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.login("alice-secret");
    h.now_ms += 9_000;
    let renewed = h.login("alice-secret");
    assert_eq!(renewed.error_code, 0);
    assert_eq!(renewed.session_lifetime_ms, 10_000);
    h.now_ms += 5_000;
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 3)),
        Action::Serve,
        "renewed"
    );
}

#[test]
fn reauthentication_with_a_rotated_password_fails_and_closes() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.login("alice-secret");
    h.config
        .add_user("alice", "rotated", &mut SeededRng::seed_from_u64(2));
    h.now_ms += 9_000;
    h.handshake("PLAIN", 1);
    let action = h.authenticate(b"\0alice\0alice-secret", 2);
    assert!(matches!(action, Action::RespondAndClose(_)));
    assert_eq!(
        authenticate_response(&action, 2).error_code,
        SASL_AUTHENTICATION_FAILED
    );
}

#[test]
fn reauthentication_cannot_change_principal_or_mechanism() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.config
        .add_user("bob", "bob-secret", &mut SeededRng::seed_from_u64(3));
    h.login("alice-secret");
    h.now_ms += 9_000;
    h.handshake("PLAIN", 1);
    let action = h.authenticate(b"\0bob\0bob-secret", 2);
    assert_eq!(
        authenticate_response(&action, 2).error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User:alice: User:bob")
    );

    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.login("alice-secret");
    h.now_ms += 9_000;
    assert!(matches!(
        h.handshake("SCRAM-SHA-256", 1),
        Action::Respond(_)
    ));
    assert_eq!(h.authenticate(b"n,,n=alice,r=abc", 2), Action::Close);
}

#[test]
fn without_a_session_expiry_a_handshake_after_authentication_is_served() {
    let mut h = Harness::new();
    h.login("alice-secret");
    // No expiry: KafkaApis answers ILLEGAL_SASL_STATE; the connection stays.
    assert_eq!(h.handshake("PLAIN", 1), Action::Serve);
    assert!(h.auth.is_complete());
}

#[test]
fn reauthentication_more_than_once_a_second_is_served_as_a_plain_request() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.login("alice-secret");
    h.now_ms += 100;
    h.login("alice-secret");
    h.now_ms += 500;
    assert_eq!(h.handshake("PLAIN", 1), Action::Serve);
}

#[test]
fn a_generation_bump_expires_sessions() {
    let mut h = Harness::new();
    h.login("alice-secret");
    h.generation = 1;
    assert_eq!(
        h.send(&frame(&MetadataRequest::default(), 12, 3)),
        Action::Close
    );
}

#[test]
fn injected_failures_answer_and_close() {
    let mut h = Harness::new();
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let action = h
        .auth
        .injected_failure(&frame(&request, 1, 1), SASL_AUTHENTICATION_FAILED);
    assert!(matches!(action, Action::RespondAndClose(_)));
    assert_eq!(
        handshake_response(&action).error_code,
        SASL_AUTHENTICATION_FAILED
    );
    assert_eq!(h.handshake("PLAIN", 1), Action::Close);
}

#[test]
fn events_say_what_happened() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.login("alice-secret");
    h.now_ms += 9_000;
    h.login("alice-secret");
    h.now_ms += 20_000;
    h.send(&frame(&MetadataRequest::default(), 12, 3));
    assert_eq!(
        h.auth.take_events(),
        vec![
            AuthEventKind::Started {
                mechanism: "PLAIN".to_owned(),
                reauthentication: false
            },
            AuthEventKind::Authenticated {
                principal: "alice".to_owned(),
                session_lifetime_ms: 10_000,
                reauthentication: false
            },
            AuthEventKind::Started {
                mechanism: "PLAIN".to_owned(),
                reauthentication: true
            },
            AuthEventKind::Authenticated {
                principal: "alice".to_owned(),
                session_lifetime_ms: 10_000,
                reauthentication: true
            },
            AuthEventKind::ExpiredClosed,
        ]
    );
    let mut h = Harness::new();
    h.handshake("PLAIN", 1);
    h.authenticate(b"\0alice\0wrong", 2);
    assert_eq!(
        h.auth.take_events().last(),
        Some(&AuthEventKind::Failed {
            code: Some(SASL_AUTHENTICATION_FAILED)
        })
    );
}

#[test]
fn a_per_mechanism_max_reauth_overrides_the_listener_one() {
    let mut h = Harness::new();
    h.config.connections_max_reauth_ms = 10_000;
    h.config
        .max_reauth_ms_by_mechanism
        .insert("PLAIN".to_owned(), 3_000);
    assert_eq!(h.login("alice-secret").session_lifetime_ms, 3_000);
}
