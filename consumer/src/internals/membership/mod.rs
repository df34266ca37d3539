//! Group membership on the background side: who this member is in the group, when it joins,
//! and the rebalance steps that run the application's listener (via callback-needed events).
//!
//! The classic protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) lives in
//! [`classic`]; the KIP-848 protocol plugs into the same seam: the loop asks the manager for
//! requests, routes responses and callback completions to it, and hands the commit manager the
//! [`MemberIdentity`] to stamp commits with.

pub(crate) mod classic;
mod heartbeat;
mod state;

pub(crate) use classic::ClassicMembershipManager;
pub(crate) use state::MemberState;

/// What a commit needs to know about the member (Java's `Generation` plus the state checks of
/// `generationIfStable` / `rebalanceInProgress`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberIdentity {
    /// The generation (classic) the member belongs to, -1 outside a generation.
    pub generation_id: i32,
    /// The member id the coordinator gave, empty before the first join.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Whether the member is stable in its generation: only then may it commit.
    pub stable: bool,
    /// Whether a rebalance is under way (commits then fail with REBALANCE_IN_PROGRESS rather
    /// than COMMIT_FAILED, telling the caller to poll and retry).
    pub rebalancing: bool,
}
