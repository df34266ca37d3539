//! Errors in bytes received from (or about to be sent to) a broker.

use super::Api;

/// What was wrong with a frame or a message. Every variant names the problem precisely enough to
/// find it in a packet capture; none is produced by a panic path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// A frame's i32 length prefix was negative.
    #[error("malformed frame: negative length prefix {length}")]
    NegativeFrameLength {
        /// The length read off the wire.
        length: i32,
    },
    /// A frame announced more bytes than we accept (`max_response_size_bytes`).
    #[error("malformed frame: length prefix {size_bytes} bytes exceeds the maximum of {max_bytes} bytes")]
    FrameTooLarge {
        /// The announced frame size.
        size_bytes: usize,
        /// The configured limit.
        max_bytes: usize,
    },
    /// The stream ended inside a frame.
    #[error("truncated response: the connection ended after {received_bytes} of {expected_bytes} bytes of a frame")]
    TruncatedFrame {
        /// Bytes the frame announced (its length prefix plus 4), or 4 when even the prefix was cut.
        expected_bytes: usize,
        /// Bytes that had arrived.
        received_bytes: usize,
    },
    /// A response frame too short to hold a correlation id.
    #[error("malformed response: a {frame_bytes}-byte frame is too short for a response header")]
    ShortResponseHeader {
        /// The frame's length.
        frame_bytes: usize,
    },
    /// A response whose correlation id is not the oldest in-flight request's. Kafka answers in
    /// order on a connection, so this means the stream is out of step.
    #[error("unexpected correlation id {received} (expected {})", match .expected { Some(c) => c.to_string(), None => "none: nothing in flight".to_owned() })]
    UnexpectedCorrelationId {
        /// The oldest in-flight request's correlation id, if any was in flight.
        expected: Option<i32>,
        /// The id the response carried.
        received: i32,
    },
    /// A response body (or header) that does not decode as the API and version we asked for.
    #[error("cannot decode {api} v{version} response: {message}")]
    Decode {
        /// The API of the request this answers.
        api: Api,
        /// The version we sent the request at.
        version: i16,
        /// `kafka-protocol`'s description of the failure.
        message: String,
    },
    /// A request that `kafka-protocol` cannot encode at the chosen version (our bug, or a field
    /// the version cannot carry).
    #[error("cannot encode {api} v{version} request: {message}")]
    Encode {
        /// The API of the request.
        api: Api,
        /// The version chosen for it.
        version: i16,
        /// What went wrong.
        message: String,
    },
}
