//! The Kafka wire protocol below the message structs: framing, request/response encoding and
//! API version negotiation.
//!
//! Message structs come from the `kafka-protocol` crate, which does no I/O; everything between
//! those structs and a byte stream lives here, free of I/O itself so it can be tested without a
//! socket.

pub mod codec;
pub mod error;
pub mod frame;
pub mod versions;

use std::fmt;

use kafka_protocol::messages::ApiKey;

pub use error::ProtocolError;
/// Kafka's error codes with names and retriability, reused from `kafka-protocol`.
pub use kafka_protocol::error::ResponseError;
pub use versions::{ApiVersionsTable, UnsupportedApi};

/// A request type's API, printed by name (`Fetch`, `Metadata`) in errors and traces.
///
/// Holds the raw key so a key we do not know (read off the wire) still prints, as `ApiKey(n)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Api(pub i16);

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match ApiKey::try_from(self.0) {
            Ok(key) => write!(f, "{key:?}"),
            Err(()) => write!(f, "ApiKey({})", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_prints_its_name_or_its_number() {
        assert_eq!(Api(1).to_string(), "Fetch");
        assert_eq!(Api(68).to_string(), "ConsumerGroupHeartbeat");
        assert_eq!(Api(-7).to_string(), "ApiKey(-7)");
    }
}
