//! A consumer whose brokers are unreachable says so: a WARN line naming the broker's address
//! and the cause (as Java's "Connection to node -1 (…) could not be established. Node may not
//! be available."), once per streak of failed attempts and then at most every 10 s, not once
//! per reconnect backoff.
#![cfg(not(madsim))]

mod support;

use tokio::time::{Duration, Instant};

use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use support::log_capture::LogCapture;

#[tokio::test]
async fn an_unreachable_broker_is_warned_about_once_per_streak() {
    // Nothing listens on port 1 of loopback: every attempt is refused at once.
    // The only test of this binary: it may install the process-wide subscriber.
    let logs = LogCapture::install("kafka_consumer=debug");
    let config = ConsumerConfig::from_pairs([
        ("bootstrap.servers", "127.0.0.1:1"),
        ("reconnect.backoff.ms", "20"),
        ("reconnect.backoff.max.ms", "50"),
    ])
    .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    consumer
        .assign([TopicPartition::new("orders", 0)])
        .await
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1_500) {
        let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
        assert!(records.is_empty());
    }
    consumer.close(Duration::from_secs(1)).await.unwrap();
    let logged = logs.take();
    let warnings: Vec<&str> = logged
        .lines()
        .filter(|line| line.contains(" WARN "))
        .collect();
    let attempts = logged
        .lines()
        .filter(|line| line.contains("connection attempt failed"))
        .count();
    assert_eq!(warnings.len(), 1, "one warning for the streak:\n{logged}");
    let warning = warnings[0];
    assert!(
        warning.contains(
            "Connection to node -1 (127.0.0.1:1) could not be established. \
             Node may not be available."
        ),
        "{warning}"
    );
    assert!(warning.contains("refused"), "the cause: {warning}");
    assert!(
        attempts >= 3,
        "the attempts after the first go to DEBUG ({attempts}):\n{logged}"
    );
}
