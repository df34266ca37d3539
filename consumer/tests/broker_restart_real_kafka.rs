//! Assign-mode commits keep working across a restart of the real broker: the consumer
//! reconnects, rediscovers the coordinator, goes on fetching from where it was, and commits.
//!
//! Restarting the shared broker would disturb the other real-broker tests, so this binary
//! starts a broker of its own (`testing/kafka/run` on another port and state dir), restarts it
//! with `testing/kafka/run restart` (storage kept) and stops it at the end. Runs whenever the
//! real-broker tests run (`KAFKA_BOOTSTRAP` set); compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::process::Command;

use kafka_consumer::rt::SeededRng;
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use rand::RngCore;
use support::real_broker::{bootstrap, client, create_topic, produce_with_java};
use tokio::time::{Duration, Instant};

const PORT: &str = "19692";

/// Runs `testing/kafka/run COMMAND` for this binary's own broker; returns the bootstrap it
/// prints last.
fn harness(command: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");
    let state = concat!(env!("CARGO_TARGET_TMPDIR"), "/kafka-restart-test");
    let output = Command::new("bash")
        .args([script, command])
        .env("KAFKA_PORT", PORT)
        .env("KAFKA_STATE_DIR", state)
        .output()
        .expect("run testing/kafka/run");
    assert!(
        output.status.success(),
        "testing/kafka/run {command} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("KAFKA_BOOTSTRAP="))
        .map(str::to_owned)
        .unwrap_or_default()
}

/// Stops this binary's broker however the test ends.
struct OwnBroker;

impl Drop for OwnBroker {
    fn drop(&mut self) {
        harness("down");
    }
}

async fn consume(consumer: &mut Consumer, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut values = Vec::new();
    while values.len() < count {
        assert!(
            Instant::now() < deadline,
            "only {} of {count}",
            values.len()
        );
        if let Ok(records) = consumer.poll(Duration::from_millis(500)).await {
            values.extend(
                records
                    .iter()
                    .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap()),
            );
        }
    }
    values
}

#[tokio::test]
async fn assign_mode_commits_keep_working_across_a_broker_restart() {
    if bootstrap().is_none() {
        return;
    }
    let own = harness("up");
    let _stop = OwnBroker;
    let topic = format!("restart-{:016x}", SeededRng::from_runtime().next_u64());
    let mut admin = client(own.clone());
    create_topic(&mut admin, &topic, 3).await;
    let lines = |range: std::ops::Range<usize>| -> Vec<String> {
        range.map(|i| format!("\\N\tk{i}\tvalue-{i}")).collect()
    };
    produce_with_java(&own, &topic, "none", &lines(0..100));

    let config = ConsumerConfig::builder()
        .bootstrap_servers([own.as_str()])
        .group_id(format!("{topic}-group"))
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .build()
        .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    let partitions: Vec<TopicPartition> = (0..3).map(|p| TopicPartition::new(&*topic, p)).collect();
    consumer.assign(partitions.clone()).await.unwrap();
    assert_eq!(consume(&mut consumer, 100).await.len(), 100);
    consumer
        .commit_sync(None, Duration::from_secs(30))
        .await
        .unwrap();

    harness("restart");
    produce_with_java(&own, &topic, "none", &lines(100..200));
    let after: Vec<String> = consume(&mut consumer, 100).await;
    let expected: Vec<String> = (100..200).map(|i| format!("value-{i}")).collect();
    let mut sorted = after.clone();
    sorted.sort_by_key(|v| v.trim_start_matches("value-").parse::<usize>().unwrap());
    assert_eq!(
        sorted, expected,
        "exactly the records written after the restart"
    );
    consumer
        .commit_sync(None, Duration::from_secs(60))
        .await
        .expect("a commit after the restart succeeds");
    let committed = consumer
        .committed(partitions, Duration::from_secs(30))
        .await
        .unwrap();
    let total: i64 = committed.values().flatten().map(|o| o.offset).sum();
    assert_eq!(total, 200, "both commits landed: {committed:?}");
    consumer.close(Duration::from_secs(30)).await.unwrap();
}
