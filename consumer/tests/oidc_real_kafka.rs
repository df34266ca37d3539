//! The OIDC client-credentials token provider (`oidc` feature) against a real Apache Kafka
//! broker's OAUTHBEARER listeners, which validate tokens with Kafka's unsecured validator.
//! The test serves the token endpoint itself: a small HTTP server on a std `TcpListener` that
//! checks the grant, the Basic credentials and the scope of every request and issues
//! `alg: none` JWTs for the harness user.
//!
//! - a group consumes exactly what was produced over SASL_PLAINTEXT (token endpoint on http,
//!   Kafka 4.1 keys) and SASL_SSL (endpoint on https with the harness CA given as JAAS
//!   options, as Java reads it);
//! - a wrong client secret (the endpoint answers 401) fails `Consumer::new` with
//!   `Error::Authentication` at once, quoting the endpoint's error and never the secret;
//! - a URL outside the allow-list is refused by `build()` with Kafka's message;
//! - short-lived tokens are refreshed from the endpoint and used by KIP-368
//!   re-authentication on the 3-second-session listener while consumption continues with
//!   nothing lost.
//!
//! Needs the lines `testing/kafka/run up` prints (`KAFKA_BOOTSTRAP`,
//! `KAFKA_BOOTSTRAP_SASL_SSL`, `KAFKA_BOOTSTRAP_SASL_PLAINTEXT`, `KAFKA_SECURITY_FILE`); with
//! `REQUIRE_KAFKA=1` a missing one fails instead of skipping. Compiled out under madsim and
//! without the feature (which `cargo test` turns on through the crate's dev-dependency).
#![cfg(all(feature = "oidc", not(madsim)))]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use kafka_consumer::config::{ConfigError, ConsumerConfigBuilder, GroupProtocol};
use kafka_consumer::network::SecurityProtocol;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, Error};
use support::group::unique;
use support::real_broker::{client, create_topic, produce_with_java};
use support::secured::{consume, secured, Secured};
use tokio::time::{Duration, Instant};

const CLIENT_ID: &str = "orders-service";
const CLIENT_SECRET: &str = "s3cret:with&symbols";
const SCOPE: &str = "kafka read";
const HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler";

/// A token endpoint issuing unsecured JWTs for `subject`, valid `lifetime_s` seconds.
struct TokenEndpoint {
    url: String,
    issued: Arc<AtomicUsize>,
    /// Requests that broke the client-credentials rules, described.
    violations: Arc<Mutex<Vec<String>>>,
}

impl TokenEndpoint {
    /// Plain HTTP on 127.0.0.1.
    fn start(subject: &str, lifetime_s: i64) -> Self {
        Self::start_with(subject, lifetime_s, None)
    }

    /// HTTPS on `localhost` with the broker's certificate (issued by the harness CA).
    fn start_tls(subject: &str, lifetime_s: i64, s: &Secured) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let pem = std::fs::read(
            std::path::Path::new(&s.env["KAFKA_CA_PEM"]).with_file_name("broker.pem"),
        )
        .unwrap();
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(&pem).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        Self::start_with(subject, lifetime_s, Some(Arc::new(config)))
    }

    fn start_with(subject: &str, lifetime_s: i64, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = match tls {
            Some(_) => format!("https://localhost:{port}/oauth2/token"),
            None => format!("http://127.0.0.1:{port}/oauth2/token"),
        };
        let issued = Arc::new(AtomicUsize::new(0));
        let violations = Arc::new(Mutex::new(Vec::new()));
        let (issued_in, violations_in, subject) =
            (issued.clone(), violations.clone(), subject.to_owned());
        // Counted before the answer is written, so a client that got its answer always
        // sees the count.
        let record = move |outcome: Result<(), String>| match outcome {
            Ok(()) => {
                issued_in.fetch_add(1, Ordering::SeqCst);
            }
            Err(violation) => violations_in.lock().unwrap().push(violation),
        };
        #[allow(clippy::disallowed_methods)] // a real HTTP server beside the real broker
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                match &tls {
                    None => serve(&mut &stream, &subject, lifetime_s, &record),
                    Some(config) => {
                        let connection = rustls::ServerConnection::new(config.clone()).unwrap();
                        let mut tls_stream = rustls::StreamOwned::new(connection, stream);
                        serve(&mut tls_stream, &subject, lifetime_s, &record);
                        tls_stream.conn.send_close_notify();
                        let _ = tls_stream.flush();
                    }
                }
            }
        });
        Self {
            url,
            issued,
            violations,
        }
    }

    fn issued(&self) -> usize {
        self.issued.load(Ordering::SeqCst)
    }

    fn assert_no_violations(&self) {
        let violations = self.violations.lock().unwrap();
        assert!(violations.is_empty(), "bad token requests: {violations:?}");
    }
}

/// Reads one request; answers 200 with a token if it is a correct client-credentials request,
/// 401 `invalid_client` for wrong credentials (recorded as a violation, which the wrong-secret
/// test expects), 400 otherwise. `record` gets the verdict before the answer is written.
fn serve<S: Read + Write>(
    stream: &mut S,
    subject: &str,
    lifetime_s: i64,
    record: &dyn Fn(Result<(), String>),
) {
    let request = (|| {
        let mut reader = BufReader::new(&mut *stream);
        let mut request_line = String::new();
        reader.read_line(&mut request_line)?;
        let mut headers = BTreeMap::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        Ok::<_, std::io::Error>((
            request_line,
            headers,
            String::from_utf8_lossy(&body).into_owned(),
        ))
    })();
    let (request_line, headers, body) = match request {
        Ok(request) => request,
        Err(error) => return record(Err(format!("unreadable request: {error}"))),
    };
    let (status, json, outcome) = answer(&request_line, &headers, &body, subject, lifetime_s);
    record(outcome);
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    let _ = stream.flush();
}

/// The status line, JSON body and verdict for one request.
fn answer(
    request_line: &str,
    headers: &BTreeMap<String, String>,
    body: &str,
    subject: &str,
    lifetime_s: i64,
) -> (&'static str, String, Result<(), String>) {
    let expected_auth = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    let mut problems = Vec::new();
    if !request_line.starts_with("POST /oauth2/token ") {
        problems.push(format!("request line {request_line:?}"));
    }
    if headers.get("content-type").map(String::as_str) != Some("application/x-www-form-urlencoded")
    {
        problems.push(format!("content type {:?}", headers.get("content-type")));
    }
    if body != "grant_type=client_credentials&scope=kafka+read" {
        problems.push(format!("body {body:?}"));
    }
    if !problems.is_empty() {
        return (
            "400 Bad Request",
            r#"{"error":"invalid_request"}"#.into(),
            Err(problems.join("; ")),
        );
    }
    if headers.get("authorization") != Some(&expected_auth) {
        return (
            "401 Unauthorized",
            r#"{"error":"invalid_client","error_description":"client authentication failed"}"#
                .into(),
            Err("wrong credentials (answered 401)".into()),
        );
    }
    let now_s = std::time::UNIX_EPOCH.elapsed().unwrap().as_secs() as i64;
    let claims = format!(
        r#"{{"sub":"{subject}","iat":{now_s},"exp":{},"scope":"kafka read"}}"#,
        now_s + lifetime_s
    );
    let token = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(claims)
    );
    (
        "200 OK",
        format!(r#"{{"access_token":"{token}","token_type":"Bearer","expires_in":{lifetime_s}}}"#),
        Ok(()),
    )
}

/// How the client credentials are configured.
#[derive(Clone, Copy, Debug)]
enum Style {
    /// Kafka 4.1's `sasl.oauthbearer.client.credentials.*` and `sasl.oauthbearer.scope`.
    Keys,
    /// The JAAS options `clientId`, `clientSecret`, `scope`.
    Jaas,
}

fn oidc_config(
    s: &Secured,
    bootstrap: &str,
    listener: SecurityProtocol,
    endpoint_url: &str,
    secret: &str,
    style: Style,
) -> ConsumerConfigBuilder {
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .security_protocol(listener)
        .set("reconnect.backoff.max.ms", "1000")
        .set("request.timeout.ms", "10000")
        .set("sasl.mechanism", "OAUTHBEARER")
        .set("sasl.login.callback.handler.class", HANDLER)
        .set("sasl.oauthbearer.token.endpoint.url", endpoint_url)
        .set("sasl.login.connect.timeout.ms", "2000")
        .set("sasl.login.read.timeout.ms", "2000")
        .sasl_oauthbearer_allowed_urls([endpoint_url]);
    if listener.uses_tls() {
        builder =
            builder.ssl_truststore_pem(std::fs::read_to_string(&s.env["KAFKA_CA_PEM"]).unwrap());
    }
    let module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required";
    match style {
        Style::Keys => builder
            .set("sasl.jaas.config", format!("{module} ;"))
            .set("sasl.oauthbearer.client.credentials.client.id", CLIENT_ID)
            .set("sasl.oauthbearer.client.credentials.client.secret", secret)
            .set("sasl.oauthbearer.scope", SCOPE),
        Style::Jaas => {
            // An https endpoint's CA comes from JAAS options, as in Java.
            let trust = if endpoint_url.starts_with("https:") {
                format!(
                    " ssl.truststore.type=\"PEM\" ssl.truststore.location=\"{}\"",
                    s.env["KAFKA_CA_PEM"]
                )
            } else {
                String::new()
            };
            builder.set(
                "sasl.jaas.config",
                format!(
                    "{module} clientId=\"{CLIENT_ID}\" clientSecret=\"{secret}\" scope=\"{SCOPE}\"{trust};"
                ),
            )
        }
    }
}

fn lines(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("\\N\tkey-{i}\tvalue-{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_consume_exactly_over_oauthbearer_from_the_token_endpoint() {
    let Some(s) = secured("OIDC tests") else {
        return;
    };
    let user = &s.env["KAFKA_SASL_USER"];
    let http = TokenEndpoint::start(user, 3600);
    let https = TokenEndpoint::start_tls(user, 3600, &s);
    let mut admin = client(s.plaintext.clone());
    let topic = unique("oidc-consume");
    create_topic(&mut admin, &topic, 3).await;
    produce_with_java(&s.plaintext, &topic, "none", &lines(0..200));
    for (listener, bootstrap, style, endpoint) in [
        (
            SecurityProtocol::SaslPlaintext,
            &s.sasl_plaintext,
            Style::Keys,
            &http,
        ),
        (SecurityProtocol::SaslSsl, &s.sasl_ssl, Style::Jaas, &https),
    ] {
        let label = format!("{listener} {style:?}");
        let before = endpoint.issued();
        let config = oidc_config(&s, bootstrap, listener, &endpoint.url, CLIENT_SECRET, style)
            .group_id(unique("oidc-group"))
            .group_protocol(GroupProtocol::Consumer)
            .build()
            .unwrap();
        // Building the configuration fetches nothing; constructing the consumer does.
        assert_eq!(endpoint.issued(), before, "{label}");
        let mut consumer = Consumer::new(config).unwrap();
        assert_eq!(
            endpoint.issued(),
            before + 1,
            "{label}: the login fetched one token"
        );
        consumer.subscribe([topic.clone()]).await.unwrap();
        let mut seen = BTreeSet::new();
        consume(&mut consumer, &mut seen, 200, &label).await;
        consumer.close(Duration::from_secs(20)).await.unwrap();
        endpoint.assert_no_violations();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_client_secret_fails_construction_at_once() {
    let Some(s) = secured("OIDC tests") else {
        return;
    };
    let endpoint = TokenEndpoint::start(&s.env["KAFKA_SASL_USER"], 3600);
    let config = oidc_config(
        &s,
        &s.sasl_plaintext,
        SecurityProtocol::SaslPlaintext,
        &endpoint.url,
        "wrong-secret",
        Style::Jaas,
    )
    .build()
    .unwrap();
    let started = Instant::now();
    let Err(error) = Consumer::new(config) else {
        panic!("a 401 must fail construction");
    };
    // A 4xx is not retried: one request, well inside the 10 s retry budget.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(endpoint.violations.lock().unwrap().len(), 1);
    let Error::Authentication {
        mechanism, message, ..
    } = &error
    else {
        panic!("expected Error::Authentication, got {error:?}");
    };
    assert_eq!(mechanism, "SASL/OAUTHBEARER");
    assert!(
        message.contains("401")
            && message.contains("{invalid_client - client authentication failed}"),
        "{message}"
    );
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains("wrong-secret"), "{shown}");
}

#[test]
fn a_url_outside_the_allow_list_is_refused_at_build() {
    // No broker needed: the check happens before any connection.
    let jaas = format!(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         clientId=\"{CLIENT_ID}\" clientSecret=\"{CLIENT_SECRET}\";"
    );
    let base = || {
        ConsumerConfig::builder()
            .bootstrap_servers(["localhost:9092"])
            .security_protocol(SecurityProtocol::SaslPlaintext)
            .set("sasl.mechanism", "OAUTHBEARER")
            .set("sasl.login.callback.handler.class", HANDLER)
            .set(
                "sasl.oauthbearer.token.endpoint.url",
                "https://idp.example/token",
            )
            .set("sasl.jaas.config", jaas.clone())
    };
    let error = base()
        .sasl_oauthbearer_allowed_urls(["https://idp.example/other"])
        .build()
        .unwrap_err();
    let ConfigError::InvalidValue {
        key,
        value,
        expected,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(*key, "sasl.oauthbearer.token.endpoint.url");
    assert_eq!(value, "\"https://idp.example/token\"");
    assert!(
        expected.starts_with("The URL cannot be accessed due to restrictions. Update the system property 'org.apache.kafka.sasl.oauthbearer.allowed.urls'"),
        "{expected}"
    );
    assert!(!error.to_string().contains(CLIENT_SECRET));
    // Listed, the same configuration builds (and fetches nothing).
    assert!(base()
        .sasl_oauthbearer_allowed_urls(["https://idp.example/token"])
        .build()
        .is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_tokens_are_refreshed_for_reauthentication_with_nothing_lost() {
    let Some(s) = secured("OIDC tests") else {
        return;
    };
    // 8-second tokens, refreshed at half their life; the listener's sessions last 3 s, so
    // every few seconds the broker demands re-authentication, which must use a fresh token.
    let lifetime_s = 8;
    let endpoint = TokenEndpoint::start(&s.env["KAFKA_SASL_USER"], lifetime_s);
    let mut admin = client(s.plaintext.clone());
    let topic = unique("oidc-refresh");
    create_topic(&mut admin, &topic, 2).await;
    produce_with_java(&s.plaintext, &topic, "none", &lines(0..100));
    let config = oidc_config(
        &s,
        &s.sasl_plaintext,
        SecurityProtocol::SaslPlaintext,
        &endpoint.url,
        CLIENT_SECRET,
        Style::Keys,
    )
    .set("sasl.login.refresh.window.factor", "0.5")
    .set("sasl.login.refresh.window.jitter", "0")
    .set("sasl.login.refresh.min.period.seconds", "0")
    .set("sasl.login.refresh.buffer.seconds", "0")
    .group_id(unique("oidc-refresh-group"))
    .group_protocol(GroupProtocol::Classic)
    .session_timeout_ms(10_000)
    .heartbeat_interval_ms(500)
    .build()
    .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    consumer.subscribe([topic.clone()]).await.unwrap();
    let mut seen = BTreeSet::new();
    consume(&mut consumer, &mut seen, 100, "first half").await;
    // Outlive two token lifetimes while polling (every poll must succeed).
    let until = Instant::now() + Duration::from_secs(2 * lifetime_s as u64 + 2);
    while Instant::now() < until {
        let records = consumer
            .poll(Duration::from_millis(500))
            .await
            .unwrap_or_else(|error| panic!("poll failed while tokens rotated: {error}"));
        assert!(
            records.is_empty(),
            "records before the second batch was produced"
        );
    }
    produce_with_java(&s.plaintext, &topic, "none", &lines(100..200));
    consume(&mut consumer, &mut seen, 200, "second half").await;
    consumer.close(Duration::from_secs(20)).await.unwrap();
    // The login plus at least one refresh per half lifetime over ~20 s.
    let issued = endpoint.issued();
    assert!(issued >= 5, "only {issued} tokens fetched");
    endpoint.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_endpoint_is_verified_against_the_configured_ca() {
    let Some(s) = secured("OIDC tests") else {
        return;
    };
    let endpoint = TokenEndpoint::start_tls(&s.env["KAFKA_SASL_USER"], 3600, &s);
    // Kafka 4.1 keys, no JAAS trust store: the harness CA is not among the Mozilla roots.
    let config = oidc_config(
        &s,
        &s.sasl_plaintext,
        SecurityProtocol::SaslPlaintext,
        &endpoint.url,
        CLIENT_SECRET,
        Style::Keys,
    )
    .set("sasl.login.retry.backoff.ms", "50")
    .set("sasl.login.retry.backoff.max.ms", "300")
    .build()
    .unwrap();
    let Err(error) = Consumer::new(config) else {
        panic!("an untrusted token endpoint must fail construction");
    };
    let Error::Authentication { message, .. } = &error else {
        panic!("expected Error::Authentication, got {error:?}");
    };
    assert!(message.to_lowercase().contains("certificate"), "{message}");
    assert_eq!(endpoint.issued(), 0);
}
