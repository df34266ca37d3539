//! Online migration between the classic and the consumer (KIP-848) group protocols, as Kafka
//! 4.x's `GroupMetadataManager` does it.
//!
//! - [`policy`], `group.consumer.migration.policy`.
//! - [`consumer_protocol`], the embedded consumer protocol a mixed group has to read and write.
//! - `upgrade`: a non-empty classic group becomes a consumer group when a ConsumerGroupHeartbeat
//!   joins it (`validateOnlineUpgrade`, `convertToConsumerGroup`,
//!   `ConsumerGroup.fromClassicGroup`).
//! - `downgrade`: a consumer group left with classic members only becomes a classic group
//!   again (`convertToClassicGroup`, `ClassicGroup.fromConsumerGroup`).
//!
//! The classic members of a consumer group are served by the consumer coordinator
//! (`crate::group::consumer::classic_members`).

pub mod consumer_protocol;
pub mod downgrade;
pub mod policy;
pub mod upgrade;

pub use consumer_protocol::CONSUMER_PROTOCOL_TYPE;
pub use policy::ConsumerGroupMigrationPolicy;
