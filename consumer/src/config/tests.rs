//! Tests across the whole construction path: Java's defaults, validator boundaries, protocol
//! rules, warnings, and the equivalence of the three ways in.

use std::collections::BTreeMap;
use std::time::Duration;

use super::keys::{DefaultValue, Role, KEYS};
use super::*;
use crate::network::sasl::{SaslCredentials, SaslMechanism};
use crate::network::tls::{TlsVersion, TrustRoots};
use crate::network::{Secret, SecurityProtocol};

const SERVERS: (&str, &str) = ("bootstrap.servers", "localhost:9092");

fn parse(pairs: &[(&str, &str)]) -> Result<Parsed, ConfigError> {
    ConsumerConfig::parse([SERVERS].into_iter().chain(pairs.iter().copied()))
}

fn config(pairs: &[(&str, &str)]) -> ConsumerConfig {
    parse(pairs).unwrap().config
}

fn error(pairs: &[(&str, &str)]) -> ConfigError {
    parse(pairs).unwrap_err()
}

fn invalid_key(pairs: &[(&str, &str)]) -> &'static str {
    match error(pairs) {
        ConfigError::InvalidValue { key, .. } => key,
        other => panic!("expected InvalidValue, got {other:?}"),
    }
}

/// Java 4.x `ConsumerConfig` defaults, written out independently of the key table.
#[test]
fn defaults_equal_javas() {
    let java: &[(&str, &str)] = &[
        ("allow.auto.create.topics", "true"),
        ("auto.commit.interval.ms", "5000"),
        ("auto.offset.reset", "latest"),
        ("check.crcs", "true"),
        ("client.dns.lookup", "use_all_dns_ips"),
        ("client.id", ""),
        ("client.rack", ""),
        ("config.providers", ""),
        ("connections.max.idle.ms", "540000"),
        ("default.api.timeout.ms", "60000"),
        ("enable.auto.commit", "true"),
        ("enable.metrics.push", "true"),
        ("exclude.internal.topics", "true"),
        ("fetch.max.bytes", "52428800"),
        ("fetch.max.wait.ms", "500"),
        ("fetch.min.bytes", "1"),
        ("group.protocol", "classic"),
        ("heartbeat.interval.ms", "3000"),
        ("interceptor.classes", ""),
        ("internal.throw.on.fetch.stable.offset.unsupported", "false"),
        ("isolation.level", "read_uncommitted"),
        ("max.partition.fetch.bytes", "1048576"),
        ("max.poll.interval.ms", "300000"),
        ("max.poll.records", "500"),
        ("metadata.max.age.ms", "300000"),
        ("metadata.recovery.rebootstrap.trigger.ms", "300000"),
        ("metadata.recovery.strategy", "rebootstrap"),
        ("metric.reporters", "org.apache.kafka.common.metrics.JmxReporter"),
        ("metrics.num.samples", "2"),
        ("metrics.recording.level", "INFO"),
        ("metrics.sample.window.ms", "30000"),
        (
            "partition.assignment.strategy",
            "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        ),
        ("receive.buffer.bytes", "65536"),
        ("reconnect.backoff.max.ms", "1000"),
        ("reconnect.backoff.ms", "50"),
        ("request.timeout.ms", "30000"),
        ("retry.backoff.max.ms", "1000"),
        ("retry.backoff.ms", "100"),
        ("sasl.login.refresh.buffer.seconds", "300"),
        ("sasl.login.refresh.min.period.seconds", "60"),
        ("sasl.login.refresh.window.factor", "0.8"),
        ("sasl.login.refresh.window.jitter", "0.05"),
        ("sasl.login.retry.backoff.max.ms", "10000"),
        ("sasl.login.retry.backoff.ms", "100"),
        ("sasl.mechanism", "GSSAPI"),
        ("sasl.oauthbearer.header.urlencode", "false"),
        ("sasl.oauthbearer.scope.claim.name", "scope"),
        ("sasl.oauthbearer.sub.claim.name", "sub"),
        ("security.protocol", "PLAINTEXT"),
        ("send.buffer.bytes", "131072"),
        ("session.timeout.ms", "45000"),
        ("share.acknowledgement.mode", "implicit"),
        ("socket.connection.setup.timeout.max.ms", "30000"),
        ("socket.connection.setup.timeout.ms", "10000"),
        ("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
        ("ssl.endpoint.identification.algorithm", "https"),
        ("ssl.keystore.type", "JKS"),
        ("ssl.protocol", "TLSv1.3"),
        ("ssl.truststore.type", "JKS"),
    ];
    let null_or_required = [
        "bootstrap.servers",
        "group.id",
        "group.instance.id",
        "group.remote.assignor",
        "key.deserializer",
        "sasl.jaas.config",
        "sasl.login.callback.handler.class",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.token.endpoint.url",
        "security.providers",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "value.deserializer",
    ];
    for spec in KEYS {
        match java.iter().find(|(key, _)| *key == spec.name) {
            Some((_, value)) => {
                assert_eq!(spec.default, DefaultValue::Value(value), "{}", spec.name)
            }
            None => assert!(
                null_or_required.contains(&spec.name),
                "{} has no expected default",
                spec.name
            ),
        }
    }
    assert_eq!(KEYS.len(), java.len() + null_or_required.len());

    // The typed config read from nothing but bootstrap.servers carries the same values
    // (enable.auto.commit excepted: Java turns it off without a group).
    let properties: BTreeMap<_, _> = config(&[]).to_properties().into_iter().collect();
    for (key, value) in java {
        if let Some(actual) = properties.get(key) {
            let expected = if *key == "enable.auto.commit" {
                "false"
            } else {
                value
            };
            assert_eq!(actual, expected, "{key}");
        }
    }
    let with_group = config(&[("group.id", "g")]);
    assert!(with_group.enable_auto_commit());
    assert_eq!(
        with_group.partition_assignment_strategy(),
        [Assignor::Range, Assignor::CooperativeSticky]
    );
    assert_eq!(with_group.group_protocol(), GroupProtocol::Classic);
    assert_eq!(with_group.auto_offset_reset(), AutoOffsetReset::Latest);
}

#[test]
fn every_field_key_is_listed_and_round_trips() {
    let original = config(&[
        ("group.id", "g"),
        ("group.instance.id", "i-1"),
        ("auto.offset.reset", "by_duration:PT1H"),
        ("partition.assignment.strategy", "roundrobin, sticky"),
        ("bootstrap.servers", "PLAINTEXT://a:1, [::1]:2"),
    ]);
    let listed: Vec<&str> = original.to_properties().iter().map(|(k, _)| *k).collect();
    let fields: Vec<&str> = KEYS
        .iter()
        .filter(|s| s.role == Role::Field && s.name != "group.remote.assignor")
        // Security keys are listed only when set (and secret ones never).
        .filter(|s| !s.name.starts_with("ssl.") && !s.name.starts_with("sasl."))
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, fields);
    let reparsed = ConsumerConfig::from_pairs(original.to_properties()).unwrap();
    assert_eq!(reparsed, original);
    assert_eq!(reparsed.bootstrap_servers(), ["a:1", "[::1]:2"]);
}

#[test]
fn display_lists_effective_values_like_java() {
    let text = config(&[("group.id", "g"), ("max.poll.records", "7")]).to_string();
    assert!(text.starts_with("ConsumerConfig values:\n"));
    assert!(text.contains("\tmax.poll.records = 7\n"));
    assert!(text.contains("\tgroup.instance.id = null\n"));
    assert!(text.contains("\tgroup.id = g\n"));
    assert_eq!(
        text.lines().count(),
        1 + KEYS.iter().filter(|s| s.role == Role::Field).count()
    );
}

#[test]
fn bootstrap_servers_is_required_and_checked() {
    assert_eq!(
        ConsumerConfig::parse([("group.id", "g")]).unwrap_err(),
        ConfigError::Missing {
            key: "bootstrap.servers"
        }
    );
    for bad in ["", " ", "a:1,a:1", "a:1,,b:2", "nohost", "a:99999"] {
        let err = ConsumerConfig::parse([("bootstrap.servers", bad)]).unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::InvalidValue {
                    key: "bootstrap.servers",
                    ..
                }
            ),
            "{bad}: {err}"
        );
    }
}

/// Each `atLeast(min)` validator: `min` is accepted, `min - 1` rejected, naming key and value.
#[test]
fn range_boundaries() {
    let bounded = [
        ("auto.commit.interval.ms", 0),
        ("default.api.timeout.ms", 0),
        ("fetch.max.bytes", 0),
        ("fetch.max.wait.ms", 0),
        ("fetch.min.bytes", 0),
        ("max.partition.fetch.bytes", 0),
        ("max.poll.interval.ms", 1),
        ("max.poll.records", 1),
        ("metadata.max.age.ms", 0),
        ("receive.buffer.bytes", -1),
        ("reconnect.backoff.max.ms", 0),
        ("reconnect.backoff.ms", 0),
        ("request.timeout.ms", 0),
        ("retry.backoff.max.ms", 0),
        ("retry.backoff.ms", 0),
        ("send.buffer.bytes", -1),
        ("metrics.num.samples", 1),
        ("metrics.sample.window.ms", 0),
        ("metadata.recovery.rebootstrap.trigger.ms", 0),
    ];
    for (key, min) in bounded {
        let ok = min.to_string();
        assert!(parse(&[(key, &ok)]).is_ok(), "{key}={ok}");
        let below = (min - 1).to_string();
        match error(&[(key, &below)]) {
            ConfigError::InvalidValue {
                key: k,
                value,
                expected,
            } => {
                assert_eq!(k, key);
                assert_eq!(value, format!("{below:?}"));
                assert_eq!(expected, format!("a value of at least {min}"));
            }
            other => panic!("{key}: {other:?}"),
        }
    }
    let msg = error(&[("max.poll.records", "0")]).to_string();
    assert_eq!(
        msg,
        "invalid value \"0\" for configuration `max.poll.records`: a value of at least 1"
    );
}

#[test]
fn unbounded_keys_accept_negatives_as_java_does() {
    let c = config(&[
        ("session.timeout.ms", "-5"),
        ("heartbeat.interval.ms", "-1"),
        ("connections.max.idle.ms", "-1"),
        ("socket.connection.setup.timeout.ms", "-1"),
        ("socket.connection.setup.timeout.max.ms", "-1"),
    ]);
    assert_eq!(c.session_timeout_ms(), -5);
    assert_eq!(c.connections_max_idle_ms(), -1);
}

#[test]
fn type_errors_name_key_and_expectation() {
    assert_eq!(
        invalid_key(&[("session.timeout.ms", "45s")]),
        "session.timeout.ms"
    );
    assert_eq!(
        invalid_key(&[("fetch.max.bytes", "2147483648")]),
        "fetch.max.bytes"
    );
    assert_eq!(
        invalid_key(&[("enable.auto.commit", "1")]),
        "enable.auto.commit"
    );
    assert_eq!(
        invalid_key(&[("isolation.level", "READ_COMMITTED")]),
        "isolation.level"
    );
    assert_eq!(
        invalid_key(&[("auto.offset.reset", "smallest")]),
        "auto.offset.reset"
    );
    assert_eq!(
        invalid_key(&[("auto.offset.reset", "by_duration:-PT1H")]),
        "auto.offset.reset"
    );
    assert_eq!(
        invalid_key(&[("group.protocol", "eager")]),
        "group.protocol"
    );
    assert_eq!(
        invalid_key(&[("group.instance.id", "a b")]),
        "group.instance.id"
    );
    assert_eq!(
        invalid_key(&[("metrics.recording.level", "info")]),
        "metrics.recording.level"
    );
    assert_eq!(
        invalid_key(&[("key.deserializer", " ")]),
        "key.deserializer"
    );
    assert_eq!(
        invalid_key(&[("partition.assignment.strategy", "range,RangeAssignor")]),
        "partition.assignment.strategy"
    );
    assert_eq!(
        invalid_key(&[(
            "partition.assignment.strategy",
            "range,org.apache.kafka.clients.consumer.RangeAssignor"
        )]),
        "partition.assignment.strategy"
    );
    let msg = error(&[("group.protocol", "eager")]).to_string();
    assert!(
        msg.contains("one of (case insensitive): classic, consumer"),
        "{msg}"
    );
}

#[test]
fn case_insensitive_only_where_java_is() {
    assert_eq!(
        config(&[("group.protocol", "CONSUMER"), ("group.id", "g")]).group_protocol(),
        GroupProtocol::Consumer
    );
    assert!(parse(&[("security.protocol", "plaintext")]).is_ok());
    assert!(parse(&[("metadata.recovery.strategy", "NONE")]).is_ok());
    assert!(parse(&[("isolation.level", "Read_Committed")]).is_err());
    assert!(parse(&[("auto.offset.reset", "EARLIEST")]).is_err());
    assert!(parse(&[("client.dns.lookup", "USE_ALL_DNS_IPS")]).is_err());
    assert!(!config(&[("check.crcs", "FALSE")]).check_crcs());
}

#[test]
fn values_are_trimmed_like_java() {
    let c = config(&[
        ("group.id", "  g  "),
        ("max.poll.records", " 10 "),
        ("isolation.level", " read_committed "),
    ]);
    assert_eq!(c.group_id(), Some("g"));
    assert_eq!(c.max_poll_records(), 10);
    assert_eq!(c.isolation_level(), IsolationLevel::ReadCommitted);
}

#[test]
fn unknown_keys_are_rejected_with_suggestion() {
    let err = error(&[("max.poll.record", "5")]);
    assert_eq!(
        err,
        ConfigError::UnknownKey {
            key: "max.poll.record".into(),
            suggestion: Some("max.poll.records")
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown configuration key `max.poll.record` (did you mean `max.poll.records`?)"
    );
    let err = error(&[("enable.partition.eof", "true")]);
    assert_eq!(
        err.to_string(),
        "unknown configuration key `enable.partition.eof`"
    );
    // Java's internal leave-group switch is gone from 4.x trunk: unknown here too.
    assert!(matches!(
        error(&[("internal.leave.group.on.close", "false")]),
        ConfigError::UnknownKey { .. }
    ));
}

const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ==\n-----END PRIVATE KEY-----\n";
const SCRAM_JAAS: &str = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="hunter2-secret-value";"#;

#[test]
fn sasl_ssl_from_java_properties() {
    let parsed = parse(&[
        ("security.protocol", "sasl_ssl"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", CERT),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", CERT),
        ("ssl.keystore.key", KEY),
        ("ssl.enabled.protocols", "TLSv1.3"),
    ])
    .unwrap();
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let security = parsed.config.security();
    assert_eq!(security.protocol, SecurityProtocol::SaslSsl);
    assert_eq!(security.tls.versions, [TlsVersion::Tls13]);
    assert!(security.tls.verify_hostname);
    assert_eq!(security.tls.trust, TrustRoots::Pem(CERT.trim().to_owned()));
    let identity = security.tls.client_identity.as_ref().unwrap();
    assert_eq!(identity.private_key_pem.expose(), KEY.trim());
    let sasl = security.sasl.as_ref().unwrap();
    assert_eq!(sasl.mechanism, SaslMechanism::ScramSha512);
    assert_eq!(
        sasl.credentials,
        SaslCredentials::Password {
            username: "alice".into(),
            password: Secret::new("hunter2-secret-value"),
        }
    );
    // No secret in Debug, Display or the properties.
    for shown in [
        format!("{:?}", parsed.config),
        parsed.config.to_string(),
        format!("{:?}", parsed.config.to_properties()),
    ] {
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("c2VjcmV0LWtleQ"), "{shown}");
    }
    let text = parsed.config.to_string();
    assert!(text.contains("\tsasl.jaas.config = [hidden]\n"), "{text}");
    assert!(text.contains("\tsecurity.protocol = SASL_SSL\n"), "{text}");
    assert!(
        text.contains("\tsasl.mechanism = SCRAM-SHA-512\n"),
        "{text}"
    );
}

#[test]
fn oauthbearer_jaas_gives_an_unsecured_jwt_provider() {
    let config = config(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "OAUTHBEARER"),
        (
            "sasl.jaas.config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             unsecuredLoginStringClaim_sub=\"bob\" unsecuredLoginLifetimeSeconds=\"-60\" \
             unsecuredLoginExtension_traceId=\"7\";",
        ),
    ]);
    let sasl = config.security().sasl.clone().unwrap();
    let SaslCredentials::Token(provider) = sasl.credentials else {
        panic!("expected a token provider");
    };
    let token = provider.token().unwrap();
    assert!(token.expires_at_ms < crate::rt::wall_clock_ms());
    assert_eq!(token.extensions["traceId"], "7");
}

#[test]
fn builder_sets_security_like_properties() {
    let built = ConsumerConfig::builder()
        .bootstrap_servers(["localhost:9092"])
        .security_protocol(SecurityProtocol::SaslSsl)
        .sasl_password(SaslMechanism::ScramSha512, "alice", "hunter2-secret-value")
        .ssl_truststore_pem(CERT)
        .ssl_keystore_pem(CERT, KEY)
        .set("ssl.enabled.protocols", "TLSv1.3")
        .build()
        .unwrap();
    let parsed = config(&[
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", SCRAM_JAAS),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", CERT),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", CERT),
        ("ssl.keystore.key", KEY),
        ("ssl.enabled.protocols", "TLSv1.3"),
    ]);
    assert_eq!(built.security(), parsed.security());
    let builder = ConsumerConfig::builder().sasl_password(SaslMechanism::Plain, "a", "hunter2");
    assert!(!format!("{builder:?}").contains("hunter2"));

    let provider: Arc<dyn TokenProvider> =
        Arc::new(crate::network::sasl::UnsecuredJwtProvider::new("carol"));
    let built = ConsumerConfig::builder()
        .bootstrap_servers(["localhost:9092"])
        .security_protocol(SecurityProtocol::SaslPlaintext)
        .sasl_oauthbearer(provider.clone())
        .build()
        .unwrap();
    assert_eq!(
        built.security().sasl.as_ref().unwrap().credentials,
        SaslCredentials::Token(provider)
    );
}

#[test]
fn security_mistakes_name_the_key_and_never_echo_secrets() {
    let secret = "hunter2-secret-value";
    let sasl = |pairs: &[(&'static str, &'static str)]| {
        let mut all = vec![("security.protocol", "SASL_PLAINTEXT")];
        all.extend_from_slice(pairs);
        error(&all)
    };
    // Java's default mechanism is GSSAPI, which is refused.
    let err = sasl(&[("sasl.jaas.config", SCRAM_JAAS)]);
    assert!(
        matches!(&err, ConfigError::Unsupported { key, .. } if key == "sasl.mechanism"),
        "{err}"
    );
    assert_eq!(
        invalid_key(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "DIGEST-MD5")
        ]),
        "sasl.mechanism"
    );
    assert_eq!(
        sasl(&[("sasl.mechanism", "PLAIN")]),
        ConfigError::Missing {
            key: "sasl.jaas.config"
        }
    );
    for jaas in [
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\";",
        "com.example.Login required password=\"hunter2-secret-value\";",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"hunter2-secret-value",
    ] {
        let err = sasl(&[("sasl.mechanism", "PLAIN"), ("sasl.jaas.config", jaas)]);
        assert!(matches!(&err, ConfigError::InvalidValue { key: "sasl.jaas.config", .. }), "{err}");
        assert!(!err.to_string().contains(secret), "{err}");
        assert!(!format!("{err:?}").contains(secret), "{err:?}");
    }
    let err = sasl(&[("sasl.mechanism", "SCRAM-SHA-256"), ("sasl.jaas.config",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=x;")]);
    assert!(
        matches!(
            &err,
            ConfigError::InvalidValue {
                key: "sasl.jaas.config",
                ..
            }
        ),
        "{err}"
    );

    let ssl = |pairs: &[(&'static str, &'static str)]| {
        let mut all = vec![("security.protocol", "SSL")];
        all.extend_from_slice(pairs);
        error(&all)
    };
    for (key, store) in [
        ("ssl.truststore.type", "ssl.truststore.location"),
        ("ssl.keystore.type", "ssl.keystore.location"),
    ] {
        for store_type in ["JKS", "PKCS12"] {
            let path = std::env::temp_dir().join("kafka-consumer-test-store.pem");
            std::fs::write(&path, format!("{CERT}{KEY}")).unwrap();
            let path = path.to_str().unwrap().to_owned();
            let pairs = vec![
                ("security.protocol".to_owned(), "SSL".to_owned()),
                (key.to_owned(), store_type.to_owned()),
                (store.to_owned(), path),
            ];
            let err = ConsumerConfig::from_pairs(
                pairs
                    .into_iter()
                    .chain([(SERVERS.0.to_owned(), SERVERS.1.to_owned())]),
            )
            .unwrap_err();
            assert!(
                matches!(&err, ConfigError::Unsupported { key: k, .. } if k == key),
                "{err}"
            );
            assert!(err.to_string().contains("PEM"), "{err}");
        }
    }
    assert_eq!(
        invalid_key(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/nonexistent/ca.pem")
        ]),
        "ssl.truststore.location"
    );
    assert_eq!(
        invalid_key(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", "no pem here")
        ]),
        "ssl.truststore.certificates"
    );
    assert_eq!(
        invalid_key(&[
            ("security.protocol", "SSL"),
            ("ssl.enabled.protocols", "TLSv1.1")
        ]),
        "ssl.enabled.protocols"
    );
    assert_eq!(
        invalid_key(&[
            ("security.protocol", "SSL"),
            ("ssl.endpoint.identification.algorithm", "ldap")
        ]),
        "ssl.endpoint.identification.algorithm"
    );
    let err = ssl(&[("ssl.keystore.type", "PEM"), ("ssl.keystore.key", secret)]);
    assert!(
        matches!(
            &err,
            ConfigError::InvalidValue {
                key: "ssl.keystore.key",
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains(secret));
    let err = ssl(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", CERT),
        ("ssl.keystore.key", secret),
    ]);
    assert!(
        matches!(
            &err,
            ConfigError::InvalidValue {
                key: "ssl.keystore.key",
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains(secret));
    // An encrypted key needs ssl.key.password; the error names that key.
    let encrypted =
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let err = ssl(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", CERT),
        ("ssl.keystore.key", encrypted),
    ]);
    assert!(
        matches!(
            &err,
            ConfigError::InvalidValue {
                key: "ssl.key.password",
                ..
            }
        ),
        "{err}"
    );
    for key in [
        "ssl.truststore.password",
        "ssl.keystore.password",
        "ssl.cipher.suites",
        "sasl.kerberos.service.name",
        "sasl.oauthbearer.jwks.endpoint.url",
    ] {
        let err = error(&[(key, secret)]);
        assert!(
            matches!(&err, ConfigError::Unsupported { key: k, .. } if k == key),
            "{err}"
        );
        assert!(!err.to_string().contains(secret));
    }
    let builder = ConsumerConfig::builder()
        .set("sasl.jaas.config", "hunter2")
        .group_id("g");
    let shown = format!("{builder:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(
        shown.contains("[hidden]") && shown.contains("\"g\""),
        "{shown}"
    );
    assert!(matches!(
        error(&[(
            "client.dns.lookup",
            "resolve_canonical_bootstrap_servers_only"
        )]),
        ConfigError::Unsupported { .. }
    ));
}

#[test]
fn disabled_hostname_verification_warns() {
    let parsed = parse(&[
        ("security.protocol", "SSL"),
        ("ssl.endpoint.identification.algorithm", ""),
    ])
    .unwrap();
    assert!(!parsed.config.security().tls.verify_hostname);
    assert_eq!(
        parsed.warnings,
        [ConfigWarning::HostnameVerificationDisabled]
    );
    // TLS keys are ignored, as in Java, when the protocol does not use TLS.
    let parsed = parse(&[("ssl.endpoint.identification.algorithm", "")]).unwrap();
    assert!(parsed.warnings.is_empty());
    assert_eq!(parsed.config.security(), &SecurityConfig::default());
}

#[test]
fn auto_commit_needs_a_group() {
    assert_eq!(
        error(&[("enable.auto.commit", "true")]),
        ConfigError::AutoCommitWithoutGroupId
    );
    assert_eq!(
        error(&[("enable.auto.commit", "true")]).to_string(),
        "enable.auto.commit cannot be set to true when default group id (null) is used"
    );
    assert!(!config(&[]).enable_auto_commit());
    assert!(!config(&[("enable.auto.commit", "false")]).enable_auto_commit());
    assert!(config(&[("group.id", "g")]).enable_auto_commit());
}

#[test]
fn blank_group_id_is_rejected() {
    for blank in ["", "   "] {
        assert_eq!(invalid_key(&[("group.id", blank)]), "group.id");
    }
}

#[test]
fn consumer_protocol_refuses_classic_keys() {
    let consumer = ("group.protocol", "consumer");
    for key in [
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "partition.assignment.strategy",
    ] {
        let value = if key == "partition.assignment.strategy" {
            "range"
        } else {
            "1000"
        };
        assert_eq!(
            error(&[consumer, ("group.id", "g"), (key, value)]),
            ConfigError::NotForGroupProtocol {
                keys: vec![key],
                protocol: GroupProtocol::Consumer
            },
        );
    }
    let err = error(&[
        consumer,
        ("session.timeout.ms", "1"),
        ("partition.assignment.strategy", "range"),
    ]);
    assert_eq!(
        err.to_string(),
        "partition.assignment.strategy, session.timeout.ms cannot be set when group.protocol=CONSUMER"
    );
    // Blank is not "set" (Java's Utils.isBlank check), and a remote assignor is fine.
    let ok = config(&[
        consumer,
        ("group.id", "g"),
        ("partition.assignment.strategy", " "),
        ("group.remote.assignor", "uniform"),
    ]);
    assert_eq!(ok.group_remote_assignor(), Some("uniform"));
}

#[test]
fn classic_protocol_refuses_remote_assignor() {
    assert_eq!(
        error(&[("group.id", "g"), ("group.remote.assignor", "uniform")]),
        ConfigError::NotForGroupProtocol {
            keys: vec!["group.remote.assignor"],
            protocol: GroupProtocol::Classic
        },
    );
    assert_eq!(
        config(&[("group.remote.assignor", "")]).group_remote_assignor(),
        None
    );
}

#[test]
fn share_acknowledgement_mode_is_refused_under_both_protocols() {
    for protocol in ["classic", "consumer"] {
        assert!(matches!(
            error(&[
                ("group.protocol", protocol),
                ("share.acknowledgement.mode", "explicit")
            ]),
            ConfigError::NotForGroupProtocol { .. }
        ));
    }
}

#[test]
fn java_plugin_keys_warn_and_are_ignored() {
    let parsed = parse(&[
        (
            "key.deserializer",
            "org.apache.kafka.common.serialization.StringDeserializer",
        ),
        ("interceptor.classes", "com.example.Interceptor"),
        ("metric.reporters", "com.example.Reporter"),
    ])
    .unwrap();
    let keys: Vec<&str> = parsed
        .warnings
        .iter()
        .map(|w| match w {
            ConfigWarning::Ignored { key, .. } => *key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        keys,
        [
            "interceptor.classes",
            "key.deserializer",
            "metric.reporters"
        ]
    );
    assert_eq!(parsed.config, config(&[]));
    // Defaults produce no warnings.
    assert!(parse(&[("group.id", "g")]).unwrap().warnings.is_empty());
}

#[test]
fn backoff_post_processing_matches_java() {
    let parsed = parse(&[("reconnect.backoff.ms", "200")]).unwrap();
    assert_eq!(parsed.config.reconnect_backoff_max_ms(), 200);
    assert_eq!(
        parsed.warnings,
        [ConfigWarning::ReconnectBackoffNotExponential { backoff_ms: 200 }]
    );
    let both = parse(&[
        ("reconnect.backoff.ms", "200"),
        ("reconnect.backoff.max.ms", "5000"),
    ])
    .unwrap();
    assert_eq!(both.config.reconnect_backoff_max_ms(), 5000);
    assert!(both.warnings.is_empty());

    let parsed = parse(&[
        ("retry.backoff.ms", "2000"),
        ("socket.connection.setup.timeout.ms", "40000"),
    ])
    .unwrap();
    assert_eq!(
        parsed.warnings,
        [
            ConfigWarning::BaseAboveMax {
                key: "retry.backoff.ms",
                value: 2000,
                max_key: "retry.backoff.max.ms",
                max_value: 1000
            },
            ConfigWarning::BaseAboveMax {
                key: "socket.connection.setup.timeout.ms",
                value: 40000,
                max_key: "socket.connection.setup.timeout.max.ms",
                max_value: 30000,
            },
        ]
    );
    assert!(parse(&[("retry.backoff.ms", "1000")])
        .unwrap()
        .warnings
        .is_empty());
}

#[test]
fn warnings_are_also_logged() {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(move || writer.clone())
            .with_ansi(false),
    );
    tracing::subscriber::with_default(subscriber, || {
        parse(&[("value.deserializer", "x.Y")]).unwrap();
    });
    let logged = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("WARN"), "{logged}");
    assert!(
        logged.contains("configuration `value.deserializer` is ignored"),
        "{logged}"
    );
}

#[test]
fn duration_setters_equal_the_millisecond_ones() {
    let ms = |millis: u64| Duration::from_millis(millis);
    let with_durations = ConsumerConfig::builder()
        .bootstrap_servers(["b:9092"])
        .group_id("g")
        .auto_commit_interval(ms(1_000))
        .max_poll_interval(Duration::from_secs(60))
        .session_timeout(Duration::from_secs(10))
        .heartbeat_interval(ms(1_000))
        .fetch_max_wait(ms(100))
        .request_timeout(ms(5_000))
        .default_api_timeout(ms(6_000))
        .retry_backoff(ms(10))
        .retry_backoff_max(ms(20))
        .reconnect_backoff(ms(30))
        .reconnect_backoff_max(ms(40))
        // Below a millisecond is dropped: Kafka's keys count whole milliseconds.
        .socket_connection_setup_timeout(Duration::from_micros(50_900))
        .socket_connection_setup_timeout_max(ms(60))
        .metadata_max_age(ms(70))
        .metadata_recovery_rebootstrap_trigger(ms(75))
        .connections_max_idle(ms(80))
        .metrics_sample_window(ms(90))
        .build()
        .unwrap();
    let with_millis = ConsumerConfig::builder()
        .bootstrap_servers(["b:9092"])
        .group_id("g")
        .auto_commit_interval_ms(1_000)
        .max_poll_interval_ms(60_000)
        .session_timeout_ms(10_000)
        .heartbeat_interval_ms(1_000)
        .fetch_max_wait_ms(100)
        .request_timeout_ms(5_000)
        .default_api_timeout_ms(6_000)
        .retry_backoff_ms(10)
        .retry_backoff_max_ms(20)
        .reconnect_backoff_ms(30)
        .reconnect_backoff_max_ms(40)
        .socket_connection_setup_timeout_ms(50)
        .socket_connection_setup_timeout_max_ms(60)
        .metadata_max_age_ms(70)
        .metadata_recovery_rebootstrap_trigger_ms(75)
        .connections_max_idle_ms(80)
        .metrics_sample_window_ms(90)
        .build()
        .unwrap();
    assert_eq!(with_durations, with_millis);
}

#[test]
fn a_duration_too_long_for_its_key_is_refused() {
    let error = ConsumerConfig::builder()
        .bootstrap_servers(["b:9092"])
        .session_timeout(Duration::from_secs(u64::from(u32::MAX)))
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("session.timeout.ms"), "{error}");
}

#[test]
fn builder_equals_map() {
    let built = ConsumerConfig::builder()
        .bootstrap_servers(["b1:9092", "b2:9092"])
        .group_id("orders")
        .group_instance_id("host-1")
        .client_id("app")
        .client_rack("rack-a")
        .auto_offset_reset(AutoOffsetReset::ByDuration(Duration::from_secs(90)))
        .enable_auto_commit(false)
        .auto_commit_interval_ms(1_000)
        .max_poll_records(100)
        .max_poll_interval_ms(60_000)
        .session_timeout_ms(10_000)
        .heartbeat_interval_ms(1_000)
        .partition_assignment_strategy(&[Assignor::CooperativeSticky])
        .fetch_min_bytes(10)
        .fetch_max_bytes(1_000_000)
        .max_partition_fetch_bytes(100_000)
        .fetch_max_wait_ms(100)
        .isolation_level(IsolationLevel::ReadCommitted)
        .check_crcs(false)
        .allow_auto_create_topics(false)
        .exclude_internal_topics(false)
        .enable_metrics_push(false)
        .request_timeout_ms(5_000)
        .default_api_timeout_ms(6_000)
        .retry_backoff_ms(10)
        .retry_backoff_max_ms(20)
        .reconnect_backoff_ms(30)
        .reconnect_backoff_max_ms(40)
        .socket_connection_setup_timeout_ms(50)
        .socket_connection_setup_timeout_max_ms(60)
        .metadata_max_age_ms(70)
        .metadata_recovery_strategy(MetadataRecoveryStrategy::None)
        .metadata_recovery_rebootstrap_trigger_ms(75)
        .connections_max_idle_ms(80)
        .metrics_num_samples(3)
        .metrics_sample_window_ms(1_000)
        .send_buffer_bytes(-1)
        .receive_buffer_bytes(-1)
        .build()
        .unwrap();
    let map: BTreeMap<String, String> = [
        ("bootstrap.servers", "b1:9092,b2:9092"),
        ("group.id", "orders"),
        ("group.instance.id", "host-1"),
        ("client.id", "app"),
        ("client.rack", "rack-a"),
        ("auto.offset.reset", "by_duration:PT1M30S"),
        ("enable.auto.commit", "false"),
        ("auto.commit.interval.ms", "1000"),
        ("max.poll.records", "100"),
        ("max.poll.interval.ms", "60000"),
        ("session.timeout.ms", "10000"),
        ("heartbeat.interval.ms", "1000"),
        ("partition.assignment.strategy", "cooperative-sticky"),
        ("fetch.min.bytes", "10"),
        ("fetch.max.bytes", "1000000"),
        ("max.partition.fetch.bytes", "100000"),
        ("fetch.max.wait.ms", "100"),
        ("isolation.level", "read_committed"),
        ("check.crcs", "false"),
        ("allow.auto.create.topics", "false"),
        ("exclude.internal.topics", "false"),
        ("enable.metrics.push", "false"),
        ("request.timeout.ms", "5000"),
        ("default.api.timeout.ms", "6000"),
        ("retry.backoff.ms", "10"),
        ("retry.backoff.max.ms", "20"),
        ("reconnect.backoff.ms", "30"),
        ("reconnect.backoff.max.ms", "40"),
        ("socket.connection.setup.timeout.ms", "50"),
        ("socket.connection.setup.timeout.max.ms", "60"),
        ("metadata.max.age.ms", "70"),
        ("metadata.recovery.strategy", "none"),
        ("metadata.recovery.rebootstrap.trigger.ms", "75"),
        ("connections.max.idle.ms", "80"),
        ("metrics.num.samples", "3"),
        ("metrics.sample.window.ms", "1000"),
        ("send.buffer.bytes", "-1"),
        ("receive.buffer.bytes", "-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let from_map = ConsumerConfig::from_map(&map).unwrap();
    assert_eq!(built, from_map);
    // Every field but group.protocol (classic keys are set) differs from its default, so the
    // comparison covers every setter; group.protocol is compared on its own.
    let defaults: BTreeMap<_, _> = config(&[("group.id", "g")])
        .to_properties()
        .into_iter()
        .collect();
    for (key, value) in built.to_properties() {
        // security.protocol is covered by builder_sets_security_like_properties.
        if key != "group.protocol" && key != "security.protocol" {
            assert_ne!(
                defaults.get(key),
                Some(&value),
                "{key} still has its default"
            );
        }
    }
    let consumer = ConsumerConfig::builder()
        .bootstrap_servers(["a:1"])
        .group_protocol(GroupProtocol::Consumer)
        .group_remote_assignor("uniform")
        .build()
        .unwrap();
    assert_eq!(
        consumer,
        ConsumerConfig::from_pairs([
            ("bootstrap.servers", "a:1"),
            ("group.protocol", "consumer"),
            ("group.remote.assignor", "uniform"),
        ])
        .unwrap()
    );
    // The builder runs the same checks.
    assert!(matches!(
        ConsumerConfig::builder()
            .bootstrap_servers(["a:1"])
            .max_poll_records(0)
            .build(),
        Err(ConfigError::InvalidValue {
            key: "max.poll.records",
            ..
        })
    ));
}

#[test]
fn properties_text_builds_a_config() {
    let text = "\
# Copied from a Java application
bootstrap.servers = broker1:9092,\\
                    broker2:9092
group.id: payments
group.protocol CONSUMER
key.deserializer=org.apache.kafka.common.serialization.StringDeserializer
max.poll.records=250
";
    let c = ConsumerConfig::from_properties_str(text).unwrap();
    assert_eq!(c.bootstrap_servers(), ["broker1:9092", "broker2:9092"]);
    assert_eq!(c.group_id(), Some("payments"));
    assert_eq!(c.group_protocol(), GroupProtocol::Consumer);
    assert_eq!(c.max_poll_records(), 250);
    // Later lines win, as in java.util.Properties.
    let c = ConsumerConfig::from_properties_str(
        "bootstrap.servers=a:1\nmax.poll.records=1\nmax.poll.records=2",
    )
    .unwrap();
    assert_eq!(c.max_poll_records(), 2);
    assert!(matches!(
        ConsumerConfig::from_properties_file("/nonexistent/consumer.properties"),
        Err(ConfigError::Io { .. })
    ));
}

#[test]
fn every_key_is_documented() {
    for spec in KEYS {
        assert_eq!(ConsumerConfig::key_doc(spec.name), Some(spec.doc));
        assert!(
            spec.doc.ends_with('.') && spec.doc.len() > 10,
            "{}",
            spec.name
        );
    }
    assert_eq!(ConsumerConfig::key_doc("no.such.key"), None);
}

/// An application's assignor, registered with the builder, works in
/// `partition.assignment.strategy` by its name; unregistered names and names that clash are
/// refused.
mod custom_assignors {
    use super::*;
    use crate::assignor::{
        AssignorError, ClusterMetadata, ConsumerPartitionAssignor, GroupAssignment,
        GroupSubscription, RangeAssignor,
    };

    #[derive(Debug, Default)]
    struct Named(&'static str);

    impl ConsumerPartitionAssignor for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn assign(
            &self,
            cluster: &ClusterMetadata,
            subscriptions: &GroupSubscription,
        ) -> Result<GroupAssignment, AssignorError> {
            RangeAssignor.assign(cluster, subscriptions)
        }
    }

    fn builder() -> ConsumerConfigBuilder {
        ConsumerConfig::builder()
            .bootstrap_servers(["localhost:9092"])
            .group_id("g")
    }

    #[test]
    fn a_registered_name_is_a_strategy_entry() {
        let config = builder()
            .assignor(|| Named("mine"))
            .set("partition.assignment.strategy", "mine, roundrobin")
            .build()
            .unwrap();
        assert_eq!(
            config.partition_assignment_strategy(),
            [Assignor::Custom("mine"), Assignor::RoundRobin]
        );
        assert_eq!(config.custom_assignors().len(), 1);
        assert_eq!(config.custom_assignors()[0].instance().name(), "mine");
        let typed = builder()
            .assignor(|| Named("mine"))
            .partition_assignment_strategy(&[Assignor::Custom("mine")])
            .build()
            .unwrap();
        assert_eq!(
            typed.partition_assignment_strategy(),
            [Assignor::Custom("mine")]
        );
    }

    #[test]
    fn registering_does_not_select() {
        let config = builder().assignor(|| Named("mine")).build().unwrap();
        assert_eq!(
            config.partition_assignment_strategy(),
            [Assignor::Range, Assignor::CooperativeSticky]
        );
    }

    #[test]
    fn an_unregistered_name_is_refused() {
        let error = builder()
            .set("partition.assignment.strategy", "mine")
            .build()
            .unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::InvalidValue {
                    key: "partition.assignment.strategy",
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_built_in_name_or_a_second_registration_is_refused() {
        for error in [
            builder().assignor(|| Named("range")).build().unwrap_err(),
            builder()
                .assignor(|| Named("mine"))
                .assignor(|| Named("mine"))
                .build()
                .unwrap_err(),
        ] {
            assert!(
                matches!(&error, ConfigError::InvalidValue { key: "partition.assignment.strategy", value, .. } if value.contains("range") || value.contains("mine")),
                "{error}"
            );
        }
    }
}
