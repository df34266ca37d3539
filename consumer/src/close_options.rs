//! How [`Consumer::close_with`](crate::Consumer::close_with) ends the consumer (Java's
//! `CloseOptions`, KIP-1092): how long it may take, and whether the member leaves its group.

use std::time::Duration;

/// What a closing member does about its group membership (Java's
/// `CloseOptions.GroupMembershipOperation`). Either way the application's rebalance listener
/// sees the partitions revoked (or lost) first, and auto-commit commits what was consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum GroupMembershipOperation {
    /// Dynamic members leave; static members (`group.instance.id`) keep their place for the
    /// session timeout, so a restart within it gets the same partitions back without a
    /// rebalance of the others.
    #[default]
    Default,
    /// Leave the group now, static members too: their partitions move at once instead of
    /// waiting for the session timeout (a static member scaled down for good).
    LeaveGroup,
    /// Stay in the group until the session times out, dynamic members too: no LeaveGroup
    /// (classic) or leave heartbeat (consumer protocol) is sent, so a quick restart does not
    /// rebalance the group twice. A static member of the consumer protocol still says it is
    /// gone temporarily (epoch -2), which keeps its place.
    RemainInGroup,
}

/// Options for [`Consumer::close_with`](crate::Consumer::close_with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseOptions {
    /// The whole close, commits and the leave included, takes at most this long.
    pub timeout: Duration,
    /// Leave the group or remain in it.
    pub group_membership_operation: GroupMembershipOperation,
}

impl CloseOptions {
    /// Java's default close timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// The defaults: 30 s, [`GroupMembershipOperation::Default`].
    pub fn new() -> Self {
        Self {
            timeout: Self::DEFAULT_TIMEOUT,
            group_membership_operation: GroupMembershipOperation::Default,
        }
    }

    /// With `timeout` instead.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// With `operation` instead.
    pub fn group_membership_operation(mut self, operation: GroupMembershipOperation) -> Self {
        self.group_membership_operation = operation;
        self
    }
}

impl Default for CloseOptions {
    fn default() -> Self {
        Self::new()
    }
}
