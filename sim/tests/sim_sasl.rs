//! Simulation mode: our consumer authenticating against the simulated brokers' SASL listener
//! (issue #17), one case per mechanism, then KIP-368 re-authentication, a rotated password, a
//! forced session expiry and a broker that drops the handshake.
//!
//! The brokers' side is `sim::sasl`; the authentication events they record
//! (`Controller::auth_events`) say what happened on the wire.
#![cfg(madsim)]

use std::sync::Arc;

use kafka_consumer::error::ErrorCode;
use kafka_consumer::network::sasl::{SaslMechanism, UnsecuredJwtProvider};
use kafka_consumer::network::SecurityProtocol;
use kafka_consumer::rt::{Duration, Instant, SeededRng};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, Error};
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};
use sim::group::shard::GroupCoordinatorFactory;
use sim::sasl::{AuthEventKind, SaslServerConfig};

mod support;

const RECORDS: usize = 20;

async fn cluster(configure: impl FnOnce(&mut SaslServerConfig)) -> Arc<Cluster> {
    let mut sasl = SaslServerConfig::sasl_plaintext();
    sasl.add_user("alice", "alice-secret", &mut SeededRng::seed_from_u64(7));
    configure(&mut sasl);
    let cluster = Cluster::builder()
        .brokers(2)
        .topic("t", 2)
        .group_shards(Arc::new(GroupCoordinatorFactory::default()))
        .config(|c| c.sasl = sasl)
        .build()
        .await;
    for partition in 0..2 {
        let values: Vec<String> = (0..RECORDS / 2)
            .map(|i| format!("p{partition}-{i}"))
            .collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        cluster
            .controller()
            .append("t", partition, support::batch(&values))
            .unwrap();
    }
    Arc::new(cluster)
}

fn base(bootstrap: &[String], group: &str) -> kafka_consumer::config::ConsumerConfigBuilder {
    ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .group_id(group)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .security_protocol(SecurityProtocol::SaslPlaintext)
}

fn password_config(
    bootstrap: &[String],
    mechanism: SaslMechanism,
    password: &str,
) -> ConsumerConfig {
    base(bootstrap, "g")
        .sasl_password(mechanism, "alice", password)
        .build()
        .unwrap()
}

/// Runs `body` on a client node.
async fn on_client<T: Send + 'static>(
    body: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    Handle::current()
        .create_node()
        .name("client")
        .ip("10.0.2.1".parse().unwrap())
        .build()
        .spawn(body)
        .await
        .unwrap()
}

/// Subscribes and polls until `want` records arrived or `for_ms` passed; the values seen, or the
/// first error.
async fn consume(config: ConsumerConfig, want: usize, for_ms: u64) -> Result<Vec<String>, Error> {
    let mut consumer = Consumer::new(config)?;
    consumer.subscribe(["t"]).await?;
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_millis(for_ms);
    while Instant::now() < deadline && seen.len() < want {
        for record in consumer.poll(Duration::from_millis(200)).await?.iter() {
            seen.push(
                String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()).into_owned(),
            );
        }
    }
    let _ = consumer.close(Duration::from_secs(5)).await;
    Ok(seen)
}

fn authenticated(cluster: &Cluster) -> Vec<(String, bool)> {
    cluster
        .controller()
        .auth_events()
        .into_iter()
        .filter_map(|e| match e.kind {
            AuthEventKind::Authenticated {
                principal,
                reauthentication,
                ..
            } => Some((principal, reauthentication)),
            _ => None,
        })
        .collect()
}

fn failures(cluster: &Cluster) -> usize {
    cluster
        .controller()
        .auth_events()
        .iter()
        .filter(|e| matches!(e.kind, AuthEventKind::Failed { .. }))
        .count()
}

async fn consumes_everything_with(mechanism: SaslMechanism) {
    let cluster = cluster(|_| {}).await;
    let bootstrap = cluster.bootstrap_servers();
    let seen = on_client(async move {
        consume(
            password_config(&bootstrap, mechanism, "alice-secret"),
            RECORDS,
            30_000,
        )
        .await
    })
    .await
    .unwrap();
    assert_eq!(seen.len(), RECORDS, "{seen:?}");
    let logins = authenticated(&cluster);
    assert!(
        !logins.is_empty() && logins.iter().all(|(p, _)| p == "alice"),
        "{logins:?}"
    );
    assert_eq!(failures(&cluster), 0);
}

#[madsim::test]
async fn plain_consumes_everything() {
    consumes_everything_with(SaslMechanism::Plain).await;
}

#[madsim::test]
async fn scram_sha_256_consumes_everything() {
    consumes_everything_with(SaslMechanism::ScramSha256).await;
}

#[madsim::test]
async fn scram_sha_512_consumes_everything() {
    consumes_everything_with(SaslMechanism::ScramSha512).await;
}

#[madsim::test]
async fn oauthbearer_consumes_everything_and_the_token_bounds_the_session() {
    let cluster = cluster(|sasl| sasl.oauthbearer.required_scope = vec!["kafka".to_owned()]).await;
    let bootstrap = cluster.bootstrap_servers();
    let seen = on_client(async move {
        let mut provider = UnsecuredJwtProvider::new("alice");
        provider.scope = vec!["kafka".to_owned()];
        provider.lifetime_seconds = 600;
        let config = base(&bootstrap, "g")
            .sasl_oauthbearer(Arc::new(provider))
            .build()
            .unwrap();
        consume(config, RECORDS, 30_000).await
    })
    .await
    .unwrap();
    assert_eq!(seen.len(), RECORDS);
    let lifetimes: Vec<i64> = cluster
        .controller()
        .auth_events()
        .into_iter()
        .filter_map(|e| match e.kind {
            AuthEventKind::Authenticated {
                session_lifetime_ms,
                ..
            } => Some(session_lifetime_ms),
            _ => None,
        })
        .collect();
    assert!(
        !lifetimes.is_empty() && lifetimes.iter().all(|&ms| ms > 0 && ms <= 600_000),
        "the token's exp bounds the session: {lifetimes:?}"
    );
}

#[madsim::test]
async fn oauthbearer_without_the_required_scope_is_a_typed_error() {
    let cluster = cluster(|sasl| sasl.oauthbearer.required_scope = vec!["kafka".to_owned()]).await;
    let bootstrap = cluster.bootstrap_servers();
    let error = on_client(async move {
        let config = base(&bootstrap, "g")
            .sasl_oauthbearer(Arc::new(UnsecuredJwtProvider::new("alice")))
            .build()
            .unwrap();
        consume(config, RECORDS, 30_000).await
    })
    .await
    .unwrap_err();
    let Error::Authentication { code, message, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*code, Some(ErrorCode::SASL_AUTHENTICATION_FAILED));
    assert!(message.contains("insufficient_scope"), "{message}");
}

#[madsim::test]
async fn wrong_password_is_a_typed_error_without_a_retry_storm() {
    let cluster = cluster(|_| {}).await;
    let bootstrap = cluster.bootstrap_servers();
    let started = Instant::now();
    let error = on_client(async move {
        consume(
            password_config(&bootstrap, SaslMechanism::Plain, "wrong"),
            RECORDS,
            30_000,
        )
        .await
    })
    .await
    .unwrap_err();
    let Error::Authentication {
        code,
        message,
        mechanism,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(*code, Some(ErrorCode::SASL_AUTHENTICATION_FAILED));
    assert_eq!(
        message,
        "Authentication failed: Invalid username or password"
    );
    assert_eq!(mechanism, "SASL/PLAIN");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(failures(&cluster) >= 1, "the broker refused the password");
    let seconds = started.elapsed().as_secs_f64().max(1.0);
    let rate = failures(&cluster) as f64 / seconds / 2.0;
    assert!(
        rate <= 20.0,
        "{} failed authentications in {seconds} s",
        failures(&cluster)
    );
}

#[madsim::test]
async fn sessions_are_reauthenticated_before_they_expire_and_nothing_is_closed() {
    let cluster = cluster(|sasl| sasl.connections_max_reauth_ms = 2_000).await;
    let bootstrap = cluster.bootstrap_servers();
    let producer = {
        let cluster = cluster.clone();
        tokio::spawn(async move {
            for i in 0..10 {
                tokio::time::sleep(Duration::from_millis(1_000)).await;
                let value = format!("late-{i}");
                cluster
                    .controller()
                    .append("t", i % 2, support::batch(&[&value]))
                    .unwrap();
            }
        })
    };
    let seen = on_client(async move {
        consume(
            password_config(&bootstrap, SaslMechanism::ScramSha512, "alice-secret"),
            RECORDS + 10,
            30_000,
        )
        .await
    })
    .await
    .unwrap();
    producer.await.unwrap();
    assert_eq!(seen.len(), RECORDS + 10, "{seen:?}");
    let reauths = authenticated(&cluster).iter().filter(|(_, re)| *re).count();
    assert!(
        reauths >= 3,
        "{reauths} re-authentications in ~10 s of 2 s sessions"
    );
    let expired = cluster
        .controller()
        .auth_events()
        .iter()
        .filter(|e| e.kind == AuthEventKind::ExpiredClosed)
        .count();
    assert_eq!(
        expired, 0,
        "the client re-authenticates before the broker must close"
    );
    assert_eq!(failures(&cluster), 0);
}

#[madsim::test]
async fn a_password_rotated_mid_session_fails_the_reauthentication_with_a_typed_error() {
    let cluster = cluster(|sasl| sasl.connections_max_reauth_ms = 3_000).await;
    let bootstrap = cluster.bootstrap_servers();
    let rotate = {
        let cluster = cluster.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            cluster.apply(&Fault::SaslSetPassword {
                user: "alice".to_owned(),
                password: "rotated".to_owned(),
            });
        })
    };
    let outcome = on_client(async move {
        consume(
            password_config(&bootstrap, SaslMechanism::ScramSha256, "alice-secret"),
            usize::MAX,
            20_000,
        )
        .await
    })
    .await;
    rotate.await.unwrap();
    let error = outcome.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Authentication {
                code: Some(ErrorCode::SASL_AUTHENTICATION_FAILED),
                ..
            }
        ),
        "{error:?}"
    );
}

#[madsim::test]
async fn expired_sessions_are_closed_and_the_consumer_reconnects_losing_nothing() {
    let cluster = cluster(|_| {}).await;
    let bootstrap = cluster.bootstrap_servers();
    let expire = {
        let cluster = cluster.clone();
        tokio::spawn(async move {
            for at in [1_000, 2_500] {
                tokio::time::sleep(Duration::from_millis(at / 2)).await;
                for broker in cluster.node_ids() {
                    cluster.apply(&Fault::SaslExpireSessions { broker });
                }
                let value = format!("after-{at}");
                cluster
                    .controller()
                    .append("t", 0, support::batch(&[&value]))
                    .unwrap();
            }
        })
    };
    let seen = on_client(async move {
        consume(
            password_config(&bootstrap, SaslMechanism::Plain, "alice-secret"),
            RECORDS + 2,
            30_000,
        )
        .await
    })
    .await
    .unwrap();
    expire.await.unwrap();
    assert_eq!(seen.len(), RECORDS + 2, "{seen:?}");
    let expired = cluster
        .controller()
        .auth_events()
        .iter()
        .filter(|e| e.kind == AuthEventKind::ExpiredClosed)
        .count();
    assert!(expired >= 1, "the broker closed expired sessions");
}

#[madsim::test]
async fn a_broker_closing_during_the_handshake_is_retried() {
    let cluster = cluster(|_| {}).await;
    cluster.apply(&Fault::Response(ResponseRule {
        api_key: 36, // SaslAuthenticate
        broker: None,
        trigger: Trigger::Next(3),
        action: ResponseAction::Lose,
    }));
    let bootstrap = cluster.bootstrap_servers();
    let seen = on_client(async move {
        consume(
            password_config(&bootstrap, SaslMechanism::ScramSha256, "alice-secret"),
            RECORDS,
            30_000,
        )
        .await
    })
    .await
    .unwrap();
    assert_eq!(seen.len(), RECORDS);
    assert_eq!(
        failures(&cluster),
        3,
        "each lost answer closed one handshake"
    );
}
