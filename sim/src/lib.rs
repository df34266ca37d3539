//! The simulated Kafka cluster: brokers that speak the Kafka wire protocol over (simulated) TCP,
//! a group coordinator modelled on Apache Kafka's, and seeded fault injection.
//!
//! - [`controller`]: the cluster state KRaft would hold (metadata image) plus the durable logs.
//! - [`log`]: one partition's log.
//! - [`topic_config`]: topic configs by Kafka's names (defaults, checks, what the simulator
//!   honours).
//! - [`kafka_version`]: the Kafka release each broker runs (its ApiVersions table).
//! - [`broker`]: the wire front end, one file per API under `broker/api/`.
//! - [`coordinator`]: the seam group coordinators plug into ([`coordinator::GroupShard`]).
//! - [`group`]: the group coordinators' sans-IO state machines.
//! - [`fault`]: fault data ([`fault::Fault`]) and the brokers' fault hooks.
//! - [`sasl`]: SASL on the listeners (PLAIN, SCRAM, OAUTHBEARER, KIP-368 session lifetimes).
//! - [`swarm`], [`shrink`] and [`buggify`]: random fault plans per seed, their minimisation,
//!   and two-phase perturbation sites in the brokers.
//! - [`history`] and [`check`]: what happened, on virtual time, and the invariants it must keep.
//! - `cluster` (simulation) and `real` (real tokio): building and running a cluster.

pub mod broker;
pub mod buggify;
pub mod check;
#[cfg(madsim)]
pub mod cluster;
pub mod config;
pub mod controller;
pub mod coordinator;
pub mod fault;
pub mod group;
pub mod history;
pub mod kafka_version;
pub mod log;
#[cfg(not(madsim))]
pub mod real;
pub mod sasl;
pub mod shrink;
pub mod swarm;
pub mod topic_config;
