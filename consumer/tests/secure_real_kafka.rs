//! Secured listeners of a real Apache Kafka broker (`testing/kafka/run up` opens SASL_SSL, SSL
//! with required client certificates and SASL_PLAINTEXT, with ACLs on):
//!
//! - a group of each protocol consumes exactly the records Kafka's Java producer wrote, over
//!   every listener and SASL mechanism (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and with mTLS
//!   (plain and encrypted client key);
//! - a wrong password, an expired token, an untrusted CA, a wrong host name and a missing
//!   client certificate each fail `poll` with `Error::Authentication` within seconds;
//! - a commit behind a refused password fails with that error at once, not at its timeout;
//! - tokens that expire mid-run are refreshed by KIP-368 re-authentication, no request failing;
//! - a user denied its group by ACL gets `Error::Authorization`.
//!
//! Needs `KAFKA_BOOTSTRAP` and the `KAFKA_BOOTSTRAP_SASL_SSL`, `KAFKA_BOOTSTRAP_SSL`,
//! `KAFKA_BOOTSTRAP_SASL_PLAINTEXT` and `KAFKA_SECURITY_FILE` lines `run up` prints; with
//! `REQUIRE_KAFKA=1` a missing one fails instead of skipping. Compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;

use kafka_consumer::config::GroupProtocol;
use kafka_consumer::error::ErrorCode;
use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::sasl::SaslMechanism;
use kafka_consumer::network::{NetworkClient, NetworkConfig, SecurityProtocol, Target};
use kafka_consumer::types::OffsetAndMetadata;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, Error, TopicPartition};
use support::group::unique;
use support::real_broker::{client, create_topic, produce_with_java};
use support::secured::{consume, secured, Secured};
use tokio::time::{Duration, Instant};

const RECORDS: usize = 200;
const PARTITIONS: i32 = 3;
/// How long a refused connection may take to show up as an error.
const FAIL_WITHIN: Duration = Duration::from_secs(10);

/// How a case connects.
#[derive(Clone, Copy, Debug)]
enum Auth {
    /// SASL with the harness user's password.
    Password(SaslMechanism),
    /// OAUTHBEARER from `sasl.jaas.config` (Kafka's unsecured JWT login) for `principal`,
    /// with this token lifetime.
    Token(i64),
    /// SSL listener, client certificate.
    ClientCertificate,
    /// SSL listener, client certificate with an encrypted key and `ssl.key.password`.
    EncryptedClientKey,
}

fn base(
    bootstrap: &str,
    group: Option<&str>,
    protocol: GroupProtocol,
) -> kafka_consumer::config::ConsumerConfigBuilder {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("reconnect.backoff.max.ms", "1000")
        .set("request.timeout.ms", "10000");
    if let Some(group) = group {
        builder = builder.group_id(group).group_protocol(protocol);
        if protocol == GroupProtocol::Classic {
            builder = builder
                .session_timeout_ms(10_000)
                .heartbeat_interval_ms(500);
        }
    }
    builder
}

/// A config for `listener` (SASL_SSL, SASL_PLAINTEXT or SSL) authenticating with `auth`.
fn secured_config(
    s: &Secured,
    bootstrap: &str,
    listener: SecurityProtocol,
    auth: Auth,
    user: (&str, &str),
    group: Option<&str>,
    protocol: GroupProtocol,
) -> kafka_consumer::config::ConsumerConfigBuilder {
    let mut builder = base(bootstrap, group, protocol).security_protocol(listener);
    if listener.uses_tls() {
        builder = builder.ssl_truststore_pem(s.read("KAFKA_CA_PEM"));
    }
    match auth {
        Auth::Password(mechanism) => builder.sasl_password(mechanism, user.0, user.1),
        Auth::Token(lifetime_seconds) => builder
            .set("sasl.mechanism", "OAUTHBEARER")
            .set(
                "sasl.jaas.config",
                format!(
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                     unsecuredLoginStringClaim_sub=\"{}\" unsecuredLoginLifetimeSeconds=\"{lifetime_seconds}\";",
                    user.0
                ),
            ),
        Auth::EncryptedClientKey => builder
            .ssl_keystore_pem(
                s.read("KAFKA_CLIENT_CERT_PEM"),
                s.read("KAFKA_CLIENT_ENCRYPTED_KEY_PEM"),
            )
            .set("ssl.key.password", s.get("KAFKA_CLIENT_KEY_PASSWORD")),
        Auth::ClientCertificate => {
            builder.ssl_keystore_pem(s.read("KAFKA_CLIENT_CERT_PEM"), s.read("KAFKA_CLIENT_KEY_PEM"))
        }
    }
}

/// Consumes until every produced record was seen, failing on an error, a duplicate or a
/// record that was not produced.
async fn consume_exactly(config: ConsumerConfig, topic: String, label: String) {
    let mut consumer = Consumer::new(config).unwrap();
    consumer.subscribe([topic]).await.unwrap();
    let mut seen = BTreeSet::new();
    consume(&mut consumer, &mut seen, RECORDS, &label).await;
    consumer.close(Duration::from_secs(20)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listener_and_mechanism_consumes_exactly_what_was_produced() {
    let Some(s) = secured("secured-listener tests") else {
        return;
    };
    let mut admin = client(s.plaintext.clone());
    let topic = unique("secure-all");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    let lines: Vec<String> = (0..RECORDS)
        .map(|i| format!("\\N\tkey-{i}\tvalue-{i}"))
        .collect();
    produce_with_java(&s.plaintext, &topic, "none", &lines);

    let user = (s.get("KAFKA_SASL_USER"), s.get("KAFKA_SASL_PASSWORD"));
    let mut cases = Vec::new();
    for (listener, bootstrap) in [
        (SecurityProtocol::SaslSsl, &s.sasl_ssl),
        (SecurityProtocol::SaslPlaintext, &s.sasl_plaintext),
    ] {
        for auth in [
            Auth::Password(SaslMechanism::Plain),
            Auth::Password(SaslMechanism::ScramSha256),
            Auth::Password(SaslMechanism::ScramSha512),
            Auth::Token(3600),
        ] {
            cases.push((listener, bootstrap.clone(), auth));
        }
    }
    for auth in [Auth::ClientCertificate, Auth::EncryptedClientKey] {
        cases.push((SecurityProtocol::Ssl, s.ssl.clone(), auth));
    }
    let mut runs = Vec::new();
    for (listener, bootstrap, auth) in cases {
        for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
            let label = format!("{listener} {auth:?} {protocol:?}");
            let group = unique("secure-group");
            let config =
                secured_config(&s, &bootstrap, listener, auth, user, Some(&group), protocol)
                    .build()
                    .unwrap();
            runs.push(tokio::spawn(consume_exactly(config, topic.clone(), label)));
        }
    }
    for run in runs {
        run.await.unwrap();
    }
}

/// Polls an assigned partition until the first error and returns it with how long it took.
async fn first_error(config: ConsumerConfig, topic: &str) -> (Error, Duration) {
    let started = Instant::now();
    let mut consumer = Consumer::new(config).unwrap();
    consumer
        .assign([TopicPartition::new(topic, 0)])
        .await
        .unwrap();
    loop {
        match consumer.poll(Duration::from_millis(200)).await {
            Ok(records) => assert!(records.is_empty(), "records over a refused connection"),
            Err(error) => {
                let elapsed = started.elapsed();
                let _ = consumer.close(Duration::from_secs(5)).await;
                return (error, elapsed);
            }
        }
        assert!(
            started.elapsed() < FAIL_WITHIN * 2,
            "no error after {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_and_certificates_fail_poll_with_typed_errors() {
    let Some(s) = secured("secured-listener tests") else {
        return;
    };
    let mut admin = client(s.plaintext.clone());
    let topic = unique("secure-refused");
    create_topic(&mut admin, &topic, 1).await;
    let user = s.get("KAFKA_SASL_USER");
    let no_group = GroupProtocol::Classic;
    // 127.0.0.1 is not in the broker certificate, which names only KAFKA_TLS_HOST.
    let by_ip = s.sasl_ssl.replace(s.get("KAFKA_TLS_HOST"), "127.0.0.1");
    let cases: Vec<(&str, ConsumerConfig, &str, Option<ErrorCode>)> = vec![
        (
            "wrong SCRAM password",
            secured_config(
                &s,
                &s.sasl_ssl,
                SecurityProtocol::SaslSsl,
                Auth::Password(SaslMechanism::ScramSha512),
                (user, "wrong"),
                None,
                no_group,
            )
            .build()
            .unwrap(),
            "SASL/SCRAM-SHA-512",
            Some(ErrorCode::SASL_AUTHENTICATION_FAILED),
        ),
        (
            "wrong PLAIN password",
            secured_config(
                &s,
                &s.sasl_plaintext,
                SecurityProtocol::SaslPlaintext,
                Auth::Password(SaslMechanism::Plain),
                (user, "wrong"),
                None,
                no_group,
            )
            .build()
            .unwrap(),
            "SASL/PLAIN",
            Some(ErrorCode::SASL_AUTHENTICATION_FAILED),
        ),
        (
            "expired token",
            secured_config(
                &s,
                &s.sasl_plaintext,
                SecurityProtocol::SaslPlaintext,
                Auth::Token(-600),
                (user, ""),
                None,
                no_group,
            )
            .build()
            .unwrap(),
            "SASL/OAUTHBEARER",
            Some(ErrorCode::SASL_AUTHENTICATION_FAILED),
        ),
        (
            "untrusted CA",
            base(&s.sasl_ssl, None, no_group)
                .security_protocol(SecurityProtocol::SaslSsl)
                .ssl_truststore_pem(s.read("KAFKA_UNTRUSTED_CA_PEM"))
                .sasl_password(SaslMechanism::Plain, user, s.get("KAFKA_SASL_PASSWORD"))
                .build()
                .unwrap(),
            "SSL",
            None,
        ),
        (
            "wrong host name",
            secured_config(
                &s,
                &by_ip,
                SecurityProtocol::SaslSsl,
                Auth::Password(SaslMechanism::Plain),
                (user, s.get("KAFKA_SASL_PASSWORD")),
                None,
                no_group,
            )
            .build()
            .unwrap(),
            "SSL",
            None,
        ),
        (
            "missing client certificate",
            base(&s.ssl, None, no_group)
                .security_protocol(SecurityProtocol::Ssl)
                .ssl_truststore_pem(s.read("KAFKA_CA_PEM"))
                .build()
                .unwrap(),
            "SSL",
            None,
        ),
    ];
    for (label, config, expected_mechanism, expected_code) in cases {
        let (error, elapsed) = first_error(config, &topic).await;
        match &error {
            Error::Authentication {
                broker,
                mechanism,
                code,
                ..
            } => {
                assert_eq!(mechanism, expected_mechanism, "{label}: {error}");
                assert_eq!(*code, expected_code, "{label}: {error}");
                assert!(broker.contains(':'), "{label}: {error}");
            }
            other => panic!("{label}: expected Error::Authentication, got {other:?}"),
        }
        assert!(!error.is_retriable(), "{label}");
        assert!(!error.to_string().contains("wrong\""), "{label}: {error}");
        assert!(elapsed < FAIL_WITHIN, "{label}: took {elapsed:?}");
        eprintln!("{label}: {error} after {elapsed:?}");
    }
}

/// A commit waiting for a coordinator behind a refused password fails with the same typed
/// error instead of running into its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_behind_a_refused_password_fails_with_the_typed_error() {
    let Some(s) = secured("secured-listener tests") else {
        return;
    };
    let mut admin = client(s.plaintext.clone());
    let topic = unique("secure-commit");
    create_topic(&mut admin, &topic, 1).await;
    let group = unique("secure-commit-group");
    let config = secured_config(
        &s,
        &s.sasl_ssl,
        SecurityProtocol::SaslSsl,
        Auth::Password(SaslMechanism::ScramSha256),
        (s.get("KAFKA_SASL_USER"), "wrong"),
        Some(&group),
        GroupProtocol::Classic,
    )
    .set("enable.auto.commit", "false")
    .build()
    .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    let tp = TopicPartition::new(topic.as_str(), 0);
    consumer.assign([tp.clone()]).await.unwrap();
    let started = Instant::now();
    let offsets = [(tp, OffsetAndMetadata::new(0))].into_iter().collect();
    let error = consumer
        .commit_sync(Some(offsets), Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Authentication { mechanism, .. } if mechanism == "SASL/SCRAM-SHA-256"),
        "{error:?}"
    );
    assert!(
        started.elapsed() < FAIL_WITHIN,
        "took {:?}",
        started.elapsed()
    );
    let _ = consumer.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_denied_by_acl_gets_an_authorization_error() {
    let Some(s) = secured("secured-listener tests") else {
        return;
    };
    let mut admin = client(s.plaintext.clone());
    let prefix = s.get("KAFKA_DENIED_PREFIX");
    let topic = unique(&format!("{prefix}-topic"));
    create_topic(&mut admin, &topic, 1).await;
    let group = unique(&format!("{prefix}-group"));
    let config = secured_config(
        &s,
        &s.sasl_ssl,
        SecurityProtocol::SaslSsl,
        Auth::Password(SaslMechanism::ScramSha256),
        (s.get("KAFKA_DENIED_USER"), s.get("KAFKA_DENIED_PASSWORD")),
        Some(&group),
        GroupProtocol::Classic,
    )
    .build()
    .unwrap();
    let started = Instant::now();
    let mut consumer = Consumer::new(config).unwrap();
    consumer.subscribe([topic.clone()]).await.unwrap();
    let error = loop {
        match consumer.poll(Duration::from_millis(200)).await {
            Ok(records) => assert!(records.is_empty()),
            Err(error) => break error,
        }
        assert!(started.elapsed() < FAIL_WITHIN, "no error");
    };
    match &error {
        Error::Authorization { code, .. } => assert!(
            matches!(
                *code,
                ErrorCode::GROUP_AUTHORIZATION_FAILED | ErrorCode::TOPIC_AUTHORIZATION_FAILED
            ),
            "{error}"
        ),
        other => panic!("expected Error::Authorization, got {other:?}"),
    }
    assert!(!error.is_retriable());
    let _ = consumer.close(Duration::from_secs(5)).await;
}

/// KIP-368 against the real broker: OAUTHBEARER sessions on the SASL_PLAINTEXT listener expire
/// after 3 s and tokens after 4 s; requests every 100 ms for 8 s all succeed on one connection,
/// because the client re-authenticates with a fresh token before each session ends (the broker
/// would close an expired session, failing the request in flight).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_tokens_are_refreshed_by_reauthentication() {
    let Some(s) = secured("secured-listener tests") else {
        return;
    };
    let config = secured_config(
        &s,
        &s.sasl_plaintext,
        SecurityProtocol::SaslPlaintext,
        Auth::Token(4),
        (s.get("KAFKA_SASL_USER"), ""),
        None,
        GroupProtocol::Classic,
    )
    .build()
    .unwrap();
    let mut client = NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![s.sasl_plaintext.clone()],
        request_timeout_ms: 10_000,
        security: config.security().clone(),
        ..NetworkConfig::default()
    })
    .unwrap();
    let started = Instant::now();
    let mut answered = 0;
    while started.elapsed() < Duration::from_secs(8) {
        let response = client
            .send(
                Target::Node(-1),
                metadata_request_for_topics(["reauth"], false),
            )
            .await;
        if let Err(error) = response {
            panic!(
                "request failed after {:?} ({answered} answered): {error}",
                started.elapsed()
            );
        }
        answered += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered > 40, "{answered}");
}
