//! Kafka's named metrics against a real broker, side by side with Java's own consumer.
//!
//! One topic of 60 records in 2 partitions is read twice: by Kafka's `ConsumerPerformance`
//! tool (Java's `KafkaConsumer`, `--print-metrics`) and by our consumer with the `metrics`
//! feature and a Prometheus exporter installed as the global `metrics` recorder. Checked:
//! - every fetch-manager and coordinator metric we report exists in Java's output under the
//!   same group, name and tag keys (so a dashboard built on Java's names finds ours);
//! - both consumers report the same `records-consumed-total` (60) and the same
//!   `bytes-consumed-total` (the records' encoded sizes, which Java sums);
//! - the Prometheus rendering carries our gauges under the JMX exporter's names
//!   (`kafka_consumer_consumer_fetch_manager_metrics_records_consumed_total{client_id=…}`)
//!   with Java's descriptions, and values that follow what happened (a join and sync, a
//!   rebalance, a commit, heartbeats, two assigned partitions each read to its end: lag 0);
//! - the event-queue metrics of Java's new consumer (KIP-1068) were recorded both ways;
//! - the connection metrics (Java's `Selector` ones, which `ConsumerPerformance` does not
//!   print): per broker (`consumer-node-metrics`, tagged `node-id`) they add up to the
//!   client's (`consumer-metrics`), and the bytes received cover the records fetched.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`); compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use kafka_consumer::metric::{CONSUMER_GROUP, COORDINATOR_GROUP, FETCH_MANAGER_GROUP, NODE_GROUP};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
use metrics_exporter_prometheus::PrometheusBuilder;
use support::real_broker::{
    bootstrap, client, create_topic, delete_topic, keyed_lines, produce_with_java, unique,
};
use tokio::time::{sleep, Duration, Instant};

const RECORDS: usize = 60;
const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");

/// One metric as Java's `--print-metrics` prints it:
/// `group:name:{tag=value, tag=value} : value`.
#[derive(Debug, Clone, PartialEq)]
struct JavaMetric {
    group: String,
    name: String,
    tags: BTreeMap<String, String>,
    value: f64,
}

fn parse_java_metrics(output: &str) -> Vec<JavaMetric> {
    output
        .lines()
        .filter_map(|line| {
            let (key, value) = line.rsplit_once(" : ")?;
            let (group, rest) = key.trim().split_once(':')?;
            let (name, tags) = rest.split_once(':')?;
            let tags = tags.trim().strip_prefix('{')?.strip_suffix('}')?;
            let tags = tags
                .split(", ")
                .filter(|t| !t.is_empty())
                .filter_map(|t| t.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            Some(JavaMetric {
                group: group.to_owned(),
                name: name.to_owned(),
                tags,
                value: value.trim().replace(',', "").parse().ok()?,
            })
        })
        .collect()
}

/// Runs Kafka's ConsumerPerformance over `topic` until it read `records`; its metrics.
fn java_consumer_metrics(bootstrap: &str, topic: &str, records: usize) -> Vec<JavaMetric> {
    let classpath = Command::new("bash")
        .args([HARNESS, "classpath"])
        .output()
        .expect("testing/kafka/run classpath");
    assert!(classpath.status.success(), "{classpath:?}");
    let classpath = String::from_utf8(classpath.stdout).unwrap();
    let output = Command::new("java")
        .args([
            "-cp",
            classpath.trim(),
            "org.apache.kafka.tools.ConsumerPerformance",
        ])
        .args(["--bootstrap-server", bootstrap, "--topic", topic])
        .args(["--messages", &records.to_string(), "--timeout", "60000"])
        .args(["--group", &unique("java-metrics"), "--print-metrics"])
        .output()
        .expect("run Kafka's ConsumerPerformance");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "ConsumerPerformance failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metrics = parse_java_metrics(&stdout);
    assert!(metrics.len() > 50, "too few metrics parsed from:\n{stdout}");
    metrics
}

/// The one sample of Prometheus metric `name` whose labels include `labels`.
fn prometheus_value(rendered: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    rendered
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .find(|(series, _)| {
            series.split('{').next() == Some(name)
                && labels
                    .iter()
                    .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|(_, value)| value.parse().ok())
}

#[tokio::test]
async fn metrics_carry_javas_names_and_values_and_reach_a_prometheus_exporter() {
    let Some(bootstrap) = bootstrap() else { return };
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .expect("install the Prometheus recorder");
    let mut admin = client(bootstrap.clone());
    let topic = unique("metrics.topic");
    create_topic(&mut admin, &topic, 2).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..RECORDS));

    let java = java_consumer_metrics(&bootstrap, &topic, RECORDS);

    let client_id = unique("metrics-consumer");
    let config = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap.as_str()])
        .group_id(unique("metrics-group"))
        .client_id(client_id.as_str())
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .enable_auto_commit(false)
        // Classic protocol (the default): heartbeats every 500 ms, so some are sent while the
        // test waits for the gauges.
        .heartbeat_interval_ms(500)
        .build()
        .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    consumer.subscribe([topic.clone()]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut consumed = 0;
    while consumed < RECORDS {
        consumed += consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap()
            .count();
        assert!(Instant::now() < deadline, "read {consumed} of {RECORDS}");
    }
    consumer
        .commit_sync(None, Duration::from_secs(10))
        .await
        .unwrap();
    // Past the publishing interval, with the background task going round (fetch waits end).
    sleep(Duration::from_millis(1_500)).await;
    consumer.poll(Duration::from_millis(600)).await.unwrap();
    let snapshot = consumer.metrics();

    // Every metric we report is one Java reports, with the same tag keys. ConsumerPerformance
    // prints the fetch-manager and coordinator groups only (not `consumer-metrics`).
    let java_names: BTreeSet<(String, String, Vec<String>)> = java
        .iter()
        .map(|m| {
            (
                m.group.clone(),
                m.name.clone(),
                m.tags.keys().cloned().collect(),
            )
        })
        .collect();
    let printed = [FETCH_MANAGER_GROUP, COORDINATOR_GROUP];
    for metric in snapshot
        .kafka
        .iter()
        .filter(|m| printed.contains(&m.name.group))
    {
        let mut keys: Vec<String> = metric
            .name
            .tags
            .iter()
            .map(|(k, _)| k.to_string())
            .collect();
        keys.sort();
        assert!(
            java_names.contains(&(
                metric.name.group.to_owned(),
                metric.name.name.to_owned(),
                keys
            )),
            "{} is not a metric Java's consumer has",
            metric.name
        );
    }

    // Both consumers read the same records: the same count and the same encoded bytes.
    let java_total = |name: &str| {
        java.iter()
            .find(|m| m.group == FETCH_MANAGER_GROUP && m.name == name && m.tags.len() == 1)
            .unwrap_or_else(|| panic!("Java has no {name}"))
            .value
    };
    let ours = |group, name| {
        snapshot
            .kafka_metric(group, name)
            .unwrap_or_else(|| panic!("we have no {name}"))
    };
    assert_eq!(java_total("records-consumed-total"), RECORDS as f64);
    assert_eq!(
        ours(FETCH_MANAGER_GROUP, "records-consumed-total"),
        RECORDS as f64
    );
    assert_eq!(
        ours(FETCH_MANAGER_GROUP, "bytes-consumed-total"),
        java_total("bytes-consumed-total"),
        "bytes-consumed-total differs from Java's for the same records"
    );

    // The exporter's view of the same numbers, under the JMX exporter's names.
    let rendered = prometheus.render();
    let client = [("client_id", client_id.as_str())];
    let gauge = |name: &str| {
        prometheus_value(&rendered, name, &client)
            .unwrap_or_else(|| panic!("{name} not exported:\n{rendered}"))
    };
    let fetch = "kafka_consumer_consumer_fetch_manager_metrics";
    let coordinator = "kafka_consumer_consumer_coordinator_metrics";
    assert_eq!(
        gauge(&format!("{fetch}_records_consumed_total")),
        RECORDS as f64
    );
    assert_eq!(
        gauge(&format!("{fetch}_bytes_consumed_total")),
        ours(FETCH_MANAGER_GROUP, "bytes-consumed-total")
    );
    assert!(gauge(&format!("{fetch}_fetch_total")) >= 1.0);
    assert!(gauge(&format!("{fetch}_fetch_latency_avg")).is_finite());
    assert_eq!(gauge(&format!("{coordinator}_assigned_partitions")), 2.0);
    assert_eq!(gauge(&format!("{coordinator}_commit_total")), 1.0);
    assert!(gauge(&format!("{coordinator}_commit_latency_max")) >= 0.0);
    assert!(gauge(&format!("{coordinator}_rebalance_total")) >= 1.0);
    assert!(gauge(&format!("{coordinator}_join_total")) >= 1.0);
    // The first JoinGroup is answered MEMBER_ID_REQUIRED (KIP-394): a failed join, which
    // Java counts as a failed rebalance too.
    assert!(gauge(&format!("{coordinator}_failed_rebalance_total")) >= 1.0);
    // The assignment ran the (default, empty) listener once at least.
    assert!(gauge(&format!("{coordinator}_partition_assigned_latency_max")) >= 0.0);
    assert!(gauge("kafka_consumer_consumer_metrics_commit_sync_time_ns_total") > 0.0);
    assert!(gauge(&format!("{coordinator}_sync_total")) >= 1.0);
    assert!(gauge(&format!("{coordinator}_heartbeat_total")) >= 1.0);
    assert!(gauge(&format!("{coordinator}_last_heartbeat_seconds_ago")) >= 0.0);
    assert!(gauge("kafka_consumer_consumer_metrics_time_between_poll_max") >= 0.0);
    for partition in ["0", "1"] {
        let labels = [("client_id", client_id.as_str()), ("partition", partition)];
        assert_eq!(
            prometheus_value(&rendered, &format!("{fetch}_records_lag"), &labels),
            Some(0.0),
            "partition {partition} was read to its end:\n{rendered}"
        );
    }
    assert!(
        rendered.contains(&format!(
            "# HELP {fetch}_fetch_latency_avg The average time taken for a fetch request."
        )),
        "Java's description is the gauge's help:\n{rendered}"
    );
    assert_eq!(
        snapshot.kafka_metric(COORDINATOR_GROUP, "assigned-partitions"),
        Some(2.0)
    );

    // The two event queues (KIP-1068's names): events went both ways and were measured (the
    // counting itself is unit-tested: a poll may have left its own event queued just now).
    for name in [
        "application-event-queue-time-max",
        "application-event-queue-processing-time-max",
        "background-event-queue-time-max",
        "background-event-queue-processing-time-max",
        "time-between-network-thread-poll-avg",
    ] {
        assert!(
            ours(CONSUMER_GROUP, name).is_finite(),
            "{name} was never recorded"
        );
    }
    for name in [
        "application-event-queue-size",
        "background-event-queue-size",
    ] {
        assert!(ours(CONSUMER_GROUP, name) >= 0.0, "{name}");
    }
    assert!(gauge("kafka_consumer_consumer_metrics_application_event_queue_time_avg").is_finite());

    // Connections and frames: the bootstrap connection, the broker's and the coordinator's
    // were made, and each broker's frames add up to the client's.
    let client_total = |name| ours(CONSUMER_GROUP, name);
    assert!(client_total("connection-creation-total") >= 2.0);
    assert!(client_total("connection-count") >= 1.0);
    let per_node = |name: &str| -> Vec<(String, f64)> {
        snapshot
            .kafka
            .iter()
            .filter(|m| m.name.group == NODE_GROUP && m.name.name == name)
            .map(|m| (m.name.tag("node-id").unwrap().to_owned(), m.value))
            .collect()
    };
    for name in [
        "request-total",
        "response-total",
        "outgoing-byte-total",
        "incoming-byte-total",
    ] {
        let nodes = per_node(name);
        assert!(nodes.len() >= 2, "{name}: {nodes:?}");
        let sum: f64 = nodes.iter().map(|(_, v)| v).sum();
        assert_eq!(sum, client_total(name), "{name} per node {nodes:?}");
    }
    assert!(
        client_total("incoming-byte-total") > ours(FETCH_MANAGER_GROUP, "bytes-consumed-total"),
        "the responses carried the records"
    );
    assert!(client_total("request-size-max") > 0.0);
    // The broker that was fetched from has its fetch latency; placeholder (negative) ids of
    // bootstrap servers never fetch.
    let latencies = per_node("request-latency-avg");
    let fetched: Vec<&(String, f64)> = latencies.iter().filter(|(_, v)| v.is_finite()).collect();
    assert!(
        !fetched.is_empty() && fetched.iter().all(|(node, _)| !node.starts_with("node--")),
        "{latencies:?}"
    );
    let (fetched_node, _) = fetched[0];
    let node_labels = [
        ("client_id", client_id.as_str()),
        ("node_id", fetched_node.as_str()),
    ];
    assert!(
        prometheus_value(
            &rendered,
            "kafka_consumer_consumer_node_metrics_response_total",
            &node_labels
        )
        .is_some_and(|v| v >= 1.0),
        "per-broker gauges are exported:\n{rendered}"
    );

    consumer.close(Duration::from_secs(10)).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[test]
fn javas_metric_lines_parse() {
    let lines = "\
Metric Name                                                                      Value
consumer-fetch-manager-metrics:bytes-consumed-total:{client-id=perf-consumer-1}  : 1234.000
consumer-fetch-manager-metrics:records-lag:{client-id=c, partition=0, topic=t}   : 0.000
consumer-coordinator-metrics:commit-rate:{client-id=c}                           : NaN
";
    let metrics = parse_java_metrics(lines);
    assert_eq!(metrics.len(), 3);
    assert_eq!(metrics[0].name, "bytes-consumed-total");
    assert_eq!(metrics[0].value, 1234.0);
    assert_eq!(metrics[1].tags.len(), 3);
    assert!(metrics[2].value.is_nan());
}
