//! The one HTTP POST of a token fetch, over ureq on rustls with ring (the same TLS stack as
//! the broker connections; server certificates are checked against the Mozilla roots of
//! `webpki-roots`). Runs only on the provider's refresh thread or in `login`, never on the
//! consumer's network task.

use std::time::Duration;

use super::exchange::{ClientCredentials, FetchError};

/// Timeouts of one attempt: `sasl.login.connect.timeout.ms`, `sasl.login.read.timeout.ms`
/// (unset: none, as Java's `HttpURLConnection` defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Timeouts {
    pub(crate) connect_ms: Option<u64>,
    pub(crate) read_ms: Option<u64>,
}

/// A reusable client for one endpoint.
pub(crate) struct HttpClient {
    agent: ureq::Agent,
}

impl HttpClient {
    /// `trusted`: DER CA certificates to trust instead of the Mozilla roots.
    pub(crate) fn new(timeouts: Timeouts, trusted: Option<&[Vec<u8>]>) -> Self {
        let roots = match trusted {
            Some(certificates) => {
                let certificates: Vec<ureq::tls::Certificate<'static>> = certificates
                    .iter()
                    .map(|der| ureq::tls::Certificate::from_der(der).to_owned())
                    .collect();
                ureq::tls::RootCerts::new_with_certs(&certificates)
            }
            None => ureq::tls::RootCerts::WebPki,
        };
        let tls = ureq::tls::TlsConfig::builder().root_certs(roots).build();
        let config = ureq::Agent::config_builder()
            .tls_config(tls)
            // Statuses are read by `exchange::read_response`, not turned into errors here.
            .http_status_as_error(false)
            // No redirects: the allow-list names the one URL the client may contact, and a
            // redirect would lead the credentials elsewhere. A 3xx is retried as unexpected.
            .max_redirects(0)
            // Direct connections, as Java's `HttpURLConnection` makes without proxy system
            // properties; ureq would otherwise pick a proxy from the environment.
            .proxy(None)
            .timeout_connect(timeouts.connect_ms.map(Duration::from_millis))
            .timeout_recv_response(timeouts.read_ms.map(Duration::from_millis))
            .timeout_recv_body(timeouts.read_ms.map(Duration::from_millis))
            .build();
        Self {
            agent: config.into(),
        }
    }

    /// POSTs the client-credentials request; the status and body of the answer, or a
    /// retriable I/O error.
    pub(crate) fn post(
        &self,
        url: &str,
        credentials: &ClientCredentials,
    ) -> Result<(u16, String), FetchError> {
        let authorization = credentials.authorization();
        let response = self
            .agent
            .post(url)
            .header("Accept", "application/json")
            .header("Cache-Control", "no-cache")
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Authorization", authorization.expose())
            .send(credentials.body());
        let mut response = response.map_err(|error| {
            FetchError::Retriable(format!("token endpoint request failed: {error}"))
        })?;
        let status = response.status().as_u16();
        let body = response.body_mut().read_to_string().map_err(|error| {
            FetchError::Retriable(format!(
                "reading the token endpoint response failed: {error}"
            ))
        })?;
        Ok((status, body))
    }
}
