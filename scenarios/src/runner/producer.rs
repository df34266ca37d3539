//! Producers: one-record batches appended straight to the partition logs through the
//! controller (an acknowledged write, as the brokers will serve it), recorded as
//! `ProduceAcked` so the lost-write and liveness checkers know what had to be consumed.

use kafka_consumer::records::{NewRecord, RecordBatchBuilder};
use sim::controller::Controller;
use sim::history::{Event, SubjectRecorder, Tp};
use tokio::time::{Duration, Instant};

use crate::scenario::ProducerSpec;

/// Writes `spec.topic`'s partitions round-robin until `spec.until_ms`, over the partitions the
/// topic has at each write (a topic grown by `CreatePartitions` gets writes in its new ones; a
/// topic not there, not yet created or deleted, none); values are unique (`topic-partition-n`),
/// as Jepsen's checkers require.
pub(super) async fn produce(
    controller: Controller,
    spec: ProducerSpec,
    recorder: SubjectRecorder,
    started: Instant,
) {
    let mut n: u64 = 0;
    while started.elapsed() < Duration::from_millis(spec.until_ms) {
        let partitions = controller
            .read()
            .topics
            .get(&spec.topic)
            .map_or(0, |t| t.partitions.len() as u64);
        let partition = (n % partitions.max(1)) as i32;
        let mut value = format!("{}-{partition}-{n}", spec.topic);
        pad(&mut value, n, spec.value_bytes);
        let mut builder = RecordBatchBuilder::new(0);
        let built = builder
            .append(&NewRecord {
                timestamp_ms: started.elapsed().as_millis() as i64,
                key: None,
                value: Some(value.as_bytes()),
                headers: &[],
            })
            .ok()
            .and_then(|_| builder.build().ok());
        if let Some(batch) = built {
            if let Ok(info) = controller.append(&spec.topic, partition, batch) {
                recorder.record(
                    started.elapsed().as_millis() as u64,
                    Event::ProduceAcked {
                        tp: Tp::new(spec.topic.clone(), partition),
                        offset: info.base_offset,
                        value,
                    },
                );
            }
        }
        n += 1;
        tokio::time::sleep(Duration::from_millis(spec.interval_ms)).await;
    }
}

/// Pads record `n`'s value with `.` to a size spread over `0..value_bytes` (a fixed stride, so
/// small and large records alternate; the unique prefix stays first).
fn pad(value: &mut String, n: u64, value_bytes: usize) {
    if value_bytes == 0 {
        return;
    }
    let size = (n.wrapping_mul(7_919) % value_bytes as u64) as usize;
    while value.len() < size {
        value.push('.');
    }
}
