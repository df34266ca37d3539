//! A refused request: Kafka's `ApiException` as an error code plus message.

use kafka_protocol::error::ResponseError;

/// The error code and message a refused request is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupError {
    /// The Kafka error.
    pub error: ResponseError,
    /// Kafka's exception message, sent as `ErrorMessage`.
    pub message: String,
}

impl GroupError {
    /// `error` with `message`.
    pub fn new(error: ResponseError, message: impl Into<String>) -> Self {
        Self {
            error,
            message: message.into(),
        }
    }

    /// INVALID_REQUEST with `message`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ResponseError::InvalidRequest, message)
    }
}
