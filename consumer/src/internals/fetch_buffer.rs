//! The one structure both sides share: fetched data waiting to be handed out, and the consumed
//! position of every assigned partition (Java's `FetchBuffer` plus the position half of
//! `SubscriptionState`).
//!
//! Why positions live here (KAFKA-18641): the application advances a partition's position
//! exactly when it hands that partition's records out, in one step under this lock, so a
//! position can never run ahead of the records returned. The background side writes a position
//! only when it initializes, resets or seeks one; each such write bumps the partition's
//! *generation*, and every `CompletedFetch` carries the generation it was fetched at, so data
//! fetched for an older position (in flight during a seek, pause or unassignment, or being read
//! by the application) is dropped instead of delivered. The application parses and decompresses
//! records outside this lock (see [`Reader`]): a large compressed batch never makes the
//! background task, which heartbeats in the loop that takes this lock, wait. Auto-commit never
//! reads this live state from the background side: the application snapshots it at the start
//! of each `poll` and sends the snapshot in the poll event, so only records returned by earlier
//! polls are ever committed.
//!
//! Records `recv` took but has not returned yet ([`HeldRecords`]) and the application's pause
//! marks live here too, under the same lock: a seek (from the consumer or from a
//! [`ConsumerHandle`](crate::consumer::ConsumerHandle) on another task) drops a partition's
//! held records in the same step that moves its position, so no record fetched for the old
//! position can be taken and held after the seek has dropped the others.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

use super::completed_fetch::CompletedFetch;
use super::held_records::HeldRecords;
use super::metrics::{Consumed, ConsumedMetrics, MetricConfig};
use crate::error::Error;
use crate::metric::Metric;
use crate::records::DecompressionBuffer;
use crate::rt::Instant;
use crate::sabotage::{self, Sabotage};
use crate::types::{ConsumerRecord, ConsumerRecords, OffsetAndMetadata, TopicPartition};

/// A partition's position: the next offset to hand out, the leader epoch of the last record
/// handed out (its "offset epoch", used for commits and truncation detection), and the leader
/// epoch current when the position was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchPosition {
    /// The next offset.
    pub offset: i64,
    /// The epoch of the record before `offset`, if known.
    pub offset_epoch: Option<i32>,
    /// The partition leader's epoch when this position was last validated.
    pub current_leader_epoch: Option<i32>,
}

impl FetchPosition {
    /// A position at `offset` with no epoch information.
    #[cfg(test)]
    pub fn new(offset: i64) -> Self {
        Self {
            offset,
            offset_epoch: None,
            current_leader_epoch: None,
        }
    }
}

#[derive(Debug, Default)]
struct BufferedPartition {
    position: Option<FetchPosition>,
    generation: u64,
    high_watermark: Option<i64>,
    /// The id of the topic incarnation the position belongs to, once metadata named one: a
    /// topic deleted and created again under the same name has a new id, and a position (or
    /// a commit of it) from the old one means nothing in the new one.
    topic_id: Option<uuid::Uuid>,
}

#[derive(Default)]
struct Inner {
    partitions: BTreeMap<TopicPartition, BufferedPartition>,
    completed: VecDeque<CompletedFetch>,
    /// The partitions whose fetch the application side took out to read ([`Reader`]), with
    /// the generation each was fetched at: still buffered for the fetcher while current.
    taken: BTreeMap<TopicPartition, u64>,
    last_generation: u64,
    records_consumed: u64,
    /// Records `recv` took from `completed` and has not returned yet.
    held: HeldRecords,
    /// The partitions the application paused: their held records wait for the resume.
    paused: BTreeSet<TopicPartition>,
    /// Kafka's consumption metrics, recorded as records are handed out.
    metrics: ConsumedMetrics,
}

impl Inner {
    /// Whether data fetched for `partition` at `generation` is still for its position (the
    /// partition is assigned and was not seeked, reset, paused or reassigned since).
    fn is_current(&self, partition: &TopicPartition, generation: u64) -> bool {
        self.partitions
            .get(partition)
            .is_some_and(|s| s.generation == generation)
    }

    fn bump(&mut self, partition: &TopicPartition) -> Option<u64> {
        self.last_generation += 1;
        let generation = self.last_generation;
        let state = self.partitions.get_mut(partition)?;
        state.generation = generation;
        self.completed.retain(|c| &c.partition != partition);
        Some(generation)
    }
}

/// Per-partition numbers for the metrics snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionProgress {
    /// The consumed position, if there is one.
    pub position: Option<i64>,
    /// The latest high watermark a fetch reported.
    pub high_watermark: Option<i64>,
}

/// The application side's own part, which the background never locks: the fetches it took
/// out of the buffer to read (Java's `nextInLineFetch`; at most one between two `collect`s) and
/// the buffer their compressed batches decompress into. Records are parsed and decompressed
/// under this lock alone, so a large compressed batch never holds [`Inner`]'s lock, which the
/// background task takes to add data, move positions and plan fetches in the same loop that
/// sends heartbeats.
#[derive(Default)]
struct Reader {
    in_line: VecDeque<CompletedFetch>,
    decompression: DecompressionBuffer,
    /// A fetch was read to its end since [`FetchBuffer::take_drained`] last looked.
    drained: bool,
}

impl Reader {
    /// What `Inner::taken` must say: the partition and generation of each fetch in line.
    fn taken(&self) -> BTreeMap<TopicPartition, u64> {
        self.in_line
            .iter()
            .map(|f| (f.partition.clone(), f.generation))
            .collect()
    }
}

/// One read from a fetch, made outside the buffer's lock and applied under it.
struct Chunk {
    partition: TopicPartition,
    generation: u64,
    records: Result<Vec<ConsumerRecord>, Error>,
    next_offset: i64,
    epoch: Option<i32>,
    bytes: usize,
    lag: Option<i64>,
    lead: Option<i64>,
}

/// Fetched data and consumed positions, shared by the two sides.
#[derive(Default)]
pub(crate) struct FetchBuffer {
    inner: Mutex<Inner>,
    reader: Mutex<Reader>,
    notify: Notify,
}

impl FetchBuffer {
    /// An empty buffer whose consumption metrics sample by `config` and carry `client_id`.
    pub fn new(config: MetricConfig, client_id: &str) -> Self {
        let buffer = Self::default();
        buffer.lock().metrics = ConsumedMetrics::new(config, client_id.to_owned());
        buffer
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave it inconsistent in a way that matters
        // more than stopping: keep going with the data as it is.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The application side's reader; taken before [`lock`](Self::lock), never while holding
    /// it, and never by the background.
    fn reader(&self) -> MutexGuard<'_, Reader> {
        self.reader.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ----- background side -----

    /// Makes `assigned` the set of partitions: others lose their position and data, new ones
    /// start without a position.
    pub fn set_assignment(&self, assigned: &BTreeSet<TopicPartition>) {
        let mut inner = self.lock();
        inner.partitions.retain(|tp, _| assigned.contains(tp));
        inner.completed.retain(|c| assigned.contains(&c.partition));
        inner.metrics.retain_partitions(assigned);
        for tp in assigned {
            if !inner.partitions.contains_key(tp) {
                inner.last_generation += 1;
                let generation = inner.last_generation;
                inner.partitions.insert(
                    tp.clone(),
                    BufferedPartition {
                        generation,
                        ..BufferedPartition::default()
                    },
                );
            }
        }
    }

    /// Sets a position (initialization, reset, seek, validation), dropping data fetched for the
    /// old one. Returns the new generation, `None` if the partition is not assigned.
    pub fn set_position(&self, partition: &TopicPartition, position: FetchPosition) -> Option<u64> {
        let mut inner = self.lock();
        let generation = inner.bump(partition)?;
        if let Some(state) = inner.partitions.get_mut(partition) {
            state.position = Some(position);
        }
        Some(generation)
    }

    /// The application's seek to `position`: moves it as [`set_position`](Self::set_position)
    /// does and, under the same lock, drops the records `recv` holds for the partition (they
    /// were fetched for the old position). Returns `None` if the partition is not assigned.
    pub fn seek(&self, partition: &TopicPartition, position: FetchPosition) -> Option<u64> {
        let mut inner = self.lock();
        let generation = inner.bump(partition)?;
        if let Some(state) = inner.partitions.get_mut(partition) {
            state.position = Some(position);
        }
        inner.held.drop_partitions(std::slice::from_ref(partition));
        Some(generation)
    }

    /// The application's seek to the beginning or end: drops buffered, in-flight and held
    /// data of the partition; its position is reset later (by a ListOffsets lookup).
    pub fn seek_to_reset(&self, partition: &TopicPartition) {
        let mut inner = self.lock();
        inner.bump(partition);
        inner.held.drop_partitions(std::slice::from_ref(partition));
    }

    /// The application pauses or resumes a partition: a pause drops its buffered and in-flight
    /// data (the records `recv` holds wait for the resume).
    pub fn set_paused(&self, partition: &TopicPartition, paused: bool) {
        let mut inner = self.lock();
        if paused {
            inner.bump(partition);
            if sabotage::active(Sabotage::PauseDropsTakenRecords) {
                inner.held.drop_partitions(std::slice::from_ref(partition));
            }
            inner.paused.insert(partition.clone());
        } else {
            inner.paused.remove(partition);
        }
    }

    /// Records that the partition's position belongs to topic incarnation `topic_id` and
    /// returns the one recorded before (`None` at first, or for a partition not assigned).
    pub fn set_incarnation(
        &self,
        partition: &TopicPartition,
        topic_id: uuid::Uuid,
    ) -> Option<uuid::Uuid> {
        let mut inner = self.lock();
        let state = inner.partitions.get_mut(partition)?;
        state.topic_id.replace(topic_id)
    }

    /// The topic incarnation the partition's position belongs to, once known.
    pub fn incarnation(&self, partition: &TopicPartition) -> Option<uuid::Uuid> {
        self.lock().partitions.get(partition)?.topic_id
    }

    /// Forgets the position and the data fetched for it (its topic was created again): the
    /// partition starts over as if newly assigned.
    pub fn clear_position(&self, partition: &TopicPartition) {
        let mut inner = self.lock();
        if inner.bump(partition).is_some() {
            if let Some(state) = inner.partitions.get_mut(partition) {
                state.position = None;
                state.high_watermark = None;
            }
        }
    }

    /// Updates the leader epoch a position was validated against, without moving it.
    pub fn set_current_leader_epoch(&self, partition: &TopicPartition, epoch: Option<i32>) {
        let mut inner = self.lock();
        if let Some(Some(position)) = inner.partitions.get_mut(partition).map(|s| &mut s.position) {
            position.current_leader_epoch = epoch;
        }
    }

    /// Drops buffered and in-flight data of a partition (pause), keeping its position.
    pub fn drop_buffered(&self, partition: &TopicPartition) {
        self.lock().bump(partition);
    }

    /// A partition's position and its generation.
    pub fn position(&self, partition: &TopicPartition) -> Option<(FetchPosition, u64)> {
        let inner = self.lock();
        let state = inner.partitions.get(partition)?;
        Some((state.position?, state.generation))
    }

    /// The partitions whose data waits to be handed out (Java fetches none of them, nor
    /// anything else from their leaders).
    pub fn buffered_partitions(&self) -> BTreeSet<TopicPartition> {
        let inner = self.lock();
        let taken = inner
            .taken
            .iter()
            .filter(|(tp, generation)| inner.is_current(tp, **generation));
        inner
            .completed
            .iter()
            .map(|c| c.partition.clone())
            .chain(taken.map(|(tp, _)| tp.clone()))
            .collect()
    }

    /// Adds fetched data if it was fetched at the partition's current position; returns whether
    /// it was kept.
    pub fn add(&self, fetch: CompletedFetch) -> bool {
        let mut inner = self.lock();
        let Some(state) = inner.partitions.get_mut(&fetch.partition) else {
            return false;
        };
        let current = (state.generation == fetch.generation
            && state.position.map(|p| p.offset) == Some(fetch.fetch_offset))
            || sabotage::active(Sabotage::StaleFetchAfterSeek);
        if !current {
            tracing::debug!(partition = %fetch.partition, fetch_offset = fetch.fetch_offset,
                "dropping fetched data for a partition whose position changed");
            return false;
        }
        state.high_watermark = Some(fetch.info.high_watermark);
        inner.completed.push_back(fetch);
        drop(inner);
        self.notify.notify_waiters();
        true
    }

    /// Wakes an application task waiting for data (new data, a wakeup, an error event).
    pub fn wake(&self) {
        self.notify.notify_waiters();
    }

    // ----- application side -----

    /// The notification to await before re-checking for data; create it *before* checking so
    /// no wake-up is missed.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }

    /// Hands out up to `max_records` records, advancing positions past them.
    pub fn collect(&self, max_records: usize, now: Instant) -> Result<ConsumerRecords, Error> {
        self.collect_into(max_records, now, false)
            .map(|(records, _)| records)
    }

    /// Collects up to `max_records` records, as [`collect`](Self::collect) does, and holds them
    /// for `recv` under the lock that advances their positions (a seek from another task drops
    /// either all of them or none); returns how many were taken.
    pub fn collect_and_hold(&self, max_records: usize, now: Instant) -> Result<usize, Error> {
        self.collect_into(max_records, now, true)
            .map(|(_, count)| count)
    }

    /// Reads up to `max_records` records from the fetches in line, outside the buffer's lock,
    /// then applies them under it in one step: positions advance past what is handed out
    /// (held for `recv` when `hold`), and what a seek, pause or revocation made stale in the
    /// meantime is dropped instead. Returns the records (empty when held) and their count.
    fn collect_into(
        &self,
        max_records: usize,
        now: Instant,
        hold: bool,
    ) -> Result<(ConsumerRecords, usize), Error> {
        let mut reader = self.reader();
        let reader = &mut *reader;
        self.drop_stale_in_line(reader);
        let mut chunks = Vec::new();
        let mut count = 0;
        let mut index = 0;
        while count < max_records {
            if index == reader.in_line.len() {
                let mut inner = self.lock();
                let Some(fetch) = inner.completed.pop_front() else {
                    break;
                };
                inner
                    .taken
                    .insert(fetch.partition.clone(), fetch.generation);
                reader.in_line.push_back(fetch);
            }
            let fetch = &mut reader.in_line[index];
            let records = match fetch.fetch_records(max_records - count, &mut reader.decompression)
            {
                // Hand out what we have; the error is reported by the next call.
                Err(error) if count > 0 => {
                    fetch.defer_error(error);
                    break;
                }
                records => records,
            };
            let next_offset = fetch.next_fetch_offset();
            let failed = records.is_err();
            count += records.as_ref().map_or(0, Vec::len);
            chunks.push(Chunk {
                partition: fetch.partition.clone(),
                generation: fetch.generation,
                records,
                next_offset,
                epoch: fetch.last_epoch(),
                bytes: fetch.take_bytes_read(),
                lag: fetch.lag_at(next_offset),
                lead: fetch.lead_at(next_offset),
            });
            if failed {
                break;
            }
            if fetch.is_exhausted() {
                index += 1;
            }
        }
        let in_line = reader.in_line.len();
        reader.in_line.retain(|fetch| !fetch.is_exhausted());
        reader.drained |= reader.in_line.len() < in_line;
        let mut inner = self.lock();
        let inner = &mut *inner;
        inner.taken = reader.taken();
        let mut out = ConsumerRecords::default();
        let mut error = None;
        for chunk in chunks {
            let state = inner.partitions.get_mut(&chunk.partition).filter(|s| {
                s.generation == chunk.generation || sabotage::active(Sabotage::StaleFetchAfterSeek)
            });
            // Stale: seeked, paused or revoked while it was read; the next call drops the
            // rest of its fetch.
            let Some(state) = state else {
                continue;
            };
            if let Some(position) = state.position.as_mut() {
                position.offset = chunk.next_offset;
                if chunk.epoch.is_some() {
                    position.offset_epoch = chunk.epoch;
                }
            }
            // Java's FetchCollector records lag and lead after every read of a partition,
            // records or not, and the bytes and records it handed out.
            let consumed = Consumed {
                records: chunk.records.as_ref().map_or(0, Vec::len),
                bytes: chunk.bytes,
                lag: chunk.lag,
                lead: chunk.lead,
            };
            inner.metrics.record(&chunk.partition, consumed, now);
            match chunk.records {
                Ok(records) => {
                    inner.records_consumed += records.len() as u64;
                    out.append(&chunk.partition, records);
                }
                Err(e) => {
                    tracing::warn!(partition = %chunk.partition, error = %e, "fetched data could not be read");
                    error = Some(e);
                }
            }
        }
        let count = out.count();
        if hold {
            inner.held.hold(std::mem::take(&mut out));
        }
        match error {
            Some(error) => Err(error),
            None => Ok((out, count)),
        }
    }

    /// Whether a collect read some partition's fetched data to its end since the last call:
    /// that partition, and perhaps its broker, can be fetched from again before the
    /// application's next `poll` ([`ApplicationEvent::CreateFetchRequests`](crate::internals::events::ApplicationEvent::CreateFetchRequests)).
    pub fn take_drained(&self) -> bool {
        std::mem::take(&mut self.reader().drained)
    }

    /// Drops the fetches in line that a seek, pause or revocation made stale since they were
    /// taken out of the buffer.
    fn drop_stale_in_line(&self, reader: &mut Reader) {
        if reader.in_line.is_empty() {
            return;
        }
        let mut inner = self.lock();
        reader.in_line.retain(|fetch| {
            inner.is_current(&fetch.partition, fetch.generation)
                || sabotage::active(Sabotage::StaleFetchAfterSeek)
        });
        inner.taken = reader.taken();
    }

    /// The first held record of a partition that is not paused.
    pub fn next_held(&self) -> Option<ConsumerRecord> {
        let inner = &mut *self.lock();
        inner.held.next(&inner.paused)
    }

    /// Up to `max_records` held records of partitions that are not paused, in order.
    pub fn take_held(&self, max_records: usize) -> ConsumerRecords {
        let inner = &mut *self.lock();
        let mut records = ConsumerRecords::default();
        while records.count() < max_records {
            let Some(record) = inner.held.next(&inner.paused) else {
                break;
            };
            records.push(record);
        }
        records
    }

    /// The offset of the first record held for `partition`: its position as the application
    /// sees it.
    pub fn first_held_offset(&self, partition: &TopicPartition) -> Option<i64> {
        self.lock().held.first_offset(partition)
    }

    /// The application's view of the assignment changed: held records and pause marks of
    /// partitions that went away are dropped.
    pub fn retain_application_view(&self, assignment: &BTreeSet<TopicPartition>) {
        let inner = &mut *self.lock();
        inner.held.retain_assigned(assignment);
        inner.paused.retain(|tp| assignment.contains(tp));
    }

    /// The partitions the application paused.
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.lock().paused.clone()
    }

    /// Every assigned partition's consumed position as an offset to commit: the position of
    /// the records handed out so far, moved back to the first record still held for `recv`.
    pub fn consumed_positions(&self) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        let inner = self.lock();
        let mut positions = Self::buffer_positions(&inner);
        positions.extend(inner.held.first_positions());
        positions
    }

    fn buffer_positions(inner: &Inner) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        inner
            .partitions
            .iter()
            .filter_map(|(tp, s)| {
                let p = s.position?;
                let offset = match s.high_watermark {
                    Some(hw) if sabotage::active(Sabotage::CommitFetchedNotReturned) => {
                        hw.max(p.offset)
                    }
                    _ => p.offset,
                };
                Some((
                    tp.clone(),
                    OffsetAndMetadata::with_leader_epoch(offset, p.offset_epoch),
                ))
            })
            .collect()
    }

    /// Per-partition position and high watermark, and records handed out so far.
    pub fn progress(&self) -> (BTreeMap<TopicPartition, PartitionProgress>, u64) {
        let inner = self.lock();
        let partitions = inner
            .partitions
            .iter()
            .map(|(tp, s)| {
                (
                    tp.clone(),
                    PartitionProgress {
                        position: s.position.map(|p| p.offset),
                        high_watermark: s.high_watermark,
                    },
                )
            })
            .collect();
        (partitions, inner.records_consumed)
    }

    /// Appends the consumption metrics' values; returns the assigned partitions.
    pub fn measure_into(&self, now: Instant, out: &mut Vec<Metric>) -> BTreeSet<TopicPartition> {
        let mut inner = self.lock();
        inner.metrics.measure_into(now, out);
        inner.partitions.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::config::IsolationLevel;
    use crate::internals::completed_fetch::PartitionFetchInfo;
    use crate::records::{NewRecord, RecordBatchBuilder};

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn data(base: i64, n: usize) -> Bytes {
        let mut b = RecordBatchBuilder::new(base).partition_leader_epoch(5);
        for _ in 0..n {
            b.append(&NewRecord {
                timestamp_ms: 0,
                key: None,
                value: Some(b"v"),
                headers: &[],
            })
            .unwrap();
        }
        b.build().unwrap()
    }

    fn completed(
        partition: TopicPartition,
        generation: u64,
        offset: i64,
        n: usize,
    ) -> CompletedFetch {
        CompletedFetch::new(
            partition,
            generation,
            offset,
            PartitionFetchInfo {
                high_watermark: offset + n as i64,
                last_stable_offset: -1,
                log_start_offset: 0,
            },
            data(offset, n),
            &[],
            IsolationLevel::ReadUncommitted,
            true,
        )
    }

    #[test]
    fn collect_advances_positions_only_for_handed_out_records() {
        let buffer = FetchBuffer::default();
        buffer.set_assignment(&[tp(0), tp(1)].into_iter().collect());
        let g0 = buffer.set_position(&tp(0), FetchPosition::new(10)).unwrap();
        let g1 = buffer.set_position(&tp(1), FetchPosition::new(0)).unwrap();
        assert!(buffer.add(completed(tp(0), g0, 10, 3)));
        assert!(buffer.add(completed(tp(1), g1, 0, 2)));
        assert!(buffer.buffered_partitions().contains(&tp(0)));

        let first = buffer.collect(2, Instant::now()).unwrap();
        assert_eq!(first.count(), 2);
        let positions = buffer.consumed_positions();
        assert_eq!(positions[&tp(0)].offset, 12);
        assert_eq!(positions[&tp(0)].leader_epoch, Some(5));
        assert_eq!(positions[&tp(1)].offset, 0, "tp1 not handed out yet");

        let second = buffer.collect(10, Instant::now()).unwrap();
        assert_eq!(second.count(), 3);
        assert_eq!(buffer.consumed_positions()[&tp(1)].offset, 2);
        assert!(!buffer.buffered_partitions().contains(&tp(0)));
        assert_eq!(buffer.progress().1, 5);
    }

    /// `take_drained` says when a collect read a partition's fetch to its end (the moment
    /// `poll` asks the background side for the next fetches), once, and not while data of
    /// every fetch is left.
    #[test]
    fn draining_a_fetch_is_reported_once() {
        let buffer = FetchBuffer::default();
        buffer.set_assignment(&[tp(0), tp(1)].into_iter().collect());
        let g0 = buffer.set_position(&tp(0), FetchPosition::new(0)).unwrap();
        let g1 = buffer.set_position(&tp(1), FetchPosition::new(0)).unwrap();
        assert!(buffer.add(completed(tp(0), g0, 0, 3)));
        assert!(buffer.add(completed(tp(1), g1, 0, 3)));
        assert!(!buffer.take_drained(), "nothing read yet");

        assert_eq!(buffer.collect(2, Instant::now()).unwrap().count(), 2);
        assert!(!buffer.take_drained(), "tp0 still has a record");

        assert_eq!(buffer.collect(2, Instant::now()).unwrap().count(), 2);
        assert!(buffer.take_drained(), "tp0 read to its end");
        assert!(!buffer.take_drained(), "reported once");
        assert!(!buffer.buffered_partitions().contains(&tp(0)));
        assert!(buffer.buffered_partitions().contains(&tp(1)));

        assert_eq!(buffer.collect_and_hold(10, Instant::now()).unwrap(), 2);
        assert!(buffer.take_drained(), "held for recv counts as read");
        assert!(buffer.buffered_partitions().is_empty());
    }

    /// A seek drops what `recv` holds for the partition in the step that moves the position,
    /// and only for that partition; a pause keeps held records back until the resume.
    #[test]
    fn a_seek_drops_held_records_and_a_pause_holds_them_back() {
        let buffer = FetchBuffer::default();
        buffer.set_assignment(&[tp(0), tp(1)].into_iter().collect());
        let g0 = buffer.set_position(&tp(0), FetchPosition::new(0)).unwrap();
        let g1 = buffer.set_position(&tp(1), FetchPosition::new(0)).unwrap();
        assert!(buffer.add(completed(tp(0), g0, 0, 3)));
        assert!(buffer.add(completed(tp(1), g1, 0, 3)));
        assert_eq!(buffer.collect_and_hold(10, Instant::now()).unwrap(), 6);
        assert_eq!(
            buffer.consumed_positions()[&tp(0)].offset,
            0,
            "held, not handed out"
        );
        assert_eq!(
            buffer.next_held().map(|r| (r.partition, r.offset)),
            Some((0, 0))
        );
        assert_eq!(buffer.first_held_offset(&tp(0)), Some(1));

        buffer.set_paused(&tp(1), true);
        assert_eq!(buffer.paused(), [tp(1)].into_iter().collect());
        buffer.seek(&tp(0), FetchPosition::new(100)).unwrap();
        assert_eq!(
            buffer.first_held_offset(&tp(0)),
            None,
            "held records of the old position"
        );
        assert!(
            buffer.next_held().is_none(),
            "tp1's held records wait for the resume"
        );
        assert_eq!(buffer.consumed_positions()[&tp(1)].offset, 0);

        buffer.set_paused(&tp(1), false);
        let resumed: Vec<i64> = std::iter::from_fn(|| buffer.next_held())
            .map(|r| r.offset)
            .collect();
        assert_eq!(resumed, [0, 1, 2]);
        buffer.retain_application_view(&[tp(0)].into_iter().collect());
        assert!(buffer.paused().is_empty());
    }

    #[test]
    fn data_for_an_old_position_is_dropped() {
        let buffer = FetchBuffer::default();
        buffer.set_assignment(&[tp(0)].into_iter().collect());
        let old = buffer.set_position(&tp(0), FetchPosition::new(0)).unwrap();
        assert!(buffer.add(completed(tp(0), old, 0, 3)));
        // A seek drops what is buffered and whatever was in flight for the old position.
        let new = buffer
            .set_position(&tp(0), FetchPosition::new(100))
            .unwrap();
        assert!(!buffer.buffered_partitions().contains(&tp(0)));
        assert!(
            !buffer.add(completed(tp(0), old, 0, 3)),
            "in-flight data of the old position"
        );
        assert!(
            !buffer.add(completed(tp(0), new, 50, 3)),
            "data not at the position"
        );
        // Pausing drops data too but keeps the position.
        assert!(buffer.add(completed(tp(0), new, 100, 3)));
        buffer.drop_buffered(&tp(0));
        assert!(buffer.collect(10, Instant::now()).unwrap().is_empty());
        assert_eq!(buffer.consumed_positions()[&tp(0)].offset, 100);
        // Unassigning forgets everything.
        buffer.set_assignment(&BTreeSet::new());
        assert!(buffer.consumed_positions().is_empty());
        assert!(!buffer.add(completed(tp(0), new, 100, 3)));
    }

    /// A fetch the application took out to read (Java's `nextInLineFetch`) still counts as
    /// buffered, so the fetcher does not fetch the partition again; a seek makes it stale, and
    /// what is left of it is never handed out.
    #[test]
    fn a_fetch_in_line_stays_buffered_until_read_and_a_seek_drops_it() {
        let buffer = FetchBuffer::default();
        buffer.set_assignment(&[tp(0)].into_iter().collect());
        let old = buffer.set_position(&tp(0), FetchPosition::new(0)).unwrap();
        assert!(buffer.add(completed(tp(0), old, 0, 3)));
        assert_eq!(buffer.collect(1, Instant::now()).unwrap().count(), 1);
        assert!(
            buffer.buffered_partitions().contains(&tp(0)),
            "two records left in line"
        );
        let new = buffer.seek(&tp(0), FetchPosition::new(100)).unwrap();
        assert!(
            !buffer.buffered_partitions().contains(&tp(0)),
            "the fetch in line is stale"
        );
        assert!(buffer.add(completed(tp(0), new, 100, 2)));
        let offsets: Vec<i64> = buffer
            .collect(10, Instant::now())
            .unwrap()
            .into_iter()
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, [100, 101]);
        assert_eq!(buffer.consumed_positions()[&tp(0)].offset, 102);
        assert!(buffer.buffered_partitions().is_empty());
    }

    /// Records are read (parsed, decompressed) under the application side's own lock: while
    /// the application holds it, the background adds data, moves positions and plans fetches
    /// without waiting, so a large compressed batch cannot delay the loop that heartbeats.
    #[test]
    fn the_background_never_waits_for_a_read_in_progress() {
        let buffer = std::sync::Arc::new(FetchBuffer::default());
        let reading = buffer.reader();
        let background = std::sync::Arc::clone(&buffer);
        let (done, finished) = std::sync::mpsc::channel();
        // The background side on a thread of its own; the test only joins it through `done`.
        #[allow(clippy::disallowed_methods)]
        std::thread::spawn(move || {
            background.set_assignment(&[tp(0)].into_iter().collect());
            let generation = background
                .set_position(&tp(0), FetchPosition::new(0))
                .unwrap();
            assert!(background.add(completed(tp(0), generation, 0, 3)));
            let buffered = background.buffered_partitions();
            let position = background.position(&tp(0));
            background.drop_buffered(&tp(0));
            done.send((buffered, position)).unwrap();
        });
        let (buffered, position) = finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the background side waited for the application's reader");
        assert!(buffered.contains(&tp(0)));
        assert_eq!(position.map(|(p, _)| p.offset), Some(0));
        drop(reading);
    }
    /// The measurement behind the test above: how long the background side waits for the
    /// buffer while the application reads 4 zstd batches of 2,048 1 KiB records (8 MiB
    /// decompressed) in one `collect`. Before records were read outside the lock, its longest
    /// wait was the whole read; now it is the two short steps that take the lock. Run with
    /// `cargo test --release -p kafka-consumer --lib background_wait -- --ignored --nocapture`
    /// (wall-clock, so not part of the suite).
    #[test]
    #[ignore = "a measurement on the wall clock; run on its own (see the doc comment)"]
    #[cfg(not(madsim))]
    #[allow(clippy::disallowed_methods)] // wall-clock timing and a thread: real mode only
    fn background_wait_during_a_large_compressed_read() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant as WallClock};

        use crate::records::Compression;

        const BATCHES: i64 = 4;
        const RECORDS_PER_BATCH: i64 = 2_048;
        let mut bytes = Vec::new();
        for batch in 0..BATCHES {
            let base = batch * RECORDS_PER_BATCH;
            let mut builder = RecordBatchBuilder::new(base).compression(Compression::Zstd);
            for n in base..base + RECORDS_PER_BATCH {
                let mut value = format!("{{\"id\":{n},\"tail\":\"");
                let mut x = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                while value.len() < 1_022 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    value.push_str(&format!("{:x}", x & 0xf));
                }
                value.push_str("\"}");
                builder
                    .append(&NewRecord {
                        timestamp_ms: 0,
                        key: None,
                        value: Some(value.as_bytes()),
                        headers: &[],
                    })
                    .unwrap();
            }
            bytes.extend_from_slice(&builder.build().unwrap());
        }
        let total = (BATCHES * RECORDS_PER_BATCH) as usize;
        let buffer = std::sync::Arc::new(FetchBuffer::default());
        buffer.set_assignment(&[tp(0)].into_iter().collect());
        let generation = buffer.set_position(&tp(0), FetchPosition::new(0)).unwrap();
        let info = PartitionFetchInfo {
            high_watermark: total as i64,
            last_stable_offset: -1,
            log_start_offset: 0,
        };
        let fetch = CompletedFetch::new(
            tp(0),
            generation,
            0,
            info,
            Bytes::from(bytes),
            &[],
            IsolationLevel::ReadUncommitted,
            true,
        );
        assert!(buffer.add(fetch));

        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let background = {
            let buffer = std::sync::Arc::clone(&buffer);
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut longest = Duration::ZERO;
                while !stop.load(Ordering::Relaxed) {
                    let started = WallClock::now();
                    std::hint::black_box(buffer.position(&tp(0)));
                    longest = longest.max(started.elapsed());
                }
                longest
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let started = WallClock::now();
        let read = buffer.collect(total, Instant::now()).unwrap().count();
        let read_time = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        let longest_wait = background.join().unwrap();
        assert_eq!(read, total);
        println!(
            "read {total} records (8 MiB zstd) in {read_time:?}; the background's longest wait \
             for the buffer: {longest_wait:?}"
        );
        assert!(
            longest_wait < read_time / 4,
            "the background waited {longest_wait:?} of a {read_time:?} read"
        );
    }
}
