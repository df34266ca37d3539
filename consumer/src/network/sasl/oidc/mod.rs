//! OAUTHBEARER tokens from an OAuth 2 token endpoint with the client-credentials grant: Kafka's
//! `OAuthBearerLoginCallbackHandler` with its `ClientCredentialsJwtRetriever` (KIP-768) and
//! `FileJwtRetriever`, refreshed the way `ExpiringCredentialRefreshingLogin` refreshes them.
//!
//! [`TokenProvider::token`] is called by the consumer's network task, which must never wait on
//! another network, so it only reads a cached token. The first token is fetched by
//! [`TokenProvider::login`] when the consumer is constructed (Java logs in when it builds the
//! client's channel), so a wrong secret or an unreachable endpoint fails the constructor with
//! a typed error; afterwards a thread of the provider's own refreshes the token ahead of its
//! expiry ([`refresh`] decides when) and, when a refresh fails, keeps the old token until it
//! expires and tries again 10 seconds later.
//!
//! Only in real mode: under `--cfg madsim` the module is absent, because a real HTTP exchange
//! on an OS thread cannot run inside the deterministic simulation (its clock and network are
//! virtual). Simulated OAUTHBEARER uses [`UnsecuredJwtProvider`](super::UnsecuredJwtProvider)
//! or an application [`TokenProvider`].

mod allow_list;
mod exchange;
mod http;
mod jwt;
mod refresh;
mod retry;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub use allow_list::{ALLOWED_URLS_ENV, ALLOWED_URLS_PROPERTY};
pub use refresh::RefreshConfig;

use self::allow_list::{AllowedUrls, Endpoint, TOKEN_ENDPOINT_URL};
use self::exchange::{ClientCredentials, FetchError};
use self::http::{HttpClient, Timeouts};
use self::refresh::{Lifetime, RETRY_AFTER_FAILED_REFRESH_MS};
use self::retry::RetryBudget;
use super::{OAuthBearerToken, TokenProvider};
use crate::network::secret::Secret;
use crate::rt::{wall_clock_ms, SeededRng};

/// Kafka's login callback handler classes that fetch tokens from a token endpoint: 4.x's and
/// the 3.x name it replaced. `sasl.login.callback.handler.class` accepts these.
pub const LOGIN_CALLBACK_HANDLER_CLASSES: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];

/// Why a provider could not be built or could not fetch a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// A setting is invalid; `key` is Kafka's name for it.
    #[error("invalid value for configuration `{key}`: {message}")]
    Config {
        /// The configuration key.
        key: &'static str,
        /// What is wrong (Kafka's message where Kafka has one); never a secret.
        message: String,
    },
    /// No token could be fetched.
    #[error("fetching a token from {endpoint} failed: {message}")]
    Fetch {
        /// The token endpoint URL.
        endpoint: String,
        /// The last failure: the endpoint's error document for a 4xx, the I/O error, or why
        /// the token was refused.
        message: String,
    },
}

/// Builds an [`OidcTokenProvider`]; each setter is named after the Kafka key it stands for.
#[derive(Clone)]
pub struct OidcTokenProviderBuilder {
    url: String,
    client_id: Option<String>,
    client_secret: Option<Secret>,
    scope: Option<String>,
    scope_claim_name: String,
    sub_claim_name: String,
    header_urlencode: bool,
    timeouts: Timeouts,
    retry_backoff_ms: u64,
    retry_backoff_max_ms: u64,
    refresh: RefreshConfig,
    allowed_urls: Option<AllowedUrls>,
    extensions: BTreeMap<String, String>,
    trusted_pem: Option<String>,
}

impl fmt::Debug for OidcTokenProviderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcTokenProviderBuilder")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl OidcTokenProviderBuilder {
    /// `sasl.oauthbearer.client.credentials.client.id` (JAAS option `clientId`).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// `sasl.oauthbearer.client.credentials.client.secret` (JAAS option `clientSecret`).
    pub fn client_secret(mut self, client_secret: impl Into<Secret>) -> Self {
        self.client_secret = Some(client_secret.into());
        self
    }

    /// `sasl.oauthbearer.scope` (JAAS option `scope`): sent with the request if set.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// `sasl.oauthbearer.scope.claim.name` (default `scope`).
    pub fn scope_claim_name(mut self, name: impl Into<String>) -> Self {
        self.scope_claim_name = name.into();
        self
    }

    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub fn sub_claim_name(mut self, name: impl Into<String>) -> Self {
        self.sub_claim_name = name.into();
        self
    }

    /// `sasl.oauthbearer.header.urlencode` (default false).
    pub fn header_urlencode(mut self, enabled: bool) -> Self {
        self.header_urlencode = enabled;
        self
    }

    /// `sasl.login.connect.timeout.ms` (default: none).
    pub fn connect_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeouts.connect_ms = Some(timeout_ms);
        self
    }

    /// `sasl.login.read.timeout.ms` (default: none).
    pub fn read_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.timeouts.read_ms = Some(timeout_ms);
        self
    }

    /// `sasl.login.retry.backoff.ms` (default 100) and `sasl.login.retry.backoff.max.ms`
    /// (default 10000): the first wait and the whole retry budget of one fetch.
    pub fn retry_backoff_ms(mut self, backoff_ms: u64, backoff_max_ms: u64) -> Self {
        self.retry_backoff_ms = backoff_ms;
        self.retry_backoff_max_ms = backoff_max_ms;
        self
    }

    /// The `sasl.login.refresh.*` settings.
    pub fn refresh(mut self, refresh: RefreshConfig) -> Self {
        self.refresh = refresh;
        self
    }

    /// The allowed token endpoint URLs, replacing the [`ALLOWED_URLS_ENV`] environment
    /// variable (Java's `org.apache.kafka.sasl.oauthbearer.allowed.urls`).
    pub fn allowed_urls<I: IntoIterator<Item = S>, S: AsRef<str>>(mut self, urls: I) -> Self {
        self.allowed_urls = Some(AllowedUrls::from_list(urls));
        self
    }

    /// A SASL extension sent with every token (JAAS option `extension_<name>`, KIP-342).
    pub fn extension(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extensions.insert(name.into(), value.into());
        self
    }

    /// Trusts only these PEM CA certificates for an `https` endpoint (Java: the
    /// `ssl.truststore.*` JAAS options); without them the Mozilla roots are trusted.
    pub fn ssl_truststore_pem(mut self, certificates: impl Into<String>) -> Self {
        self.trusted_pem = Some(certificates.into());
        self
    }

    /// Checks the settings and the URL against the allow-list; fetches nothing yet.
    pub fn build(self) -> Result<OidcTokenProvider, OidcError> {
        let config = |key, message: String| OidcError::Config { key, message };
        let allowed = self.allowed_urls.unwrap_or_else(AllowedUrls::from_env);
        let endpoint = allow_list::parse_endpoint(self.url.trim(), &allowed)
            .map_err(|message| config(TOKEN_ENDPOINT_URL, message))?;
        let credentials = match endpoint {
            Endpoint::File(_) => None,
            Endpoint::Http(_) => {
                let client_id = self
                    .client_id
                    .map(|id| id.trim().to_owned())
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| {
                        config(
                            "sasl.oauthbearer.client.credentials.client.id",
                            "The OAuth configuration option clientId value is required".into(),
                        )
                    })?;
                let client_secret = self
                    .client_secret
                    .filter(|secret| !secret.expose().trim().is_empty())
                    .ok_or_else(|| {
                        config(
                            "sasl.oauthbearer.client.credentials.client.secret",
                            "The OAuth configuration option clientSecret value is required".into(),
                        )
                    })?;
                Some(ClientCredentials {
                    client_id,
                    client_secret,
                    scope: self.scope,
                    url_encode_header: self.header_urlencode,
                })
            }
        };
        for (key, name) in [
            ("sasl.oauthbearer.scope.claim.name", &self.scope_claim_name),
            ("sasl.oauthbearer.sub.claim.name", &self.sub_claim_name),
        ] {
            if name.trim().is_empty() {
                return Err(config(key, format!("{key} value must be non-empty")));
            }
        }
        self.refresh.validate().map_err(|message| {
            let key = message
                .split(' ')
                .next()
                .unwrap_or("sasl.login.refresh.window.factor");
            let key = [
                "sasl.login.refresh.window.factor",
                "sasl.login.refresh.window.jitter",
                "sasl.login.refresh.min.period.seconds",
                "sasl.login.refresh.buffer.seconds",
            ]
            .into_iter()
            .find(|k| *k == key)
            .unwrap_or("sasl.login.refresh.window.factor");
            config(key, message)
        })?;
        let trusted = match &self.trusted_pem {
            None => None,
            Some(pem) => Some(
                crate::network::tls::parse_certificates("ssl.truststore.certificates", pem)
                    .map_err(|error| config("ssl.truststore.certificates", error.to_string()))?
                    .into_iter()
                    .map(|der| der.as_ref().to_vec())
                    .collect::<Vec<_>>(),
            ),
        };
        Ok(OidcTokenProvider {
            shared: Arc::new(Shared {
                url: self.url.trim().to_owned(),
                endpoint,
                credentials,
                scope_claim_name: self.scope_claim_name.trim().to_owned(),
                sub_claim_name: self.sub_claim_name.trim().to_owned(),
                retry_backoff_ms: self.retry_backoff_ms,
                retry_backoff_max_ms: self.retry_backoff_max_ms,
                refresh: self.refresh,
                extensions: self.extensions,
                client: HttpClient::new(self.timeouts, trusted.as_deref()),
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
            }),
        })
    }
}

/// OAUTHBEARER tokens from an OAuth token endpoint (client credentials) or a token file, with
/// Kafka's validation, retries and refresh schedule (Kafka's
/// `OAuthBearerLoginCallbackHandler` with `ClientCredentialsJwtRetriever` and
/// `FileJwtRetriever`, KIP-768). [`TokenProvider::token`] only reads a cached token, so the
/// consumer's network task never waits on the endpoint; [`TokenProvider::login`] fetches the
/// first token when the consumer is constructed (a wrong secret or an unreachable endpoint
/// fails the constructor with a typed error); afterwards a thread of the provider's own
/// refreshes it ahead of its expiry and, when a refresh fails, keeps the old token until it
/// expires and tries again 10 seconds later.
///
/// (Not compiled as a doctest: `cargo stest` builds doctests against the simulation library,
/// where this type is absent; `builder_validates_without_fetching` covers the same calls.)
///
/// ```ignore
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use kafka_consumer::security::{OidcTokenProvider, SecurityProtocol};
/// use kafka_consumer::{Consumer, ConsumerConfig};
///
/// let provider = OidcTokenProvider::builder("https://idp.example.com/oauth2/token")
///     .client_id("orders-service")
///     .client_secret(std::env::var("CLIENT_SECRET")?)
///     .scope("kafka")
///     .allowed_urls(["https://idp.example.com/oauth2/token"])
///     .build()?;
/// let config = ConsumerConfig::builder()
///     .bootstrap_servers(["broker:9093"])
///     .security_protocol(SecurityProtocol::SaslSsl)
///     .sasl_oauthbearer(Arc::new(provider))
///     .group_id("orders")
///     .build()?;
/// let consumer = Consumer::new(config)?; // fetches the first token, or fails here
/// # drop(consumer);
/// # Ok(())
/// # }
/// ```
pub struct OidcTokenProvider {
    shared: Arc<Shared>,
}

struct Shared {
    url: String,
    endpoint: Endpoint,
    credentials: Option<ClientCredentials>,
    scope_claim_name: String,
    sub_claim_name: String,
    retry_backoff_ms: u64,
    retry_backoff_max_ms: u64,
    refresh: RefreshConfig,
    extensions: BTreeMap<String, String>,
    client: HttpClient,
    state: Mutex<State>,
    /// Wakes the refresh thread's sleeps when the provider is dropped.
    wake: Condvar,
}

#[derive(Default)]
struct State {
    held: Option<Held>,
    last_error: Option<String>,
    refresher_started: bool,
    stopped: bool,
}

#[derive(Clone)]
struct Held {
    token: OAuthBearerToken,
    lifetime: Lifetime,
}

impl OidcTokenProvider {
    /// A builder for the token endpoint `url` (`sasl.oauthbearer.token.endpoint.url`:
    /// `https://`, `http://`, or `file:` for a file holding the token).
    pub fn builder(url: impl Into<String>) -> OidcTokenProviderBuilder {
        OidcTokenProviderBuilder {
            url: url.into(),
            client_id: None,
            client_secret: None,
            scope: None,
            scope_claim_name: "scope".to_owned(),
            sub_claim_name: "sub".to_owned(),
            header_urlencode: false,
            timeouts: Timeouts::default(),
            retry_backoff_ms: 100,
            retry_backoff_max_ms: 10_000,
            refresh: RefreshConfig::default(),
            allowed_urls: None,
            extensions: BTreeMap::new(),
            trusted_pem: None,
        }
    }

    /// Fetches a token now (with retries) and starts the refresh thread; what `login` does,
    /// with the typed error.
    pub fn fetch_initial_token(&self) -> Result<(), OidcError> {
        {
            let state = self.shared.lock();
            if state.refresher_started && state.held.as_ref().is_some_and(Held::valid_now) {
                return Ok(());
            }
        }
        let held = self
            .shared
            .fetch_with_retries()
            .map_err(|message| OidcError::Fetch {
                endpoint: self.shared.url.clone(),
                message,
            })?;
        let mut state = self.shared.lock();
        state.held = Some(held);
        state.last_error = None;
        if !state.refresher_started {
            state.refresher_started = true;
            let shared = Arc::clone(&self.shared);
            // A real OS thread on purpose: it blocks on HTTP, which the network task must
            // never do. This module does not exist under madsim, where threads would escape
            // the simulator.
            #[allow(clippy::disallowed_methods)]
            let spawned = std::thread::Builder::new()
                .name("kafka-oauthbearer-refresh".into())
                .spawn(move || shared.refresh_loop());
            if let Err(error) = spawned {
                state.refresher_started = false;
                return Err(OidcError::Fetch {
                    endpoint: self.shared.url.clone(),
                    message: format!("cannot start the token refresh thread: {error}"),
                });
            }
        }
        Ok(())
    }
}

impl Held {
    fn valid_now(&self) -> bool {
        self.token.expires_at_ms > wall_clock_ms()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sleeps `wait_ms` unless the provider is dropped first; false when it was.
    fn sleep(&self, wait_ms: u64) -> bool {
        let deadline_ms =
            wall_clock_ms().saturating_add(i64::try_from(wait_ms).unwrap_or(i64::MAX));
        let mut state = self.lock();
        loop {
            let left_ms = u64::try_from(deadline_ms - wall_clock_ms()).unwrap_or(0);
            if state.stopped || left_ms == 0 {
                return !state.stopped;
            }
            let (next, _) = self
                .wake
                .wait_timeout(state, Duration::from_millis(left_ms))
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state = next;
        }
    }

    /// One fetch with Kafka's retries (`RetryBudget`); the error is the last failure's.
    fn fetch_with_retries(&self) -> Result<Held, String> {
        let mut budget = RetryBudget::start(
            wall_clock_ms(),
            self.retry_backoff_ms,
            self.retry_backoff_max_ms,
        );
        loop {
            match self.fetch_once() {
                Ok(held) => return Ok(held),
                Err(FetchError::Fatal(message)) => return Err(message),
                Err(FetchError::Retriable(message)) => {
                    let Some(wait_ms) = budget.after_failure(wall_clock_ms()) else {
                        return Err(message);
                    };
                    tracing::debug!(endpoint = %self.url, attempt = budget.attempts(), wait_ms,
                        error = %message, "token fetch failed; retrying");
                    if !self.sleep(wait_ms) {
                        return Err("the token provider was dropped".into());
                    }
                }
            }
        }
    }

    fn fetch_once(&self) -> Result<Held, FetchError> {
        let (token, expires_in_s) = match (&self.endpoint, &self.credentials) {
            (Endpoint::Http(url), Some(credentials)) => {
                let (status, body) = self.client.post(url, credentials)?;
                exchange::read_response(status, &body)?
            }
            (Endpoint::Http(_), None) => {
                return Err(FetchError::Fatal("no client credentials".into()));
            }
            (Endpoint::File(path), _) => {
                let text = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
                    FetchError::Fatal(format!("cannot read {}: {e}", path.display()))
                })?);
                (Secret::new(text.trim()), None)
            }
        };
        let jwt = jwt::validate(token.expose(), &self.scope_claim_name, &self.sub_claim_name)
            .map_err(FetchError::Fatal)?;
        // An `expires_in` shorter than the token's own `exp` wins: the endpoint may revoke
        // sooner than the token says.
        let expire_ms = match expires_in_s {
            Some(seconds) => jwt
                .expires_at_ms
                .min(wall_clock_ms().saturating_add(seconds.saturating_mul(1000))),
            None => jwt.expires_at_ms,
        };
        tracing::info!(endpoint = %self.url, subject = %jwt.subject, expires_at_ms = expire_ms,
            "fetched an OAUTHBEARER token");
        Ok(Held {
            token: OAuthBearerToken {
                value: token,
                expires_at_ms: expire_ms,
                extensions: self.extensions.clone(),
            },
            lifetime: Lifetime {
                start_ms: jwt.issued_at_ms,
                expire_ms,
            },
        })
    }

    /// The refresh thread: sleep until the schedule says, fetch, repeat; after a failure keep
    /// the old token and try again in 10 seconds. Ends when the provider is dropped.
    fn refresh_loop(&self) {
        let mut rng = SeededRng::from_runtime();
        let mut next_ms = {
            let state = self.lock();
            let held = state.held.as_ref().map(|h| h.lifetime);
            refresh::next_refresh_ms(&self.refresh, wall_clock_ms(), held, rng.unit_f64())
        };
        loop {
            let wait_ms = u64::try_from(next_ms - wall_clock_ms()).unwrap_or(0);
            if !self.sleep(wait_ms) {
                return;
            }
            match self.fetch_with_retries() {
                Ok(held) => {
                    let lifetime = held.lifetime;
                    let mut state = self.lock();
                    state.held = Some(held);
                    state.last_error = None;
                    drop(state);
                    next_ms = refresh::next_refresh_ms(
                        &self.refresh,
                        wall_clock_ms(),
                        Some(lifetime),
                        rng.unit_f64(),
                    );
                }
                Err(message) => {
                    tracing::warn!(endpoint = %self.url, error = %message,
                        "refreshing the OAUTHBEARER token failed; keeping the current token and retrying in 10 s");
                    self.lock().last_error = Some(message);
                    next_ms = wall_clock_ms().saturating_add(RETRY_AFTER_FAILED_REFRESH_MS);
                }
            }
        }
    }
}

impl TokenProvider for OidcTokenProvider {
    fn token(&self) -> Result<OAuthBearerToken, String> {
        let state = self.shared.lock();
        match &state.held {
            Some(held) if held.valid_now() => Ok(held.token.clone()),
            Some(_) => Err(format!(
                "the token from {} expired and no new one could be fetched: {}",
                self.shared.url,
                state
                    .last_error
                    .as_deref()
                    .unwrap_or("the refresh is still running")
            )),
            None => Err(format!(
                "no token from {} yet (the consumer fetches one when it is constructed)",
                self.shared.url
            )),
        }
    }

    fn login(&self) -> Result<(), String> {
        self.fetch_initial_token()
            .map_err(|error| error.to_string())
    }
}

impl Drop for OidcTokenProvider {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.wake.notify_all();
    }
}

impl fmt::Debug for OidcTokenProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcTokenProvider")
            .field("url", &self.shared.url)
            .field(
                "client_id",
                &self.shared.credentials.as_ref().map(|c| &c.client_id),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsecured_jwt(claims: &str) -> String {
        jwt::tests::jwt(claims)
    }

    fn temp_file(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("oidc-provider-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn builder_validates_without_fetching() {
        let url = "https://idp.example/token";
        let error = OidcTokenProvider::builder(url)
            .client_secret("hunter2")
            .allowed_urls([url])
            .build()
            .unwrap_err();
        assert!(
            matches!(
                &error,
                OidcError::Config {
                    key: "sasl.oauthbearer.client.credentials.client.id",
                    ..
                }
            ),
            "{error}"
        );
        let provider = OidcTokenProvider::builder(url)
            .client_id("id")
            .client_secret("hunter2")
            .scope("kafka")
            .allowed_urls([url])
            .build()
            .unwrap();
        let shown = format!("{provider:?}");
        assert!(
            shown.contains("idp.example") && !shown.contains("hunter2"),
            "{shown}"
        );
        // Nothing was fetched: the network task would get an error, not a stale token.
        assert!(provider.token().unwrap_err().contains("no token"));
        // The typed path into a consumer configuration fetches nothing either.
        let provider: Arc<dyn TokenProvider> = Arc::new(provider);
        let config = crate::ConsumerConfig::builder()
            .bootstrap_servers(["broker:9093"])
            .security_protocol(crate::network::SecurityProtocol::SaslSsl)
            .sasl_oauthbearer(provider.clone())
            .build()
            .unwrap();
        assert!(format!("{:?}", config.security().sasl).contains("OidcTokenProvider"));
        assert!(provider.token().is_err());
        let error = OidcTokenProvider::builder(url)
            .client_id("id")
            .client_secret("s")
            .refresh(RefreshConfig {
                window_jitter: 0.5,
                ..RefreshConfig::default()
            })
            .allowed_urls([url])
            .build()
            .unwrap_err();
        assert!(
            matches!(
                &error,
                OidcError::Config {
                    key: "sasl.login.refresh.window.jitter",
                    ..
                }
            ),
            "{error}"
        );
    }

    /// A refresh that fails keeps the old token until it expires, then `token()` reports the
    /// failure; a login failure is a typed error. Uses a `file:` endpoint, whose refreshes
    /// read the file again.
    #[test]
    fn a_failed_refresh_keeps_the_token_until_it_expires() {
        let path = temp_file("refresh.jwt");
        let url = format!("file:{}", path.display());
        let now_s = wall_clock_ms() / 1000;
        std::fs::write(
            &path,
            unsecured_jwt(&format!(
                r#"{{"sub":"svc","iat":{now_s},"exp":{}}}"#,
                now_s + 6
            )),
        )
        .unwrap();
        let provider = OidcTokenProvider::builder(url.clone())
            .allowed_urls([&url])
            .refresh(RefreshConfig {
                window_factor: 0.5,
                window_jitter: 0.0,
                min_period_seconds: 0,
                buffer_seconds: 0,
            })
            .build()
            .unwrap();
        provider.login().unwrap();
        let first = provider.token().unwrap();
        assert_eq!(first.expires_at_ms, (now_s + 6) * 1000);
        // The refresh, at half the lifetime (2 to 3 s from now), finds no valid token.
        std::fs::write(&path, "not a jwt").unwrap();
        std::thread::sleep(Duration::from_millis(3_500));
        assert_eq!(provider.token().unwrap(), first, "the old token is kept");
        std::thread::sleep(Duration::from_millis(
            u64::try_from(first.expires_at_ms - wall_clock_ms()).unwrap_or(0) + 100,
        ));
        let error = provider.token().unwrap_err();
        assert!(
            error.contains("expired") && error.contains("Could not validate"),
            "{error}"
        );

        // A login whose token is refused fails with the typed error.
        let error = provider.fetch_initial_token().unwrap_err();
        assert!(
            matches!(&error, OidcError::Fetch { endpoint, .. } if *endpoint == url),
            "{error}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
