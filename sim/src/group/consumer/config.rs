//! Broker settings of the consumer group protocol, with Kafka's names and defaults.

use super::assignor::ServerAssignor;
use crate::group::migration::ConsumerGroupMigrationPolicy;

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
        }
    }
}

impl ConsumerGroupConfig {
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
