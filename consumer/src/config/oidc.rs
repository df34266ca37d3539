//! `sasl.login.callback.handler.class` and the keys of Kafka's OAUTHBEARER token-endpoint
//! login (`OAuthBearerLoginCallbackHandler`), resolved into an
//! [`OidcTokenProvider`](crate::network::sasl::OidcTokenProvider) when the `oidc` feature is
//! on. Without the feature, or under `--cfg madsim` (no real HTTP in the simulation), choosing
//! that handler is refused naming the key.
//!
//! Client id, secret and scope come from the Kafka 4.1 keys
//! (`sasl.oauthbearer.client.credentials.client.id`, `…client.secret`, `sasl.oauthbearer.scope`)
//! or, when those are unset, from the JAAS options `clientId`, `clientSecret`, `scope`.

use std::sync::Arc;

use super::error::ConfigError;
use super::jaas::JaasEntry;
use super::keys;
use super::parse::{invalid, Resolver};
use crate::network::sasl::{SaslMechanism, TokenProvider};

const HANDLER_KEY: &str = "sasl.login.callback.handler.class";
const URL_KEY: &str = "sasl.oauthbearer.token.endpoint.url";

/// Java's default OAUTHBEARER login handler: unsecured `alg: none` tokens.
const UNSECURED_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler";

/// Kafka's token-endpoint handler, 4.x's name and 3.x's.
const TOKEN_ENDPOINT_HANDLERS: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];

/// How OAUTHBEARER tokens are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginHandler {
    /// Kafka's unsecured JWT login (the default).
    Unsecured,
    /// Kafka's `OAuthBearerLoginCallbackHandler`: the token endpoint.
    TokenEndpoint,
}

fn spec(key: &'static str) -> &'static keys::KeySpec {
    keys::spec(key).unwrap_or_else(|| panic!("`{key}` is not in the key table"))
}

fn non_blank(r: &Resolver, key: &'static str) -> Result<Option<String>, ConfigError> {
    Ok(r.string(key)?
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty()))
}

/// Reads `sasl.login.callback.handler.class` for `mechanism`: only Kafka's OAUTHBEARER
/// handlers are known; any other class is refused, since Java classes cannot be loaded.
pub(crate) fn login_handler(
    r: &Resolver,
    mechanism: SaslMechanism,
) -> Result<LoginHandler, ConfigError> {
    let handler = non_blank(r, HANDLER_KEY)?;
    let chosen = match handler.as_deref() {
        None => LoginHandler::Unsecured,
        Some(UNSECURED_HANDLER) if mechanism == SaslMechanism::OAuthBearer => {
            LoginHandler::Unsecured
        }
        Some(class)
            if mechanism == SaslMechanism::OAuthBearer
                && TOKEN_ENDPOINT_HANDLERS.contains(&class) =>
        {
            LoginHandler::TokenEndpoint
        }
        Some(class) => {
            return Err(invalid(
                spec(HANDLER_KEY),
                class,
                "for sasl.mechanism=OAUTHBEARER, \
                 org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler \
                 (Java classes cannot be loaded; other mechanisms take no handler)",
            ))
        }
    };
    if chosen == LoginHandler::Unsecured
        && mechanism == SaslMechanism::OAuthBearer
        && non_blank(r, URL_KEY)?.is_some()
    {
        return Err(invalid(
            spec(HANDLER_KEY),
            handler.as_deref().unwrap_or(""),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler, since \
             sasl.oauthbearer.token.endpoint.url is set (the default handler makes unsecured \
             tokens and would ignore the endpoint)",
        ));
    }
    Ok(chosen)
}

/// The token-endpoint provider for the `OAuthBearerLoginModule` entry.
#[cfg(not(all(feature = "oidc", not(madsim))))]
pub(crate) fn token_endpoint_provider(
    _r: &Resolver,
    _entry: &JaasEntry,
    _allowed_urls: Option<&[String]>,
) -> Result<Arc<dyn TokenProvider>, ConfigError> {
    Err(ConfigError::Unsupported {
        key: HANDLER_KEY.to_owned(),
        reason: if cfg!(madsim) {
            "the OAUTHBEARER token endpoint cannot be used in simulation (no real HTTP); use \
             the unsecured login or a TokenProvider"
        } else {
            "the OAUTHBEARER token endpoint needs the `oidc` cargo feature of kafka-consumer"
        },
    })
}

/// The token-endpoint provider for the `OAuthBearerLoginModule` entry: validated (URL,
/// allow-list, credentials, ranges), nothing fetched yet.
#[cfg(all(feature = "oidc", not(madsim)))]
pub(crate) fn token_endpoint_provider(
    r: &Resolver,
    entry: &JaasEntry,
    allowed_urls: Option<&[String]>,
) -> Result<Arc<dyn TokenProvider>, ConfigError> {
    use crate::network::sasl::{OidcError, OidcTokenProvider, RefreshConfig};
    use crate::network::Secret;

    let option = |name: &str| {
        entry
            .options
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let url = non_blank(r, URL_KEY)?.ok_or(ConfigError::Missing { key: URL_KEY })?;
    let mut builder = OidcTokenProvider::builder(url.clone());
    if let Some(id) = non_blank(r, "sasl.oauthbearer.client.credentials.client.id")?
        .or_else(|| option("clientId"))
    {
        builder = builder.client_id(id);
    }
    let secret = match non_blank(r, "sasl.oauthbearer.client.credentials.client.secret")? {
        Some(secret) => Some(Secret::new(secret)),
        None => option("clientSecret").map(Secret::new),
    };
    if let Some(secret) = secret {
        builder = builder.client_secret(secret);
    }
    if let Some(scope) = non_blank(r, "sasl.oauthbearer.scope")?.or_else(|| option("scope")) {
        builder = builder.scope(scope);
    }
    for (name, value) in &entry.options {
        if let Some(extension) = name.strip_prefix("extension_") {
            builder = builder.extension(extension, value.as_str());
        }
    }
    let millis = |key: &'static str| r.typed(key, |s| s.trim().parse::<u64>().ok());
    if let Some(ms) = millis("sasl.login.connect.timeout.ms")? {
        builder = builder.connect_timeout_ms(ms);
    }
    if let Some(ms) = millis("sasl.login.read.timeout.ms")? {
        builder = builder.read_timeout_ms(ms);
    }
    let backoff_ms = millis("sasl.login.retry.backoff.ms")?.unwrap_or(100);
    let backoff_max_ms = millis("sasl.login.retry.backoff.max.ms")?.unwrap_or(10_000);
    let fraction = |key: &'static str, low: f64, high: f64| {
        r.typed(key, |s| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| (low..=high).contains(v))
        })
    };
    let seconds = |key: &'static str, high: u16| {
        r.typed(key, |s| s.trim().parse::<u16>().ok().filter(|v| *v <= high))
    };
    let defaults = RefreshConfig::default();
    let refresh = RefreshConfig {
        window_factor: fraction("sasl.login.refresh.window.factor", 0.5, 1.0)?
            .unwrap_or(defaults.window_factor),
        window_jitter: fraction("sasl.login.refresh.window.jitter", 0.0, 0.25)?
            .unwrap_or(defaults.window_jitter),
        min_period_seconds: seconds("sasl.login.refresh.min.period.seconds", 900)?
            .unwrap_or(defaults.min_period_seconds),
        buffer_seconds: seconds("sasl.login.refresh.buffer.seconds", 3600)?
            .unwrap_or(defaults.buffer_seconds),
    };
    builder = builder
        .retry_backoff_ms(backoff_ms, backoff_max_ms)
        .refresh(refresh)
        .header_urlencode(r.bool("sasl.oauthbearer.header.urlencode")?);
    if let Some(name) = r.string("sasl.oauthbearer.scope.claim.name")? {
        builder = builder.scope_claim_name(name);
    }
    if let Some(name) = r.string("sasl.oauthbearer.sub.claim.name")? {
        builder = builder.sub_claim_name(name);
    }
    if let Some(urls) = allowed_urls {
        builder = builder.allowed_urls(urls);
    }
    let provider = builder.build().map_err(|error| match error {
        OidcError::Config { key, message } => {
            let raw = if key == URL_KEY {
                url.clone()
            } else {
                r.string(key).ok().flatten().unwrap_or_default()
            };
            match keys::spec(key) {
                Some(spec) => invalid(spec, &raw, message),
                None => invalid(spec(URL_KEY), &url, message),
            }
        }
        OidcError::Fetch { message, .. } => invalid(spec(URL_KEY), &url, message),
    })?;
    Ok(Arc::new(provider))
}
