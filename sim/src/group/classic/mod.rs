//! The classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, plus the
//! classic side of DescribeGroups, ListGroups, OffsetCommit and OffsetFetch), modelled on
//! Apache Kafka 4.x's `GroupMetadataManager` and `classic/ClassicGroup*`.
//!
//! [`ClassicGroupCoordinator`] is sans-IO: requests enter with a caller-chosen [`RequestId`] and
//! the virtual time; answers leave through [`ClassicGroupCoordinator::take_responses`], because
//! JoinGroup and SyncGroup are parked until a barrier completes, possibly on a later
//! [`ClassicGroupCoordinator::poll`].
//!
//! - [`config`]: broker settings with Kafka's names and defaults.
//! - `state`: the five states and their legal transitions.
//! - `member`, `group`: one member, one group (membership, votes, leader, generation).
//! - `coordinator`: the shard-wide struct, its outbox and timer dispatch.
//! - `rebalance`: join barrier, initial delay, generation completion, assignment propagation.
//! - `join`, `sync`, `heartbeat`, `leave`, `describe`, `offset_commit`: one request each.

pub mod config;
mod coordinator;
mod describe;
mod expiration;
mod group;
mod heartbeat;
mod join;
mod leave;
mod member;
mod migration;
mod offset_commit;
mod rebalance;
mod state;
mod sync;
mod timers;

#[cfg(test)]
mod tests;

pub use config::ClassicGroupConfig;
pub use coordinator::{ClassicGroupCoordinator, ClassicResponse, RequestId};
pub use group::ClassicGroup;
pub use member::{ClassicGroupMember, MemberProtocol};
pub use state::ClassicGroupState;
