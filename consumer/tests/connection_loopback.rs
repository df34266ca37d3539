//! The network client against a fake broker over loopback TCP. Dual mode: real sockets under
//! `cargo test`, madsim's simulated ones under `cargo stest` (`#[tokio::test]` is madsim's test
//! macro there).

mod support;

use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::tls::{TlsConfig, TrustRoots};
use kafka_consumer::network::{
    CloseReason, MetadataScope, NetworkClient, NetworkConfig, NetworkError, SecurityConfig,
    SecurityProtocol, Target,
};
use kafka_consumer::protocol::{Api, ProtocolError, ResponseError};
use kafka_consumer::MetadataRecoveryStrategy;
use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};
use support::fake_broker::{topic_id_for, Behavior, FakeBroker};
use tokio::time::{sleep, Duration, Instant};

fn client(addr: std::net::SocketAddr, tweak: impl FnOnce(&mut NetworkConfig)) -> NetworkClient {
    let mut config = NetworkConfig {
        bootstrap_servers: vec![addr.to_string()],
        client_id: "loopback-test".to_owned(),
        ..NetworkConfig::default()
    };
    tweak(&mut config);
    NetworkClient::new(config).unwrap()
}

fn request(names: &[&str]) -> MetadataRequest {
    metadata_request_for_topics(names.iter().copied(), false)
}

fn topic_names(response: &MetadataResponse) -> Vec<String> {
    response
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().0.to_string())
        .collect()
}

#[tokio::test]
async fn api_versions_and_metadata_round_trip() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |_| {});
    let response = client
        .send(Target::LeastLoaded, request(&["orders"]))
        .await
        .unwrap();
    assert_eq!(response.node_id, -1, "the bootstrap node");
    assert_eq!(response.version, ApiKey::Metadata.valid_versions().max);
    assert_eq!(topic_names(&response.body), ["orders"]);

    let first = &broker.received()[0];
    assert_eq!(first.api_key, ApiKey::ApiVersions as i16);
    assert_eq!(first.api_version, ApiKey::ApiVersions.valid_versions().max);
    assert!(client.is_connected(-1));
    assert_eq!(
        client.negotiated_version::<MetadataRequest>(-1),
        Some(response.version)
    );
    let table = client.api_versions(-1).unwrap();
    assert_eq!(
        table.broker_range(ApiKey::Fetch as i16).unwrap().max,
        ApiKey::Fetch.valid_versions().max
    );

    client.update_metadata(&response.body, MetadataScope::ListedTopics);
    let metadata = client.metadata();
    assert_eq!(metadata.cluster_id(), Some("fake-cluster"));
    assert_eq!(metadata.controller_id(), Some(1));
    assert_eq!(metadata.broker(1).unwrap().rack.as_deref(), Some("rack-1"));
    assert_eq!(metadata.topic_id("orders"), Some(topic_id_for("orders")));
    assert_eq!(metadata.topic_name(topic_id_for("orders")), Some("orders"));

    // Node 1 is the same broker under its own id: a second connection, same answers.
    let by_id = client.send(Target::Node(1), request(&["x"])).await.unwrap();
    assert_eq!(
        (by_id.node_id, topic_names(&by_id.body)),
        (1, vec!["x".to_owned()])
    );
    assert_eq!(broker.connections(), 2);
    assert!(broker.malformed().is_empty());
}

#[tokio::test]
async fn api_versions_falls_back_to_the_version_the_broker_offers() {
    let (broker, addr) = FakeBroker::start().await;
    broker.set_api_versions_max(2);
    let mut client = client(addr, |_| {});
    client
        .send(Target::Node(-1), request(&["t"]))
        .await
        .unwrap();
    let versions: Vec<i16> = broker
        .received()
        .iter()
        .filter(|r| r.api_key == ApiKey::ApiVersions as i16)
        .map(|r| r.api_version)
        .collect();
    assert_eq!(versions, [ApiKey::ApiVersions.valid_versions().max, 2]);
}

#[tokio::test]
async fn an_api_the_broker_lacks_fails_with_an_error_naming_it() {
    let (broker, addr) = FakeBroker::start().await;
    broker.omit_api(ApiKey::Metadata);
    let mut client = client(addr, |_| {});
    let err = client
        .send(Target::Node(-1), request(&["t"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, NetworkError::UnsupportedApi { source, .. } if source.api == Api(3) && source.broker.is_none()),
        "{err}"
    );
    assert!(
        err.to_string().contains("no common version of Metadata"),
        "{err}"
    );
    assert!(!err.is_retriable());
    assert!(broker.received_requests().is_empty(), "nothing was sent");
    assert!(client.is_connected(-1), "the connection is unaffected");
}

#[tokio::test]
async fn requests_are_pipelined_and_answered_in_order() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |_| {});
    client
        .send(Target::Node(-1), request(&["warmup"]))
        .await
        .unwrap();
    broker.script([Behavior::Delay(Duration::from_millis(300))]);
    let futures: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| client.send(Target::Node(-1), request(&[name])))
        .collect();
    sleep(Duration::from_millis(100)).await;
    assert_eq!(
        broker.received_requests().len(),
        4,
        "all three were written while the first was unanswered"
    );
    for (future, name) in futures.into_iter().zip(["a", "b", "c"]) {
        assert_eq!(topic_names(&future.await.unwrap().body), [name]);
    }
    assert_eq!(broker.connections(), 1);
}

#[tokio::test]
async fn in_flight_requests_are_bounded_per_connection() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |c| c.max_in_flight_requests_per_connection = 2);
    client
        .send(Target::Node(-1), request(&["warmup"]))
        .await
        .unwrap();
    broker.script([Behavior::Delay(Duration::from_millis(300))]);
    let futures: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| client.send(Target::Node(-1), request(&[name])))
        .collect();
    sleep(Duration::from_millis(100)).await;
    assert_eq!(
        broker.received_requests().len(),
        1 + 2,
        "the third waits for a slot"
    );
    for (future, name) in futures.into_iter().zip(["a", "b", "c"]) {
        assert_eq!(topic_names(&future.await.unwrap().body), [name]);
    }
}

#[tokio::test]
async fn an_out_of_order_correlation_id_closes_the_connection() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |_| {});
    client
        .send(Target::Node(-1), request(&["warmup"]))
        .await
        .unwrap();
    broker.script([Behavior::Reorder, Behavior::Normal]);
    let first = client.send(Target::Node(-1), request(&["a"]));
    let second = client.send(Target::Node(-1), request(&["b"]));
    for result in [first.await, second.await] {
        let err = result.unwrap_err();
        assert!(
            matches!(
                &err,
                NetworkError::ConnectionClosed {
                    reason: CloseReason::Protocol(ProtocolError::UnexpectedCorrelationId { .. }),
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.is_retriable());
    }
    let after = client
        .send(Target::Node(-1), request(&["c"]))
        .await
        .unwrap();
    assert_eq!(topic_names(&after.body), ["c"]);
    assert_eq!(broker.connections(), 2, "reconnected");
}

#[tokio::test]
async fn a_request_timeout_closes_the_connection_and_the_next_request_reconnects() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |c| c.request_timeout_ms = 200);
    client
        .send(Target::Node(-1), request(&["warmup"]))
        .await
        .unwrap();
    broker.script([Behavior::Silent]);
    let started = Instant::now();
    let err = client
        .send(Target::Node(-1), request(&["lost"]))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(
            &err,
            NetworkError::RequestTimedOut {
                api: Api(3),
                timeout_ms: 200,
                ..
            }
        ),
        "{err}"
    );
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert!(!client.is_connected(-1), "closed after the timeout");
    let after = client
        .send(Target::Node(-1), request(&["next"]))
        .await
        .unwrap();
    assert_eq!(topic_names(&after.body), ["next"]);
    assert_eq!(broker.connections(), 2);
}

#[tokio::test]
async fn dropping_a_callers_future_mid_request_leaves_the_stream_intact() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |_| {});
    client
        .send(Target::Node(-1), request(&["warmup"]))
        .await
        .unwrap();
    // A ~2.5 MB request: writing it takes a while, and the caller gives up after 1 ms.
    let names: Vec<String> = (0..50_000)
        .map(|i| format!("topic-with-a-long-name-{i:020}"))
        .collect();
    let big = metadata_request_for_topics(names.iter().map(String::as_str), false);
    let abandoned =
        tokio::time::timeout(Duration::from_millis(1), client.send(Target::Node(-1), big)).await;
    assert!(
        abandoned.is_err(),
        "the caller's future was dropped before the response"
    );
    let after = client
        .send(Target::Node(-1), request(&["after"]))
        .await
        .unwrap();
    assert_eq!(topic_names(&after.body), ["after"]);

    assert!(broker.malformed().is_empty(), "{:?}", broker.malformed());
    let requests = broker.received_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[1].metadata_topics.as_ref().unwrap(), &names);
    assert_eq!(
        requests[2].metadata_topics.as_deref(),
        Some(&["after".to_owned()][..])
    );
    assert!(
        requests.iter().all(|r| r.connection == 0),
        "no reconnect was needed"
    );
}

#[tokio::test]
async fn malformed_responses_fail_with_typed_errors_and_the_client_reconnects() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |_| {});
    type Check = fn(&NetworkError) -> bool;
    let cases: [(Behavior, Check, &str); 5] = [
        (
            Behavior::LengthPrefix(-5),
            |e| {
                matches!(
                    e,
                    NetworkError::ConnectionClosed {
                        reason: CloseReason::Protocol(ProtocolError::NegativeFrameLength {
                            length: -5
                        }),
                        ..
                    }
                )
            },
            "negative length prefix -5",
        ),
        (
            Behavior::LengthPrefix(i32::MAX),
            |e| {
                matches!(
                    e,
                    NetworkError::ConnectionClosed {
                        reason: CloseReason::Protocol(ProtocolError::FrameTooLarge { .. }),
                        ..
                    }
                )
            },
            "exceeds the maximum",
        ),
        (
            Behavior::GarbageBody,
            |e| {
                matches!(
                    e,
                    NetworkError::Protocol {
                        source: ProtocolError::Decode { api: Api(3), .. },
                        ..
                    }
                )
            },
            "cannot decode Metadata v13 response",
        ),
        (
            Behavior::WrongCorrelationId,
            |e| {
                matches!(
                    e,
                    NetworkError::ConnectionClosed {
                        reason: CloseReason::Protocol(
                            ProtocolError::UnexpectedCorrelationId { .. }
                        ),
                        ..
                    }
                )
            },
            "unexpected correlation id",
        ),
        (
            Behavior::TruncateThenClose,
            |e| {
                matches!(
                    e,
                    NetworkError::ConnectionClosed {
                        reason: CloseReason::Protocol(ProtocolError::TruncatedFrame { .. }),
                        ..
                    }
                )
            },
            "truncated response",
        ),
    ];
    for (i, (behavior, check, text)) in cases.into_iter().enumerate() {
        broker.script([behavior.clone()]);
        let err = client
            .send(Target::Node(-1), request(&["bad"]))
            .await
            .unwrap_err();
        assert!(check(&err), "{behavior:?}: {err:?}");
        assert!(err.to_string().contains(text), "{behavior:?}: {err}");
        assert!(err.is_retriable(), "{behavior:?}");
        let ok = client
            .send(Target::Node(-1), request(&["good"]))
            .await
            .unwrap();
        assert_eq!(topic_names(&ok.body), ["good"], "{behavior:?}");
        assert_eq!(
            broker.connections(),
            i + 2,
            "{behavior:?}: reconnected once"
        );
    }
}

#[tokio::test]
async fn connect_failure_is_typed_and_retriable() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut client = client(addr, |_| {});
    let err = client
        .send(Target::LeastLoaded, request(&["t"]))
        .await
        .unwrap_err();
    if cfg!(madsim) {
        // madsim completes a connect to a closed port and resets the stream on first use, so
        // the failure surfaces in the ApiVersions handshake.
        assert!(
            matches!(
                &err,
                NetworkError::ConnectionClosed {
                    reason: CloseReason::Io { .. },
                    ..
                }
            ),
            "{err:?}"
        );
    } else {
        assert!(
            matches!(&err, NetworkError::ConnectFailed { .. }),
            "{err:?}"
        );
    }
    assert!(err.is_retriable());
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

/// `connections.max.idle.ms` (Java's `Selector` idle expiry): a connection with nothing in
/// flight and no traffic for that long is closed, without failing anything, and the next
/// request connects again; a connection kept busy stays.
#[tokio::test]
async fn an_idle_connection_is_closed_and_the_next_request_reconnects() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |config| config.connections_max_idle_ms = Some(300));
    for _ in 0..4 {
        // Busy: a request every 100 ms keeps the connection.
        client
            .send(Target::Node(-1), request(&["t"]))
            .await
            .unwrap();
        sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(broker.connections(), 1);
    assert!(client.is_connected(-1));
    sleep(Duration::from_millis(500)).await;
    assert!(!client.is_connected(-1), "closed after 300 ms idle");
    let response = client
        .send(Target::Node(-1), request(&["t"]))
        .await
        .unwrap();
    assert_eq!(topic_names(&response.body), ["t"]);
    assert_eq!(broker.connections(), 2, "the next request reconnected");
}

/// Java's `ClusterConnectionStates`: each setup that fails in a row doubles the next attempt's
/// setup timeout (`socket.connection.setup.timeout.ms` × 2^failures, ±20% jitter) up to
/// `socket.connection.setup.timeout.max.ms`. A listener that accepts and never speaks stalls the
/// TLS handshake, so every attempt runs into its timeout, which the error reports.
#[tokio::test]
async fn setup_timeouts_grow_exponentially_to_their_maximum() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let mut client = client(addr, |config| {
        config.socket_connection_setup_timeout_ms = 100;
        config.socket_connection_setup_timeout_max_ms = 1_000;
        config.security = SecurityConfig {
            protocol: SecurityProtocol::Ssl,
            tls: TlsConfig {
                trust: TrustRoots::Pem(include_str!("fixtures/tls/ca.pem").to_owned()),
                ..TlsConfig::default()
            },
            sasl: None,
        };
    });
    let mut timeouts_ms = Vec::new();
    for _ in 0..6 {
        match client.send(Target::LeastLoaded, request(&["t"])).await {
            Err(NetworkError::ConnectTimedOut { timeout_ms, .. }) => timeouts_ms.push(timeout_ms),
            other => panic!("expected ConnectTimedOut, got {other:?}"),
        }
    }
    // 100 × 2^n ± 20%, capped at 1,000 ms from the fourth failure on (2^3.32 = 10).
    let bounds = [
        (80, 120),
        (160, 240),
        (320, 480),
        (640, 960),
        (800, 1_000),
        (800, 1_000),
    ];
    for (attempt, (timeout_ms, (low, high))) in timeouts_ms.iter().zip(bounds).enumerate() {
        assert!(
            (low..=high).contains(timeout_ms),
            "attempt {attempt}: {timeout_ms} ms not in {low}..={high} ({timeouts_ms:?})"
        );
    }
}

#[tokio::test]
async fn unknown_nodes_and_empty_clusters_are_typed_errors() {
    let mut client = NetworkClient::new(NetworkConfig::default()).unwrap();
    let err = client
        .send(Target::LeastLoaded, request(&[]))
        .await
        .unwrap_err();
    assert!(matches!(err, NetworkError::NoNodeAvailable), "{err}");
    let err = client
        .send(Target::Node(7), request(&[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, NetworkError::UnknownNode { node_id: 7 }),
        "{err}"
    );
}

/// An address nothing listens on.
async fn dead_address() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

/// KIP-899: the bootstrap server names one broker, which then cannot be reached (the cluster
/// moved). With `metadata.recovery.strategy=rebootstrap` the next metadata request, finding
/// every known broker backing off, goes back to the bootstrap server, which names the new
/// broker; with `none` the client keeps to the broker it knows and gets nothing.
#[tokio::test]
async fn a_client_whose_known_brokers_are_all_unreachable_rebootstraps() {
    for strategy in [
        MetadataRecoveryStrategy::Rebootstrap,
        MetadataRecoveryStrategy::None,
    ] {
        let (broker, addr) = FakeBroker::start().await;
        broker.advertise(dead_address().await);
        let mut client = client(addr, |c| {
            c.metadata_recovery_strategy = strategy;
            c.reconnect_backoff_ms = 10_000;
            c.reconnect_backoff_max_ms = 10_000;
            c.request_timeout_ms = 1_000;
        });
        assert!(!client.prepare_metadata_request(), "nothing known yet");
        let first = client
            .send(Target::LeastLoaded, request(&["t"]))
            .await
            .unwrap();
        assert_eq!(first.node_id, -1);
        client.update_metadata(&first.body, MetadataScope::ListedTopics);
        assert!(!client.prepare_metadata_request(), "node 1 was never tried");
        let unreachable = client.send(Target::LeastLoaded, request(&["t"])).await;
        assert!(unreachable.is_err(), "{strategy:?}: node 1 is gone");
        broker.advertise(addr);

        let rebootstrapped = client.prepare_metadata_request();
        let again = client.send(Target::LeastLoaded, request(&["t"])).await;
        match strategy {
            MetadataRecoveryStrategy::Rebootstrap => {
                assert!(rebootstrapped);
                let again = again.unwrap();
                assert_eq!(again.node_id, -1, "back to the bootstrap server");
                client.update_metadata(&again.body, MetadataScope::ListedTopics);
                let node = client.metadata().broker(1).expect("node 1 named again");
                assert_eq!((node.host.as_str(), node.port), ("127.0.0.1", addr.port()));
                let moved = client
                    .send(Target::LeastLoaded, request(&["t"]))
                    .await
                    .unwrap();
                assert_eq!(moved.node_id, 1, "the broker at its new address");
                assert_eq!(broker.received_count(ApiKey::Metadata), 3);
            }
            MetadataRecoveryStrategy::None => {
                assert!(!rebootstrapped);
                assert!(again.is_err(), "node 1 is still all it knows");
                assert_eq!(broker.received_count(ApiKey::Metadata), 1);
            }
        }
    }
}

/// KIP-1102: a Metadata response with the top-level error REBOOTSTRAP_REQUIRED is not applied
/// and makes the client forget its brokers on its next round; so does wanting metadata for
/// longer than `metadata.recovery.rebootstrap.trigger.ms` without getting it.
#[tokio::test]
async fn rebootstrap_required_and_the_trigger_time_send_the_client_back_to_bootstrap() {
    let (broker, addr) = FakeBroker::start().await;
    let mut client = client(addr, |c| c.metadata_recovery_rebootstrap_trigger_ms = 500);
    let first = client
        .send(Target::LeastLoaded, request(&["t"]))
        .await
        .unwrap();
    client.update_metadata(&first.body, MetadataScope::ListedTopics);
    assert!(client.metadata().broker(1).is_some());

    broker.set_metadata_error_code(ResponseError::RebootstrapRequired.code());
    client.prepare_metadata_request();
    let refused = client
        .send(Target::LeastLoaded, request(&["t"]))
        .await
        .unwrap();
    assert_eq!(refused.node_id, 1);
    client.update_metadata(&refused.body, MetadataScope::ListedTopics);
    assert!(client.metadata().broker(1).is_some(), "not applied");
    assert!(client.poll_metadata_recovery(), "due at once");
    assert!(client.metadata().brokers().next().is_none());
    assert!(!client.poll_metadata_recovery(), "the clock starts again");
    let via_bootstrap = client
        .send(Target::LeastLoaded, request(&["t"]))
        .await
        .unwrap();
    assert_eq!(via_bootstrap.node_id, -1);

    // The trigger: metadata wanted since the rebootstrap, none applied for 500 ms.
    sleep(Duration::from_millis(400)).await;
    assert!(!client.poll_metadata_recovery());
    sleep(Duration::from_millis(200)).await;
    assert!(client.poll_metadata_recovery());

    broker.set_metadata_error_code(0);
    client.prepare_metadata_request();
    let fine = client
        .send(Target::LeastLoaded, request(&["t"]))
        .await
        .unwrap();
    client.update_metadata(&fine.body, MetadataScope::ListedTopics);
    sleep(Duration::from_millis(600)).await;
    assert!(
        !client.poll_metadata_recovery(),
        "a successful response stops the clock"
    );
}
