//! What a secured connection is configured with, for code that builds it rather than reading
//! Kafka's property names (`security.protocol`, `sasl.*`, `ssl.*` in
//! [`ConsumerConfig`](crate::ConsumerConfig) cover the same ground): the protocol, SASL
//! mechanisms and credentials, token providers for SASL/OAUTHBEARER, TLS trust and identity.
//!
//! The connection code itself stays private; these are the types its configuration is made of.

pub use crate::network::sasl::{
    OAuthBearerToken, SaslConfig, SaslCredentials, SaslMechanism, TokenProvider,
    UnsecuredJwtProvider,
};
#[cfg(all(feature = "oidc", not(madsim)))]
pub use crate::network::sasl::{
    OidcError, OidcTokenProvider, OidcTokenProviderBuilder, RefreshConfig, ALLOWED_URLS_ENV,
    ALLOWED_URLS_PROPERTY, LOGIN_CALLBACK_HANDLER_CLASSES,
};
pub use crate::network::tls::{ClientIdentity, TlsConfig, TlsSetupError, TlsVersion, TrustRoots};
pub use crate::network::{Secret, SecurityConfig, SecurityProtocol};
