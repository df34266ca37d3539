//! `security.protocol` and the `ssl.*` / `sasl.*` keys, resolved into the network layer's
//! [`SecurityConfig`], with Java's names, defaults and refusals.
//!
//! TLS keys are read only for SSL and SASL_SSL and SASL keys only for the SASL protocols, as
//! Java ignores them otherwise. Certificates and keys are PEM; a JKS or PKCS12 store is refused
//! with "use PEM". Files named by `*.location` are read and parsed here, so a wrong path or a
//! file without certificates fails at construction, naming the key.

use std::sync::Arc;

use super::error::{ConfigError, ConfigWarning};
use super::jaas::{self, LoginModule};
use super::keys;
use super::oidc::{self, LoginHandler};
use super::parse::{invalid, Resolver};
use crate::network::sasl::{
    SaslConfig, SaslCredentials, SaslMechanism, TokenProvider, UnsecuredJwtProvider,
};
use crate::network::tls::{self, ClientIdentity, TlsConfig, TlsVersion, TrustRoots};
use crate::network::{Secret, SecurityConfig, SecurityProtocol};

const USE_PEM: &str = "JKS and PKCS12 stores are not supported; convert them to PEM and set the \
                       store type to PEM";

fn spec(key: &'static str) -> &'static keys::KeySpec {
    keys::spec(key).unwrap_or_else(|| panic!("`{key}` is not in the key table"))
}

/// Resolves the security keys. `provider` is a token provider given to the builder; it
/// replaces the JAAS OAUTHBEARER options.
pub(crate) fn resolve(
    r: &Resolver,
    provider: Option<Arc<dyn TokenProvider>>,
    allowed_urls: Option<&[String]>,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<SecurityConfig, ConfigError> {
    let protocol = r
        .check(spec("security.protocol"))?
        .and_then(SecurityProtocol::parse)
        .unwrap_or_default();
    let tls = if protocol.uses_tls() {
        tls_config(r, warnings)?
    } else {
        TlsConfig::default()
    };
    let sasl = if protocol.uses_sasl() {
        Some(sasl_config(r, provider, allowed_urls)?)
    } else {
        None
    };
    Ok(SecurityConfig {
        protocol,
        tls,
        sasl,
    })
}

fn tls_config(r: &Resolver, warnings: &mut Vec<ConfigWarning>) -> Result<TlsConfig, ConfigError> {
    let algorithm = r
        .string("ssl.endpoint.identification.algorithm")?
        .unwrap_or_default();
    let verify_hostname = if algorithm.eq_ignore_ascii_case("https") {
        true
    } else if algorithm.is_empty() {
        warnings.push(ConfigWarning::HostnameVerificationDisabled);
        false
    } else {
        return Err(invalid(
            spec("ssl.endpoint.identification.algorithm"),
            &algorithm,
            "https, or empty to disable hostname verification",
        ));
    };
    let protocols_spec = spec("ssl.enabled.protocols");
    let protocols = r.string("ssl.enabled.protocols")?.unwrap_or_default();
    let mut versions = Vec::new();
    for name in protocols
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let version = TlsVersion::parse(name).ok_or_else(|| {
            invalid(
                protocols_spec,
                &protocols,
                "a list of TLSv1.2 and TLSv1.3 (older protocols are insecure and not offered)",
            )
        })?;
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        return Err(invalid(
            protocols_spec,
            &protocols,
            "at least one of TLSv1.2, TLSv1.3",
        ));
    }
    Ok(TlsConfig {
        trust: trust_roots(r)?,
        client_identity: client_identity(r)?,
        verify_hostname,
        versions,
    })
}

/// Refuses JKS/PKCS12 and any other type but PEM for a store that is used.
fn require_pem(r: &Resolver, type_key: &'static str) -> Result<(), ConfigError> {
    let store_type = r.string(type_key)?.unwrap_or_default();
    if store_type.eq_ignore_ascii_case("PEM") {
        Ok(())
    } else if store_type.eq_ignore_ascii_case("JKS") || store_type.eq_ignore_ascii_case("PKCS12") {
        Err(ConfigError::Unsupported {
            key: type_key.to_owned(),
            reason: USE_PEM,
        })
    } else {
        Err(invalid(spec(type_key), &store_type, "PEM"))
    }
}

fn read_file(key: &'static str, path: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path)
        .map_err(|error| invalid(spec(key), path, format!("a readable PEM file ({error})")))
}

fn trust_roots(r: &Resolver) -> Result<TrustRoots, ConfigError> {
    let location = r
        .string("ssl.truststore.location")?
        .filter(|v| !v.is_empty());
    let certificates = r
        .string("ssl.truststore.certificates")?
        .filter(|v| !v.is_empty());
    let (key, pem) = match (location, certificates) {
        (None, None) => return Ok(TrustRoots::Platform),
        (Some(_), Some(_)) => {
            return Err(invalid(
                spec("ssl.truststore.certificates"),
                "",
                "either ssl.truststore.location or ssl.truststore.certificates, not both",
            ))
        }
        (Some(path), None) => (
            "ssl.truststore.location",
            read_file("ssl.truststore.location", &path)?,
        ),
        (None, Some(pem)) => ("ssl.truststore.certificates", pem),
    };
    require_pem(r, "ssl.truststore.type")?;
    tls::parse_certificates(key, &pem).map_err(|e| invalid(spec(key), "", e.message))?;
    Ok(TrustRoots::Pem(pem))
}

fn client_identity(r: &Resolver) -> Result<Option<ClientIdentity>, ConfigError> {
    let key_password = r
        .string("ssl.key.password")?
        .filter(|v| !v.is_empty())
        .map(Secret::new);
    let location = r.string("ssl.keystore.location")?.filter(|v| !v.is_empty());
    let chain = r
        .string("ssl.keystore.certificate.chain")?
        .filter(|v| !v.is_empty());
    let key = r
        .string("ssl.keystore.key")?
        .filter(|v| !v.is_empty())
        .map(Secret::new);
    let (chain_key, chain, key_key, key) = match (location, chain, key) {
        (None, None, None) => return Ok(None),
        (Some(path), None, None) => {
            // Java's PEM key store file: the private key and the certificate chain together.
            let pem = Secret::new(read_file("ssl.keystore.location", &path)?);
            let chain = pem.expose().to_owned();
            ("ssl.keystore.location", chain, "ssl.keystore.location", pem)
        }
        (None, Some(chain), Some(key)) => (
            "ssl.keystore.certificate.chain",
            chain,
            "ssl.keystore.key",
            key,
        ),
        (Some(_), _, _) => {
            return Err(invalid(
                spec("ssl.keystore.location"),
                "",
                "either ssl.keystore.location or ssl.keystore.certificate.chain with ssl.keystore.key, not both",
            ))
        }
        (None, Some(_), None) | (None, None, Some(_)) => {
            return Err(invalid(
                spec("ssl.keystore.key"),
                "",
                "ssl.keystore.certificate.chain and ssl.keystore.key set together",
            ))
        }
    };
    require_pem(r, "ssl.keystore.type")?;
    tls::parse_certificates(chain_key, &chain)
        .map_err(|e| invalid(spec(chain_key), "", e.message))?;
    tls::parse_private_key(key_key, &key, key_password.as_ref())
        .map_err(|e| invalid(spec(e.what), "", e.message))?;
    // Keep only the certificates in the chain text, never the key a combined file holds.
    let chain = pem_blocks(&chain, "CERTIFICATE");
    Ok(Some(ClientIdentity {
        certificate_chain_pem: chain,
        private_key_pem: key,
        key_password,
    }))
}

/// The PEM blocks of one label, concatenated.
fn pem_blocks(text: &str, label: &str) -> String {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(&begin) {
        let Some(stop) = rest[start..].find(&end) else {
            break;
        };
        let stop = start + stop + end.len();
        out.push_str(&rest[start..stop]);
        out.push('\n');
        rest = &rest[stop..];
    }
    out
}

fn sasl_config(
    r: &Resolver,
    provider: Option<Arc<dyn TokenProvider>>,
    allowed_urls: Option<&[String]>,
) -> Result<SaslConfig, ConfigError> {
    let mechanism_spec = spec("sasl.mechanism");
    let name = r.string("sasl.mechanism")?.unwrap_or_default();
    let mechanism = match SaslMechanism::parse(&name) {
        Some(mechanism) => mechanism,
        None if name == "GSSAPI" => {
            return Err(ConfigError::Unsupported {
                key: "sasl.mechanism".to_owned(),
                reason: "GSSAPI (Kerberos), Java's default, is not supported; set sasl.mechanism \
                         to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
            })
        }
        None => return Err(invalid(mechanism_spec, &name, expected(mechanism_spec))),
    };
    let login_handler = oidc::login_handler(r, mechanism)?;
    if let Some(provider) = provider {
        if mechanism != SaslMechanism::OAuthBearer {
            return Err(invalid(
                mechanism_spec,
                &name,
                "OAUTHBEARER, since a token provider was given",
            ));
        }
        return Ok(SaslConfig {
            mechanism,
            credentials: SaslCredentials::Token(provider),
        });
    }
    let jaas_spec = spec("sasl.jaas.config");
    let text = r
        .string("sasl.jaas.config")?
        .filter(|v| !v.is_empty())
        .ok_or(ConfigError::Missing {
            key: "sasl.jaas.config",
        })?;
    let text = zeroize::Zeroizing::new(text);
    let entry = jaas::parse(&text).map_err(|why| invalid(jaas_spec, "", why))?;
    let option = |name: &str| entry.options.get(name).map(|v| v.as_str().to_owned());
    let credentials = match (mechanism, entry.module) {
        (SaslMechanism::OAuthBearer, LoginModule::OAuthBearer)
            if login_handler == LoginHandler::TokenEndpoint =>
        {
            SaslCredentials::Token(oidc::token_endpoint_provider(r, &entry, allowed_urls)?)
        }
        (SaslMechanism::OAuthBearer, LoginModule::OAuthBearer) => {
            let mut provider = UnsecuredJwtProvider::new("");
            if let Some(claim) = option("unsecuredLoginPrincipalClaimName") {
                provider.principal_claim_name = claim;
            }
            let principal_option = format!(
                "unsecuredLoginStringClaim_{}",
                provider.principal_claim_name
            );
            provider.principal = option(&principal_option).filter(|p| !p.is_empty()).ok_or_else(|| {
                invalid(jaas_spec, "", format!("OAuthBearerLoginModule with option {principal_option} (this client implements Kafka's unsecured JWT login; supply other tokens through a TokenProvider)"))
            })?;
            if let Some(seconds) = option("unsecuredLoginLifetimeSeconds") {
                provider.lifetime_seconds = seconds.parse().map_err(|_| {
                    invalid(
                        jaas_spec,
                        "",
                        "unsecuredLoginLifetimeSeconds as a whole number",
                    )
                })?;
            }
            if let Some(scope) = option("unsecuredLoginListClaim_scope") {
                // Java's list claims start with their own separator character.
                let mut chars = scope.chars();
                if let Some(separator) = chars.next() {
                    provider.scope = chars
                        .as_str()
                        .split(separator)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                }
            }
            for (name, value) in &entry.options {
                if let Some(extension) = name.strip_prefix("unsecuredLoginExtension_") {
                    provider
                        .extensions
                        .insert(extension.to_owned(), value.as_str().to_owned());
                }
            }
            SaslCredentials::Token(Arc::new(provider))
        }
        (SaslMechanism::OAuthBearer, _) => {
            return Err(invalid(
                jaas_spec,
                "",
                "OAuthBearerLoginModule for sasl.mechanism=OAUTHBEARER",
            ))
        }
        (_, LoginModule::OAuthBearer) => {
            return Err(invalid(
                jaas_spec,
                "",
                format!("PlainLoginModule or ScramLoginModule for sasl.mechanism={mechanism}"),
            ))
        }
        (_, LoginModule::Plain | LoginModule::Scram) => {
            let username = option("username").filter(|u| !u.is_empty());
            let password = entry
                .options
                .get("password")
                .map(|p| Secret::new(p.as_str()));
            match (username, password) {
                (Some(username), Some(password)) => {
                    SaslCredentials::Password { username, password }
                }
                _ => {
                    return Err(invalid(
                        jaas_spec,
                        "",
                        "a login module entry with username and password options",
                    ))
                }
            }
        }
    };
    Ok(SaslConfig {
        mechanism,
        credentials,
    })
}

fn expected(spec: &keys::KeySpec) -> &'static str {
    match spec.kind {
        keys::Kind::Typed { expected } => expected,
        _ => "a valid value",
    }
}
