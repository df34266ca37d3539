//! Timer keys of the classic coordinator, mirroring Kafka's string keys
//! (`heartbeat-<group>-<member>`, `join-<group>`, `sync-<group>`).
//!
//! As in Kafka, the new-member join timeout and the pending member's MEMBER_ID_REQUIRED expiry
//! reuse the member's heartbeat key: whichever was scheduled last is the one that counts.

/// Which timeout a scheduled deadline stands for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClassicTimerKey {
    /// Session expiry (or new-member join timeout, or pending-member expiry) of one member.
    Heartbeat { group_id: String, member_id: String },
    /// The join barrier of a group: initial-rebalance delay or rebalance timeout.
    Join { group_id: String },
    /// The deadline for every member of a new generation to send SyncGroup.
    Sync { group_id: String },
}

impl ClassicTimerKey {
    pub fn heartbeat(group_id: &str, member_id: &str) -> Self {
        Self::Heartbeat {
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
        }
    }

    pub fn join(group_id: &str) -> Self {
        Self::Join {
            group_id: group_id.to_owned(),
        }
    }

    pub fn sync(group_id: &str) -> Self {
        Self::Sync {
            group_id: group_id.to_owned(),
        }
    }
}
