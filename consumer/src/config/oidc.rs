//! `sasl.login.callback.handler.class` and the keys of Kafka's OAUTHBEARER token-endpoint
//! login (`OAuthBearerLoginCallbackHandler`), resolved into an
//! [`OidcTokenProvider`](crate::security::OidcTokenProvider) when the `oidc` feature is
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

/// The CA certificates for an https token endpoint: Java reads the `ssl.*` client settings
/// for it from the JAAS options (`JaasOptionsUtils.createSSLSocketFactory`), not from the
/// consumer's own `ssl.*` keys. PEM only, as for the broker connection.
#[cfg(all(feature = "oidc", not(madsim)))]
fn jaas_trust_store(entry: &JaasEntry) -> Result<Option<String>, ConfigError> {
    let option = |name: &str| {
        entry
            .options
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let jaas = spec("sasl.jaas.config");
    let location = option("ssl.truststore.location");
    let certificates = option("ssl.truststore.certificates");
    if location.is_none() && certificates.is_none() {
        return Ok(None);
    }
    if !option("ssl.truststore.type").is_some_and(|t| t.eq_ignore_ascii_case("PEM")) {
        return Err(invalid(
            jaas,
            "",
            "the JAAS option ssl.truststore.type=PEM with ssl.truststore.location or \
             ssl.truststore.certificates (JKS and PKCS12 stores are not supported)",
        ));
    }
    match (location, certificates) {
        (Some(_), Some(_)) => Err(invalid(
            jaas,
            "",
            "either the JAAS option ssl.truststore.location or ssl.truststore.certificates, \
             not both",
        )),
        (Some(path), None) => std::fs::read_to_string(&path).map(Some).map_err(|error| {
            invalid(
                jaas,
                "",
                format!("a readable PEM file in the JAAS option ssl.truststore.location ({path}: {error})"),
            )
        }),
        (None, certificates) => Ok(certificates),
    }
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
    // Kafka 4.1 (`ClientCredentialsJwtRetriever.ConfigOrJaas`): the key wins over the JAAS
    // option, which is deprecated; both cases are logged as Java logs them.
    for (key, jaas_option) in [
        ("sasl.oauthbearer.client.credentials.client.id", "clientId"),
        (
            "sasl.oauthbearer.client.credentials.client.secret",
            "clientSecret",
        ),
        ("sasl.oauthbearer.scope", "scope"),
    ] {
        if entry.options.contains_key(jaas_option) {
            if r.is_set_non_blank(key) {
                tracing::warn!(key, jaas_option, "both the configuration and the deprecated JAAS option are set; the JAAS option is ignored");
            } else {
                tracing::warn!(
                    key,
                    jaas_option,
                    "the JAAS option is deprecated; set the configuration instead"
                );
            }
        }
    }
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
    if let Some(pem) = jaas_trust_store(entry)? {
        builder = builder.ssl_truststore_pem(pem);
    }
    let provider = builder.build().map_err(|error| match error {
        // The trust store came from JAAS options: name the key that held them.
        OidcError::Config {
            key: "ssl.truststore.certificates",
            message,
        } => invalid(
            spec("sasl.jaas.config"),
            "",
            format!("a PEM trust store in the JAAS ssl.truststore.* options ({message})"),
        ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConsumerConfig, Parsed};

    const JAAS: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                        required clientId=\"jaas-id\" clientSecret=\"hunter2\" scope=\"s\";";
    const URL: &str = "https://idp.example/token";

    fn parse(extra: &[(&str, &str)]) -> Result<Parsed, ConfigError> {
        let mut builder = ConsumerConfig::builder()
            .bootstrap_servers(["localhost:9092"])
            .set("security.protocol", "SASL_SSL")
            .set("sasl.mechanism", "OAUTHBEARER")
            .set("sasl.jaas.config", JAAS)
            .sasl_oauthbearer_allowed_urls([URL]);
        for (key, value) in extra {
            builder = builder.set(*key, *value);
        }
        builder.build_with_warnings()
    }

    fn invalid_key(extra: &[(&str, &str)]) -> &'static str {
        match parse(extra) {
            Err(ConfigError::InvalidValue { key, .. }) => key,
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    fn other_handler_classes_are_refused() {
        assert_eq!(
            invalid_key(&[(HANDLER_KEY, "com.example.MyLoginCallbackHandler")]),
            HANDLER_KEY
        );
        // Kafka's token-endpoint handler is OAUTHBEARER's only.
        let error = ConsumerConfig::builder()
            .bootstrap_servers(["localhost:9092"])
            .set("security.protocol", "SASL_SSL")
            .sasl_password(SaslMechanism::Plain, "u", "p")
            .set(HANDLER_KEY, TOKEN_ENDPOINT_HANDLERS[0])
            .build()
            .unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::InvalidValue {
                    key: HANDLER_KEY,
                    ..
                }
            ),
            "{error}"
        );
        // The explicit default handler is the unsecured login.
        assert!(parse(&[
            (HANDLER_KEY, UNSECURED_HANDLER),
            ("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=x;"),
        ])
        .is_ok());
    }

    #[test]
    fn an_endpoint_without_kafkas_handler_is_refused_naming_the_handler() {
        assert_eq!(invalid_key(&[(URL_KEY, URL)]), HANDLER_KEY);
    }

    #[cfg(all(feature = "oidc", not(madsim)))]
    #[test]
    fn token_endpoint_settings_are_validated_naming_the_key() {
        let handler = (HANDLER_KEY, TOKEN_ENDPOINT_HANDLERS[0]);
        let url = (URL_KEY, URL);
        assert!(matches!(
            parse(&[handler]),
            Err(ConfigError::Missing { key: URL_KEY })
        ));
        for (key, bad) in [
            ("sasl.login.refresh.window.factor", "0.4"),
            ("sasl.login.refresh.window.jitter", "0.3"),
            ("sasl.login.refresh.min.period.seconds", "901"),
            ("sasl.login.refresh.buffer.seconds", "-1"),
            ("sasl.login.connect.timeout.ms", "-5"),
            ("sasl.login.retry.backoff.ms", "soon"),
            ("sasl.oauthbearer.header.urlencode", "maybe"),
            ("sasl.oauthbearer.sub.claim.name", " "),
            (URL_KEY, "ftp://idp.example/token"),
        ] {
            assert_eq!(invalid_key(&[handler, url, (key, bad)]), key, "{key}={bad}");
        }
        // Both handler names Kafka has used are accepted; 3.x's too.
        for class in TOKEN_ENDPOINT_HANDLERS {
            assert!(parse(&[(HANDLER_KEY, class), url]).is_ok(), "{class}");
        }
    }

    #[cfg(all(feature = "oidc", not(madsim)))]
    #[test]
    fn credentials_come_from_the_kafka_keys_before_the_jaas_options() {
        let handler = (HANDLER_KEY, TOKEN_ENDPOINT_HANDLERS[0]);
        let url = (URL_KEY, URL);
        let shown = |parsed: Parsed| format!("{:?}", parsed.config.security().sasl);
        let from_jaas = shown(parse(&[handler, url]).unwrap());
        assert!(from_jaas.contains("jaas-id"), "{from_jaas}");
        let from_keys = shown(
            parse(&[
                handler,
                url,
                ("sasl.oauthbearer.client.credentials.client.id", "key-id"),
            ])
            .unwrap(),
        );
        assert!(from_keys.contains("key-id"), "{from_keys}");
        assert!(!from_keys.contains("hunter2"), "{from_keys}");
        // Neither gives a secret: refused naming the 4.1 key, the JAAS text never echoed.
        let error = parse(&[
            handler,
            url,
            ("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId=\"id\";"),
        ])
        .unwrap_err();
        assert!(
            matches!(
                &error,
                ConfigError::InvalidValue {
                    key: "sasl.oauthbearer.client.credentials.client.secret",
                    ..
                }
            ),
            "{error}"
        );
        let error = parse(&[
            handler,
            url,
            (
                "sasl.oauthbearer.client.credentials.client.secret",
                "hunter3",
            ),
            ("sasl.oauthbearer.client.credentials.client.id", " "),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            ),
        ])
        .unwrap_err();
        assert!(!error.to_string().contains("hunter3"), "{error}");
    }

    #[cfg(all(feature = "oidc", not(madsim)))]
    #[test]
    fn the_endpoint_trust_store_comes_from_jaas_options_and_must_be_pem() {
        let handler = (HANDLER_KEY, TOKEN_ENDPOINT_HANDLERS[0]);
        let url = (URL_KEY, URL);
        let module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                      required clientId=\"id\" clientSecret=\"hunter2\"";
        for options in [
            "ssl.truststore.location=\"/etc/ca.jks\"",
            "ssl.truststore.type=\"JKS\" ssl.truststore.location=\"/etc/ca.jks\"",
            "ssl.truststore.type=\"PEM\" ssl.truststore.location=\"/nonexistent/ca.pem\"",
            "ssl.truststore.type=\"PEM\" ssl.truststore.certificates=\"not pem\"",
        ] {
            let jaas = format!("{module} {options};");
            let error = parse(&[handler, url, ("sasl.jaas.config", &jaas)]).unwrap_err();
            assert!(
                matches!(
                    &error,
                    ConfigError::InvalidValue {
                        key: "sasl.jaas.config",
                        ..
                    }
                ),
                "{options}: {error}"
            );
            assert!(!error.to_string().contains("hunter2"), "{error}");
        }
    }

    /// Without the feature, or in simulation, the handler is refused naming its key.
    #[cfg(not(all(feature = "oidc", not(madsim))))]
    #[test]
    fn the_token_endpoint_needs_the_feature_and_real_mode() {
        let error =
            parse(&[(HANDLER_KEY, TOKEN_ENDPOINT_HANDLERS[0]), (URL_KEY, URL)]).unwrap_err();
        assert!(
            matches!(&error, ConfigError::Unsupported { key, .. } if key == HANDLER_KEY),
            "{error}"
        );
    }
}
