//! Reaching the real Apache Kafka broker started by `testing/kafka/run up`.
//!
//! Tests need `KAFKA_BOOTSTRAP=host:port`. Without it they print a loud SKIPPED line and pass,
//! unless `REQUIRE_KAFKA=1` (set by CI), which turns the missing broker into a failure.

use std::io::Write;
use std::process::{Command, Stdio};

use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::{MetadataScope, NetworkClient, NetworkConfig, Target};
use kafka_consumer::protocol::ResponseError;
use kafka_consumer::rt::SeededRng;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{CreateTopicsRequest, DeleteTopicsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use rand::RngCore;
use tokio::time::{sleep, Duration, Instant};

/// The broker's bootstrap address, or `None` (after a visible SKIPPED line) when there is none.
pub fn bootstrap() -> Option<String> {
    match std::env::var("KAFKA_BOOTSTRAP") {
        Ok(bootstrap) if !bootstrap.is_empty() => Some(bootstrap),
        _ => {
            assert!(
                std::env::var("REQUIRE_KAFKA").as_deref() != Ok("1"),
                "REQUIRE_KAFKA=1 but KAFKA_BOOTSTRAP is not set: the real-broker tests cannot run"
            );
            // Written to the stderr handle, not with `eprintln!`, which libtest captures and hides
            // for passing tests: a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: KAFKA_BOOTSTRAP is not set; real-broker tests did not run \
                 (start a broker with `testing/kafka/run up` and export the KAFKA_BOOTSTRAP it prints)"
            );
            None
        }
    }
}

/// `prefix` with a random suffix: a topic or group name no other run uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", SeededRng::from_runtime().next_u64())
}

/// Keyed records `value-{i}` with header `i:{i}`, spread over partitions by key, in
/// [`produce_with_java`]'s line format.
pub fn keyed_lines(range: std::ops::Range<usize>) -> Vec<String> {
    range
        .map(|i| format!("i:{i}\tkey-{i}\tvalue-{i}"))
        .collect()
}

/// A network client bootstrapped from `bootstrap`.
pub fn client(bootstrap: String) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![bootstrap],
        client_id: "real-kafka-test".to_owned(),
        request_timeout_ms: 15_000,
        ..NetworkConfig::default()
    })
    .unwrap()
}

/// Sends CreateTopics for `name` with `partitions` partitions at the brokers' default
/// replication factor and asserts the broker created it; returns the topic id. Metadata may
/// not show it yet.
pub async fn send_create_topic(
    client: &mut NetworkClient,
    name: &str,
    partitions: i32,
) -> uuid::Uuid {
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(name.to_owned())))
            .with_num_partitions(partitions)
            .with_replication_factor(-1)])
        .with_timeout_ms(15_000);
    let created = client.send(Target::LeastLoaded, create).await.unwrap();
    let result = &created.body.topics[0];
    assert_eq!(
        ResponseError::try_from_code(result.error_code),
        None,
        "creating {name}: {:?}",
        result.error_message
    );
    assert_eq!(result.num_partitions, partitions);
    assert!(!result.topic_id.is_nil());
    result.topic_id
}

/// Creates `name` with `partitions` partitions and waits until Metadata shows a leader for
/// each (metadata propagates asynchronously); the client's metadata then holds the topic.
/// Returns the topic id.
pub async fn create_topic(client: &mut NetworkClient, name: &str, partitions: i32) -> uuid::Uuid {
    let topic_id = send_create_topic(client, name, partitions).await;

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let response = client
            .send(
                Target::LeastLoaded,
                metadata_request_for_topics([name], false),
            )
            .await
            .unwrap();
        client.update_metadata(&response.body, MetadataScope::ListedTopics);
        let ready = client.metadata().topic(name).is_some_and(|t| {
            t.error.is_none()
                && t.partitions.len() == usize::try_from(partitions).unwrap()
                && t.partitions
                    .values()
                    .all(|p| p.leader_id.is_some() && p.leader_epoch >= 0)
        });
        if ready {
            return topic_id;
        }
        assert!(Instant::now() < deadline, "topic {name} never got leaders");
        sleep(Duration::from_millis(200)).await;
    }
}

/// Deletes `name`, asserting the broker accepted it.
pub async fn delete_topic(client: &mut NetworkClient, name: &str) {
    let topic_name = TopicName(StrBytes::from_string(name.to_owned()));
    let delete = DeleteTopicsRequest::default()
        .with_topics(vec![
            DeleteTopicState::default().with_name(Some(topic_name.clone()))
        ])
        .with_topic_names(vec![topic_name])
        .with_timeout_ms(15_000);
    let deleted = client.send(Target::LeastLoaded, delete).await.unwrap();
    let result = &deleted.body.responses[0];
    assert_eq!(
        ResponseError::try_from_code(result.error_code),
        None,
        "deleting {name}: {:?}",
        result.error_message
    );
}

/// Runs Kafka's own Java producer (ConsoleProducer, via `testing/kafka/run produce`) with
/// `compression`, feeding it `lines` (`HEADERS<TAB>KEY<TAB>VALUE`, `\N` for null; see
/// `testing/kafka/run help`), and asserts it succeeded.
pub fn produce_with_java(bootstrap: &str, topic: &str, compression: &str, lines: &[String]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");
    let mut child = Command::new("bash")
        .args([
            script,
            "produce",
            "--topic",
            topic,
            "--compression",
            compression,
        ])
        .args(["--bootstrap", bootstrap])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run testing/kafka/run produce");
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "Kafka's ConsoleProducer failed ({compression}): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
