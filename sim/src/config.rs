//! Cluster-wide settings, named after the Kafka broker configs they stand for.

use std::collections::BTreeMap;

use crate::kafka_version::KafkaVersion;
use crate::sasl::SaslServerConfig;

/// Settings shared by every broker of a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// The cluster id every Metadata response carries.
    pub cluster_id: String,
    /// Seeds the controller's randomness (topic ids); fetch sessions and fault probabilities
    /// draw from their own seeded sources derived from it.
    pub seed: u64,
    /// `offsets.topic.num.partitions` (Kafka's default is 50).
    pub offsets_partitions: i32,
    /// `offsets.topic.replication.factor`, capped at the broker count.
    pub offsets_topic_replication_factor: i16,
    /// `default.replication.factor`, capped at the broker count.
    pub default_replication_factor: i16,
    /// `num.partitions`: partitions of auto-created topics and of CreateTopics with -1.
    pub num_partitions: i32,
    /// `auto.create.topics.enable` (Kafka's default is true; ours is false so typos fail loudly).
    pub auto_create_topics_enable: bool,
    /// `max.message.bytes`: the largest batch a Produce may append.
    pub max_message_bytes: usize,
    /// Topics created at start: name → partitions.
    pub topics: BTreeMap<String, i32>,
    /// `broker.rack` per node id.
    pub racks: BTreeMap<i32, String>,
    /// How long a broker that just became a group coordinator answers
    /// `COORDINATOR_LOAD_IN_PROGRESS` (virtual time spent "replaying" `__consumer_offsets`).
    pub coordinator_load_ms: u64,
    /// A broker that becomes leader of an `__consumer_offsets` partition learns the high
    /// watermark from its followers' next fetches, so it starts out below its predecessor's:
    /// Kafka's `CoordinatorLoaderImpl` replays the whole log but leaves what lies above the high
    /// watermark uncommitted, and an OffsetFetch without `require_stable` is a read at the last
    /// committed offset (`GroupCoordinatorService.fetchOffsets`). Modelled as: what was appended
    /// in the last `coordinator_high_watermark_lag_ms` before the new shard loaded stays
    /// invisible to such fetches for as long after it loaded, or until the shard's first write
    /// commits (Kafka answers a write only once the high watermark passed it, and with it
    /// everything before). `require_stable` fetches see everything (a write operation). 0 (the
    /// default): the high watermark moves with leadership.
    pub coordinator_high_watermark_lag_ms: u64,
    /// `max.incremental.fetch.session.cache.slots`.
    pub fetch_session_cache_slots: usize,
    /// Followers lag behind acks=0/1 produces: those appends stay above the high watermark (the
    /// leader's unreplicated tail, invisible to consumers) until an acks=all produce finds the
    /// followers caught up, or a leader change truncates them. Off (the default), replication
    /// is instantaneous and every append advances the high watermark.
    pub lagging_followers: bool,
    /// `replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector`
    /// (KIP-392): a leader answers a consumer's fetch from a rack that has an in-sync follower
    /// (but not the leader) with that follower as `preferred_read_replica`, and followers serve
    /// consumers' fetches (v11+) up to the high watermark. Off (the default, as Kafka's
    /// `replica.selector.class` is unset), only leaders serve fetches. (Kafka lets v11+
    /// consumers fetch from followers either way; the model keeps follower reads behind this
    /// switch so that a fetch to a follower keeps meaning NOT_LEADER_OR_FOLLOWER elsewhere.)
    pub rack_aware_replica_selector: bool,
    /// The Kafka release every broker runs unless `broker_versions` says otherwise: what its
    /// ApiVersions lists and which versions it accepts.
    pub kafka_version: KafkaVersion,
    /// Per node id, the release a broker starts on (a cluster mid-upgrade).
    pub broker_versions: BTreeMap<i32, KafkaVersion>,
    /// The listener's security protocol, `sasl.enabled.mechanisms`, `connections.max.reauth.ms`
    /// and the users' credentials; PLAINTEXT by default. Changed at run time by the SASL faults.
    pub sasl: SaslServerConfig,
    /// The port brokers advertise in Metadata, if not the one they are bootstrapped through
    /// (a second listener, as a cluster behind a bootstrap address or load balancer whose
    /// brokers are reached directly on another). `None`: the bootstrap listener is advertised.
    /// Moved at run time by `Fault::MoveListeners`.
    pub advertised_port: Option<u16>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            cluster_id: "sim-cluster-0000000000".to_owned(),
            seed: 0,
            offsets_partitions: 3,
            offsets_topic_replication_factor: 3,
            default_replication_factor: 3,
            num_partitions: 1,
            auto_create_topics_enable: false,
            max_message_bytes: 1_048_588,
            topics: BTreeMap::new(),
            racks: BTreeMap::new(),
            coordinator_load_ms: 0,
            coordinator_high_watermark_lag_ms: 0,
            fetch_session_cache_slots: 1000,
            lagging_followers: false,
            rack_aware_replica_selector: false,
            kafka_version: KafkaVersion::default(),
            broker_versions: BTreeMap::new(),
            sasl: SaslServerConfig::default(),
            advertised_port: None,
        }
    }
}

impl ClusterConfig {
    /// `offsets.topic.replication.factor` for a cluster of `brokers`.
    pub fn offsets_replication_factor(&self, brokers: usize) -> i16 {
        cap(self.offsets_topic_replication_factor, brokers)
    }

    /// `default.replication.factor` for a cluster of `brokers`.
    pub fn default_replication_factor(&self, brokers: usize) -> i16 {
        cap(self.default_replication_factor, brokers)
    }
}

fn cap(factor: i16, brokers: usize) -> i16 {
    factor
        .min(i16::try_from(brokers).unwrap_or(i16::MAX))
        .max(1)
}
