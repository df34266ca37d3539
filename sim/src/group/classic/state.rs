//! The classic group states and their legal transitions (Kafka's `ClassicGroupState`).

use std::fmt;

/// A classic group's state. The names print as Kafka prints them in DescribeGroups/ListGroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClassicGroupState {
    /// No members; offsets may still be committed by "simple" (unmanaged) consumers.
    Empty,
    /// Waiting for every member to (re)join; JoinGroup requests are parked.
    PreparingRebalance,
    /// The generation is formed; waiting for the leader's SyncGroup carrying the assignment.
    CompletingRebalance,
    /// Assignment distributed; members heartbeat.
    Stable,
    /// The group's metadata is gone from this coordinator (the shard was unloaded).
    Dead,
}

impl ClassicGroupState {
    /// Kafka's display name ("PreparingRebalance", ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
            Self::Dead => "Dead",
        }
    }

    /// Whether a group in `previous` may move to `self`, per `ClassicGroupState`'s static table.
    pub fn is_valid_previous(self, previous: Self) -> bool {
        use ClassicGroupState::*;
        match self {
            Empty => previous == PreparingRebalance,
            PreparingRebalance => matches!(previous, Stable | CompletingRebalance | Empty),
            CompletingRebalance => previous == PreparingRebalance,
            Stable => previous == CompletingRebalance,
            Dead => true,
        }
    }
}

impl fmt::Display for ClassicGroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
