//! `BackgroundRuntime::Shared` (issue #28) in real mode: consumers on a shared runtime start no
//! thread of their own (the default starts one each), and when the shared runtime shuts down
//! their calls fail with `Error::Closed` instead of hanging or panicking. No broker needed: the
//! consumers connect lazily and the checks do not wait for the network.
//!
//! One test function on purpose: the thread counts are of the whole process, so nothing else
//! may run beside them. Compiled out under madsim (no OS threads there).
#![cfg(not(madsim))]

use kafka_consumer::{BackgroundRuntime, Consumer, ConsumerConfig, Error};
use tokio::time::Duration;

const CONSUMERS: usize = 20;

fn config(i: usize) -> ConsumerConfig {
    ConsumerConfig::builder()
        // Nothing listens there; nothing here needs an answer.
        .bootstrap_servers(["127.0.0.1:9"])
        .group_id(format!("shared-runtime-{i}"))
        .build()
        .unwrap()
}

/// The process's thread count (`/proc/self/task`, Linux).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn shared_consumers_start_no_threads_and_fail_closed_when_the_runtime_goes() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Let the workers start before counting.
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });

    let before = threads();
    let shared = BackgroundRuntime::Shared(runtime.handle().clone());
    let mut on_shared: Vec<Consumer> = (0..CONSUMERS)
        .map(|i| Consumer::with_runtime(config(i), shared.clone()).unwrap())
        .collect();
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
    let with_shared = threads();
    assert!(
        with_shared < before + 3,
        "{CONSUMERS} consumers on a shared runtime: {before} threads became {with_shared}"
    );

    let dedicated: Vec<Consumer> = (0..CONSUMERS)
        .map(|i| Consumer::with_runtime(config(i), BackgroundRuntime::Dedicated).unwrap())
        .collect();
    let with_dedicated = threads();
    assert!(
        with_dedicated >= with_shared + CONSUMERS,
        "{CONSUMERS} dedicated consumers: {with_shared} threads became only {with_dedicated}"
    );
    drop(dedicated);

    // The shared runtime goes away: its consumers' background tasks with it.
    runtime.shutdown_timeout(Duration::from_secs(5));
    let caller = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for consumer in &mut on_shared {
        let result = caller.block_on(consumer.list_topics(Duration::from_secs(5)));
        assert!(
            matches!(result, Err(Error::Closed)),
            "a call after the shared runtime shut down: {result:?}"
        );
    }
}
