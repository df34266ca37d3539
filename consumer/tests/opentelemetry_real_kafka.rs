//! The `opentelemetry` example's wiring against a real Apache Kafka broker, with an in-memory
//! exporter in place of stdout: a consumer reads a topic in a group, commits and closes, and
//! the exported trace holds the application side's `poll`, `commit_sync`, `close` and
//! `rebalance_callback` spans under its `consumer` span (with client id, group id, member id
//! and generation) and the background task's `request` spans under the other `consumer` span:
//! a Fetch, an OffsetCommit and a JoinGroup among them, each lasting from send to answer.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

#[path = "../examples/opentelemetry.rs"]
#[allow(dead_code)]
mod example;

use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use support::real_broker::{
    bootstrap, client, create_topic, delete_topic, keyed_lines, produce_with_java, unique,
};

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match &kv.value {
            Value::String(s) => s.as_str().to_owned(),
            other => other.to_string(),
        })
}

#[tokio::test]
async fn the_consumers_spans_reach_an_opentelemetry_exporter() {
    let Some(bootstrap) = bootstrap() else { return };
    let exporter = InMemorySpanExporter::default();
    let provider = example::otel::provider(exporter.clone());
    tracing::subscriber::set_global_default(example::otel::subscriber(&provider)).unwrap();

    let mut admin = client(bootstrap.clone());
    let topic = unique("otel");
    create_topic(&mut admin, &topic, 2).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..20));
    let args = example::Args {
        bootstrap: bootstrap.clone(),
        topic: topic.clone(),
        group: unique("otel-group"),
        seconds: 6,
    };
    let consumed = example::consume(&args).await.unwrap();
    assert_eq!(consumed, 20);
    delete_topic(&mut admin, &topic).await;
    // The background task's span ends when the task does, just after `close` returns. (The
    // in-memory exporter forgets everything at shutdown: read it first.)
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let spans = loop {
        let spans = exporter.get_finished_spans().unwrap();
        let roots = spans.iter().filter(|s| s.name == "consumer").count();
        if roots == 2 || tokio::time::Instant::now() > deadline {
            break spans;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    provider.shutdown().unwrap();
    let named = |name: &'static str| spans.iter().filter(move |s| s.name == name);
    let by_id = |id| spans.iter().find(|s| s.span_context.span_id() == id);

    // Two `consumer` spans name the consumer: the application side's and the background's.
    let roots: Vec<&SpanData> = named("consumer").collect();
    assert_eq!(
        roots.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    for root in &roots {
        assert_eq!(
            attribute(root, "group_id").as_deref(),
            Some(args.group.as_str())
        );
        assert!(attribute(root, "client_id").is_some_and(|id| !id.is_empty()));
    }
    let parent_name = |span: &SpanData| by_id(span.parent_span_id).map(|p| p.name.to_string());

    for name in ["poll", "commit_sync", "close"] {
        let span = named(name)
            .next()
            .unwrap_or_else(|| panic!("no {name} span"));
        assert_eq!(parent_name(span).as_deref(), Some("consumer"), "{name}");
    }
    let assigned = named("rebalance_callback")
        .find(|s| attribute(s, "callback").as_deref() == Some("on_partitions_assigned"))
        .expect("a rebalance_callback span for on_partitions_assigned");
    assert!(attribute(assigned, "member_id").is_some_and(|id| !id.is_empty()));
    assert!(attribute(assigned, "generation").is_some_and(|g| g != "-1" && g != "0"));

    let requests: Vec<&SpanData> = named("request").collect();
    for api in ["Fetch", "OffsetCommit", "JoinGroup", "Metadata"] {
        let request = requests
            .iter()
            .find(|s| attribute(s, "api").as_deref() == Some(api))
            .unwrap_or_else(|| panic!("no request span for {api}"));
        assert_eq!(parent_name(request).as_deref(), Some("consumer"), "{api}");
        assert!(
            request.end_time > request.start_time,
            "{api} lasted no time"
        );
    }
    // Request spans belong to the background's trace, not to the application side's.
    let app_trace = named("poll").next().unwrap().span_context.trace_id();
    assert!(requests
        .iter()
        .all(|r| r.span_context.trace_id() != app_trace));
}
