//! The checks Kafka's client applies to a token before using it (`ClientJwtValidator`): the
//! token is not verified (the client holds no keys; the broker verifies the signature) but it
//! must be a three-part JWT whose payload has a numeric `exp`, a non-blank subject under
//! `sasl.oauthbearer.sub.claim.name` and, if present, a non-negative `iat` and a scope under
//! `sasl.oauthbearer.scope.claim.name` (a space-separated string or a list of strings).

use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use base64::Engine;
use serde_json::Value;
use zeroize::Zeroizing;

/// What the client learns from a valid token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ValidatedJwt {
    /// `exp`, in Unix milliseconds.
    pub(crate) expires_at_ms: i64,
    /// `iat`, in Unix milliseconds, if present.
    pub(crate) issued_at_ms: Option<i64>,
    /// The subject claim: the principal the broker will see.
    pub(crate) subject: String,
    /// The scope claim, if present.
    pub(crate) scope: Vec<String>,
}

/// Validates `token` as Java's `ClientJwtValidator.validate` does. Errors carry Java's
/// "Could not validate the access token" prefix and never the token itself.
pub(crate) fn validate(
    token: &str,
    scope_claim_name: &str,
    sub_claim_name: &str,
) -> Result<ValidatedJwt, String> {
    let fail = |why: &str| format!("Could not validate the access token: {why}");
    let parts: Vec<&str> = token.trim().split('.').collect();
    if parts.len() != 3 {
        return Err(fail(
            "malformed JWT provided; expected three sections (header, payload, and signature)",
        ));
    }
    let payload = Zeroizing::new(
        BASE64URL
            .decode(parts[1].trim_end_matches('='))
            .map_err(|_| fail("the payload section is not base64url"))?,
    );
    let claims: Value = serde_json::from_slice(&payload)
        .map_err(|_| fail("the payload section is not a JSON object"))?;
    let claims = claims
        .as_object()
        .ok_or_else(|| fail("the payload section is not a JSON object"))?;

    let scope = match claims.get(scope_claim_name) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(scope)) => scope
            .split(' ')
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| fail(&format!("{scope_claim_name} value must be strings")))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(fail(&format!(
                "{scope_claim_name} value must be a string or a list of strings"
            )))
        }
    };
    let expires_at_ms = match claims.get("exp") {
        None | Some(Value::Null) => return Err(fail("exp value must be non-null")),
        Some(exp) => seconds_to_ms(exp).ok_or_else(|| {
            fail("exp value must be non-negative; value given was not a non-negative number")
        })?,
    };
    let issued_at_ms = match claims.get("iat") {
        None | Some(Value::Null) => None,
        Some(iat) => Some(seconds_to_ms(iat).ok_or_else(|| {
            fail(
                "iat value must be null or non-negative; value given was not a non-negative number",
            )
        })?),
    };
    let subject = match claims.get(sub_claim_name) {
        Some(Value::String(sub)) if !sub.trim().is_empty() => sub.trim().to_owned(),
        Some(Value::String(_)) => {
            return Err(fail(&format!(
                "{sub_claim_name} value must not contain only whitespace"
            )))
        }
        _ => return Err(fail(&format!("{sub_claim_name} value must be non-null"))),
    };
    Ok(ValidatedJwt {
        expires_at_ms,
        issued_at_ms,
        subject,
        scope,
    })
}

/// A NumericDate claim (seconds, possibly fractional) in milliseconds; `None` if it is not a
/// non-negative number.
fn seconds_to_ms(value: &Value) -> Option<i64> {
    let seconds = value.as_f64()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return None;
    }
    // Java: `(long) (number.doubleValue() * 1000)`, which saturates like `as`.
    #[allow(clippy::cast_possible_truncation)]
    let ms = (seconds * 1000.0) as i64;
    Some(ms)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An unsecured (`alg: none`) JWT with these claims.
    pub(crate) fn jwt(claims: &str) -> String {
        format!(
            "{}.{}.",
            BASE64URL.encode(br#"{"alg":"none"}"#),
            BASE64URL.encode(claims.as_bytes())
        )
    }

    #[test]
    fn accepts_kafka_style_tokens() {
        let token = jwt(r#"{"sub":"svc","exp":1700003600,"iat":1700000000,"scope":"a b"}"#);
        let valid = validate(&token, "scope", "sub").unwrap();
        assert_eq!(
            valid,
            ValidatedJwt {
                expires_at_ms: 1_700_003_600_000,
                issued_at_ms: Some(1_700_000_000_000),
                subject: "svc".into(),
                scope: vec!["a".into(), "b".into()],
            }
        );
        // Claim names come from the configuration; list scopes and fractional times work.
        let token = jwt(r#"{"client_id":"svc","exp":1.5,"scp":["x","y"]}"#);
        let valid = validate(&token, "scp", "client_id").unwrap();
        assert_eq!(valid.expires_at_ms, 1_500);
        assert_eq!(valid.issued_at_ms, None);
        assert_eq!(valid.scope, ["x", "y"]);
    }

    #[test]
    fn refuses_what_java_refuses_without_echoing_the_token() {
        let cases = [
            ("abc.def".to_owned(), "three sections"),
            ("a.!!!.c".to_owned(), "base64url"),
            (jwt("[1]"), "JSON object"),
            (jwt(r#"{"sub":"s"}"#), "exp value must be non-null"),
            (
                jwt(r#"{"sub":"s","exp":-1}"#),
                "exp value must be non-negative",
            ),
            (
                jwt(r#"{"sub":"s","exp":"soon"}"#),
                "exp value must be non-negative",
            ),
            (jwt(r#"{"sub":"s","exp":1,"iat":-5}"#), "iat value"),
            (jwt(r#"{"exp":1}"#), "sub value must be non-null"),
            (jwt(r#"{"sub":"  ","exp":1}"#), "only whitespace"),
            (jwt(r#"{"sub":"s","exp":1,"scope":7}"#), "scope value"),
            (jwt(r#"{"sub":"s","exp":1,"scope":[7]}"#), "scope value"),
        ];
        for (token, expected) in cases {
            let error = validate(&token, "scope", "sub").unwrap_err();
            assert!(error.starts_with("Could not validate the access token: "));
            assert!(error.contains(expected), "{token}: {error}");
            assert!(!error.contains(&token), "{error}");
        }
    }
}
