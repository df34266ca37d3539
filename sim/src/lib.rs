//! The simulated Kafka cluster: brokers that speak the Kafka wire protocol over (simulated) TCP,
//! a group coordinator modelled on Apache Kafka's, and seeded fault injection.
//!
//! Built up by the "Simulated Kafka cluster" issue. Present so far: the group coordinator's
//! sans-IO state machines in [`group`]; the brokers, their wire front end and the fault plans
//! come next.

pub mod check;
pub mod group;
pub mod history;
