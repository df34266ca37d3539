//! The `stream_workers` example against a real Apache Kafka broker: one task streams a
//! 4-partition topic, a worker per partition processes and commits through a
//! `ConsumerHandle`. Every record is processed exactly once, in order per partition, and the
//! group's committed offsets reach the log end.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

#[path = "../examples/stream_workers.rs"]
#[allow(dead_code)]
mod example;

use std::collections::BTreeMap;

use support::real_broker::{
    bootstrap, client, create_topic, delete_topic, keyed_lines, produce_with_java, unique,
};

const PARTITIONS: i32 = 4;
const RECORDS: usize = 400;

#[tokio::test]
async fn workers_commit_through_a_handle_while_one_task_streams() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("stream-workers");
    create_topic(&mut admin, &topic, PARTITIONS).await;
    produce_with_java(&bootstrap, &topic, "none", &keyed_lines(0..RECORDS));

    let summary = example::service::run(
        example::service::Args {
            bootstrap: bootstrap.clone(),
            topic: topic.clone(),
            group: unique("stream-workers-group"),
            count: Some(RECORDS),
            work_ms: 1,
        },
        std::future::pending(),
    )
    .await
    .expect("the service runs");

    assert_eq!(summary.processed, RECORDS);
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for (partition, offset) in &summary.records {
        let expected = next.entry(*partition).or_insert(0);
        assert_eq!(*offset, *expected, "partition {partition}: in order, once");
        *expected += 1;
    }
    let committed: BTreeMap<i32, i64> = summary
        .committed
        .iter()
        .map(|(tp, offset)| (tp.partition, *offset))
        .collect();
    assert_eq!(committed, next, "every partition committed to its log end");
    assert_eq!(next.values().sum::<i64>(), RECORDS as i64);
    delete_topic(&mut admin, &topic).await;
}
