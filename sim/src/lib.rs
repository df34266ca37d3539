//! The simulated Kafka cluster: brokers that speak the Kafka wire protocol over (simulated) TCP,
//! a group coordinator modelled on Apache Kafka's, and seeded fault injection.
//!
//! It is built by the "Simulated Kafka cluster" issue; until then this crate holds only the
//! workspace slot so the layout and the runtime seam are in place.
