//! Simulation mode: the application side's spans. What a rebalance listener logs comes out
//! inside `consumer{client_id group_id}:rebalance_callback{callback partitions member_id
//! generation}`, and `poll`, `commit_sync` and `close` run inside spans of those names under
//! the same `consumer` span, so a process that runs several consumers can
//! tell their lines apart (Java prefixes each line with `[Consumer clientId=…, groupId=…]`).
#![cfg(madsim)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use kafka_consumer::rebalance::ListenerFuture;
use kafka_consumer::rt::Duration;
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, ConsumerRebalanceListener, TopicPartition,
};
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use sim::group::classic::ClassicGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct LogsWhenAssigned;

impl ConsumerRebalanceListener for LogsWhenAssigned {
    fn on_partitions_assigned<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            if !partitions.is_empty() {
                tracing::info!("the listener was given its partitions");
            }
            Ok(())
        })
    }
}

#[madsim::test]
async fn application_side_lines_carry_the_consumer_and_the_call() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(
            "warn,kafka_consumer=debug,sim_consumer_spans=info",
        ))
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || writer.clone())
                .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
                .with_ansi(false),
        );
    let _guard = tracing::subscriber::set_default(subscriber);

    let factory = GroupCoordinatorFactory {
        classic: ClassicGroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..ClassicGroupConfig::default()
        },
        ..GroupCoordinatorFactory::default()
    };
    let cluster = Cluster::builder()
        .brokers(1)
        .topic("t", 2)
        .group_shards(Arc::new(factory))
        .build()
        .await;
    let bootstrap = cluster.bootstrap_servers();
    Handle::current()
        .create_node()
        .name("app")
        .ip("10.0.7.1".parse().unwrap())
        .build()
        .spawn(async move {
            let config = ConsumerConfig::builder()
                .bootstrap_servers(bootstrap)
                .client_id("spans-client")
                .group_id("spans-group")
                .auto_offset_reset(AutoOffsetReset::Earliest)
                .enable_auto_commit(false)
                .build()
                .unwrap();
            let mut consumer = Consumer::new(config).unwrap();
            consumer
                .subscribe_with_listener(["t"], LogsWhenAssigned)
                .await
                .unwrap();
            while consumer.assignment().is_empty() {
                consumer.poll(Duration::from_millis(100)).await.unwrap();
            }
            consumer
                .commit_sync(None, Duration::from_secs(5))
                .await
                .unwrap();
            consumer.close(Duration::from_secs(5)).await.unwrap();
        })
        .await
        .unwrap();

    let text = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let consumer_span = "consumer{client_id=spans-client group_id=\"spans-group\"}";
    let listener_line = text
        .lines()
        .find(|l| l.contains("the listener was given its partitions"))
        .unwrap_or_else(|| panic!("the listener's line is missing:\n{text}"));
    assert!(
        listener_line.contains(&format!(
            "{consumer_span}:rebalance_callback{{callback=\"on_partitions_assigned\" partitions=2"
        )) && listener_line.contains("generation=1"),
        "the listener's line names the consumer and the callback: {listener_line}"
    );
    assert!(
        !listener_line.contains("member_id=}"),
        "the member id is known in the callback: {listener_line}"
    );
    // A line as each span closes (`FmtSpan::CLOSE`).
    for call in [
        ":poll{timeout_ms=100}",
        ":commit_sync{timeout_ms=5000}",
        ":close{timeout_ms=5000}",
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("{consumer_span}{call}"))),
            "no line inside {call}:\n{text}"
        );
    }
}
