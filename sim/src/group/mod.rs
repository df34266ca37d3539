//! The group coordinator, modelled on Apache Kafka 4.x's `GroupMetadataManager`.
//!
//! Each part is a sans-IO state machine driven with the virtual time in milliseconds, so the
//! same logic answers requests inside madsim, in the real-mode local broker and in unit tests
//! with a fake clock.
//! - [`timer`]: Kafka-style keyed timers (rescheduling a key replaces its deadline).
//! - [`classic`]: the classic protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).
//! - [`consumer`]: the KIP-848 consumer protocol (ConsumerGroupHeartbeat) and its assignors.
//! - [`offsets`] and [`offset_record`]: committed offsets, in memory and as log records.
//! - [`shard`]: all of the above as one `__consumer_offsets` partition's coordinator, the
//!   [`crate::coordinator::GroupShard`] the broker hosts.

pub mod classic;
pub mod consumer;
#[cfg(test)]
mod delete_tests;
#[cfg(test)]
mod deleted_topic_tests;
pub mod group_load;
pub mod group_record;
pub mod list;
pub mod member_id;
pub mod migration;
#[cfg(test)]
mod migration_tests;
#[cfg(test)]
mod move_tests;
#[cfg(test)]
mod offset_delete_tests;
pub mod offset_record;
pub mod offsets;
pub mod offsets_retention;
#[cfg(test)]
mod offsets_retention_tests;
pub mod shard;
#[cfg(test)]
mod shard_tests;
pub mod timer;
