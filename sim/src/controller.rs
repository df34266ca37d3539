//! The controller-side cluster state, playing KRaft's role: the metadata image (brokers alive,
//! topics, partition leaders, epochs, replicas, ISR) and, alongside it, the durable partition
//! logs.
//!
//! It lives outside the broker nodes (an `Arc` every broker and the fault runner share), so it
//! survives broker kills and restarts the way the metadata log and the disks do. Whatever a
//! broker keeps in memory (connections, fetch sessions, loaded coordinator shards) lives in the
//! broker task and dies with it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_consumer::rt::{Instant, SeededRng};
use rand::RngCore;
use tokio::sync::watch;
use uuid::Uuid;

use crate::config::ClusterConfig;
use crate::kafka_version::KafkaVersion;
use crate::log::PartitionLog;
use crate::sasl::{AuthEvent, AuthEventKind};
use crate::topic_config::HonouredConfigs;

/// Kafka's group offsets topic.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// `NO_LEADER`: a partition without a live leader.
pub const NO_LEADER: i32 = -1;

/// A broker as the controller knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// Registered and not fenced (its process is running).
    pub alive: bool,
}

/// One partition: who leads it at which epoch, who replicates it, and its log.
#[derive(Debug, Clone)]
pub struct PartitionState {
    /// The leader's node id, or [`NO_LEADER`].
    pub leader: i32,
    /// Bumped on every leadership change.
    pub leader_epoch: i32,
    /// Assigned replicas, preferred leader first.
    pub replicas: Vec<i32>,
    /// In-sync replicas: the live assigned replicas (replication is instantaneous here).
    pub isr: Vec<i32>,
    /// The log every replica shares up to the high watermark.
    pub log: PartitionLog,
}

/// One topic.
#[derive(Debug, Clone)]
pub struct TopicState {
    /// Its name.
    pub name: String,
    /// Its id (KIP-516).
    pub topic_id: Uuid,
    /// `__consumer_offsets` and friends.
    pub internal: bool,
    /// The configs set on the topic (Kafka's dynamic topic configs), by name, with values
    /// normalized by [`crate::topic_config::normalize`]; the rest are Kafka's defaults.
    pub configs: BTreeMap<String, String>,
    /// Partitions by index.
    pub partitions: Vec<PartitionState>,
}

impl TopicState {
    /// What the topic's configs change in the simulator.
    pub fn honoured(&self) -> HonouredConfigs {
        crate::topic_config::honoured(&self.configs)
    }
}

/// The whole image. Mutated only through [`Controller`], which publishes each change.
#[derive(Debug)]
pub struct ClusterState {
    /// Settings fixed at build time.
    pub config: ClusterConfig,
    /// Brokers by id.
    pub brokers: BTreeMap<i32, BrokerInfo>,
    /// Topics by name.
    pub topics: BTreeMap<String, TopicState>,
    rng: SeededRng,
    /// The next producer id InitProducerId hands out (Kafka's `ProducerIdManager` block).
    next_producer_id: i64,
    /// Releases brokers were upgraded (or downgraded) to, taking effect at their next start.
    upgraded: BTreeMap<i32, KafkaVersion>,
}

/// Why a topic operation failed, in Kafka's error terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicError {
    /// `TOPIC_ALREADY_EXISTS`.
    AlreadyExists,
    /// `INVALID_TOPIC_EXCEPTION`.
    InvalidName,
    /// `INVALID_PARTITIONS`.
    InvalidPartitions,
    /// `INVALID_REPLICATION_FACTOR`.
    InvalidReplicationFactor,
    /// `INVALID_REPLICA_ASSIGNMENT`.
    InvalidReplicaAssignment,
    /// `UNKNOWN_TOPIC_OR_PARTITION`.
    UnknownTopic,
    /// `INVALID_REQUEST` (e.g. deleting an internal topic).
    InvalidRequest,
    /// `INVALID_CONFIG` (a topic config Kafka would refuse).
    InvalidConfig,
}

impl ClusterState {
    /// Live broker ids, ascending.
    pub fn live_brokers(&self) -> Vec<i32> {
        self.brokers
            .values()
            .filter(|b| b.alive)
            .map(|b| b.node_id)
            .collect()
    }

    /// The topic with this id.
    pub fn topic_by_id(&self, topic_id: Uuid) -> Option<&TopicState> {
        self.topics.values().find(|t| t.topic_id == topic_id)
    }

    /// A partition by topic name and index.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionState> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get(topic)?.partitions.get(index)
    }

    /// A partition by topic name and index, mutably.
    pub fn partition_mut(&mut self, topic: &str, partition: i32) -> Option<&mut PartitionState> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get_mut(topic)?.partitions.get_mut(index)
    }

    /// Creates a topic. Replicas are placed round-robin over all registered brokers starting at
    /// a per-partition offset (like Kafka's rack-unaware assignment without its random start,
    /// for determinism); an explicit `assignment` wins.
    pub fn create_topic(
        &mut self,
        name: &str,
        num_partitions: i32,
        replication_factor: i16,
        assignment: Option<Vec<Vec<i32>>>,
    ) -> Result<Uuid, TopicError> {
        validate_topic_name(name)?;
        if self.topics.contains_key(name) {
            return Err(TopicError::AlreadyExists);
        }
        let replicas = self.place_replicas(0, num_partitions, replication_factor, assignment)?;
        let topic_id = self.new_topic_id();
        let partitions = replicas
            .into_iter()
            .map(|replicas| self.new_partition(replicas))
            .collect();
        self.topics.insert(
            name.to_owned(),
            TopicState {
                name: name.to_owned(),
                topic_id,
                internal: name == OFFSETS_TOPIC,
                configs: BTreeMap::new(),
                partitions,
            },
        );
        Ok(topic_id)
    }

    /// CreatePartitions: grows `name` to `count` partitions.
    pub fn create_partitions(
        &mut self,
        name: &str,
        count: i32,
        assignment: Option<Vec<Vec<i32>>>,
    ) -> Result<(), TopicError> {
        let topic = self.topics.get(name).ok_or(TopicError::UnknownTopic)?;
        let existing = topic.partitions.len() as i32;
        let replication_factor = topic.partitions.first().map_or(1, |p| p.replicas.len()) as i16;
        if count <= existing {
            return Err(TopicError::InvalidPartitions);
        }
        let replicas =
            self.place_replicas(existing, count - existing, replication_factor, assignment)?;
        let new: Vec<PartitionState> = replicas
            .into_iter()
            .map(|replicas| self.new_partition(replicas))
            .collect();
        if let Some(topic) = self.topics.get_mut(name) {
            topic.partitions.extend(new);
        }
        Ok(())
    }

    /// DeleteTopics: the topic and its logs are gone at once.
    pub fn delete_topic(&mut self, name: &str) -> Result<Uuid, TopicError> {
        let topic = self.topics.get(name).ok_or(TopicError::UnknownTopic)?;
        if topic.internal {
            return Err(TopicError::InvalidRequest);
        }
        let id = topic.topic_id;
        self.topics.remove(name);
        Ok(id)
    }

    /// Replaces the configs set on topic `name` (values normalized by
    /// [`crate::topic_config::normalize`]), as the controller applies `ConfigRecord`s.
    pub fn set_topic_configs(
        &mut self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), TopicError> {
        let topic = self.topics.get_mut(name).ok_or(TopicError::UnknownTopic)?;
        topic.configs = configs;
        Ok(())
    }

    fn place_replicas(
        &self,
        first_partition: i32,
        num_partitions: i32,
        replication_factor: i16,
        assignment: Option<Vec<Vec<i32>>>,
    ) -> Result<Vec<Vec<i32>>, TopicError> {
        let brokers: Vec<i32> = self.brokers.keys().copied().collect();
        if let Some(assignment) = assignment {
            let known = assignment.iter().flatten().all(|b| brokers.contains(b));
            if assignment.is_empty() || !known || assignment.iter().any(Vec::is_empty) {
                return Err(TopicError::InvalidReplicaAssignment);
            }
            return Ok(assignment);
        }
        if num_partitions <= 0 {
            return Err(TopicError::InvalidPartitions);
        }
        let rf = usize::try_from(replication_factor).unwrap_or(0);
        if rf == 0 || rf > brokers.len() {
            return Err(TopicError::InvalidReplicationFactor);
        }
        Ok((first_partition..first_partition + num_partitions)
            .map(|p| {
                (0..rf)
                    .map(|r| brokers[(p as usize + r) % brokers.len()])
                    .collect()
            })
            .collect())
    }

    /// Every broker advertises `port` from now on (`Fault::MoveListeners`).
    pub fn move_listeners(&mut self, port: u16) {
        self.config.advertised_port = Some(port);
        for broker in self.brokers.values_mut() {
            broker.port = port;
        }
    }

    fn new_partition(&self, replicas: Vec<i32>) -> PartitionState {
        let isr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|r| self.brokers.get(r).is_some_and(|b| b.alive))
            .collect();
        PartitionState {
            leader: isr.first().copied().unwrap_or(NO_LEADER),
            leader_epoch: 0,
            replicas,
            isr,
            log: PartitionLog::default(),
        }
    }

    /// A producer id never handed out before in this cluster's life.
    pub fn allocate_producer_id(&mut self) -> i64 {
        let id = self.next_producer_id;
        self.next_producer_id += 1;
        id
    }

    fn new_topic_id(&mut self) -> Uuid {
        loop {
            let id = Uuid::from_u64_pair(self.rng.next_u64(), self.rng.next_u64());
            if !id.is_nil() && self.topic_by_id(id).is_none() {
                return id;
            }
        }
    }

    /// Moves leadership of a partition to `to` (or, with `None`, to the next live in-sync
    /// replica after the current leader), bumping the leader epoch and truncating the
    /// unreplicated tail. Returns the new (leader, epoch).
    pub fn move_leader(
        &mut self,
        topic: &str,
        partition: i32,
        to: Option<i32>,
    ) -> Option<(i32, i32)> {
        let live: Vec<i32> = self.live_brokers();
        let state = self.partition_mut(topic, partition)?;
        let new_leader = match to {
            Some(to) => to,
            None => {
                let candidates: Vec<i32> = state
                    .isr
                    .iter()
                    .copied()
                    .filter(|r| live.contains(r))
                    .collect();
                let at = candidates.iter().position(|r| *r == state.leader);
                match at {
                    Some(at) => candidates[(at + 1) % candidates.len()],
                    None => candidates.first().copied().unwrap_or(NO_LEADER),
                }
            }
        };
        elect(state, new_leader);
        Some((state.leader, state.leader_epoch))
    }

    /// Sets `user`'s SASL password (PLAIN and SCRAM, salts from the cluster's seeded RNG),
    /// creating the user if needed; `kafka-configs --alter --add-config SCRAM-SHA-…`.
    pub fn sasl_set_password(&mut self, user: &str, password: &str) {
        self.config.sasl.add_user(user, password, &mut self.rng);
    }

    /// An unclean leader election of a partition: the next live replica after the leader
    /// takes over with a bumped epoch and a log `lost_records` records shorter than the high
    /// watermark ([`PartitionLog::become_unclean_leader`]). Returns the new log end.
    pub fn unclean_elect(&mut self, topic: &str, partition: i32, lost_records: i64) -> Option<i64> {
        let live = self.live_brokers();
        let state = self.partition_mut(topic, partition)?;
        let others: Vec<i32> = state
            .replicas
            .iter()
            .copied()
            .filter(|r| live.contains(r))
            .collect();
        let at = others.iter().position(|r| *r == state.leader);
        let leader = match at {
            Some(at) => others[(at + 1) % others.len()],
            None => others.first().copied().unwrap_or(state.leader),
        };
        state.leader = leader;
        state.leader_epoch += 1;
        let end = state.log.high_watermark() - lost_records.max(0);
        Some(state.log.become_unclean_leader(state.leader_epoch, end))
    }

    /// A broker stopped: it leaves every ISR, and each partition it led elects the next live
    /// in-sync replica (or goes offline), with an epoch bump.
    pub fn broker_stopped(&mut self, node_id: i32) {
        let Some(broker) = self.brokers.get_mut(&node_id) else {
            return;
        };
        broker.alive = false;
        for topic in self.topics.values_mut() {
            for state in &mut topic.partitions {
                state.isr.retain(|r| *r != node_id);
                if state.leader == node_id {
                    let next = state.isr.first().copied().unwrap_or(NO_LEADER);
                    elect(state, next);
                }
            }
        }
    }

    /// The Kafka release broker `node_id` runs (or will run at its next start).
    pub fn broker_version(&self, node_id: i32) -> KafkaVersion {
        self.upgraded
            .get(&node_id)
            .or_else(|| self.config.broker_versions.get(&node_id))
            .copied()
            .unwrap_or(self.config.kafka_version)
    }

    /// Installs `version` on broker `node_id`: it runs it from its next start (a rolling
    /// upgrade restarts each broker into the new release).
    pub fn set_broker_version(&mut self, node_id: i32, version: KafkaVersion) {
        self.upgraded.insert(node_id, version);
    }

    /// A broker (re)registered: it catches up at once and rejoins the ISR of its partitions,
    /// and takes over any of them that were offline.
    pub fn broker_started(&mut self, node_id: i32) {
        let Some(broker) = self.brokers.get_mut(&node_id) else {
            return;
        };
        broker.alive = true;
        for topic in self.topics.values_mut() {
            for state in &mut topic.partitions {
                if !state.replicas.contains(&node_id) {
                    continue;
                }
                if !state.isr.contains(&node_id) {
                    state.isr.push(node_id);
                    let order = state.replicas.clone();
                    state.isr.sort_by_key(|r| order.iter().position(|o| o == r));
                }
                if state.leader == NO_LEADER {
                    elect(state, node_id);
                }
            }
        }
    }
}

fn elect(state: &mut PartitionState, leader: i32) {
    state.leader = leader;
    state.leader_epoch += 1;
    state.log.become_leader(state.leader_epoch);
}

/// Kafka's `Topic.validate`, the same rule the consumer applies.
pub(crate) fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    if kafka_consumer::topic_name::is_valid_topic_name(name) {
        Ok(())
    } else {
        Err(TopicError::InvalidName)
    }
}

/// The shared handle: state behind a mutex plus a change counter that wakes long-polling
/// fetches and coordinator reconciliation.
#[derive(Debug, Clone)]
pub struct Controller {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<ClusterState>,
    changes: watch::Sender<u64>,
    start: Instant,
    /// The last connection id handed out, cluster-wide (see [`Controller::next_connection_id`]).
    connections: AtomicU64,
    /// Every SASL authentication event of every broker, in order.
    auth_events: Mutex<Vec<AuthEvent>>,
}

impl Controller {
    /// A controller for `config`, with brokers registered (not yet alive) at `addresses`.
    pub fn new(config: ClusterConfig, addresses: &[(i32, String, u16)]) -> Self {
        let brokers = addresses
            .iter()
            .map(|(node_id, host, port)| {
                let info = BrokerInfo {
                    node_id: *node_id,
                    host: host.clone(),
                    port: *port,
                    rack: config.racks.get(node_id).cloned(),
                    alive: true,
                };
                (*node_id, info)
            })
            .collect();
        let rng = SeededRng::seed_from_u64(config.seed);
        let mut state = ClusterState {
            config,
            brokers,
            topics: BTreeMap::new(),
            rng,
            next_producer_id: 0,
            upgraded: BTreeMap::new(),
        };
        let offsets = state.config.offsets_partitions;
        let rf = state.config.offsets_replication_factor(state.brokers.len());
        // Fresh cluster: cannot collide, the name is legal and the factor fits.
        let _ = state.create_topic(OFFSETS_TOPIC, offsets, rf, None);
        let topics = state.config.topics.clone();
        for (name, partitions) in topics {
            let rf = state.config.default_replication_factor(state.brokers.len());
            let _ = state.create_topic(&name, partitions, rf, None);
        }
        let (changes, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                changes,
                start: Instant::now(),
                connections: AtomicU64::new(0),
                auth_events: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A new id for a client connection a broker accepted: increasing in accept order across
    /// the whole cluster and across broker restarts, so a later connection always has a higher
    /// id (Kafka's `RequestContext.connectionId` names a connection; this one also orders them).
    pub fn next_connection_id(&self) -> u64 {
        self.inner.connections.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records a broker's SASL authentication event.
    pub(crate) fn record_auth(&self, broker: i32, connection_id: u64, kind: AuthEventKind) {
        let at_ms = self.now_ms();
        self.inner
            .auth_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(AuthEvent {
                at_ms,
                broker,
                connection_id,
                kind,
            });
    }

    /// Every SASL authentication event so far (handshakes, successes, failures, expired
    /// sessions closed), in order.
    pub fn auth_events(&self) -> Vec<AuthEvent> {
        self.inner
            .auth_events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the state; do not hold across an await.
    pub fn read(&self) -> MutexGuard<'_, ClusterState> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Mutates the state and publishes the change.
    pub fn update<T>(&self, f: impl FnOnce(&mut ClusterState) -> T) -> T {
        let out = f(&mut self.read());
        self.inner.changes.send_modify(|n| *n += 1);
        out
    }

    /// A receiver that wakes on every change (appends, leadership, topics).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Virtual milliseconds since the cluster was built: the coordinators' clock.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.inner.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The cluster id.
    pub fn cluster_id(&self) -> String {
        self.read().config.cluster_id.clone()
    }
}

impl Controller {
    /// Test helper: appends `batch` to a partition as its leader would (offsets assigned, high
    /// watermark advanced, fetches woken) without going through Produce.
    pub fn append(
        &self,
        topic: &str,
        partition: i32,
        batch: bytes::Bytes,
    ) -> Result<crate::log::AppendInfo, String> {
        self.append_as(topic, partition, |log, epoch, max_message_bytes| {
            log.append(batch, epoch, None, max_message_bytes)
        })
    }

    /// Test helper: [`Self::append`] of batches shaped as Kafka's log cleaner leaves them
    /// (offset gaps, empty batches; [`crate::log::PartitionLog::append_cleaned`]).
    pub fn append_cleaned(
        &self,
        topic: &str,
        partition: i32,
        batch: bytes::Bytes,
    ) -> Result<crate::log::AppendInfo, String> {
        self.append_as(topic, partition, |log, epoch, max_message_bytes| {
            log.append_cleaned(batch, epoch, max_message_bytes)
        })
    }

    /// Runs `append` on the partition's log with its leader epoch and the size limit, then
    /// advances the high watermark past what it appended (every replica shares the log).
    fn append_as(
        &self,
        topic: &str,
        partition: i32,
        append: impl FnOnce(
            &mut crate::log::PartitionLog,
            i32,
            usize,
        ) -> Result<crate::log::AppendInfo, crate::log::AppendError>,
    ) -> Result<crate::log::AppendInfo, String> {
        self.update(|state| {
            let max_message_bytes = state.config.max_message_bytes;
            let part = state
                .partition_mut(topic, partition)
                .ok_or_else(|| format!("no partition {topic}-{partition}"))?;
            let epoch = part.leader_epoch;
            let info =
                append(&mut part.log, epoch, max_message_bytes).map_err(|e| format!("{e:?}"))?;
            part.log.advance_high_watermark(info.last_offset + 1);
            Ok(info)
        })
    }
}
