//! TLS with rustls (ring provider): Kafka's `ssl.*` settings turned into a client config, and
//! the handshake on a new connection.
//!
//! Certificates are PEM only (Java's `ssl.truststore.type=PEM` / `ssl.keystore.type=PEM`); the
//! config layer refuses JKS and PKCS12. Without a CA the platform roots (Mozilla's, from
//! `webpki-roots`) are trusted, as Java trusts its default trust store. Hostname verification
//! is Java's `ssl.endpoint.identification.algorithm=https`; an empty algorithm turns it off
//! (the chain is still verified) and the config layer warns about it.
//!
//! The handshake runs over any `AsyncRead + AsyncWrite` stream, so it works over madsim's
//! simulated TCP too (madsim-tokio re-exports tokio's I/O traits).

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::secret::Secret;

/// Which certificate authorities a server certificate may chain to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TrustRoots {
    /// The platform's roots (Mozilla's root program, bundled).
    #[default]
    Platform,
    /// Only these PEM certificates (`ssl.truststore.certificates` or the file at
    /// `ssl.truststore.location`).
    Pem(String),
}

/// A client certificate for mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain, PEM, leaf first (`ssl.keystore.certificate.chain`).
    pub certificate_chain_pem: String,
    /// The private key, PEM (`ssl.keystore.key`): PKCS#8, PKCS#1 or SEC1, or encrypted PKCS#8.
    pub private_key_pem: Secret,
    /// The password of an encrypted key (`ssl.key.password`).
    pub key_password: Option<Secret>,
}

/// TLS protocol versions (`ssl.enabled.protocols`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// `TLSv1.2`.
    Tls12,
    /// `TLSv1.3`.
    Tls13,
}

impl TlsVersion {
    /// Parses Java's protocol name; older protocols are not offered by rustls.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "TLSv1.2" => Some(Self::Tls12),
            "TLSv1.3" => Some(Self::Tls13),
            _ => None,
        }
    }

    /// Java's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tls12 => "TLSv1.2",
            Self::Tls13 => "TLSv1.3",
        }
    }
}

/// The TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// Trusted CAs.
    pub trust: TrustRoots,
    /// The client certificate, for brokers with `ssl.client.auth=required`.
    pub client_identity: Option<ClientIdentity>,
    /// Whether the certificate must name the broker's host (`https`); `false` for "".
    pub verify_hostname: bool,
    /// The protocol versions offered; never empty.
    pub versions: Vec<TlsVersion>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            trust: TrustRoots::Platform,
            client_identity: None,
            verify_hostname: true,
            versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        }
    }
}

/// A TLS setting that cannot be turned into a working client config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {message}")]
pub struct TlsSetupError {
    /// Which setting, by Kafka's key.
    pub what: &'static str,
    /// What is wrong with it.
    pub message: String,
}

fn setup_error(what: &'static str, message: impl fmt::Display) -> TlsSetupError {
    TlsSetupError {
        what,
        message: message.to_string(),
    }
}

/// Parses PEM certificates, refusing text that holds none.
pub fn parse_certificates(
    what: &'static str,
    pem: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let certificates = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| setup_error(what, format!("not valid PEM: {e}")))?;
    if certificates.is_empty() {
        return Err(setup_error(what, "no PEM CERTIFICATE block found"));
    }
    Ok(certificates)
}

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// Parses a PEM private key: PKCS#8, PKCS#1 or SEC1, or an encrypted PKCS#8 key (PBES2, as
/// `openssl pkcs8 -topk8` writes) with `password` (Java's `ssl.key.password`). Errors never
/// quote the key or the password.
pub fn parse_private_key(
    what: &'static str,
    pem: &Secret,
    password: Option<&Secret>,
) -> Result<PrivateKeyDer<'static>, TlsSetupError> {
    let text = pem.expose();
    let Some(start) = text.find(ENCRYPTED_BEGIN) else {
        return PrivateKeyDer::from_pem_slice(text.as_bytes())
            .map_err(|_| setup_error(what, "no PEM private key found"));
    };
    let password = password.ok_or_else(|| {
        setup_error(
            "ssl.key.password",
            "the private key is encrypted; set ssl.key.password",
        )
    })?;
    let body = &text[start + ENCRYPTED_BEGIN.len()..];
    let end = body
        .find(ENCRYPTED_END)
        .ok_or_else(|| setup_error(what, "unterminated ENCRYPTED PRIVATE KEY block"))?;
    let base64: zeroize::Zeroizing<String> =
        zeroize::Zeroizing::new(body[..end].chars().filter(|c| !c.is_whitespace()).collect());
    let der = zeroize::Zeroizing::new(
        base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            base64.as_bytes(),
        )
        .map_err(|_| setup_error(what, "the ENCRYPTED PRIVATE KEY block is not base64"))?,
    );
    let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
        .map_err(|_| setup_error(what, "not an encrypted PKCS#8 key"))?;
    let decrypted = encrypted
        .decrypt(password.expose().as_bytes())
        .map_err(|_| {
            setup_error(
            "ssl.key.password",
            "cannot decrypt the private key: wrong password or an unsupported scheme (PBES2 with \
             PBKDF2 or scrypt and AES is supported)",
        )
        })?;
    Ok(PrivateKeyDer::Pkcs8(decrypted.as_bytes().to_vec().into()))
}

/// Builds the rustls client config once per client; every connection shares it.
pub fn client_config(config: &TlsConfig) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    match &config.trust {
        TrustRoots::Platform => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        TrustRoots::Pem(pem) => {
            for certificate in parse_certificates("ssl.truststore.certificates", pem)? {
                roots
                    .add(certificate)
                    .map_err(|e| setup_error("ssl.truststore.certificates", e))?;
            }
        }
    }
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = config
        .versions
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    if versions.is_empty() {
        return Err(setup_error("ssl.enabled.protocols", "no protocol enabled"));
    }
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| setup_error("ssl.truststore.certificates", e))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| setup_error("ssl.enabled.protocols", e))?;
    let builder = if config.verify_hostname {
        builder.with_webpki_verifier(verifier)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnlyVerifier(verifier)))
    };
    let client = match &config.client_identity {
        None => builder.with_no_client_auth(),
        Some(identity) => {
            let chain = parse_certificates(
                "ssl.keystore.certificate.chain",
                &identity.certificate_chain_pem,
            )?;
            let key = parse_private_key(
                "ssl.keystore.key",
                &identity.private_key_pem,
                identity.key_password.as_ref(),
            )?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| setup_error("ssl.keystore.key", e))?
        }
    };
    Ok(Arc::new(client))
}

/// The server name to verify and send as SNI: a DNS name or an IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsSetupError> {
    ServerName::try_from(host.to_owned()).map_err(|e| {
        setup_error(
            "bootstrap.servers",
            format!("{host:?} is not a TLS server name: {e}"),
        )
    })
}

/// Verifies the chain and signatures but accepts a certificate for another host name: Java's
/// `ssl.endpoint.identification.algorithm=""`.
#[derive(Debug)]
struct ChainOnlyVerifier(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The rustls error inside an I/O error, if the failure was TLS's (a bad certificate, an alert
/// from the broker) rather than the network's.
pub fn tls_error(error: &std::io::Error) -> Option<&rustls::Error> {
    error.get_ref()?.downcast_ref::<rustls::Error>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_roots_build() {
        let config = client_config(&TlsConfig::default()).unwrap();
        assert!(!config.client_auth_cert_resolver.has_certs());
    }

    #[test]
    fn bad_pem_names_the_key() {
        let config = TlsConfig {
            trust: TrustRoots::Pem("not a certificate".into()),
            ..TlsConfig::default()
        };
        let error = client_config(&config).unwrap_err();
        assert_eq!(error.what, "ssl.truststore.certificates");
        assert!(error.message.contains("no PEM CERTIFICATE"), "{error}");
    }

    #[test]
    fn key_errors_never_quote_the_key() {
        let key = Secret::new("secret-material-without-a-pem-header");
        let error = parse_private_key("ssl.keystore.key", &key, None).unwrap_err();
        assert!(!error.to_string().contains("secret-material"), "{error}");
        let encrypted = Secret::new(ENCRYPTED_KEY);
        let error = parse_private_key("ssl.keystore.key", &encrypted, None).unwrap_err();
        assert_eq!(error.what, "ssl.key.password");
        let wrong = Secret::new("hunter2");
        let error = parse_private_key("ssl.keystore.key", &encrypted, Some(&wrong)).unwrap_err();
        assert_eq!(error.what, "ssl.key.password");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    /// An EC key encrypted by `openssl pkcs8 -topk8 -v2 aes-256-cbc` with password `key-pass`,
    /// and a certificate for it: the decrypted key must match the certificate.
    #[test]
    fn encrypted_pkcs8_keys_decrypt_with_the_password() {
        let key = parse_private_key(
            "ssl.keystore.key",
            &Secret::new(ENCRYPTED_KEY),
            Some(&Secret::new("key-pass")),
        )
        .unwrap();
        assert!(matches!(key, PrivateKeyDer::Pkcs8(_)));
        let config = TlsConfig {
            client_identity: Some(ClientIdentity {
                certificate_chain_pem: CERTIFICATE.to_owned(),
                private_key_pem: Secret::new(ENCRYPTED_KEY),
                key_password: Some(Secret::new("key-pass")),
            }),
            ..TlsConfig::default()
        };
        let config = client_config(&config).unwrap();
        assert!(config.client_auth_cert_resolver.has_certs());
    }

    const ENCRYPTED_KEY: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAhSh5VaRR2P0QICCAAw\nDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEELw/1+KuUh602a7IAw77XugEgZDC\nTaFSxMhQeUJoakh0gjKSWWlNwqlVJD1E2k1XH3ZczgbN27Moo/ZMN2IWU8N2163b\nUqauJ3OGbjx/HlpL1VZBNZJP5S8Hy0JQ5H8ES8uILiBYboNHosfaqINZ5ZbekN+q\n3LJncPf92IfYnuZHq/+bNxt+Siq9pkia9n1Y4BuNoHYLRMiKMhPOMBr9g6/lKdY=\n-----END ENCRYPTED PRIVATE KEY-----\n";
    const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----\nMIIBcjCCARmgAwIBAgIUMEz8GzPGZda8uCxQYf5T5MNlzuUwCgYIKoZIzj0EAwIw\nDzENMAsGA1UEAwwEdGVzdDAeFw0yNjEyMDExNjE5NTNaFw0zNjExMjgxNjE5NTNa\nMA8xDTALBgNVBAMMBHRlc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASlUQEG\nWzutK/0GVrXgDucFLHSa3/8oqZRkVkaLQ4BcXSs94c9EcJ8K5hr2H48l91/odRSq\nEwWcSlXFc+YM26ZWo1MwUTAdBgNVHQ4EFgQUhXjjJEt+T6GATedEcgSArQipaNMw\nHwYDVR0jBBgwFoAUhXjjJEt+T6GATedEcgSArQipaNMwDwYDVR0TAQH/BAUwAwEB\n/zAKBggqhkjOPQQDAgNHADBEAiA8xWXgtFj+emk3xNUAqRAPiRyvlkPcHVeg4e2L\nBK+VmgIgOtaD4P2jlq33tuRNY0o79S7slHg1IF6PbQ7btXucXwE=\n-----END CERTIFICATE-----\n";

    #[test]
    fn server_names_accept_hosts_and_ips() {
        assert!(server_name("localhost").is_ok());
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("::1").is_ok());
        assert!(server_name("bad host").is_err());
    }
}
