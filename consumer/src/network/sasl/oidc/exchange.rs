//! The client-credentials exchange without I/O: the request Kafka's
//! `ClientCredentialsRequestFormatter` sends and the reading of the answer
//! (`HttpJwtRetriever.handleOutput`, `JwtResponseParser`).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::Value;

use crate::network::secret::Secret;

/// The client's credentials and the scope it asks for.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ClientCredentials {
    pub(crate) client_id: String,
    pub(crate) client_secret: Secret,
    pub(crate) scope: Option<String>,
    /// `sasl.oauthbearer.header.urlencode`: URL-encode the id and secret inside the Basic
    /// credentials (RFC 6749 §2.3.1 asks for it; many providers do not expect it).
    pub(crate) url_encode_header: bool,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .field("url_encode_header", &self.url_encode_header)
            .finish()
    }
}

impl ClientCredentials {
    /// The `Authorization` header value: `Basic base64(id:secret)`.
    pub(crate) fn authorization(&self) -> Secret {
        let (id, secret) = if self.url_encode_header {
            (
                form_urlencode(&self.client_id),
                zeroize::Zeroizing::new(form_urlencode(self.client_secret.expose())),
            )
        } else {
            (
                self.client_id.clone(),
                zeroize::Zeroizing::new(self.client_secret.expose().to_owned()),
            )
        };
        let pair = zeroize::Zeroizing::new(format!("{id}:{}", secret.as_str()));
        Secret::new(format!("Basic {}", BASE64.encode(pair.as_bytes())))
    }

    /// The form body: `grant_type=client_credentials`, and the scope if one is set.
    pub(crate) fn body(&self) -> String {
        let mut body = "grant_type=client_credentials".to_owned();
        if let Some(scope) = self.scope.as_deref().filter(|s| !s.trim().is_empty()) {
            body.push_str("&scope=");
            body.push_str(&form_urlencode(scope.trim()));
        }
        body
    }
}

/// `application/x-www-form-urlencoded` as Java's `URLEncoder.encode(s, UTF_8)` writes it:
/// letters, digits and `.-*_` stay, space becomes `+`, every other byte `%XX`.
pub(crate) fn form_urlencode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// How one HTTP attempt ended, before any retry decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// Worth retrying: an I/O failure, a timeout, a 5xx or other unexpected status.
    Retriable(String),
    /// Not worth retrying: a 4xx (bad credentials, unknown client), an unusable answer.
    Fatal(String),
}

impl FetchError {
    #[cfg(test)]
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::Retriable(message) | Self::Fatal(message) => message,
        }
    }
}

/// Longest stretch of a response body quoted in an error.
const MAX_QUOTED_CHARS: usize = 1000;

/// Reads an HTTP answer: 200 and 201 carry the token; 4xx is final; anything else retriable.
/// Returns the access token, still unvalidated, and `expires_in` if the answer had one.
pub(crate) fn read_response(status: u16, body: &str) -> Result<(Secret, Option<i64>), FetchError> {
    if status == 200 || status == 201 {
        if body.trim().is_empty() {
            return Err(FetchError::Retriable(format!(
                "The token endpoint response was unexpectedly empty despite response code {status}"
            )));
        }
        return parse_token_response(body).map_err(FetchError::Fatal);
    }
    let error = format_error_body(body);
    if (400..500).contains(&status) {
        Err(FetchError::Fatal(format!(
            "The response code {status} and error response {error} was encountered reading the \
             token endpoint response; will not attempt further retries"
        )))
    } else {
        Err(FetchError::Retriable(format!(
            "The unexpected response code {status} and error message {error} was encountered \
             reading the token endpoint response"
        )))
    }
}

/// `access_token` (or, as Kafka 4.1 also accepts, `id_token`) from the JSON answer. The error
/// quotes the answer only when it held no token, so a token never lands in a log.
fn parse_token_response(body: &str) -> Result<(Secret, Option<i64>), String> {
    let no_jwt = || {
        format!(
            "The token endpoint response did not contain a valid JWT. Response: ({})",
            quoted(body)
        )
    };
    let json: Value = serde_json::from_str(body).map_err(|_| no_jwt())?;
    let token = ["access_token", "id_token"]
        .iter()
        .find_map(|name| {
            json.get(name)
                .and_then(Value::as_str)
                .filter(|t| !t.trim().is_empty())
        })
        .ok_or_else(no_jwt)?;
    let expires_in = match json.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_i64()
                .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
                .filter(|seconds| *seconds >= 0)
                .ok_or_else(|| {
                    "The token endpoint response has an expires_in that is not a non-negative \
                     number of seconds"
                        .to_owned()
                })?,
        ),
    };
    Ok((Secret::new(token.trim()), expires_in))
}

/// The error document of a failed answer, as Java's `formatErrorMessage` shows it:
/// `{error - error_description}`, Okta's `{errorCode - errorSummary}`, or the body itself.
fn format_error_body(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        for (code, description) in [
            ("error", "error_description"),
            ("errorCode", "errorSummary"),
        ] {
            if let Some(code) = json.get(code).and_then(Value::as_str) {
                let description = json.get(description).and_then(Value::as_str).unwrap_or("");
                return if description.is_empty() {
                    format!("{{{}}}", quoted(code))
                } else {
                    format!("{{{} - {}}}", quoted(code), quoted(description))
                };
            }
        }
    }
    format!("{{{}}}", quoted(body.trim()))
}

fn quoted(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_QUOTED_CHARS {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX_QUOTED_CHARS).collect();
        format!("{head} (trimmed to first {MAX_QUOTED_CHARS} characters out of {total} total)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(url_encode_header: bool) -> ClientCredentials {
        ClientCredentials {
            client_id: "my client".into(),
            client_secret: Secret::new("s3:cr&t"),
            scope: Some("read write".into()),
            url_encode_header,
        }
    }

    #[test]
    fn request_is_what_kafka_sends() {
        let plain = credentials(false);
        assert_eq!(
            plain.body(),
            "grant_type=client_credentials&scope=read+write"
        );
        assert_eq!(
            plain.authorization().expose(),
            format!("Basic {}", BASE64.encode("my client:s3:cr&t"))
        );
        let encoded = credentials(true);
        assert_eq!(
            encoded.authorization().expose(),
            format!("Basic {}", BASE64.encode("my+client:s3%3Acr%26t"))
        );
        let unscoped = ClientCredentials {
            scope: Some("  ".into()),
            ..plain
        };
        assert_eq!(unscoped.body(), "grant_type=client_credentials");
        assert!(!format!("{unscoped:?}").contains("s3:cr&t"));
    }

    #[test]
    fn java_url_encoding() {
        assert_eq!(form_urlencode("a-z.A_Z*09"), "a-z.A_Z*09");
        assert_eq!(form_urlencode("a b/c=d~é"), "a+b%2Fc%3Dd%7E%C3%A9");
    }

    #[test]
    fn tokens_are_read_from_success_answers() {
        let (token, expires_in) = read_response(
            200,
            r#"{"access_token":"h.p.s","token_type":"Bearer","expires_in":300}"#,
        )
        .unwrap();
        assert_eq!(token.expose(), "h.p.s");
        assert_eq!(expires_in, Some(300));
        let (token, expires_in) = read_response(201, r#"{"id_token":"i.d.t"}"#).unwrap();
        assert_eq!((token.expose(), expires_in), ("i.d.t", None));
        assert!(matches!(
            read_response(200, ""),
            Err(FetchError::Retriable(_))
        ));
        let error = read_response(200, r#"{"token_type":"Bearer"}"#).unwrap_err();
        assert!(
            matches!(&error, FetchError::Fatal(m) if m.contains("did not contain a valid JWT"))
        );
        assert!(matches!(
            read_response(200, r#"{"access_token":"a.b.c","expires_in":-1}"#),
            Err(FetchError::Fatal(_))
        ));
    }

    #[test]
    fn client_errors_are_final_and_quote_the_answer() {
        let error = read_response(
            401,
            r#"{"error":"invalid_client","error_description":"bad secret"}"#,
        )
        .unwrap_err();
        assert_eq!(
            error,
            FetchError::Fatal(
                "The response code 401 and error response {invalid_client - bad secret} was \
                 encountered reading the token endpoint response; will not attempt further \
                 retries"
                    .into()
            )
        );
        let error =
            read_response(400, r#"{"errorCode":"E0001","errorSummary":"nope"}"#).unwrap_err();
        assert!(error.message().contains("{E0001 - nope}"));
        let error = read_response(403, "forbidden\n").unwrap_err();
        assert!(error.message().contains("{forbidden}"));
    }

    #[test]
    fn server_errors_are_retriable_and_long_bodies_trimmed() {
        let body = "x".repeat(5000);
        let error = read_response(503, &body).unwrap_err();
        let FetchError::Retriable(message) = error else {
            panic!("a 503 must be retriable");
        };
        assert!(message.contains("trimmed to first 1000 characters out of 5000 total"));
        assert!(matches!(
            read_response(302, ""),
            Err(FetchError::Retriable(_))
        ));
    }
}
