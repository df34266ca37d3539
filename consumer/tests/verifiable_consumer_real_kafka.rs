//! `kafka-verifiable-consumer` beside Kafka's own `VerifiableConsumer`, against the real broker:
//! the same command line, records written by Kafka's `VerifiableProducer`, both event streams
//! judged by the checks of Kafka's system tests (`support::verifiable::Verifier`), and then
//! compared: the same event kinds with the same keys, the same records consumed, the same
//! offsets committed. Java's side is Kafka 4.4.0's tool (the newest contract).
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeMap;

use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use serde_json::Value;
use support::real_broker::{bootstrap, client, create_topic, unique};
use support::verifiable::{names, produce, shapes, Client, Running, Tp, Tracking, Verifier};
use tokio::time::Duration;

const PARTITIONS: i32 = 3;
const RECORDS: usize = 300;
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// What one client's run left behind.
struct Outcome {
    events: Vec<Value>,
    verifier: Verifier,
    /// The group's committed offsets after the run, read back from the broker.
    committed: BTreeMap<Tp, Option<i64>>,
}

/// A topic of [`PARTITIONS`] partitions holding [`RECORDS`] records from `VerifiableProducer`.
async fn topic_with_records(bootstrap: &str, prefix: &str) -> String {
    let topic = unique(prefix);
    create_topic(&mut client(bootstrap.to_owned()), &topic, PARTITIONS).await;
    produce(bootstrap, &topic, RECORDS);
    topic
}

async fn committed(bootstrap: &str, group: &str, topic: &str) -> BTreeMap<Tp, Option<i64>> {
    let config = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(group)
        .build()
        .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    let partitions = (0..PARTITIONS).map(|p| TopicPartition::new(topic, p));
    let committed = consumer
        .committed(partitions, Duration::from_secs(30))
        .await
        .unwrap();
    consumer.close(Duration::from_secs(10)).await.unwrap();
    committed
        .into_iter()
        .map(|(tp, o)| ((tp.topic.to_string(), tp.partition), o.map(|o| o.offset)))
        .collect()
}

/// Runs `client` in a group of its own over `topic` until it has consumed every record.
async fn run(
    client: Client,
    bootstrap: &str,
    topic: &str,
    extra: &[&str],
    tracking: Tracking,
) -> Outcome {
    let group = unique("verifiable");
    let mut args: Vec<String> = [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--group-id",
        &group,
        "--max-messages",
        &RECORDS.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let (code, events) = Running::start(client, &args).finish(RUN_TIMEOUT).await;
    assert_eq!(code, Some(0), "{client:?} exit code; events: {events:#?}");
    let mut verifier = Verifier::new(tracking);
    verifier.handle_all(&format!("{client:?}"), &events);
    Outcome {
        committed: committed(bootstrap, &group, topic).await,
        events,
        verifier,
    }
}

/// Both clients over the same records with the same flags; checks each, then compares them.
async fn side_by_side(prefix: &str, extra: &[&str], tracking: Tracking, auto_commit: bool) {
    let Some(bootstrap) = bootstrap() else {
        return;
    };
    let topic = topic_with_records(&bootstrap, prefix).await;
    let ours = run(Client::Ours, &bootstrap, &topic, extra, tracking).await;
    let java = run(Client::Java, &bootstrap, &topic, extra, tracking).await;

    let mut ends = BTreeMap::new();
    for outcome in [&ours, &java] {
        let names = names(&outcome.events);
        assert_eq!(names.first().map(String::as_str), Some("startup_complete"));
        // A run that ends by itself: Java's shutdown hook prints `shutdown_requested` last.
        let tail: Vec<&str> = names
            .iter()
            .rev()
            .take(2)
            .rev()
            .map(String::as_str)
            .collect();
        assert_eq!(tail, ["shutdown_complete", "shutdown_requested"]);
        assert!(names.iter().any(|n| n == "partitions_assigned"));
        assert_eq!(outcome.verifier.total_consumed(), RECORDS as i64);
        // Every partition read to its end, and that end committed: by each poll's commitSync,
        // or (auto-commit) by close.
        let positions = outcome.verifier.positions().clone();
        assert_eq!(positions.len(), PARTITIONS as usize, "{positions:?}");
        let read: i64 = positions.values().sum();
        assert_eq!(read, RECORDS as i64, "every record once: {positions:?}");
        let committed_ends: BTreeMap<Tp, Option<i64>> = positions
            .iter()
            .map(|(tp, p)| (tp.clone(), Some(*p)))
            .collect();
        assert_eq!(outcome.committed, committed_ends);
        if !auto_commit {
            assert_eq!(outcome.verifier.committed(), &positions);
        }
        ends = positions;
    }
    assert_eq!(
        ours.verifier.positions(),
        &ends,
        "ours and Java's read the same"
    );
    assert_eq!(
        shapes(&ours.events),
        shapes(&java.events),
        "the same event kinds with the same keys"
    );
}

#[tokio::test]
async fn classic_eager_group_with_commit_sync_matches_javas() {
    side_by_side("verifiable-eager", &[], Tracking::Eager, false).await;
}

#[tokio::test]
async fn classic_cooperative_group_with_auto_commit_matches_javas() {
    side_by_side(
        "verifiable-cooperative",
        &[
            "--assignment-strategy",
            "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "--enable-autocommit",
            "--verbose",
        ],
        Tracking::Incremental,
        true,
    )
    .await;
}

#[tokio::test]
async fn consumer_protocol_group_matches_javas() {
    side_by_side(
        "verifiable-kip848",
        &[
            "--group-protocol",
            "consumer",
            "--group-instance-id",
            "static-1",
        ],
        Tracking::ConsumerProtocol,
        false,
    )
    .await;
}

/// SIGTERM, as the system tests stop a consumer cleanly: both clients print
/// `shutdown_requested`, commit, leave and print `shutdown_complete`, and exit 143 (a JVM's
/// exit after SIGTERM), with every record consumed committed.
#[tokio::test]
async fn sigterm_shuts_down_cleanly_as_javas_does() {
    let Some(bootstrap) = bootstrap() else {
        return;
    };
    let topic = topic_with_records(&bootstrap, "verifiable-sigterm").await;
    let mut streams = Vec::new();
    for client in [Client::Ours, Client::Java] {
        let group = unique("verifiable-sigterm");
        let args: Vec<String> = [
            "--bootstrap-server",
            &bootstrap,
            "--topic",
            &topic,
            "--group-id",
            &group,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let running = Running::start(client, &args);
        running
            .wait_for(
                "every record consumed and committed",
                RUN_TIMEOUT,
                |events| {
                    let mut verifier = Verifier::new(Tracking::Eager);
                    events.iter().all(|e| verifier.handle("m", e).is_ok())
                        && verifier.committed().values().sum::<i64>() == RECORDS as i64
                },
            )
            .await;
        running.signal(true);
        let (code, events) = running.finish(Duration::from_secs(40)).await;
        assert_eq!(code, Some(143), "{client:?}: {events:#?}");
        // After the request: what close does (the revocation it reports), then the end.
        let names = names(&events);
        let requested = names.iter().position(|n| n == "shutdown_requested");
        let after_request = names[requested.expect("shutdown_requested")..].to_vec();
        assert_eq!(
            after_request.last().map(String::as_str),
            Some("shutdown_complete"),
            "{client:?}"
        );
        let mut verifier = Verifier::new(Tracking::Eager);
        verifier.handle_all("m", &events);
        assert!(verifier.shut_down("m"));
        let committed = committed(&bootstrap, &group, &topic).await;
        let total: i64 = committed.values().map(|o| o.unwrap_or(0)).sum();
        assert_eq!(total, RECORDS as i64, "{client:?}: {committed:?}");
        streams.push((after_request, events));
    }
    assert_eq!(
        streams[0].0, streams[1].0,
        "the same steps after the request"
    );
    assert_eq!(shapes(&streams[0].1), shapes(&streams[1].1));
}

/// A bad command line is refused with exit 1 and a message naming what is wrong, as Java's
/// argument parser refuses it; no arguments print the usage and exit 0.
#[tokio::test]
async fn bad_command_lines_are_refused_like_javas() {
    let binary = env!("CARGO_BIN_EXE_kafka-verifiable-consumer");
    let output = std::process::Command::new(binary)
        .args(["--topic", "t", "--group-id", "g"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--bootstrap-server is required"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no events on stdout");

    let output = std::process::Command::new(binary).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("usage: kafka-verifiable-consumer"));

    // A config the consumer refuses: exit 1 before any event.
    let output = std::process::Command::new(binary)
        .args([
            "--bootstrap-server",
            "127.0.0.1:1",
            "--topic",
            "t",
            "--group-id",
            "g",
        ])
        .args(["--reset-policy", "sideways"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("auto.offset.reset"));
    assert!(output.stdout.is_empty());
}

/// The restated system-test checks fail where Kafka's fail: records from a partition not
/// assigned, a batch that skips ahead, a commit beyond the position, records from behind the
/// group's last commit, records while not joined, and (cooperative) revoking what was never
/// assigned; the same events in a valid order pass.
#[test]
fn the_system_tests_checks_fail_where_they_must() {
    let event = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
    let assigned =
        event(r#"{"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}"#);
    let revoked_other =
        event(r#"{"name":"partitions_revoked","partitions":[{"topic":"t","partition":1}]}"#);
    let batch = |partition: i32, min: i64, max: i64| {
        event(&format!(
            r#"{{"name":"records_consumed","count":{},"partitions":[{{"topic":"t","partition":{partition},"count":{},"minOffset":{min},"maxOffset":{max}}}]}}"#,
            max - min + 1,
            max - min + 1
        ))
    };
    let commit = |offset: i64| {
        event(&format!(
            r#"{{"name":"offsets_committed","offsets":[{{"topic":"t","partition":0,"offset":{offset}}}],"success":true}}"#
        ))
    };
    let started = event(r#"{"name":"startup_complete"}"#);
    let check = |tracking: Tracking, member_events: &[(&str, &Value)]| -> Result<(), String> {
        let mut verifier = Verifier::new(tracking);
        for (member, e) in member_events {
            verifier.handle(member, e)?;
        }
        Ok(())
    };
    let valid = [
        ("a", &started),
        ("a", &assigned),
        ("a", &batch(0, 0, 9)),
        ("a", &commit(10)),
        ("a", &batch(0, 10, 19)),
    ];
    assert_eq!(check(Tracking::Eager, &valid), Ok(()));

    type Case<'a> = (Tracking, Vec<(&'a str, Value)>, &'a str);
    let failures: Vec<Case> = vec![
        (
            Tracking::Eager,
            vec![("a", started.clone()), ("a", batch(0, 0, 9))],
            "not joined",
        ),
        (
            Tracking::Eager,
            vec![
                ("a", started.clone()),
                ("a", assigned.clone()),
                ("a", batch(1, 0, 9)),
            ],
            "not assigned",
        ),
        (
            Tracking::Eager,
            vec![
                ("a", assigned.clone()),
                ("a", batch(0, 0, 9)),
                ("a", batch(0, 12, 19)),
            ],
            "unexpected offset",
        ),
        (
            Tracking::Eager,
            vec![
                ("a", assigned.clone()),
                ("a", batch(0, 0, 9)),
                ("a", commit(11)),
            ],
            "beyond the position",
        ),
        (
            Tracking::Eager,
            vec![
                ("a", assigned.clone()),
                ("a", batch(0, 0, 9)),
                ("a", commit(10)),
                ("b", assigned.clone()),
                ("b", batch(0, 5, 9)),
            ],
            "behind the committed offset",
        ),
        (
            Tracking::Incremental,
            vec![("a", assigned.clone()), ("a", revoked_other.clone())],
            "cannot be revoked",
        ),
    ];
    for (tracking, events, expected) in failures {
        let events: Vec<(&str, &Value)> = events.iter().map(|(m, e)| (*m, e)).collect();
        let error = check(tracking, &events).expect_err(expected);
        assert!(error.contains(expected), "{expected}: {error}");
    }
    // The consumer protocol allows revoking what is not assigned.
    assert_eq!(
        check(
            Tracking::ConsumerProtocol,
            &[("a", &assigned), ("a", &revoked_other)]
        ),
        Ok(())
    );
}
