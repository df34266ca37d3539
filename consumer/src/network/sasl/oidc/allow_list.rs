//! The token endpoint URL and Kafka's allow-list for it (CVE-2025-27817).
//!
//! Since Kafka 4.0 the client contacts only URLs listed in the JVM system property
//! `org.apache.kafka.sasl.oauthbearer.allowed.urls` (comma-separated, each entry trimmed and
//! compared exactly); its default is empty, so no URL is allowed until one is listed. A
//! process has no system properties here: the same list comes from the environment variable
//! [`ALLOWED_URLS_ENV`] or from [`OidcTokenProviderBuilder::allowed_urls`](super::OidcTokenProviderBuilder::allowed_urls),
//! which replaces it. `file:` URLs are governed by the same list, as in Java.

use std::collections::BTreeSet;

/// Java's system property naming the allowed token endpoint URLs.
pub const ALLOWED_URLS_PROPERTY: &str = "org.apache.kafka.sasl.oauthbearer.allowed.urls";

/// The environment variable playing the system property's part.
pub const ALLOWED_URLS_ENV: &str = "KAFKA_SASL_OAUTHBEARER_ALLOWED_URLS";

/// The key the URL is configured under, named in every error.
pub(crate) const TOKEN_ENDPOINT_URL: &str = "sasl.oauthbearer.token.endpoint.url";

/// Where tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// An OAuth token endpoint, spoken to over HTTP or HTTPS.
    Http(String),
    /// A file holding the token (Java's `FileJwtRetriever`), read on every fetch so an
    /// external process can rotate it.
    File(std::path::PathBuf),
}

/// The allowed URLs, as Java reads them: split on commas, entries trimmed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct AllowedUrls(BTreeSet<String>);

impl AllowedUrls {
    pub(crate) fn parse(list: &str) -> Self {
        Self(list.split(',').map(|url| url.trim().to_owned()).collect())
    }

    pub(crate) fn from_list<I: IntoIterator<Item = S>, S: AsRef<str>>(urls: I) -> Self {
        Self(
            urls.into_iter()
                .map(|u| u.as_ref().trim().to_owned())
                .collect(),
        )
    }

    /// From [`ALLOWED_URLS_ENV`]; unset means Kafka's default, the empty list.
    pub(crate) fn from_env() -> Self {
        Self::parse(&std::env::var(ALLOWED_URLS_ENV).unwrap_or_default())
    }

    fn allows(&self, url: &str) -> bool {
        self.0.contains(url)
    }
}

/// Java's `ConfigurationUtils.validateUrl` then, for `file:`, `validateFileUrl`: the URL must
/// have an http, https or file protocol and be on the allow-list; a file must exist, be a
/// regular file and be readable. The messages are Kafka's.
pub(crate) fn parse_endpoint(url: &str, allowed: &AllowedUrls) -> Result<Endpoint, String> {
    let Some((protocol, rest)) = url.split_once(':') else {
        return Err(format!(
            "The OAuth configuration option {TOKEN_ENDPOINT_URL} contains a URL ({url}) that is \
             missing the protocol"
        ));
    };
    let protocol = protocol.to_ascii_lowercase();
    if protocol.is_empty()
        || !protocol
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return Err(format!(
            "The OAuth configuration option {TOKEN_ENDPOINT_URL} contains a URL ({url}) that is \
             malformed: no protocol"
        ));
    }
    if !["http", "https", "file"].contains(&protocol.as_str()) {
        return Err(format!(
            "The OAuth configuration option {TOKEN_ENDPOINT_URL} contains a URL ({url}) that \
             contains an invalid protocol ({protocol}); only \"http\", \"https\", and \"file\" \
             protocol are supported"
        ));
    }
    if protocol != "file" {
        let authority = rest.strip_prefix("//").unwrap_or("");
        let host = authority.split(['/', '?', '#']).next().unwrap_or("");
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(format!(
                "The OAuth configuration option {TOKEN_ENDPOINT_URL} contains a URL ({url}) that \
                 is malformed: no host"
            ));
        }
    }
    if !allowed.allows(url) {
        return Err(format!(
            "The URL cannot be accessed due to restrictions. Update the system property \
             '{ALLOWED_URLS_PROPERTY}' (here: the environment variable {ALLOWED_URLS_ENV}) to \
             allow the URL to be accessed."
        ));
    }
    if protocol != "file" {
        return Ok(Endpoint::Http(url.to_owned()));
    }
    // file:/path, file:///path or file://localhost/path; Java takes the raw path.
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let slash = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            &authority_and_path[slash..]
        }
        None => rest,
    };
    let path = std::path::PathBuf::from(path);
    let metadata = std::fs::metadata(&path).map_err(|_| {
        format!(
            "The OAuth configuration option {TOKEN_ENDPOINT_URL} contains a file ({}) that \
             doesn't exist",
            path.display()
        )
    })?;
    if !metadata.is_file() {
        return Err(format!(
            "The OAuth configuration option {TOKEN_ENDPOINT_URL} references a directory ({}), \
             not a file",
            path.display()
        ));
    }
    std::fs::File::open(&path).map_err(|_| {
        format!(
            "The OAuth configuration option {TOKEN_ENDPOINT_URL} contains a file ({}) that \
             doesn't have read permission",
            path.display()
        )
    })?;
    Ok(Endpoint::File(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_allows_nothing() {
        let error =
            parse_endpoint("https://idp.example/token", &AllowedUrls::parse("")).unwrap_err();
        assert!(
            error.starts_with("The URL cannot be accessed due to restrictions"),
            "{error}"
        );
        assert!(error.contains(ALLOWED_URLS_PROPERTY) && error.contains(ALLOWED_URLS_ENV));
    }

    #[test]
    fn listed_urls_are_allowed_exactly() {
        let allowed = AllowedUrls::parse(" https://idp.example/token , http://127.0.0.1:8080/t");
        assert_eq!(
            parse_endpoint("https://idp.example/token", &allowed),
            Ok(Endpoint::Http("https://idp.example/token".into()))
        );
        assert!(parse_endpoint("http://127.0.0.1:8080/t", &allowed).is_ok());
        // No prefix or normalisation matching, as in Java.
        assert!(parse_endpoint("https://idp.example/token2", &allowed).is_err());
        assert!(parse_endpoint("https://IDP.example/token", &allowed).is_err());
    }

    #[test]
    fn protocols_and_shapes_are_checked_first() {
        let allowed = AllowedUrls::from_list(["ftp://x/y", "idp.example", "https:///token"]);
        let error = parse_endpoint("ftp://x/y", &allowed).unwrap_err();
        assert!(error.contains("invalid protocol (ftp)"), "{error}");
        let error = parse_endpoint("idp.example", &allowed).unwrap_err();
        assert!(error.contains("missing the protocol"), "{error}");
        let error = parse_endpoint("https:///token", &allowed).unwrap_err();
        assert!(error.contains("malformed"), "{error}");
    }

    #[test]
    fn file_urls_need_a_readable_file() {
        let dir = std::env::temp_dir().join(format!("oidc-allow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token.jwt");
        std::fs::write(&file, "x.y.z").unwrap();
        let url = format!("file:{}", file.display());
        let missing = format!("file:{}/absent", dir.display());
        let directory = format!("file://{}", dir.display());
        let allowed = AllowedUrls::from_list([&url, &missing, &directory]);
        assert_eq!(
            parse_endpoint(&url, &allowed),
            Ok(Endpoint::File(file.clone()))
        );
        assert!(parse_endpoint(&missing, &allowed)
            .unwrap_err()
            .contains("doesn't exist"));
        assert!(parse_endpoint(&directory, &allowed)
            .unwrap_err()
            .contains("directory"));
        // A file URL must be allowed too.
        assert!(parse_endpoint(&url, &AllowedUrls::default()).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
