//! KIP-714 client metrics push against a real broker with a client-metrics plugin.
//!
//! The broker is `testing/kafka/run up` with `KAFKA_CLIENT_TELEMETRY_DIR` set: it loads
//! `testing/kafka/java/ClientTelemetryPlugin.java`, which records every push it accepts in
//! that directory (`pushes.log`, one `push-<n>.bin` per push, decompressed by the broker).
//! Each test creates a client-metrics subscription (IncrementalAlterConfigs on resource type
//! CLIENT_METRICS) matching only its own consumer's `client.id`, then:
//! - `pushes_subscribed_metrics_and_a_terminating_push`: consumes a topic for a few seconds
//!   with a 1 s push interval and closes; the plugin got periodic pushes and one terminating
//!   push, all under the instance id `client_instance_id` returns, decoding as OTLP
//!   `MetricsData` with Java's telemetry names and `records-consumed-total` summing to what
//!   was produced;
//! - `enable_metrics_push_false_pushes_nothing`: the same with `enable.metrics.push=false`:
//!   no push, and `client_instance_id` is an illegal-state error;
//! - `a_broker_without_a_plugin_assigns_no_instance_id`: on the default broker (`KAFKA_BOOTSTRAP`,
//!   no plugin, so no telemetry APIs in ApiVersions) the consumer consumes as usual and never
//!   gets a subscription: `client_instance_id` times out.
//!
//! Needs `KAFKA_TELEMETRY_BOOTSTRAP` (that broker's address) and `KAFKA_CLIENT_TELEMETRY_DIR`;
//! without them it prints a loud SKIPPED line and passes, unless `REQUIRE_KAFKA_TELEMETRY=1`
//! (set by CI). Compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use kafka_consumer::network::{NetworkClient, NetworkConfig, Target};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, Error, Uuid};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{GetTelemetrySubscriptionsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::protocol::StrBytes;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point, MetricsData};
use prost::Message;
use support::real_broker::{bootstrap, create_topic, keyed_lines, produce_with_java, unique};
use tokio::time::{sleep, Duration, Instant};

const RECORDS: usize = 50;
/// Java's `ConfigResource.Type.CLIENT_METRICS`.
const CLIENT_METRICS: i8 = 16;

/// The plugin broker and its capture directory, or `None` after a SKIPPED line.
fn telemetry_broker() -> Option<(String, PathBuf)> {
    let bootstrap = std::env::var("KAFKA_TELEMETRY_BOOTSTRAP").unwrap_or_default();
    let dir = std::env::var("KAFKA_CLIENT_TELEMETRY_DIR").unwrap_or_default();
    if !bootstrap.is_empty() && !dir.is_empty() {
        return Some((bootstrap, PathBuf::from(dir)));
    }
    assert!(
        std::env::var("REQUIRE_KAFKA_TELEMETRY").as_deref() != Ok("1"),
        "REQUIRE_KAFKA_TELEMETRY=1 but KAFKA_TELEMETRY_BOOTSTRAP or KAFKA_CLIENT_TELEMETRY_DIR is not set"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: KAFKA_TELEMETRY_BOOTSTRAP/KAFKA_CLIENT_TELEMETRY_DIR not set; start a broker with \
         `KAFKA_CLIENT_TELEMETRY_DIR=DIR KAFKA_PORT=P testing/kafka/run up` and export both"
    );
    None
}

/// A network client whose requests carry `client_id` (the subscription matches on it).
fn admin(bootstrap: &str, client_id: &str) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![bootstrap.to_owned()],
        client_id: client_id.to_owned(),
        request_timeout_ms: 15_000,
        ..NetworkConfig::default()
    })
    .unwrap()
}

/// Creates client-metrics subscription `name` for the client `client_id`: every consumer
/// metric, pushed every second. Then waits until the broker hands it out (a
/// GetTelemetrySubscriptions from the same client id lists the metrics), so the consumer's
/// first request gets it (a client the broker has no subscription for is told to come back
/// in five minutes).
async fn subscribe_client_metrics(admin: &mut NetworkClient, name: &str, client_id: &str) {
    let set = |key: &str, value: &str| {
        AlterableConfig::default()
            .with_name(StrBytes::from_string(key.to_owned()))
            .with_config_operation(0)
            .with_value(Some(StrBytes::from_string(value.to_owned())))
    };
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(CLIENT_METRICS)
            .with_resource_name(StrBytes::from_string(name.to_owned()))
            .with_configs(vec![
                set("metrics", "org.apache.kafka.consumer."),
                set("interval.ms", "1000"),
                set("match", &format!("client_id={client_id}")),
            ]),
    ]);
    let response = admin.send(Target::LeastLoaded, request).await.unwrap();
    let result = &response.body.responses[0];
    assert_eq!(result.error_code, 0, "{:?}", result.error_message);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let probe = admin
            .send(
                Target::LeastLoaded,
                GetTelemetrySubscriptionsRequest::default().with_client_instance_id(Uuid::nil()),
            )
            .await
            .unwrap();
        if !probe.body.requested_metrics.is_empty() {
            assert_eq!(probe.body.push_interval_ms, 1000);
            return;
        }
        assert!(
            Instant::now() < deadline,
            "subscription {name} never applied: {:?}",
            probe.body
        );
        sleep(Duration::from_millis(200)).await;
    }
}

/// One push the plugin recorded.
#[derive(Debug)]
struct Push {
    n: u64,
    instance_id: String,
    terminating: bool,
    content_type: String,
    data: MetricsData,
}

/// The pushes of client `client_id`, in arrival order.
fn pushes_of(dir: &Path, client_id: &str) -> Vec<Push> {
    let log = std::fs::read_to_string(dir.join("pushes.log")).unwrap_or_default();
    log.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            (fields.get(2) == Some(&client_id)).then(|| {
                let n: u64 = fields[0].parse().unwrap();
                let bytes = std::fs::read(dir.join(format!("push-{n}.bin"))).unwrap();
                assert_eq!(bytes.len().to_string(), fields[5], "{line}");
                Push {
                    n,
                    instance_id: fields[1].to_owned(),
                    terminating: fields[3] == "true",
                    content_type: fields[4].to_owned(),
                    data: MetricsData::decode(bytes.as_slice()).expect("OTLP MetricsData"),
                }
            })
        })
        .collect()
}

/// The client-wide value of `name` in `push` (the data point without a `topic` attribute;
/// Java keeps per-topic `records-consumed-total` too), and whether it is a delta sum.
fn sum_value(push: &Push, name: &str) -> Option<(f64, bool)> {
    let mut found = None;
    for rm in &push.data.resource_metrics {
        for m in rm.scope_metrics.iter().flat_map(|s| &s.metrics) {
            if m.name != name {
                continue;
            }
            let Some(metric::Data::Sum(sum)) = &m.data else {
                panic!("{name} is not a sum: {m:?}");
            };
            assert!(sum.is_monotonic, "{m:?}");
            let delta = sum.aggregation_temporality == 1;
            let value: f64 = sum
                .data_points
                .iter()
                .filter(|p| p.attributes.iter().all(|kv| kv.key != "topic"))
                .map(|p| match p.value {
                    Some(number_data_point::Value::AsDouble(v)) => v,
                    Some(number_data_point::Value::AsInt(v)) => v as f64,
                    None => panic!("{m:?}"),
                })
                .sum();
            let (total, _) = found.unwrap_or((0.0, delta));
            found = Some((total + value, delta));
        }
    }
    found
}

fn consumer(bootstrap: &str, client_id: &str, push: bool) -> Consumer {
    let config = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(unique("telemetry-group"))
        .client_id(client_id)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .enable_metrics_push(push)
        .build()
        .unwrap();
    Consumer::new(config).unwrap()
}

/// A fresh client id and a fresh topic of `partitions` holding `RECORDS` records, both named
/// after `prefix`; with `subscribe`, a client-metrics subscription matching that client id.
async fn topic_with_records(
    bootstrap: &str,
    prefix: &str,
    partitions: i32,
    subscribe: bool,
) -> (String, String) {
    let client_id = unique(&format!("{prefix}-consumer"));
    let mut admin = admin(bootstrap, &client_id);
    let topic = unique(prefix);
    create_topic(&mut admin, &topic, partitions).await;
    produce_with_java(bootstrap, &topic, "none", &keyed_lines(0..RECORDS));
    if subscribe {
        subscribe_client_metrics(&mut admin, &unique(&format!("{prefix}-sub")), &client_id).await;
    }
    (client_id, topic)
}

/// Reads `RECORDS` records from `topic`, then keeps polling until `until`.
async fn consume(consumer: &mut Consumer, topic: &str, until: Instant) {
    consumer.subscribe([topic.to_owned()]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut consumed = 0;
    while consumed < RECORDS || Instant::now() < until {
        consumed += consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap()
            .count();
        assert!(Instant::now() < deadline, "read {consumed} of {RECORDS}");
    }
    assert_eq!(consumed, RECORDS);
}

#[tokio::test]
async fn pushes_subscribed_metrics_and_a_terminating_push() {
    let Some((bootstrap, dir)) = telemetry_broker() else {
        return;
    };
    let (client_id, topic) = topic_with_records(&bootstrap, "telemetry", 2, true).await;

    let mut consumer = consumer(&bootstrap, &client_id, true);
    let started = Instant::now();
    let instance_id = consumer
        .client_instance_id(Duration::from_secs(20))
        .await
        .unwrap();
    assert!(!instance_id.is_nil());
    // Push interval 1 s, the first push after 0.5-1.5 s: at least two periodic pushes by 3.5 s.
    consume(
        &mut consumer,
        &topic,
        started + Duration::from_millis(3_500),
    )
    .await;
    consumer.close(Duration::from_secs(10)).await.unwrap();

    let pushes = pushes_of(&dir, &client_id);
    assert!(pushes.len() >= 2, "{pushes:#?}");
    let (last, periodic) = pushes.split_last().unwrap();
    assert!(last.terminating, "the last push terminates: {last:?}");
    assert!(!periodic.is_empty() && periodic.iter().all(|p| !p.terminating));
    // Java prints a Uuid in URL-safe base64 without padding.
    let java_instance_id = URL_SAFE_NO_PAD.encode(instance_id.as_bytes());
    for push in &pushes {
        assert_eq!(push.instance_id, java_instance_id, "push {}", push.n);
        assert!(!push.content_type.is_empty());
        let names: BTreeSet<&str> = push
            .data
            .resource_metrics
            .iter()
            .flat_map(|rm| rm.scope_metrics.iter().flat_map(|s| &s.metrics))
            .map(|m| m.name.as_str())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| n.starts_with("org.apache.kafka.consumer.")),
            "only the subscribed prefix: {names:?}"
        );
        for expected in [
            "org.apache.kafka.consumer.fetch.manager.records.consumed.total",
            "org.apache.kafka.consumer.fetch.manager.fetch.total",
            "org.apache.kafka.consumer.coordinator.assigned.partitions",
        ] {
            assert!(
                names.contains(expected),
                "push {} lacks {expected}: {names:?}",
                push.n
            );
        }
        let resource = push.data.resource_metrics[0].resource.as_ref().unwrap();
        assert!(
            resource.attributes.iter().any(|kv| kv.key == "group_id"),
            "{resource:?}"
        );
    }
    // records-consumed-total: deltas add up (or the last cumulative value is) what was produced.
    let name = "org.apache.kafka.consumer.fetch.manager.records.consumed.total";
    let values: Vec<(f64, bool)> = pushes.iter().filter_map(|p| sum_value(p, name)).collect();
    let delta = values[0].1;
    let consumed = if delta {
        values.iter().map(|(v, _)| v).sum::<f64>()
    } else {
        values.last().unwrap().0
    };
    assert_eq!(consumed, RECORDS as f64, "delta={delta}: {values:?}");
    eprintln!(
        "telemetry: {} pushes ({} periodic + terminating), instance id {instance_id}, delta temporality {delta}, content type {}",
        pushes.len(),
        periodic.len(),
        last.content_type
    );
}

#[tokio::test]
async fn enable_metrics_push_false_pushes_nothing() {
    let Some((bootstrap, dir)) = telemetry_broker() else {
        return;
    };
    let (client_id, topic) = topic_with_records(&bootstrap, "telemetry-off", 1, true).await;

    let mut consumer = consumer(&bootstrap, &client_id, false);
    let error = consumer
        .client_instance_id(Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::IllegalState(_)), "{error}");
    consume(
        &mut consumer,
        &topic,
        Instant::now() + Duration::from_millis(3_000),
    )
    .await;
    consumer.close(Duration::from_secs(10)).await.unwrap();
    assert!(pushes_of(&dir, &client_id).is_empty());
}

#[tokio::test]
async fn a_broker_without_a_plugin_assigns_no_instance_id() {
    let Some(bootstrap) = bootstrap() else {
        return;
    };
    let (client_id, topic) =
        topic_with_records(&bootstrap, "telemetry-unsupported", 1, false).await;
    let mut consumer = consumer(&bootstrap, &client_id, true);
    consume(&mut consumer, &topic, Instant::now()).await;
    let error = consumer
        .client_instance_id(Duration::from_secs(2))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    consumer.close(Duration::from_secs(10)).await.unwrap();
}
