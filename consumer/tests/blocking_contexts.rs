//! `BlockingConsumer` in every context a Rust program calls sync code from (issue #28): no
//! runtime at all, inside `Runtime::block_on`, under `#[tokio::test]` (both flavours), and on
//! threads started from inside a runtime (`spawn_blocking`, `std::thread::spawn`). In each it
//! is built, used (a metadata round trip and a poll against the real broker) and dropped
//! without a panic. Before the fix, a drop inside an async context panicked in tokio ("Cannot
//! drop a runtime in a context where blocking is not allowed") and every blocking call there
//! panicked too ("Cannot start a runtime from within a runtime").
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`); compiled out under madsim.
#![cfg(not(madsim))]
#![allow(clippy::disallowed_methods)] // the tests start OS threads and spawn_blocking on purpose

mod support;

use kafka_consumer::blocking::BlockingConsumer;
use kafka_consumer::rt::SeededRng;
use kafka_consumer::{AutoOffsetReset, ConsumerConfig, TopicPartition};
use rand::RngCore;
use support::real_broker::bootstrap;
use tokio::time::Duration;

fn config(bootstrap: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .group_id(format!(
            "blocking-contexts-{:016x}",
            SeededRng::from_runtime().next_u64()
        ))
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .build()
        .unwrap()
}

/// Builds, uses and drops a blocking consumer on the calling thread, whatever its context.
fn build_use_drop(bootstrap: &str) {
    let mut consumer = BlockingConsumer::new(config(bootstrap)).unwrap();
    let topics = consumer
        .list_topics(Duration::from_secs(30))
        .expect("a metadata round trip through the blocking facade");
    assert!(
        !topics.keys().any(|t| t.starts_with("__")),
        "internal topics are not listed: {topics:?}"
    );
    consumer
        .assign([TopicPartition::new("blocking-contexts-absent", 0)])
        .unwrap();
    // A poll waits on the runtime's timer: it returns after its timeout, with nothing.
    let records = consumer.poll(Duration::from_millis(100)).unwrap();
    assert!(records.is_empty());
    drop(consumer);
}

#[test]
fn outside_any_runtime() {
    let Some(bootstrap) = bootstrap() else { return };
    build_use_drop(&bootstrap);
}

#[test]
fn inside_runtime_block_on() {
    let Some(bootstrap) = bootstrap() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async { build_use_drop(&bootstrap) });
}

#[test]
fn built_outside_dropped_inside_an_async_context() {
    let Some(bootstrap) = bootstrap() else { return };
    let consumer = BlockingConsumer::new(config(&bootstrap)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move { drop(consumer) });
}

#[tokio::test]
async fn under_tokio_test_current_thread() {
    let Some(bootstrap) = bootstrap() else { return };
    build_use_drop(&bootstrap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_tokio_test_multi_thread() {
    let Some(bootstrap) = bootstrap() else { return };
    build_use_drop(&bootstrap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_spawn_blocking_thread() {
    let Some(bootstrap) = bootstrap() else { return };
    tokio::task::spawn_blocking(move || build_use_drop(&bootstrap))
        .await
        .expect("no panic on the blocking thread");
}

#[tokio::test]
async fn on_a_thread_spawned_inside_a_runtime() {
    let Some(bootstrap) = bootstrap() else { return };
    std::thread::spawn(move || build_use_drop(&bootstrap))
        .join()
        .expect("no panic on the spawned thread");
}
