//! Producers: batches appended straight to the partition logs through the controller (an
//! acknowledged write, as the brokers will serve it), recorded as `ProduceAcked` so the
//! checkers know what had to be consumed. Three shapes ([`ProducerShape`]): one-record
//! batches; transactions ended by the markers Kafka's transaction coordinator has the leaders
//! write; batches as Kafka's log cleaner leaves them.

use std::collections::BTreeMap;

use kafka_consumer::records::{end_txn_marker_batch, ControlRecord, NewRecord, RecordBatchBuilder};
use kafka_consumer::rt::SeededRng;
use sim::controller::Controller;
use sim::history::{Event, SubjectRecorder, Tp};
use tokio::time::{Duration, Instant};

use crate::checks::DataEvent;
use crate::scenario::{ProducerShape, ProducerSpec, TxnShape};

/// The idempotent producer whose batches the compacted shape writes.
const COMPACTED_PRODUCER_ID: i64 = 9_000;

/// Runs the producer `spec` describes until `spec.until_ms`.
pub(super) async fn produce(
    controller: Controller,
    spec: ProducerSpec,
    recorder: SubjectRecorder,
    started: Instant,
) {
    let producer = Producer {
        controller,
        spec,
        recorder,
        started,
        n: 0,
    };
    match producer.spec.shape {
        ProducerShape::Plain => producer.plain().await,
        ProducerShape::Transactional(shape) => producer.transactional(shape).await,
        ProducerShape::Compacted { seed } => producer.compacted(seed).await,
    }
}

struct Producer {
    controller: Controller,
    spec: ProducerSpec,
    recorder: SubjectRecorder,
    started: Instant,
    /// Records written so far: the unique part of each value.
    n: u64,
}

impl Producer {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn producing(&self) -> bool {
        self.started.elapsed() < Duration::from_millis(self.spec.until_ms)
    }

    async fn pause(&self) {
        tokio::time::sleep(Duration::from_millis(self.spec.interval_ms)).await;
    }

    /// The topic's partition count now (a topic grown by `CreatePartitions` gets writes in its
    /// new partitions; a topic not there, not yet created or deleted, none: 0).
    fn partitions(&self) -> u64 {
        self.controller
            .read()
            .topics
            .get(&self.spec.topic)
            .map_or(0, |t| t.partitions.len() as u64)
    }

    /// The next unique value for `partition` (Jepsen's checkers require unique values), padded
    /// to the spec's size spread; transactional producers add their name, since several write
    /// one topic.
    fn next_value(&mut self, partition: i32) -> String {
        let n = self.n;
        self.n += 1;
        let mut value = match self.spec.shape {
            ProducerShape::Plain => format!("{}-{partition}-{n}", self.spec.topic),
            _ => format!("{}-{partition}-{}-{n}", self.spec.topic, self.spec.name),
        };
        pad(&mut value, n, self.spec.value_bytes);
        value
    }

    fn record(&self, event: Event) {
        self.recorder.record(self.now_ms(), event);
    }

    fn acked(&self, partition: i32, offset: i64, value: String) {
        self.record(Event::ProduceAcked {
            tp: Tp::new(self.spec.topic.clone(), partition),
            offset,
            value,
        });
    }

    /// One-record batches round-robin over the partitions, each acknowledged as appended.
    async fn plain(mut self) {
        while self.producing() {
            let partition = (self.n % self.partitions().max(1)) as i32;
            let value = self.next_value(partition);
            let batch = build(RecordBatchBuilder::new(0), &[(0, &value)], self.now_ms());
            if let Some(batch) = batch {
                if let Ok(info) = self.controller.append(&self.spec.topic, partition, batch) {
                    self.acked(partition, info.base_offset, value);
                }
            }
            self.pause().await;
        }
    }

    /// Transactions until `until_ms`: each writes 1 to `max_records` records in batches of one
    /// to three records, each batch to a partition it draws, each record noted as written; then, after `long_open_ms` for one transaction in `long_open_one_in`, the
    /// coordinator's markers — COMMIT (the records are then acknowledged) or, for one in
    /// `abort_one_in`, ABORT — go to every partition it wrote, without a pause in between.
    /// (Kafka answers EndTxn once the transaction is prepared and writes the markers after;
    /// a `read_committed` consumer sees a record only once its partition's marker is in, so
    /// acknowledging right after the markers loses no interleaving it could observe.) A
    /// transaction under way at `until_ms` still ends.
    async fn transactional(mut self, shape: TxnShape) {
        let mut rng = SeededRng::seed_from_u64(shape.seed);
        let mut sequences: BTreeMap<i32, i32> = BTreeMap::new();
        while self.producing() {
            let partitions = self.partitions();
            if partitions == 0 {
                self.pause().await;
                continue;
            }
            let records = 1 + rng.below_inclusive(shape.max_records.max(1) - 1);
            let mut written: Vec<(i32, i64, String)> = Vec::new();
            let mut left = records;
            while left > 0 {
                let partition = rng.below_inclusive(partitions - 1) as i32;
                let in_batch = left.min(1 + rng.below_inclusive(2));
                left -= in_batch;
                let values: Vec<String> =
                    (0..in_batch).map(|_| self.next_value(partition)).collect();
                let sequence = sequences.entry(partition).or_insert(0);
                let builder = RecordBatchBuilder::new(0)
                    .producer(shape.producer_id, 0, *sequence)
                    .transactional(true);
                *sequence += in_batch as i32;
                let deltas: Vec<(i64, &String)> = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i as i64, v))
                    .collect();
                let Some(batch) = build(builder, &deltas, self.now_ms()) else {
                    continue;
                };
                if let Ok(info) = self.controller.append(&self.spec.topic, partition, batch) {
                    for (i, value) in values.into_iter().enumerate() {
                        let offset = info.base_offset + i as i64;
                        let tp = Tp::new(self.spec.topic.clone(), partition);
                        self.record(
                            DataEvent::TxnWritten {
                                tp,
                                offset,
                                value: value.clone(),
                            }
                            .note(),
                        );
                        written.push((partition, offset, value));
                    }
                }
                self.pause().await;
            }
            if shape.long_open_one_in > 0 && rng.below_inclusive(shape.long_open_one_in - 1) == 0 {
                tokio::time::sleep(Duration::from_millis(shape.long_open_ms)).await;
            }
            let commit =
                shape.abort_one_in == 0 || rng.below_inclusive(shape.abort_one_in - 1) != 0;
            self.end_transaction(shape.producer_id, commit, written);
            self.pause().await;
        }
    }

    /// The transaction coordinator's markers on every partition the transaction wrote; on a
    /// commit, its records are acknowledged.
    fn end_transaction(&self, producer_id: i64, commit: bool, written: Vec<(i32, i64, String)>) {
        let marker = if commit {
            ControlRecord::Commit {
                coordinator_epoch: 0,
            }
        } else {
            ControlRecord::Abort {
                coordinator_epoch: 0,
            }
        };
        let partitions: std::collections::BTreeSet<i32> =
            written.iter().map(|(p, _, _)| *p).collect();
        for partition in partitions {
            if let Ok(batch) =
                end_txn_marker_batch(0, producer_id, 0, self.now_ms() as i64, &marker)
            {
                // A partition deleted meanwhile takes no marker; nothing else can refuse it.
                let _ = self.controller.append(&self.spec.topic, partition, batch);
            }
        }
        self.record(Event::Note {
            text: format!(
                "transaction of producer {producer_id} {}",
                if commit { "committed" } else { "aborted" }
            ),
        });
        if commit {
            for (partition, offset, value) in written {
                self.acked(partition, offset, value);
            }
        }
    }

    /// Batches as the log cleaner leaves them, round-robin over the partitions: whole batches
    /// of one to three records; batches that kept some of up to six offsets (the first kept
    /// record need not be at the batch's base, and offsets after the last kept one stay taken
    /// through `lastOffsetDelta`, as `MemoryRecords.filterTo` writes them); empty batches that
    /// keep one to three offsets (`writeEmptyHeader`). The batches are an idempotent
    /// producer's (the cleaner keeps an emptied batch only for its producer's last sequence).
    /// Each kept record is acknowledged.
    async fn compacted(mut self, seed: u64) {
        let mut rng = SeededRng::seed_from_u64(seed);
        let mut sequences: BTreeMap<i32, i32> = BTreeMap::new();
        let mut turn = 0u64;
        while self.producing() {
            let partition = (turn % self.partitions().max(1)) as i32;
            turn += 1;
            let (deltas, last_delta) = match rng.below_inclusive(3) {
                0 | 1 => {
                    let count = 1 + rng.below_inclusive(2) as i64;
                    ((0..count).collect::<Vec<i64>>(), count - 1)
                }
                2 => {
                    let span = 2 + rng.below_inclusive(4) as i64;
                    let mut kept: Vec<i64> =
                        (0..span).filter(|_| rng.below_inclusive(1) == 1).collect();
                    if kept.is_empty() {
                        kept.push(rng.below_inclusive(span as u64 - 1) as i64);
                    }
                    (kept, span - 1)
                }
                _ => (Vec::new(), rng.below_inclusive(2) as i64),
            };
            let values: Vec<String> = deltas.iter().map(|_| self.next_value(partition)).collect();
            let records: Vec<(i64, &String)> = deltas.iter().copied().zip(values.iter()).collect();
            // Idempotent, as the cleaner keeps an emptied batch only for its producer's state.
            let sequence = sequences.entry(partition).or_insert(0);
            let builder = RecordBatchBuilder::new(0)
                .producer(COMPACTED_PRODUCER_ID, 0, *sequence)
                .last_offset_delta(last_delta as i32);
            *sequence += last_delta as i32 + 1;
            if let Some(batch) = build(builder, &records, self.now_ms()) {
                if let Ok(info) = self
                    .controller
                    .append_cleaned(&self.spec.topic, partition, batch)
                {
                    for (delta, value) in deltas.into_iter().zip(values) {
                        self.acked(partition, info.base_offset + delta, value);
                    }
                }
            }
            self.pause().await;
        }
    }
}

/// A batch of `records` (offset delta, value) timestamped `now_ms`, or `None` if it cannot be
/// encoded.
fn build(
    mut builder: RecordBatchBuilder,
    records: &[(i64, &String)],
    now_ms: u64,
) -> Option<bytes::Bytes> {
    for (delta, value) in records {
        builder
            .append_at(
                *delta,
                &NewRecord {
                    timestamp_ms: now_ms as i64,
                    key: None,
                    value: Some(value.as_bytes()),
                    headers: &[],
                },
            )
            .ok()?;
    }
    builder.build().ok()
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
