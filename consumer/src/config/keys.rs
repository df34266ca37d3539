//! The key table: every consumer configuration Java's `ConsumerConfig` defines (4.x trunk),
//! with its type, Java's default, Java's validator and what this client does with it.
//!
//! The table is the single source of defaults and validators: values, defaults included, are
//! parsed from these strings by the same code, so a default cannot disagree with its validator.

/// How a value is parsed and checked; each variant mirrors a Java `ConfigDef.Type` plus its
/// validator.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// `Type.BOOLEAN`: `true`/`false`, case-insensitive.
    Bool,
    /// `Type.INT`, with `Range.atLeast(min)` when `min` is set.
    Int { min: Option<i32> },
    /// `Type.LONG`, with `Range.atLeast(min)` when `min` is set.
    Long { min: Option<i64> },
    /// `Type.STRING` without a validator (trimmed, like Java).
    Str,
    /// `Type.LIST` with `ValidList.anyNonDuplicateValues(allow_empty, _)`.
    List { allow_empty: bool },
    /// `Type.STRING` with `ValidString.in` or, if `ignore_case`, `CaseInsensitiveValidString.in`.
    OneOf {
        options: &'static [&'static str],
        ignore_case: bool,
    },
    /// `Type.CLASS`: a Java class name; we can only check that one is given.
    Class,
    /// Parsed by the field's own Rust type; `expected` says what is valid.
    Typed { expected: &'static str },
}

/// Java's default for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultValue {
    /// `ConfigDef.NO_DEFAULT_VALUE`: the key must be given.
    Required,
    /// `null`.
    Null,
    /// This value, as Java's documentation prints it.
    Value(&'static str),
}

/// What this client does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Read into a [`ConsumerConfig`](super::ConsumerConfig) field.
    Field,
    /// Only Java's default value is implemented; any other valid value is refused as
    /// unsupported, for this reason.
    OnlyDefault(&'static str),
    /// Accepted and checked as Java would, then ignored with a warning giving this reason.
    Ignored(&'static str),
}

/// One configuration key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeySpec {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) default: DefaultValue,
    pub(crate) role: Role,
    /// Why the key exists, in one line.
    pub(crate) doc: &'static str,
}

const fn key(
    name: &'static str,
    kind: Kind,
    default: DefaultValue,
    role: Role,
    doc: &'static str,
) -> KeySpec {
    KeySpec {
        name,
        kind,
        default,
        role,
        doc,
    }
}

const fn int(min: i32) -> Kind {
    Kind::Int { min: Some(min) }
}

const fn long(min: i64) -> Kind {
    Kind::Long { min: Some(min) }
}

const ANY_INT: Kind = Kind::Int { min: None };
const ANY_LONG: Kind = Kind::Long { min: None };

use DefaultValue::{Null, Required, Value};
use Role::{Field, Ignored, OnlyDefault};

const JAVA_PLUGIN: &str = "Java classes cannot be loaded by a Rust client";
const METRICS: &str = "Java metrics reporters cannot be loaded; enable the `metrics` feature to export the metrics through the `metrics` crate";

/// Every key, sorted by name (the order `Display` lists them in, like Java's log).
#[rustfmt::skip]
pub(crate) const KEYS: &[KeySpec] = &[
    key("allow.auto.create.topics", Kind::Bool, Value("true"), Field,
        "Let the broker auto-create subscribed or assigned topics (if it allows that)."),
    key("auto.commit.interval.ms", int(0), Value("5000"), Field,
        "How often offsets are auto-committed when enable.auto.commit is true."),
    key("auto.offset.reset",
        Kind::Typed { expected: "one of earliest, latest, none or by_duration:<ISO-8601 duration>" },
        Value("latest"), Field,
        "Where to start when there is no committed offset or it is out of range."),
    key("bootstrap.servers",
        Kind::Typed { expected: "a non-empty, duplicate-free list of host:port addresses" },
        Required, Field, "Brokers to discover the cluster through."),
    key("check.crcs", Kind::Bool, Value("true"), Field,
        "Verify the CRC32C of fetched record batches."),
    key("client.dns.lookup",
        Kind::OneOf { options: &["use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"], ignore_case: false },
        Value("use_all_dns_ips"), OnlyDefault("only use_all_dns_ips is implemented"),
        "How broker host names are resolved."),
    key("client.id", Kind::Str, Value(""), Field,
        "Sent with every request for server-side logging and quotas."),
    key("client.rack", Kind::Str, Value(""), Field,
        "The consumer's rack, for fetching from the closest replica (KIP-392)."),
    key("config.providers", Kind::List { allow_empty: true }, Value(""), Ignored(JAVA_PLUGIN),
        "Java ConfigProvider classes for ${...} substitution."),
    key("connections.max.idle.ms", ANY_LONG, Value("540000"), Field,
        "Close connections idle this long (a bit below the broker's 10 minutes)."),
    key("default.api.timeout.ms", int(0), Value("60000"), Field,
        "Timeout of consumer calls that take no explicit timeout."),
    key("enable.auto.commit", Kind::Bool, Value("true"), Field,
        "Commit consumed offsets periodically in the background."),
    key("enable.metrics.push", Kind::Bool, Value("true"), Field,
        "Push client metrics to the broker when a client-metrics subscription asks for them (KIP-714)."),
    key("exclude.internal.topics", Kind::Bool, Value("true"), Field,
        "Keep internal topics out of pattern subscriptions."),
    key("fetch.max.bytes", int(0), Value("52428800"), Field,
        "Soft cap on the data a fetch response returns."),
    key("fetch.max.wait.ms", int(0), Value("500"), Field,
        "How long the broker may wait for fetch.min.bytes."),
    key("fetch.min.bytes", int(0), Value("1"), Field,
        "Data the broker should gather before answering a fetch."),
    key("group.id", Kind::Str, Null, Field,
        "The consumer group; needed for subscribe and committed offsets."),
    key("group.instance.id",
        Kind::Typed { expected: "a non-empty id of at most 249 ASCII alphanumerics, '.', '_' or '-' (not '.' or '..')" },
        Null, Field, "Static membership id: restarts keep the assignment."),
    key("group.protocol",
        Kind::Typed { expected: "one of (case insensitive): classic, consumer" },
        Value("classic"), Field, "classic (JoinGroup/SyncGroup) or consumer (KIP-848)."),
    key("group.remote.assignor", Kind::Str, Null, Field,
        "Server-side assignor for group.protocol=consumer; the broker picks if unset."),
    key("heartbeat.interval.ms", ANY_INT, Value("3000"), Field,
        "Classic protocol: how often to heartbeat the coordinator."),
    key("interceptor.classes", Kind::List { allow_empty: true }, Value(""), Ignored(JAVA_PLUGIN),
        "Java ConsumerInterceptor classes."),
    key("internal.throw.on.fetch.stable.offset.unsupported", Kind::Bool, Value("false"),
        Ignored("a Java-internal switch"),
        "Java-internal: fail when the broker cannot fetch stable offsets."),
    key("isolation.level",
        Kind::Typed { expected: "one of: read_committed, read_uncommitted" },
        Value("read_uncommitted"), Field,
        "Whether to return records of aborted and open transactions."),
    key("key.deserializer", Kind::Class, Null,
        Ignored("this client hands out raw bytes; deserialize with Rust types"),
        "Java Deserializer class for keys."),
    key("max.partition.fetch.bytes", int(0), Value("1048576"), Field,
        "Soft cap on the data a fetch returns per partition."),
    key("max.poll.interval.ms", int(1), Value("300000"), Field,
        "Longest allowed gap between polls before the consumer leaves the group."),
    key("max.poll.records", int(1), Value("500"), Field,
        "Most records one poll returns."),
    key("metadata.max.age.ms", long(0), Value("300000"), Field,
        "Refresh metadata at least this often."),
    key("metadata.recovery.rebootstrap.trigger.ms", long(0), Value("300000"), Field,
        "Rebootstrap after this long without metadata from any known broker."),
    key("metadata.recovery.strategy",
        Kind::OneOf { options: &["none", "rebootstrap"], ignore_case: true },
        Value("rebootstrap"), Field,
        "What to do when no known broker is reachable."),
    key("metric.reporters", Kind::List { allow_empty: true },
        Value("org.apache.kafka.common.metrics.JmxReporter"), Ignored(METRICS),
        "Java MetricsReporter classes."),
    key("metrics.num.samples", int(1), Value("2"), Field,
        "Samples a windowed metric (an average, maximum or rate) is computed over."),
    key("metrics.recording.level",
        Kind::OneOf { options: &["INFO", "DEBUG", "TRACE"], ignore_case: false },
        Value("INFO"), Ignored("every metric this client has is recorded at INFO"),
        "Which Java metrics are recorded."),
    key("metrics.sample.window.ms", long(0), Value("30000"), Field,
        "How long one sample of a windowed metric lasts."),
    key("partition.assignment.strategy",
        Kind::Typed { expected: "a duplicate-free list of range, roundrobin, sticky, cooperative-sticky or their Java class names" },
        Value("org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor"),
        Field, "Classic protocol: client-side assignors, by preference."),
    key("receive.buffer.bytes", int(-1), Value("65536"), Field,
        "SO_RCVBUF; -1 uses the OS default."),
    key("reconnect.backoff.max.ms", long(0), Value("1000"), Field,
        "Cap of the exponential reconnect backoff."),
    key("reconnect.backoff.ms", long(0), Value("50"), Field,
        "First delay before reconnecting to a broker."),
    key("request.timeout.ms", int(0), Value("30000"), Field,
        "How long a request may wait for its response."),
    key("retry.backoff.max.ms", long(0), Value("1000"), Field,
        "Cap of the exponential retry backoff."),
    key("retry.backoff.ms", long(0), Value("100"), Field,
        "First delay before retrying a failed request."),
    key("sasl.jaas.config", Kind::Str, Null, Field,
        "The login module entry holding the SASL credentials (Kafka's Plain, Scram or OAuthBearer login module)."),
    key("sasl.login.callback.handler.class", Kind::Class, Null, Field,
        "OAUTHBEARER: Kafka's OAuthBearerLoginCallbackHandler fetches tokens from sasl.oauthbearer.token.endpoint.url (feature `oidc`)."),
    key("sasl.login.connect.timeout.ms", Kind::Typed { expected: "a whole number of milliseconds, at least 0" }, Null, Field,
        "OAUTHBEARER token endpoint: connect timeout (unset: none)."),
    key("sasl.login.read.timeout.ms", Kind::Typed { expected: "a whole number of milliseconds, at least 0" }, Null, Field,
        "OAUTHBEARER token endpoint: read timeout (unset: none)."),
    key("sasl.login.refresh.buffer.seconds", Kind::Typed { expected: "a whole number of seconds from 0 to 3600" }, Value("300"), Field,
        "Refresh the login token at least this long before it expires."),
    key("sasl.login.refresh.min.period.seconds", Kind::Typed { expected: "a whole number of seconds from 0 to 900" }, Value("60"), Field,
        "Wait at least this long between login token refreshes."),
    key("sasl.login.refresh.window.factor", Kind::Typed { expected: "a number from 0.5 to 1.0" }, Value("0.8"), Field,
        "Refresh the login token at this fraction of its lifetime."),
    key("sasl.login.refresh.window.jitter", Kind::Typed { expected: "a number from 0.0 to 0.25" }, Value("0.05"), Field,
        "Random fraction of the lifetime added to the refresh time."),
    key("sasl.login.retry.backoff.max.ms", Kind::Typed { expected: "a whole number of milliseconds, at least 0" }, Value("10000"), Field,
        "OAUTHBEARER token endpoint: total time one fetch may spend retrying."),
    key("sasl.login.retry.backoff.ms", Kind::Typed { expected: "a whole number of milliseconds, at least 0" }, Value("100"), Field,
        "OAUTHBEARER token endpoint: first wait before a retry, doubling after."),
    key("sasl.mechanism",
        Kind::Typed { expected: "one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER" },
        Value("GSSAPI"), Field, "The SASL mechanism for SASL_PLAINTEXT and SASL_SSL."),
    key("sasl.oauthbearer.client.credentials.client.id", Kind::Str, Null, Field,
        "OAUTHBEARER client-credentials grant: the client id (else the JAAS option clientId)."),
    key("sasl.oauthbearer.client.credentials.client.secret", Kind::Str, Null, Field,
        "OAUTHBEARER client-credentials grant: the client secret (else the JAAS option clientSecret)."),
    key("sasl.oauthbearer.header.urlencode", Kind::Bool, Value("false"), Field,
        "URL-encode the client id and secret in the token request's Basic credentials."),
    key("sasl.oauthbearer.scope", Kind::Str, Null, Field,
        "OAUTHBEARER: the scope to request (else the JAAS option scope)."),
    key("sasl.oauthbearer.scope.claim.name", Kind::Str, Value("scope"), Field,
        "The token claim holding its scope."),
    key("sasl.oauthbearer.sub.claim.name", Kind::Str, Value("sub"), Field,
        "The token claim holding its subject (the principal)."),
    key("sasl.oauthbearer.token.endpoint.url", Kind::Str, Null, Field,
        "OAUTHBEARER: the OAuth token endpoint (https, http) or a file: URL holding a token; must be allowed by KAFKA_SASL_OAUTHBEARER_ALLOWED_URLS."),
    key("security.protocol",
        Kind::OneOf { options: &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], ignore_case: true },
        Value("PLAINTEXT"), Field,
        "How to talk to brokers: plain TCP or TLS, with or without SASL."),
    key("security.providers", Kind::Str, Null, Ignored(JAVA_PLUGIN),
        "Java security provider classes."),
    key("send.buffer.bytes", int(-1), Value("131072"), Field,
        "SO_SNDBUF; -1 uses the OS default."),
    key("session.timeout.ms", ANY_INT, Value("45000"), Field,
        "Classic protocol: missed-heartbeat time before the member is removed."),
    key("share.acknowledgement.mode",
        Kind::OneOf { options: &["implicit", "explicit"], ignore_case: true },
        Value("implicit"), Ignored("share groups (KIP-932) need a share consumer"),
        "Share consumers only; refused for both group protocols, as Java does."),
    key("socket.connection.setup.timeout.max.ms", ANY_LONG, Value("30000"), Field,
        "Cap of the exponentially growing connect timeout."),
    key("socket.connection.setup.timeout.ms", ANY_LONG, Value("10000"), Field,
        "First connect timeout."),
    key("ssl.enabled.protocols",
        Kind::Typed { expected: "a list of TLSv1.2 and TLSv1.3" },
        Value("TLSv1.2,TLSv1.3"), Field, "The TLS versions offered."),
    key("ssl.endpoint.identification.algorithm", Kind::Str, Value("https"), Field,
        "https verifies that the broker's certificate names its host; empty disables that."),
    key("ssl.key.password", Kind::Str, Null, Field,
        "Password of an encrypted (PKCS#8, PBES2) private key."),
    key("ssl.keystore.certificate.chain", Kind::Str, Null, Field,
        "The client certificate chain, PEM, for mutual TLS."),
    key("ssl.keystore.key", Kind::Str, Null, Field,
        "The client's private key, unencrypted PEM, for mutual TLS."),
    key("ssl.keystore.location", Kind::Str, Null, Field,
        "A PEM file with the client's private key and certificate chain, for mutual TLS."),
    key("ssl.keystore.type", Kind::Str, Value("JKS"), Field,
        "Must be PEM when a key store is given (JKS and PKCS12 are refused)."),
    key("ssl.protocol", Kind::Str, Value("TLSv1.3"),
        Ignored("rustls offers the versions in ssl.enabled.protocols"),
        "Java's SSLContext protocol."),
    key("ssl.truststore.certificates", Kind::Str, Null, Field,
        "Trusted CA certificates, PEM; the platform roots are trusted without a trust store."),
    key("ssl.truststore.location", Kind::Str, Null, Field,
        "A PEM file of trusted CA certificates."),
    key("ssl.truststore.type", Kind::Str, Value("JKS"), Field,
        "Must be PEM when a trust store is given (JKS and PKCS12 are refused)."),
    key("value.deserializer", Kind::Class, Null,
        Ignored("this client hands out raw bytes; deserialize with Rust types"),
        "Java Deserializer class for values."),
];

/// The spec of a known key.
pub(crate) fn spec(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|spec| spec.name == name)
}

/// Key prefixes of Java's TLS and SASL settings (`withClientSslSupport`,
/// `withClientSaslSupport`): those not in the table are refused as a family, with the reason.
pub(crate) const UNSUPPORTED_PREFIXES: &[(&str, &str)] = &[
    (
        "ssl.",
        "this TLS setting is not supported (JKS/PKCS12 stores, Java providers and \
              cipher lists are not; use PEM keys and ssl.enabled.protocols)",
    ),
    (
        "sasl.",
        "this SASL setting is not supported (Kerberos, Java callback handlers, JWKS \
               validation and the jwt-bearer grant are not)",
    ),
];

/// Whether a key's value must never be shown: Java's `PASSWORD`-typed keys and anything that
/// looks like a credential.
pub(crate) fn is_secret(name: &str) -> bool {
    const MARKERS: &[&str] = &[
        "password",
        "secret",
        "sasl.jaas",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "token",
    ];
    let name = name.to_ascii_lowercase();
    // A URL is an address, not a credential (`sasl.oauthbearer.token.endpoint.url`).
    if name.ends_with(".url") {
        return false;
    }
    MARKERS.iter().any(|marker| name.contains(marker))
}

/// The known key closest to `unknown` by edit distance, if close enough to be a typo.
pub(crate) fn suggest(unknown: &str) -> Option<&'static str> {
    let budget = (unknown.len() / 4).clamp(1, 3);
    KEYS.iter()
        .map(|spec| (edit_distance(unknown, spec.name), spec.name))
        .filter(|(distance, _)| *distance <= budget)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// Levenshtein distance over bytes (keys are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.as_bytes().iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in KEYS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} / {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("group.id", "group.id"), 0);
    }

    #[test]
    fn suggests_close_keys_only() {
        assert_eq!(suggest("max.poll.record"), Some("max.poll.records"));
        assert_eq!(suggest("sesion.timeout.ms"), Some("session.timeout.ms"));
        assert_eq!(suggest("group.di"), Some("group.id"));
        assert_eq!(suggest("completely.unrelated.setting"), None);
    }

    #[test]
    fn secrets_are_recognised() {
        for key in [
            "ssl.key.password",
            "sasl.jaas.config",
            "SASL.JAAS.CONFIG",
            "ssl.keystore.key",
        ] {
            assert!(is_secret(key), "{key}");
        }
        for key in ["group.id", "client.id", "bootstrap.servers"] {
            assert!(!is_secret(key), "{key}");
        }
    }
}
