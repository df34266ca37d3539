//! SASL/OAUTHBEARER (RFC 7628, Kafka's KIP-255): the client sends a bearer token from a
//! [`TokenProvider`]; the broker validates it.
//!
//! On a rejected token the broker answers with an error document instead of completing; RFC
//! 7628 §3.2.3 has the client reply with a single `0x01` so the server can fail the exchange,
//! which it then does with SASL_AUTHENTICATION_FAILED. The error document is kept for the
//! error message.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use base64::Engine;
use zeroize::Zeroizing;

use super::{SaslClient, SaslError};
use crate::network::secret::Secret;

/// RFC 7628's key-value separator.
const SEPARATOR: u8 = 0x01;
/// RFC 7628's GS2 header without an authorization identity.
const GS2_HEADER: &[u8] = b"n,,";
/// The `auth` key-value pair's start (RFC 7628 §3.1).
const AUTH_PREFIX: &[u8] = b"auth=Bearer ";

/// A bearer token and what the client needs to know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerToken {
    /// The token as sent (a JWT for Kafka's validators).
    pub value: Secret,
    /// When it expires, in Unix milliseconds.
    pub expires_at_ms: i64,
    /// SASL extensions sent with it (KIP-342), e.g. `logicalCluster` for some services.
    pub extensions: BTreeMap<String, String>,
}

/// Supplies OAUTHBEARER tokens; called for every new connection and KIP-368
/// re-authentication, on the consumer's network task, so it must not block: it should return
/// a cached token and refresh it elsewhere. The `oidc` cargo feature adds
/// [`OidcTokenProvider`](super::OidcTokenProvider) (OAuth client credentials); the application
/// can implement this trait over any other identity provider.
pub trait TokenProvider: Send + Sync + fmt::Debug {
    /// A currently valid token, or why there is none.
    fn token(&self) -> Result<OAuthBearerToken, String>;

    /// Called once when a consumer using this provider is constructed, before any connection
    /// (Java's login at client construction): a provider that fetches tokens does its first
    /// fetch here, and an error fails the constructor. May block. The default does nothing.
    fn login(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Kafka's unsecured JWT login (`OAuthBearerUnsecuredLoginCallbackHandler`): an `alg: none`
/// token naming the principal, for brokers configured with the unsecured validator. For
/// development and tests only; production brokers must validate signed tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredJwtProvider {
    /// `unsecuredLoginPrincipalClaimName` (default `sub`).
    pub principal_claim_name: String,
    /// `unsecuredLoginStringClaim_<principal claim>`: the principal.
    pub principal: String,
    /// `unsecuredLoginLifetimeSeconds` (default 3600); negative values give tokens that are
    /// already expired, which tests use.
    pub lifetime_seconds: i64,
    /// `unsecuredLoginListClaim_scope`, if any.
    pub scope: Vec<String>,
    /// `unsecuredLoginExtension_<name>` options.
    pub extensions: BTreeMap<String, String>,
}

impl UnsecuredJwtProvider {
    /// A provider for `principal` with Kafka's defaults.
    pub fn new(principal: impl Into<String>) -> Self {
        Self {
            principal_claim_name: "sub".to_owned(),
            principal: principal.into(),
            lifetime_seconds: 3600,
            scope: Vec::new(),
            extensions: BTreeMap::new(),
        }
    }

    /// The token at `now_ms` (Unix milliseconds).
    pub fn token_at(&self, now_ms: i64) -> OAuthBearerToken {
        let issued_s = now_ms.div_euclid(1000);
        let expires_s = issued_s.saturating_add(self.lifetime_seconds);
        let mut payload = format!(
            "{{\"iat\":{issued_s},\"exp\":{expires_s},{}:{}",
            json_string(&self.principal_claim_name),
            json_string(&self.principal)
        );
        if !self.scope.is_empty() {
            let scope: Vec<String> = self.scope.iter().map(|s| json_string(s)).collect();
            payload.push_str(&format!(",\"scope\":[{}]", scope.join(",")));
        }
        payload.push('}');
        let value = format!(
            "{}.{}.",
            BASE64URL.encode(br#"{"alg":"none"}"#),
            BASE64URL.encode(payload.as_bytes())
        );
        OAuthBearerToken {
            value: Secret::new(value),
            expires_at_ms: expires_s.saturating_mul(1000),
            extensions: self.extensions.clone(),
        }
    }
}

impl TokenProvider for UnsecuredJwtProvider {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        Ok(self.token_at(crate::rt::wall_clock_ms()))
    }
}

/// A JSON string literal.
fn json_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

enum State {
    Initial,
    TokenSent,
    /// The server sent an error document; we acknowledged it and wait for the failure.
    ErrorAcknowledged(String),
    Complete,
}

pub(crate) struct OAuthBearerClient {
    provider: Arc<dyn TokenProvider>,
    state: State,
}

impl OAuthBearerClient {
    pub(crate) fn new(provider: Arc<dyn TokenProvider>) -> Self {
        Self {
            provider,
            state: State::Initial,
        }
    }
}

impl SaslClient for OAuthBearerClient {
    fn initial_response(&mut self) -> Result<Zeroizing<Vec<u8>>, SaslError> {
        let token = self.provider.token().map_err(SaslError::TokenProvider)?;
        for (key, value) in &token.extensions {
            let valid_key =
                !key.is_empty() && key != "auth" && key.bytes().all(|b| b.is_ascii_alphabetic());
            let valid_value = value
                .bytes()
                .all(|b| b == b'\t' || b == b'\r' || b == b'\n' || (0x20..=0x7e).contains(&b));
            if !valid_key || !valid_value {
                return Err(SaslError::TokenProvider(format!(
                    "invalid SASL extension {key:?}"
                )));
            }
        }
        // One allocation of exactly the message's size: growing the vector would leave
        // copies of the token behind in freed memory.
        let extensions_bytes: usize = token
            .extensions
            .iter()
            .map(|(key, value)| 2 + key.len() + value.len())
            .sum();
        let message_bytes = GS2_HEADER.len()
            + 1
            + AUTH_PREFIX.len()
            + token.value.expose().len()
            + extensions_bytes
            + 2;
        let mut message = Zeroizing::new(Vec::with_capacity(message_bytes));
        message.extend_from_slice(GS2_HEADER);
        message.push(SEPARATOR);
        message.extend_from_slice(AUTH_PREFIX);
        message.extend_from_slice(token.value.expose().as_bytes());
        for (key, value) in &token.extensions {
            message.push(SEPARATOR);
            message.extend_from_slice(format!("{key}={value}").as_bytes());
        }
        message.push(SEPARATOR);
        message.push(SEPARATOR);
        debug_assert_eq!(
            message.capacity(),
            message_bytes,
            "the message was reallocated"
        );
        self.state = State::TokenSent;
        Ok(message)
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, SaslError> {
        match &self.state {
            State::TokenSent if challenge.is_empty() => {
                self.state = State::Complete;
                Ok(None)
            }
            State::TokenSent => {
                let error = String::from_utf8_lossy(challenge).into_owned();
                self.state = State::ErrorAcknowledged(error);
                Ok(Some(Zeroizing::new(vec![SEPARATOR])))
            }
            State::ErrorAcknowledged(error) => Err(SaslError::Rejected(error.clone())),
            State::Initial | State::Complete => Err(SaslError::InvalidServerMessage(
                "a server message outside the exchange".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsecured_jwt_has_kafka_claims() {
        let provider = UnsecuredJwtProvider::new("alice");
        let token = provider.token_at(1_700_000_000_123);
        assert_eq!(token.expires_at_ms, 1_700_003_600_000);
        let value = token.value.expose().to_owned();
        let parts: Vec<&str> = value.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], "");
        assert_eq!(BASE64URL.decode(parts[0]).unwrap(), br#"{"alg":"none"}"#);
        let payload = String::from_utf8(BASE64URL.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            payload,
            r#"{"iat":1700000000,"exp":1700003600,"sub":"alice"}"#
        );
        assert!(!format!("{token:?}").contains(&value));
    }

    #[test]
    fn client_message_and_error_flow() {
        let mut provider = UnsecuredJwtProvider::new("a\"b");
        provider.extensions.insert("traceId".into(), "123".into());
        let expected_token = provider.token_at(0).value.expose().to_owned();
        #[derive(Debug)]
        struct Fixed(OAuthBearerToken);
        impl TokenProvider for Fixed {
            fn token(&self) -> Result<OAuthBearerToken, String> {
                Ok(self.0.clone())
            }
        }
        let mut client = OAuthBearerClient::new(Arc::new(Fixed(provider.token_at(0))));
        let first = client.initial_response().unwrap();
        let expected = format!("n,,\u{1}auth=Bearer {expected_token}\u{1}traceId=123\u{1}\u{1}");
        assert_eq!(&first[..], expected.as_bytes());
        assert_eq!(
            first.capacity(),
            first.len(),
            "one exact allocation holds the token"
        );
        let ack = client.evaluate(br#"{"status":"invalid_token"}"#).unwrap();
        assert_eq!(ack.as_deref().map(|v| &v[..]), Some(&[SEPARATOR][..]));
        assert_eq!(
            client.evaluate(b"").unwrap_err(),
            SaslError::Rejected(r#"{"status":"invalid_token"}"#.into())
        );

        let mut client = OAuthBearerClient::new(Arc::new(Fixed(provider.token_at(0))));
        client.initial_response().unwrap();
        assert_eq!(client.evaluate(b"").unwrap(), None);
    }

    #[test]
    fn invalid_extensions_are_refused() {
        let mut provider = UnsecuredJwtProvider::new("a");
        provider.extensions.insert("auth".into(), "x".into());
        let mut client = OAuthBearerClient::new(Arc::new(provider));
        assert!(matches!(
            client.initial_response(),
            Err(SaslError::TokenProvider(_))
        ));
    }
}
