//! Simulation mode: the next fetch overlaps the application's processing (Java's
//! `sendPrefetches`: `AsyncKafkaConsumer.poll` sends a `CreateFetchRequestsEvent` before it
//! returns records).
//!
//! A consumer that has caught up waits in `poll` while its fetch waits at the broker; a
//! producer appends one record 50 ms after the consumer received the previous one, while the
//! application "processes" that one for 200 ms of virtual time. A broker gets no fetch while
//! data of its partitions waits in the buffer (KAFKA-17182), and the `poll` that received the
//! record had told the background it was polling before the record arrived; so unless `poll`
//! asks for the next fetch when it hands out the last buffered record, no fetch is at the
//! broker when the next record is appended, and every `poll` after the processing waits a
//! network round trip for it (without the prefetch, polls 3–20 waited 3–18 ms each). With it,
//! the record is fetched during the processing and the next `poll` returns it at once. After
//! the first record the application pauses 2 s (start-up's metadata refresh wakes the
//! background once, which would send a fetch by chance) and then polls at once, so the
//! measured sequence starts from a `poll` that waited.
#![cfg(madsim)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kafka_consumer::rt::{Duration, Instant};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, TopicPartition};
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use support::batch;

const RECORDS: usize = 20;
const PROCESSING: Duration = Duration::from_millis(200);
const PRODUCE_AFTER: Duration = Duration::from_millis(50);
const WARM_UP: Duration = Duration::from_secs(2);

#[madsim::test]
async fn a_record_produced_while_the_application_processes_is_fetched_meanwhile() {
    let cluster = Cluster::builder().brokers(1).topic("t", 1).build().await;
    cluster.controller().append("t", 0, batch(&["v0"])).unwrap();
    let bootstrap = cluster.bootstrap_servers();
    let received = Arc::new(AtomicUsize::new(0));
    let consumer = Handle::current()
        .create_node()
        .name("consumer")
        .ip("10.0.9.1".parse().unwrap())
        .build()
        .spawn({
            let received = Arc::clone(&received);
            async move {
                let config = ConsumerConfig::builder()
                    .bootstrap_servers(bootstrap)
                    .auto_offset_reset(AutoOffsetReset::Earliest)
                    .build()
                    .unwrap();
                let mut consumer = Consumer::new(config).unwrap();
                consumer
                    .assign([TopicPartition::new("t", 0)])
                    .await
                    .unwrap();
                let mut offsets = Vec::new();
                // How long each poll waited for its record, in order.
                let mut waits = Vec::new();
                while offsets.len() < RECORDS {
                    let started = Instant::now();
                    let records = consumer.poll(Duration::from_secs(5)).await.unwrap();
                    assert_eq!(
                        records.count(),
                        1,
                        "one record at a time, after {offsets:?}"
                    );
                    waits.push(started.elapsed());
                    offsets.extend(records.iter().map(|r| r.offset));
                    received.store(offsets.len(), Ordering::SeqCst);
                    if offsets.len() == 1 {
                        // Start-up over (the metadata refresh after the first fetch among
                        // it), the application polls at once and waits there for the next
                        // record: the poll told the background it was polling before the
                        // record arrived.
                        tokio::time::sleep(WARM_UP).await;
                        received.store(offsets.len(), Ordering::SeqCst);
                        continue;
                    }
                    tokio::time::sleep(PROCESSING).await;
                }
                consumer.close(Duration::from_secs(5)).await.unwrap();
                assert_eq!(offsets, (0..RECORDS as i64).collect::<Vec<_>>());
                waits
            }
        });
    for i in 1..RECORDS {
        while received.load(Ordering::SeqCst) < i {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if i == 1 {
            tokio::time::sleep(WARM_UP).await;
        }
        while received.load(Ordering::SeqCst) < i {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(PRODUCE_AFTER).await;
        cluster
            .controller()
            .append("t", 0, batch(&[&format!("v{i}")]))
            .unwrap();
    }
    let waits = consumer.await.unwrap();
    // The first poll waits for the first fetch (connection, ListOffsets, Fetch), the second
    // for the record appended while it waited; every later record was appended during the
    // processing, while the fetch sent when the previous record was handed out waited for it.
    let waited: Vec<_> = waits
        .iter()
        .enumerate()
        .skip(2)
        .filter(|(_, wait)| !wait.is_zero())
        .collect();
    assert!(
        waited.is_empty(),
        "polls that waited for a fetch after the application's processing: {waited:?}"
    );
}
