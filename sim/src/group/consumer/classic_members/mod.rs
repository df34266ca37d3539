//! Classic-protocol members inside a consumer group: Kafka's `classicGroupJoinToConsumerGroup`,
//! `classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup` and
//! `classicGroupLeaveToConsumerGroup`.
//!
//! Such a member is a [`super::ConsumerGroupMember`] with `classic` metadata. The server assignor
//! computes its assignment like anyone else's; the classic requests are only its transport:
//! - JoinGroup updates its subscription (decoded from the embedded `ConsumerProtocolSubscription`)
//!   and reconciles it one step with the partitions it reports owning, answering at once with
//!   the member epoch as generation and no leader, so the member never assigns;
//! - SyncGroup hands it its current assignment;
//! - Heartbeat answers REBALANCE_IN_PROGRESS whenever it must rejoin to move on (group epoch
//!   ahead of it, partitions to revoke, or released partitions to pick up);
//! - LeaveGroup fences it (and may turn the group back into a classic group).
//!
//! Timers: its own session timeout, a sync deadline after each join and a rejoin deadline after
//! each REBALANCE_IN_PROGRESS, both its rebalance timeout; no consumer-protocol rebalance timer.

mod heartbeat;
mod join;
mod leave;
mod sync;
mod validate;
