//! Broker settings of the consumer group protocol, with Kafka's names and defaults.

use super::assignor::ServerAssignor;
use crate::group::migration::ConsumerGroupMigrationPolicy;
use crate::kafka_version::KafkaVersion;

/// The `group.consumer.*` broker configs (`GroupCoordinatorConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.heartbeat.interval.ms`: returned to members in every heartbeat response.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms`: a member that does not heartbeat for this long is
    /// fenced.
    pub session_timeout_ms: i32,
    /// `group.consumer.max.size`: members beyond this are refused with GROUP_MAX_SIZE_REACHED.
    pub max_size: usize,
    /// `group.consumer.assignors`: the server assignors members may name; the first is the
    /// default used when no member names one.
    pub assignors: Vec<ServerAssignor>,
    /// `group.consumer.migration.policy`: which online conversions between classic and
    /// consumer groups are allowed (both ways by default).
    pub migration_policy: ConsumerGroupMigrationPolicy,
    /// `group.classic.max.size` as the downgrade sees it (`validateOnlineDowngrade*`): a group
    /// with more remaining members stays a consumer group. The shard copies the classic
    /// coordinator's `group_max_size` here.
    pub classic_group_max_size: usize,
    /// The release of the broker hosting the coordinator: which of its behaviours apply (the
    /// shard sets it from its broker when it loads).
    pub kafka_version: KafkaVersion,
    /// `group.consumer.assignment.interval.ms` (Kafka 4.4, default 1000): the least time
    /// between two target assignment computations of a group. Releases before 4.4 ignore it
    /// and compute on every heartbeat that finds the group epoch ahead of the assignment.
    pub assignment_interval_ms: u64,
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        Self {
            heartbeat_interval_ms: 5_000,
            session_timeout_ms: 45_000,
            max_size: i32::MAX as usize,
            assignors: vec![ServerAssignor::Uniform, ServerAssignor::Range],
            migration_policy: ConsumerGroupMigrationPolicy::default(),
            classic_group_max_size: usize::MAX,
            kafka_version: KafkaVersion::default(),
            assignment_interval_ms: 1_000,
        }
    }
}

impl ConsumerGroupConfig {
    /// Whether a group whose target assignment was last computed at `last_ms` (`None`: never,
    /// or not known) may compute the next one at `now_ms`: Kafka 4.4's
    /// `canComputeNextTargetAssignment` (an interval of 0 is its escape hatch); always before
    /// 4.4. A group that may not yet keeps its last target assignment until a heartbeat
    /// arrives once the interval has passed: 4.4 sets no timer for it.
    pub fn can_compute_next_target_assignment(&self, last_ms: Option<u64>, now_ms: u64) -> bool {
        if !self.kafka_version.batches_consumer_group_assignments() {
            return true;
        }
        match last_ms {
            None => true,
            Some(_) if self.assignment_interval_ms == 0 => true,
            Some(last_ms) => now_ms >= last_ms.saturating_add(self.assignment_interval_ms),
        }
    }

    /// The group epoch and target assignment epoch of a group created now: 1 from Kafka 4.4
    /// on (KAFKA-20268, its first computed assignment is epoch 2), 0 before.
    pub fn initial_group_epoch(&self) -> i32 {
        i32::from(self.kafka_version.consumer_groups_start_at_epoch_one())
    }

    /// The assignor a group uses when none of its members names one.
    pub fn default_assignor(&self) -> ServerAssignor {
        self.assignors
            .first()
            .copied()
            .unwrap_or(ServerAssignor::Uniform)
    }

    /// The configured assignor called `name`, if any.
    pub fn assignor(&self, name: &str) -> Option<ServerAssignor> {
        self.assignors.iter().copied().find(|a| a.name() == name)
    }
}
