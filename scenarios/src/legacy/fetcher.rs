//! A minimal `Fetcher` + `SubscriptionState` for manual assignment: positions, one full
//! (sessionless) fetch in flight per leader, a record buffer, and metadata refresh when a
//! leader is unknown or a fetch fails. Enough to consume; not where the Jira bugs live.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_consumer::network::{MetadataScope, NetworkError};
use kafka_consumer::records::{FetchedRecords, ReadOptions};
use sim::history::Tp;

use super::network::{error_name, Body, ConsumerNetworkClient, Handler};
use super::requests;
use crate::subject::Delivered;

pub(super) struct Fetcher {
    assigned: Vec<Tp>,
    /// Topics metadata is kept for besides the assigned ones (the subscription).
    pub subscribed_topics: Vec<String>,
    /// Fetch positions: the next offset to fetch (advanced when a response is buffered).
    positions: BTreeMap<Tp, i64>,
    /// `SubscriptionState` positions: the next offset to hand to the application, advanced
    /// as records are returned (what `allConsumed()` commits).
    consumed: BTreeMap<Tp, i64>,
    fetching_from: BTreeSet<i32>,
    /// `markPendingRevocation` (3.2.3+): partitions about to be revoked, neither fetched nor
    /// returned until the next assignment.
    pending_revocation: BTreeSet<Tp>,
    buffer: Vec<Delivered>,
    metadata_update_requested: bool,
    metadata_in_flight: bool,
    /// Completed metadata updates, for `awaitMetadataUpdate`.
    pub metadata_updates: u64,
    max_wait_ms: i32,
    max_poll_records: usize,
}

impl Fetcher {
    pub fn new(max_wait_ms: i32, max_poll_records: usize) -> Self {
        Self {
            assigned: Vec::new(),
            subscribed_topics: Vec::new(),
            positions: BTreeMap::new(),
            consumed: BTreeMap::new(),
            fetching_from: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
            buffer: Vec::new(),
            metadata_update_requested: true,
            metadata_in_flight: false,
            metadata_updates: 0,
            max_wait_ms,
            max_poll_records,
        }
    }

    /// `assign(partitions)` / `assignFromSubscribed(partitions)`: positions unknown until
    /// committed offsets are fetched; buffered records of dropped partitions are discarded.
    pub fn assign(&mut self, partitions: Vec<Tp>) {
        self.positions.retain(|tp, _| partitions.contains(tp));
        self.consumed.retain(|tp, _| partitions.contains(tp));
        self.buffer.retain(|d| partitions.contains(&d.tp));
        self.pending_revocation.clear();
        self.assigned = partitions;
    }

    /// `SubscriptionState.markPendingRevocation(assignedPartitions())`: stops fetching and
    /// returning the assigned partitions until they are reassigned (KAFKA-14196's fix).
    pub fn mark_pending_revocation(&mut self) {
        self.pending_revocation = self.assigned.iter().cloned().collect();
    }

    pub fn assigned(&self) -> &[Tp] {
        &self.assigned
    }

    /// `subscriptions.allConsumed()`: the consumed position of every assigned partition that
    /// has one.
    pub fn all_consumed(&self) -> Vec<(Tp, i64)> {
        self.consumed
            .iter()
            .filter(|(tp, _)| self.assigned.contains(tp))
            .map(|(tp, o)| (tp.clone(), *o))
            .collect()
    }

    /// Partitions without a position (`subscriptions.initializingPartitions()`).
    pub fn missing_positions(&self) -> Vec<Tp> {
        self.assigned
            .iter()
            .filter(|tp| !self.positions.contains_key(*tp))
            .cloned()
            .collect()
    }

    /// `seekUnvalidated` from a committed offset, or `auto.offset.reset=earliest` for none.
    /// Earliest is offset 0: these scenarios never advance a log start offset.
    pub fn set_position(&mut self, tp: Tp, committed: i64) {
        if self.assigned.contains(&tp) {
            self.consumed.insert(tp.clone(), committed.max(0));
            self.positions.insert(tp, committed.max(0));
        }
    }

    /// `metadata.updateRequested()`.
    pub fn metadata_update_requested(&self) -> bool {
        self.metadata_update_requested
    }

    pub fn request_metadata_update(&mut self) {
        self.metadata_update_requested = true;
    }

    /// Sends a Metadata request if one is wanted and none is in flight.
    pub fn maybe_update_metadata(&mut self, client: &mut ConsumerNetworkClient) {
        if !self.metadata_update_requested || self.metadata_in_flight {
            return;
        }
        let Some(node) = client.least_loaded_node() else {
            return;
        };
        let topics: BTreeSet<&str> = self
            .assigned
            .iter()
            .map(|tp| tp.topic.as_str())
            .chain(self.subscribed_topics.iter().map(String::as_str))
            .collect();
        client.send(
            node,
            requests::metadata(topics),
            requests::METADATA_VERSION,
            Handler::Metadata,
            Body::Metadata,
        );
        self.metadata_in_flight = true;
        self.metadata_update_requested = false;
    }

    /// `sendFetches()`: one fetch per leader that has none in flight, for the partitions with
    /// a position and nothing buffered.
    pub fn send_fetches(&mut self, client: &mut ConsumerNetworkClient) {
        let mut by_leader: BTreeMap<i32, Vec<(Tp, i64)>> = BTreeMap::new();
        for (tp, position) in &self.positions {
            if self.pending_revocation.contains(tp) {
                continue;
            }
            let leader = client
                .inner()
                .metadata()
                .partition(&tp.topic, tp.partition)
                .and_then(|p| p.leader_id);
            match leader {
                Some(leader) => by_leader
                    .entry(leader)
                    .or_default()
                    .push((tp.clone(), *position)),
                None => self.metadata_update_requested = true,
            }
        }
        for (leader, partitions) in by_leader {
            if self.fetching_from.insert(leader) {
                client.send(
                    leader,
                    requests::fetch(&partitions, self.max_wait_ms),
                    requests::FETCH_VERSION,
                    Handler::Fetch { node: leader },
                    Body::Fetch,
                );
            }
        }
        self.maybe_update_metadata(client);
    }

    pub fn has_available_fetches(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// `collectFetch()`: up to `max.poll.records` buffered records; those of partitions no
    /// longer fetchable (pending revocation) are dropped, as Java drains them.
    pub fn collect_fetch(&mut self) -> Vec<Delivered> {
        let pending = &self.pending_revocation;
        self.buffer.retain(|d| !pending.contains(&d.tp));
        let n = self.buffer.len().min(self.max_poll_records);
        let records: Vec<Delivered> = self.buffer.drain(..n).collect();
        for r in &records {
            self.consumed.insert(r.tp.clone(), r.offset + 1);
        }
        records
    }

    /// The fetch response handler: buffers records at the position, refreshes metadata on
    /// partition errors and lost connections.
    pub fn handle_fetch(&mut self, node: i32, result: Result<Body, NetworkError>) {
        self.fetching_from.remove(&node);
        let response = match result {
            Ok(Body::Fetch(r)) => r,
            _ => {
                self.metadata_update_requested = true;
                return;
            }
        };
        for topic in &response.responses {
            let name: Arc<str> = Arc::from(topic.topic.0.as_str());
            for p in &topic.partitions {
                let tp = Tp::new(name.to_string(), p.partition_index);
                if error_name(p.error_code).is_some() {
                    self.metadata_update_requested = true;
                    continue;
                }
                let Some(mut position) = self.positions.get(&tp).copied() else {
                    continue;
                };
                let Some(bytes) = p.records.clone() else {
                    continue;
                };
                let batches = FetchedRecords::new(
                    name.clone(),
                    p.partition_index,
                    bytes,
                    ReadOptions::default(),
                );
                for batch in batches.flatten() {
                    let Ok(records) = batch.records() else {
                        continue;
                    };
                    for record in records.flatten() {
                        if record.offset() < position {
                            continue;
                        }
                        position = record.offset() + 1;
                        self.buffer.push(Delivered {
                            tp: tp.clone(),
                            offset: record.offset(),
                            value: String::from_utf8_lossy(record.value().unwrap_or_default())
                                .into_owned(),
                        });
                    }
                }
                self.positions.insert(tp, position);
            }
        }
    }

    pub fn handle_metadata(
        &mut self,
        client: &mut ConsumerNetworkClient,
        result: Result<Body, NetworkError>,
    ) {
        self.metadata_in_flight = false;
        match result {
            Ok(Body::Metadata(r)) => {
                client
                    .inner()
                    .update_metadata(&r, MetadataScope::ListedTopics);
                self.metadata_updates += 1;
            }
            _ => self.metadata_update_requested = true,
        }
    }
}
