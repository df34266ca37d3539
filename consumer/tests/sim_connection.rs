//! The network client inside the madsim simulator, against the fake broker on its own simulated
//! node: normal round trips, the broker killed in the middle of a response, a network partition,
//! and reconnect with backoff on virtual time. Run with `MADSIM_TEST_CHECK_DETERMINISM=1` to
//! check the whole exchange is a pure function of the seed.
#![cfg(madsim)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::sasl::{SaslConfig, SaslCredentials, SaslMechanism};
use kafka_consumer::network::tls::{self, TlsConfig, TrustRoots};
use kafka_consumer::network::{
    CloseReason, NetworkClient, NetworkConfig, NetworkError, Secret, SecurityConfig,
    SecurityProtocol, Target,
};
use kafka_consumer::protocol::{Api, ProtocolError};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse};
use madsim::net::NetSim;
use madsim::runtime::{Handle, NodeHandle};
use madsim::time::{sleep, Duration, Instant};
use support::fake_broker::{Behavior, FakeBroker};

const BROKER: &str = "10.0.0.1:9092";

struct Cluster {
    handle: Handle,
    broker: NodeHandle,
    fake: FakeBroker,
    client: NodeHandle,
}

async fn cluster() -> Cluster {
    let handle = Handle::current();
    let addr: SocketAddr = BROKER.parse().unwrap();
    let fake = FakeBroker::default();
    let serving = fake.clone();
    let broker = handle
        .create_node()
        .name("broker")
        .ip(addr.ip())
        .init(move || serving.clone().bind_and_serve(addr))
        .build();
    let client = handle
        .create_node()
        .name("client")
        .ip("10.0.0.2".parse().unwrap())
        .build();
    sleep(Duration::from_millis(10)).await; // let the broker bind
    Cluster {
        handle,
        broker,
        fake,
        client,
    }
}

fn network_client(request_timeout_ms: u64) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![BROKER.to_owned()],
        request_timeout_ms,
        ..NetworkConfig::default()
    })
    .unwrap()
}

fn request(name: &str) -> MetadataRequest {
    metadata_request_for_topics([name], false)
}

fn names(response: &MetadataResponse) -> Vec<String> {
    response
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().0.to_string())
        .collect()
}

#[madsim::test]
async fn round_trips_between_simulated_nodes() {
    let c = cluster().await;
    let received = c
        .client
        .spawn(async move {
            let mut client = network_client(30_000);
            let mut got = Vec::new();
            for name in ["a", "b", "c"] {
                let response = client
                    .send(Target::LeastLoaded, request(name))
                    .await
                    .unwrap();
                got.extend(names(&response.body));
            }
            // Pipelined, across simulated latency.
            let futures: Vec<_> = ["d", "e"]
                .iter()
                .map(|n| client.send(Target::Node(-1), request(n)))
                .collect();
            for future in futures {
                got.extend(names(&future.await.unwrap().body));
            }
            got
        })
        .await
        .unwrap();
    assert_eq!(received, ["a", "b", "c", "d", "e"]);
    assert_eq!(c.fake.connections(), 1);
}

#[madsim::test]
async fn broker_killed_mid_response_then_restarted() {
    let c = cluster().await;
    c.fake.script([Behavior::HalfThenHang]);
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let (go_tx, mut go) = tokio::sync::mpsc::unbounded_channel::<()>();
    let client = c.client.spawn(async move {
        let mut client = network_client(30_000);
        // In flight while the broker dies with half a response delivered.
        let err = client
            .send(Target::Node(-1), request("doomed"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                NetworkError::ConnectionClosed {
                    reason: CloseReason::Protocol(ProtocolError::TruncatedFrame { .. }),
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.is_retriable());
        // While it is down, attempts are refused, each after a longer backoff.
        let mut attempts_at = Vec::new();
        for _ in 0..3 {
            let err = client
                .send(Target::Node(-1), request("down"))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, NetworkError::ConnectFailed { .. }),
                "{err:?}"
            );
            attempts_at.push(Instant::now());
        }
        let gaps: Vec<Duration> = attempts_at.windows(2).map(|w| w[1] - w[0]).collect();
        // Backoff after the 1st and 2nd failed attempts: 100 ms and 200 ms, ±20% jitter.
        assert!(
            gaps[0] >= Duration::from_millis(80) && gaps[0] <= Duration::from_millis(125),
            "{gaps:?}"
        );
        assert!(
            gaps[1] >= Duration::from_millis(160) && gaps[1] <= Duration::from_millis(245),
            "{gaps:?}"
        );
        events_tx.send("down").unwrap();
        go.recv().await.unwrap();
        let response = client
            .send(Target::Node(-1), request("back"))
            .await
            .unwrap();
        names(&response.body)
    });
    sleep(Duration::from_secs(1)).await;
    assert_eq!(
        c.fake.received_requests().len(),
        1,
        "the doomed request arrived"
    );
    c.handle.kill(c.broker.id());
    assert_eq!(events.recv().await, Some("down"));
    c.handle.restart(c.broker.id());
    sleep(Duration::from_millis(10)).await;
    go_tx.send(()).unwrap();
    assert_eq!(client.await.unwrap(), ["back"]);
    assert_eq!(
        c.fake.connections(),
        2,
        "one before the kill, one after the restart"
    );
}

#[madsim::test]
async fn partition_fires_the_request_timeout_on_virtual_time() {
    let c = cluster().await;
    let (clog_tx, mut clog_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (healed_tx, mut healed_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let client = c.client.spawn(async move {
        let mut client = network_client(5_000);
        client
            .send(Target::Node(-1), request("before"))
            .await
            .unwrap();
        clog_tx.send(()).unwrap();
        sleep(Duration::from_millis(10)).await;
        let started = Instant::now();
        let err = client
            .send(Target::Node(-1), request("cut off"))
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert!(
            matches!(
                &err,
                NetworkError::RequestTimedOut {
                    api: Api(3),
                    timeout_ms: 5_000,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_millis(5_100),
            "{waited:?}"
        );
        healed_rx.recv().await.unwrap();
        let response = client
            .send(Target::Node(-1), request("after"))
            .await
            .unwrap();
        names(&response.body)
    });
    clog_rx.recv().await.unwrap();
    let net = NetSim::current();
    net.clog_node(c.broker.id());
    sleep(Duration::from_secs(8)).await;
    net.unclog_node(c.broker.id());
    healed_tx.send(()).unwrap();
    assert_eq!(client.await.unwrap(), ["after"]);
    assert_eq!(
        c.fake.connections(),
        2,
        "the timed-out connection was replaced"
    );
}

fn sasl_plain_client(password: &str) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![BROKER.to_owned()],
        request_timeout_ms: 30_000,
        reconnect_backoff_ms: 1_000,
        reconnect_backoff_max_ms: 1_000,
        security: SecurityConfig {
            protocol: SecurityProtocol::SaslPlaintext,
            sasl: Some(SaslConfig {
                mechanism: SaslMechanism::Plain,
                credentials: SaslCredentials::Password {
                    username: "alice".to_owned(),
                    password: Secret::new(password),
                },
            }),
            ..SecurityConfig::default()
        },
        ..NetworkConfig::default()
    })
    .unwrap()
}

/// SASL runs on every connection right after ApiVersions and before any other request:
/// SaslHandshake v1, then SaslAuthenticate.
#[madsim::test]
async fn sasl_authenticates_before_any_other_request() {
    let c = cluster().await;
    c.fake.accept_plain("alice", "s3cret");
    let topics = c
        .client
        .spawn(async move {
            let mut client = sasl_plain_client("s3cret");
            let response = client
                .send(Target::LeastLoaded, request("a"))
                .await
                .unwrap();
            names(&response.body)
        })
        .await
        .unwrap();
    assert_eq!(topics, ["a"]);
    let apis: Vec<(i16, i16)> = c
        .fake
        .received()
        .iter()
        .map(|r| (r.api_key, r.api_version))
        .collect();
    let keys: Vec<i16> = apis.iter().map(|(key, _)| *key).collect();
    assert_eq!(
        keys,
        [18, 17, 36, 3],
        "ApiVersions, SaslHandshake, SaslAuthenticate, Metadata"
    );
    assert_eq!(apis[1].1, 1, "SaslHandshake v1");
}

/// A refused password: every request fails with a non-retriable Authentication error naming
/// the broker and mechanism, and the node reconnects once per backoff instead of once per
/// request (no retry storm): requests during the backoff fail at once.
#[madsim::test]
async fn a_refused_password_fails_fast_without_a_retry_storm() {
    let c = cluster().await;
    c.fake.accept_plain("alice", "s3cret");
    let outcomes = c
        .client
        .spawn(async move {
            let mut client = sasl_plain_client("wrong");
            let started = Instant::now();
            let mut outcomes = Vec::new();
            // 30 requests over 3 s of virtual time.
            for _ in 0..30 {
                let sent = Instant::now();
                let error = client
                    .send(Target::Node(-1), request("x"))
                    .await
                    .unwrap_err();
                outcomes.push((error, sent.elapsed()));
                sleep(Duration::from_millis(100)).await;
            }
            (outcomes, started.elapsed())
        })
        .await
        .unwrap();
    let (outcomes, elapsed) = outcomes;
    for (error, took) in &outcomes {
        match error {
            NetworkError::Authentication {
                broker,
                mechanism,
                code,
                message,
            } => {
                assert_eq!(broker, "node -1 (10.0.0.1:9092)");
                assert_eq!(mechanism, "SASL/PLAIN");
                assert_eq!(
                    *code,
                    Some(kafka_consumer::error::ErrorCode::SASL_AUTHENTICATION_FAILED)
                );
                assert!(
                    message.contains("Invalid username or password"),
                    "{message}"
                );
            }
            other => panic!("expected Authentication, got {other:?}"),
        }
        assert!(!error.is_retriable());
        assert!(
            *took < Duration::from_millis(500),
            "a request waited {took:?}"
        );
    }
    // One attempt per 1 s backoff (jitter ±20 %) over ~3.3 s, not one per request.
    let connections = c.fake.connections();
    assert!(
        (2..=5).contains(&connections),
        "{connections} connections for 30 requests in {elapsed:?}"
    );
}

/// KIP-368: a broker that limits sessions to 1 s gets a re-authentication on the same
/// connection before each session ends, while pipelined requests keep flowing and none is
/// dropped.
#[madsim::test]
async fn sessions_are_reauthenticated_without_dropping_requests() {
    let c = cluster().await;
    c.fake.accept_plain("alice", "s3cret");
    c.fake.set_session_lifetime_ms(1_000);
    let answered = c
        .client
        .spawn(async move {
            let mut client = sasl_plain_client("s3cret");
            let mut answered = 0;
            let started = Instant::now();
            while started.elapsed() < Duration::from_millis(3_500) {
                let batch: Vec<_> = (0..4)
                    .map(|_| client.send(Target::Node(-1), request("r")))
                    .collect();
                for response in batch {
                    assert_eq!(names(&response.await.unwrap().body), ["r"]);
                    answered += 1;
                }
                sleep(Duration::from_millis(50)).await;
            }
            answered
        })
        .await
        .unwrap();
    assert!(answered > 100, "{answered}");
    assert_eq!(
        c.fake.connections(),
        1,
        "re-authentication must not reconnect"
    );
    let handshakes = c.fake.received().iter().filter(|r| r.api_key == 17).count();
    // Authenticated at 0 s, then every 0.85–0.95 s: at least 4 sessions in 3.5 s.
    assert!((4..=5).contains(&handshakes), "{handshakes} handshakes");
}

const SIM_CA: &str = include_str!("fixtures/tls/ca.pem");
const SIM_BROKER_CERT: &str = include_str!("fixtures/tls/broker.pem");
const SIM_BROKER_KEY: &str = include_str!("fixtures/tls/broker.key");

/// A TLS broker on its own simulated node: the handshake runs over madsim's TCP.
async fn tls_cluster() -> Cluster {
    let handle = Handle::current();
    let addr: SocketAddr = BROKER.parse().unwrap();
    let fake = FakeBroker::default();
    let serving = fake.clone();
    let chain = tls::parse_certificates("test", SIM_BROKER_CERT).unwrap();
    let key = tls::parse_private_key("test", &Secret::new(SIM_BROKER_KEY), None).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let config = Arc::new(config);
    let broker = handle
        .create_node()
        .name("broker")
        .ip(addr.ip())
        .init(move || serving.clone().bind_and_serve_tls(addr, config.clone()))
        .build();
    let client = handle
        .create_node()
        .name("client")
        .ip("10.0.0.2".parse().unwrap())
        .build();
    sleep(Duration::from_millis(10)).await;
    Cluster {
        handle,
        broker,
        fake,
        client,
    }
}

fn tls_client(ca: &str) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![BROKER.to_owned()],
        request_timeout_ms: 30_000,
        security: SecurityConfig {
            protocol: SecurityProtocol::Ssl,
            tls: TlsConfig {
                trust: TrustRoots::Pem(ca.to_owned()),
                ..TlsConfig::default()
            },
            sasl: None,
        },
        ..NetworkConfig::default()
    })
    .unwrap()
}

/// TLS over simulated TCP: requests round-trip through rustls on both sides, and a client
/// that does not trust the broker's CA gets a non-retriable Authentication error.
#[madsim::test]
async fn tls_over_simulated_tcp() {
    let c = tls_cluster().await;
    let (topics, refused) = c
        .client
        .spawn(async move {
            let mut client = tls_client(SIM_CA);
            let response = client
                .send(Target::LeastLoaded, request("tls"))
                .await
                .unwrap();
            // Trusting only the broker's own (leaf) certificate is not trusting its CA.
            let mut untrusting = tls_client(SIM_BROKER_CERT);
            let refused = untrusting
                .send(Target::LeastLoaded, request("x"))
                .await
                .unwrap_err();
            (names(&response.body), refused)
        })
        .await
        .unwrap();
    assert_eq!(topics, ["tls"]);
    match &refused {
        NetworkError::Authentication { mechanism, .. } => assert_eq!(mechanism, "SSL"),
        other => panic!("expected Authentication, got {other:?}"),
    }
    assert!(!refused.is_retriable());
}
