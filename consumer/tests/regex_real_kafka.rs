//! `subscribe_regex` (KIP-848's broker-side RE2J subscription) against a real Apache Kafka 4.x
//! broker: the broker resolves the regex, also for topics created after the member joined;
//! a regex the broker cannot compile fails `poll` with INVALID_REGULAR_EXPRESSION; the classic
//! protocol refuses it up front, and it excludes the other subscription kinds as in Java. And
//! `subscribe_pattern` (the client-side pattern) under the same protocol: the member joins
//! before any topic matches and picks topics up as they are created.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;

use kafka_consumer::error::ErrorCode;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, Error};
use support::group::unique;
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::time::{Duration, Instant};

fn config(bootstrap: &str, group: &str, protocol: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol)
        .build()
        .unwrap()
}

/// Lines for `produce_with_java`: null key, the value `prefix-i`.
fn values(prefix: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("\\N\t\\N\t{prefix}-{i}"))
        .collect()
}

/// Polls until `expected` values were seen (or panics after `timeout`); returns every value.
async fn consume_until(
    consumer: &mut Consumer,
    expected: &BTreeSet<String>,
    timeout: Duration,
) -> BTreeSet<String> {
    let deadline = Instant::now() + timeout;
    let mut seen = BTreeSet::new();
    while !expected.is_subset(&seen) {
        assert!(
            Instant::now() < deadline,
            "missing after {timeout:?}: {:?}",
            expected.difference(&seen).take(5).collect::<Vec<_>>()
        );
        for r in consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap()
            .iter()
        {
            seen.insert(String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap());
        }
    }
    seen
}

#[tokio::test]
async fn the_broker_resolves_the_regex_including_topics_created_later() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let prefix = unique("regex");
    let (a, b, c, other) = (
        format!("{prefix}-a"),
        format!("{prefix}-b"),
        format!("{prefix}-c"),
        format!("x{prefix}-a"),
    );
    create_topic(&mut admin, &a, 2).await;
    create_topic(&mut admin, &b, 1).await;
    create_topic(&mut admin, &other, 1).await;
    produce_with_java(&bootstrap, &a, "none", &values("a", 200));
    produce_with_java(&bootstrap, &b, "none", &values("b", 100));
    produce_with_java(&bootstrap, &other, "none", &values("other", 50));

    let mut consumer =
        Consumer::new(config(&bootstrap, &unique("regex-group"), "consumer")).unwrap();
    // Whole-name match: `x{prefix}-a` contains a match but is not one.
    consumer
        .subscribe_regex(&format!("{prefix}-.*"))
        .await
        .unwrap();
    assert_eq!(
        consumer.subscription(),
        [format!("{prefix}-.*")].into_iter().collect()
    );
    let expected: BTreeSet<String> = (0..200)
        .map(|i| format!("a-{i}"))
        .chain((0..100).map(|i| format!("b-{i}")))
        .collect();
    let seen = consume_until(&mut consumer, &expected, Duration::from_secs(60)).await;
    assert!(
        seen.iter().all(|v| !v.starts_with("other-")),
        "a topic the regex does not fully match was consumed"
    );
    let topics: BTreeSet<String> = consumer
        .assignment()
        .iter()
        .map(|tp| tp.topic.to_string())
        .collect();
    assert_eq!(topics, [a.clone(), b.clone()].into_iter().collect());

    // A topic created now matches too: the broker re-resolves the regex when its metadata
    // has new topics (at most every 10 s), and the assignment grows.
    create_topic(&mut admin, &c, 3).await;
    produce_with_java(&bootstrap, &c, "none", &values("c", 90));
    consume_until(
        &mut consumer,
        &(0..90).map(|i| format!("c-{i}")).collect(),
        Duration::from_secs(90),
    )
    .await;
    assert_eq!(
        consumer
            .assignment()
            .iter()
            .filter(|tp| tp.topic.as_ref() == c)
            .count(),
        3,
        "every partition of the new topic is assigned: {:?}",
        consumer.assignment()
    );
    consumer.close(Duration::from_secs(30)).await.unwrap();
}

/// The member joins with nothing matching yet (Kafka 4.x accepts an empty subscription,
/// KAFKA-18095), then matches the pattern again on every metadata refresh and sends the new
/// topic names with its next heartbeat.
#[tokio::test]
async fn a_client_side_pattern_under_the_consumer_protocol_picks_up_topics_created_later() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let prefix = unique("pattern");
    let (a, b) = (format!("{prefix}-a"), format!("{prefix}-b"));
    let mut consumer = Consumer::new(
        ConsumerConfig::builder()
            .bootstrap_servers([bootstrap.as_str()])
            .group_id(unique("pattern-group"))
            .auto_offset_reset(AutoOffsetReset::Earliest)
            .set("group.protocol", "consumer")
            .set("metadata.max.age.ms", "1000")
            .build()
            .unwrap(),
    )
    .unwrap();
    consumer
        .subscribe_pattern(&format!("{prefix}-.*"))
        .await
        .unwrap();
    let empty = consumer.poll(Duration::from_secs(2)).await.unwrap();
    assert!(empty.is_empty(), "no topic matches yet");
    for (topic, name, count) in [(&a, "a", 120), (&b, "b", 80)] {
        create_topic(&mut admin, topic, 2).await;
        produce_with_java(&bootstrap, topic, "none", &values(name, count));
        consume_until(
            &mut consumer,
            &(0..count).map(|i| format!("{name}-{i}")).collect(),
            Duration::from_secs(60),
        )
        .await;
    }
    let topics: BTreeSet<String> = consumer
        .assignment()
        .iter()
        .map(|tp| tp.topic.to_string())
        .collect();
    assert_eq!(topics, [a, b].into_iter().collect());
    consumer.close(Duration::from_secs(30)).await.unwrap();
}

#[tokio::test]
async fn a_regex_the_broker_cannot_compile_fails_poll() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut consumer = Consumer::new(config(&bootstrap, &unique("regex-bad"), "consumer")).unwrap();
    consumer.subscribe_regex("(unclosed").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let error = loop {
        assert!(Instant::now() < deadline, "poll never failed");
        match consumer.poll(Duration::from_millis(200)).await {
            Ok(records) => assert_eq!(records.count(), 0),
            Err(error) => break error,
        }
    };
    assert!(
        matches!(
            error,
            Error::Fatal {
                code: Some(ErrorCode::INVALID_REGULAR_EXPRESSION),
                ..
            }
        ),
        "{error:?}"
    );
    // Fatal: every later poll reports it too.
    assert!(consumer.poll(Duration::from_millis(100)).await.is_err());
}

/// No broker is contacted: both refusals happen before any request.
#[tokio::test]
async fn the_classic_protocol_refuses_a_regex_and_the_subscription_kinds_exclude_each_other() {
    let mut classic = Consumer::new(config("127.0.0.1:1", "g", "classic")).unwrap();
    let error = classic.subscribe_regex("t.*").await.unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument(m) if m.contains("group.protocol=consumer")),
        "{error:?}"
    );
    assert!(classic.subscription().is_empty());

    let mut consumer = Consumer::new(config("127.0.0.1:1", "g", "consumer")).unwrap();
    assert!(matches!(
        consumer.subscribe_regex("").await,
        Err(Error::InvalidArgument(_))
    ));
    consumer.subscribe_regex("t.*").await.unwrap();
    consumer.subscribe_regex("u.*").await.unwrap();
    for result in [
        consumer.subscribe_pattern("t.*").await,
        consumer.subscribe(["t"]).await,
    ] {
        assert!(matches!(result, Err(Error::IllegalState(_))), "{result:?}");
    }
    assert_eq!(
        consumer.subscription(),
        ["u.*".to_owned()].into_iter().collect()
    );
}
