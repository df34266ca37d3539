//! The KIP-848 consumer group protocol, modelled on Apache Kafka 4.x's `GroupMetadataManager`
//! (`consumerGroupHeartbeat`, `consumerGroupLeave`, the session and rebalance timeouts) and its
//! `modern/consumer` package.
//!
//! - [`coordinator`]: the per-shard state machine, timers and fencing.
//! - `heartbeat`, `describe`, `offset_validation`: the requests it answers.
//! - [`reconcile`]: per-member reconciliation (Kafka's `CurrentAssignmentBuilder`).
//! - [`assignor`]: the server-side `uniform` and `range` assignors.

pub mod assignment;
pub mod assignor;
mod classic_members;
pub mod config;
pub mod coordinator;
mod describe;
pub mod error;
pub mod group;
mod heartbeat;
pub mod member;
mod offset_validation;
pub mod persist;
pub mod reconcile;
pub mod topics;
pub mod validate;

#[cfg(test)]
mod tests;

pub use assignment::Assignment;
pub use assignor::ServerAssignor;
pub use config::ConsumerGroupConfig;
pub use coordinator::{ConsumerGroupCoordinator, DowngradedGroup};
pub use error::GroupError;
pub use group::{ConsumerGroup, ConsumerGroupState};
pub use member::{ClassicMemberMetadata, ConsumerGroupMember, MemberState};
pub use topics::{TopicImage, TopicsImage};
