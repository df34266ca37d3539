//! SASL/OAUTHBEARER (RFC 7628, KIP-255), server side, as Kafka's `OAuthBearerSaslServer` with
//! the `OAuthBearerUnsecuredValidatorCallbackHandler`: the token is an unsecured JWS
//! (`alg: none`, empty signature) whose claims are checked for the principal (`sub`), `iat`,
//! `exp` (with the allowable clock skew) and the required scope.
//!
//! A refused token is not an error response at once: the server answers with a JSON error
//! document (`{"status":"invalid_token"}`), the client acknowledges it with a single `0x01`,
//! and only then does the server fail the exchange, with the document as the message.

use std::collections::BTreeSet;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use kafka_consumer::rt::SeededRng;
use serde_json::{Map, Value};

use super::{
    Completed, Evaluated, MechanismError, MechanismServer, SaslServerConfig,
    UnsecuredValidatorConfig,
};

const SEPARATOR: char = '\u{1}';

#[derive(Debug, Default)]
pub(crate) struct OAuthBearerServer {
    /// The error document sent for a refused token, awaiting the client's `0x01`.
    error_document: Option<String>,
    complete: bool,
}

impl MechanismServer for OAuthBearerServer {
    fn evaluate(
        &mut self,
        response: &[u8],
        now_ms: i64,
        config: &SaslServerConfig,
        _rng: &mut SeededRng,
    ) -> Result<Evaluated, MechanismError> {
        if response == [0x01] {
            if let Some(document) = self.error_document.take() {
                return Err(MechanismError::Authentication(document));
            }
        }
        self.error_document = None;
        if self.complete {
            return Err(MechanismError::Sasl(
                "OAUTHBEARER already complete".to_owned(),
            ));
        }
        let initial = InitialResponse::parse(&String::from_utf8_lossy(response))?;
        let token = match validate(&initial.token, now_ms, &config.oauthbearer) {
            Ok(token) => token,
            Err(refusal) => {
                let document = refusal.document();
                self.error_document = Some(document.clone());
                return Ok(Evaluated {
                    challenge: document.into_bytes(),
                    completed: None,
                });
            }
        };
        if !initial.authorization_id.is_empty() && initial.authorization_id != token.principal {
            return Err(MechanismError::Authentication(format!(
                "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                initial.authorization_id, token.principal
            )));
        }
        self.complete = true;
        Ok(Evaluated {
            challenge: Vec::new(),
            completed: Some(Completed {
                principal: token.principal,
                credential_expires_at_ms: Some(token.expires_at_ms),
            }),
        })
    }
}

/// `n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]*^A`.
struct InitialResponse {
    authorization_id: String,
    token: String,
}

impl InitialResponse {
    fn parse(message: &str) -> Result<Self, MechanismError> {
        let invalid = |why: &str| {
            MechanismError::Sasl(format!("Invalid OAUTHBEARER client first message{why}"))
        };
        let rest = message.strip_prefix("n,").ok_or_else(|| invalid(""))?;
        let (authzid, rest) = rest.split_once(',').ok_or_else(|| invalid(""))?;
        let authorization_id = match authzid {
            "" => String::new(),
            a => a.strip_prefix("a=").ok_or_else(|| invalid(""))?.to_owned(),
        };
        let pairs = rest
            .strip_prefix(SEPARATOR)
            .and_then(|r| r.strip_suffix(SEPARATOR))
            .ok_or_else(|| invalid(""))?;
        // Each pair ends with the separator: `^Akey=value^A…^A^A`.
        if !pairs.is_empty() && !pairs.ends_with(SEPARATOR) {
            return Err(invalid(""));
        }
        let mut auth = None;
        for pair in pairs.split_terminator(SEPARATOR) {
            let (key, value) = pair.split_once('=').ok_or_else(|| invalid(""))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(invalid(""));
            }
            if key == "auth" {
                auth = Some(value);
            }
        }
        let auth = auth.ok_or_else(|| invalid(": 'auth' not specified"))?;
        let (scheme, token) = auth
            .split_once(' ')
            .ok_or_else(|| invalid(": invalid 'auth' format"))?;
        let token = token.trim_start_matches(' ');
        let token_chars = |b: u8| b.is_ascii_alphanumeric() || b"-_~+/.=".contains(&b);
        if token.is_empty() || !token.bytes().all(token_chars) {
            return Err(invalid(": invalid 'auth' format"));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(MechanismError::Sasl(format!(
                "Invalid scheme in OAUTHBEARER client first message: {scheme}"
            )));
        }
        Ok(Self {
            authorization_id,
            token: token.to_owned(),
        })
    }
}

/// A validated token.
#[derive(Debug, PartialEq, Eq)]
struct Token {
    principal: String,
    expires_at_ms: i64,
}

/// Why the validator refused a token (Kafka's `OAuthBearerValidationResult` failure).
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    description: String,
    /// Set for `insufficient_scope`: the required scope, as Java's `List.toString`.
    scope: Option<String>,
}

impl Refusal {
    fn invalid(description: impl Into<String>) -> Self {
        Self {
            description: description.into(),
            scope: None,
        }
    }

    /// `OAuthBearerSaslServer.jsonErrorResponse`.
    fn document(&self) -> String {
        match &self.scope {
            None => "{\"status\":\"invalid_token\"}".to_owned(),
            Some(scope) => format!("{{\"status\":\"insufficient_scope\", \"scope\":\"{scope}\"}}"),
        }
    }
}

/// `OAuthBearerUnsecuredValidatorCallbackHandler.handleCallback`.
fn validate(token: &str, now_ms: i64, config: &UnsecuredValidatorConfig) -> Result<Token, Refusal> {
    if token.contains("..") {
        return Err(Refusal::invalid(
            "Malformed compact serialization contains '..'",
        ));
    }
    let mut splits: Vec<&str> = token.split('.').collect();
    if splits.len() == 2 && token.ends_with('.') {
        splits.push("");
    }
    if splits.len() != 3 {
        return Err(Refusal::invalid(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values",
        ));
    }
    let header = json_object(splits[0])?;
    let claims = json_object(splits[1])?;
    if header.get("alg").and_then(Value::as_str) != Some("none") {
        return Err(Refusal::invalid(
            "Unsecured JWS must have 'none' for an algorithm",
        ));
    }
    if !splits[2].is_empty() {
        return Err(Refusal::invalid(
            "Unsecured JWS must not contain a digital signature",
        ));
    }
    let number = |name: &str| -> Result<Option<f64>, Refusal> {
        match claims.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(Refusal::invalid(format!(
                "The '{name}' claim was not of type Number: {other}"
            ))),
        }
    };
    let expiration_s =
        number("exp")?.ok_or_else(|| Refusal::invalid("No expiration time in JWT"))?;
    let principal = match claims.get(&config.principal_claim_name) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) | None => {
            return Err(Refusal::invalid(format!(
                "No principal name in JWT claim: {}",
                config.principal_claim_name
            )))
        }
        Some(_) => {
            return Err(Refusal::invalid(format!(
                "The {} claim had the incorrect type",
                config.principal_claim_name
            )))
        }
    };
    let skew_ms = config.allowable_clock_skew_ms.max(0) as f64;
    let now = now_ms as f64;
    let issued_s = number("iat")?;
    if let Some(issued_s) = issued_s {
        if 1000.0 * issued_s > now + skew_ms {
            return Err(Refusal::invalid(format!(
                "The Issued At value ({issued_s:.6} seconds) was after the indicated time ({now_ms} ms) plus allowable clock skew ({} ms)",
                config.allowable_clock_skew_ms
            )));
        }
    }
    if now - skew_ms >= 1000.0 * expiration_s {
        return Err(Refusal::invalid(format!(
            "The indicated time ({now_ms} ms) minus allowable clock skew ({} ms) was on or after the Expiration Time value ({expiration_s:.6} seconds)",
            config.allowable_clock_skew_ms
        )));
    }
    if issued_s.is_some_and(|issued_s| expiration_s <= issued_s) {
        return Err(Refusal::invalid(
            "The Expiration Time time was not after the Issued At time",
        ));
    }
    let scope: BTreeSet<String> = match claims.get(&config.scope_claim_name) {
        None => BTreeSet::new(),
        Some(Value::String(s)) => s
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(other) => {
            return Err(Refusal::invalid(format!(
                "The '{}' claim was not of type String or List: {other}",
                config.scope_claim_name
            )))
        }
    };
    if let Some(missing) = config.required_scope.iter().find(|s| !scope.contains(*s)) {
        return Err(Refusal {
            description: format!("The provided scope was missing a required scope ({missing})"),
            scope: Some(format!("[{}]", config.required_scope.join(", "))),
        });
    }
    Ok(Token {
        principal,
        expires_at_ms: (expiration_s * 1000.0) as i64,
    })
}

/// A JWS part: Base64URL (Kafka also takes the padded and standard alphabets) of a JSON object.
fn json_object(part: &str) -> Result<Map<String, Value>, Refusal> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .or_else(|_| STANDARD.decode(part))
        .map_err(|_| Refusal::invalid("malformed Base64 URL encoded value"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Refusal::invalid("malformed JSON")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: i64 = 1_700_000_000_000;

    fn jws(claims: &str) -> String {
        format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(claims.as_bytes())
        )
    }

    fn initial(token: &str) -> Vec<u8> {
        format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
    }

    fn evaluate(
        server: &mut OAuthBearerServer,
        config: &SaslServerConfig,
        message: &[u8],
    ) -> Result<Evaluated, MechanismError> {
        server.evaluate(message, NOW_MS, config, &mut SeededRng::seed_from_u64(1))
    }

    #[test]
    fn a_valid_token_completes_with_its_expiry() {
        let config = SaslServerConfig::sasl_plaintext();
        let token = jws(r#"{"sub":"alice","iat":1699999990,"exp":1700000060}"#);
        let done = evaluate(&mut OAuthBearerServer::default(), &config, &initial(&token)).unwrap();
        assert_eq!(
            done.completed,
            Some(Completed {
                principal: "alice".to_owned(),
                credential_expires_at_ms: Some(1_700_000_060_000)
            })
        );
    }

    #[test]
    fn an_expired_token_gets_the_error_document_then_fails_on_the_acknowledgement() {
        let config = SaslServerConfig::sasl_plaintext();
        let mut server = OAuthBearerServer::default();
        let token = jws(r#"{"sub":"alice","exp":1700000000}"#);
        let first = evaluate(&mut server, &config, &initial(&token)).unwrap();
        assert_eq!(first.challenge, br#"{"status":"invalid_token"}"#);
        assert!(first.completed.is_none());
        assert_eq!(
            evaluate(&mut server, &config, &[0x01]).unwrap_err(),
            MechanismError::Authentication(r#"{"status":"invalid_token"}"#.to_owned())
        );
    }

    #[test]
    fn missing_scope_is_insufficient_scope() {
        let mut config = SaslServerConfig::sasl_plaintext();
        config.oauthbearer.required_scope = vec!["kafka".to_owned(), "read".to_owned()];
        let token = jws(r#"{"sub":"alice","exp":1800000000,"scope":["kafka"]}"#);
        let first = evaluate(&mut OAuthBearerServer::default(), &config, &initial(&token)).unwrap();
        assert_eq!(
            String::from_utf8(first.challenge).unwrap(),
            r#"{"status":"insufficient_scope", "scope":"[kafka, read]"}"#
        );
        let token = jws(r#"{"sub":"alice","exp":1800000000,"scope":"read kafka"}"#);
        assert!(
            evaluate(&mut OAuthBearerServer::default(), &config, &initial(&token))
                .unwrap()
                .completed
                .is_some()
        );
    }

    #[test]
    fn claims_are_checked_as_kafka_does() {
        let config = SaslServerConfig::sasl_plaintext();
        let refused =
            |claims: &str| validate(&jws(claims), NOW_MS, &config.oauthbearer).unwrap_err();
        assert_eq!(
            refused(r#"{"sub":"a"}"#).description,
            "No expiration time in JWT"
        );
        assert_eq!(
            refused(r#"{"exp":1800000000}"#).description,
            "No principal name in JWT claim: sub"
        );
        assert!(refused(r#"{"sub":"a","exp":1800000000,"iat":1800000001}"#)
            .description
            .starts_with("The Issued At value"));
        let signed = format!("{}sig", jws(r#"{"sub":"a","exp":1800000000}"#));
        assert_eq!(
            validate(&signed, NOW_MS, &config.oauthbearer)
                .unwrap_err()
                .description,
            "Unsecured JWS must not contain a digital signature"
        );
        let mut skewed = config.oauthbearer.clone();
        skewed.allowable_clock_skew_ms = 5_000;
        assert!(validate(&jws(r#"{"sub":"a","exp":1699999998}"#), NOW_MS, &skewed).is_ok());
    }

    #[test]
    fn malformed_initial_responses_are_sasl_exceptions() {
        let config = SaslServerConfig::sasl_plaintext();
        for bad in [
            &b"auth=Bearer x"[..],
            b"n,,\x01auth=Bearer x\x01",
            b"n,,\x01\x01",
            b"n,,\x01auth=Basic abc\x01\x01",
        ] {
            assert!(
                matches!(
                    evaluate(&mut OAuthBearerServer::default(), &config, bad),
                    Err(MechanismError::Sasl(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn authorization_id_must_match_the_principal() {
        let config = SaslServerConfig::sasl_plaintext();
        let token = jws(r#"{"sub":"alice","exp":1800000000}"#);
        let message = format!("n,a=bob,\u{1}auth=Bearer {token}\u{1}\u{1}");
        assert!(matches!(
            evaluate(&mut OAuthBearerServer::default(), &config, message.as_bytes()),
            Err(MechanismError::Authentication(m)) if m.contains("(bob)") && m.contains("(alice)")
        ));
    }
}
