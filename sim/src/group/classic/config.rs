//! The classic group coordinator's configuration, named and defaulted as Kafka's broker configs.

/// Broker settings that shape classic group behaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicGroupConfig {
    /// `group.min.session.timeout.ms`: JoinGroup below this gets INVALID_SESSION_TIMEOUT.
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: JoinGroup above this gets INVALID_SESSION_TIMEOUT.
    pub group_max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long a rebalance leaving Empty waits for more
    /// members before completing, so a fleet starting together forms one generation.
    pub group_initial_rebalance_delay_ms: i32,
    /// `group.max.size`: joins beyond this get GROUP_MAX_SIZE_REACHED (Kafka: unbounded).
    pub group_max_size: usize,
    /// `CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`: a new member parked in JoinGroup cannot
    /// heartbeat, so it is timed out after this instead of its session timeout.
    pub group_new_member_join_timeout_ms: i32,
    /// `offset.metadata.max.bytes`: longer commit metadata gets OFFSET_METADATA_TOO_LARGE.
    pub offset_metadata_max_bytes: usize,
}

impl Default for ClassicGroupConfig {
    fn default() -> Self {
        Self {
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_max_size: usize::MAX,
            group_new_member_join_timeout_ms: 300_000,
            offset_metadata_max_bytes: 4_096,
        }
    }
}
