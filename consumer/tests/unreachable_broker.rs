//! A consumer whose brokers are unreachable says so: a WARN line naming the broker's address
//! and the cause (as Java's "Connection to node -1 (…) could not be established. Node may not
//! be available."), once per streak of failed attempts and then at most every 10 s, not once
//! per reconnect backoff.
#![cfg(not(madsim))]

use std::sync::{Arc, Mutex};
use tokio::time::{Duration, Instant};

use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
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

#[tokio::test]
async fn an_unreachable_broker_is_warned_about_once_per_streak() {
    // Nothing listens on port 1 of loopback: every attempt is refused at once.
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new("kafka_consumer=debug"))
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || writer.clone())
                .with_ansi(false),
        );
    // The background task logs from its own thread: the subscriber must be global (this is the
    // only test of this binary).
    tracing::subscriber::set_global_default(subscriber).unwrap();
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
    let logged = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
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
