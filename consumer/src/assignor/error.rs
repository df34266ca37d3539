//! Errors of assignor selection, assignment and the ConsumerProtocol wire format.

/// What went wrong selecting an assignor or computing an assignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignorError {
    /// A `partition.assignment.strategy` entry that names no known assignor.
    #[error("unknown partition assignor '{name}' (expected range, roundrobin, sticky, cooperative-sticky or their Java class names)")]
    UnknownAssignor {
        /// The configured name.
        name: String,
    },
    /// Two `partition.assignment.strategy` entries resolve to the same assignor; the group could
    /// not tell them apart.
    #[error("the assignor name '{name}' is used in more than one assignor")]
    DuplicateAssignorName {
        /// The assignor's protocol name.
        name: String,
    },
    /// The assignment algorithm reached a state its invariants rule out (where Java throws
    /// `IllegalStateException`). A bug, reported instead of a panic so the leader can fail the
    /// rebalance rather than the process.
    #[error("{assignor} assignor invariant violated: {detail}")]
    InvariantViolated {
        /// The assignor's protocol name.
        assignor: &'static str,
        /// What was found.
        detail: String,
    },
}

/// Which ConsumerProtocol message an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerProtocolMessage {
    /// `ConsumerProtocolSubscription`, carried in JoinGroup.
    Subscription,
    /// `ConsumerProtocolAssignment`, carried in SyncGroup.
    Assignment,
}

impl std::fmt::Display for ConsumerProtocolMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Subscription => "subscription",
            Self::Assignment => "assignment",
        })
    }
}

/// Bytes that are not a valid ConsumerProtocol subscription or assignment (Java's
/// `SchemaException`), or a value that cannot be encoded. No variant comes from a panic path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsumerProtocolError {
    /// Fewer than the two bytes of the version prefix.
    #[error("consumer protocol {message}: {len} bytes are too short for the version header")]
    ShortHeader {
        /// The message being read.
        message: ConsumerProtocolMessage,
        /// The buffer's length.
        len: usize,
    },
    /// A negative version (newer versions are read as the newest one we know, as in Java).
    #[error("unsupported consumer protocol {message} version {version}")]
    UnsupportedVersion {
        /// The message being read.
        message: ConsumerProtocolMessage,
        /// The version read.
        version: i16,
    },
    /// The bytes end before a field does.
    #[error("consumer protocol {message} v{version}: {field} needs {needed} bytes at offset {offset}, only {remaining} remain")]
    Truncated {
        /// The message being read.
        message: ConsumerProtocolMessage,
        /// The version it is read at.
        version: i16,
        /// The field being read.
        field: &'static str,
        /// Its offset in the body (after the version prefix).
        offset: usize,
        /// Bytes the field needs (for an array, its announced count times the smallest element).
        needed: usize,
        /// Bytes left.
        remaining: usize,
    },
    /// A negative length (other than the -1 of a nullable field) or null where the schema
    /// forbids it.
    #[error("consumer protocol {message} v{version}: {field} has invalid length {length} at offset {offset}")]
    InvalidLength {
        /// The message being read.
        message: ConsumerProtocolMessage,
        /// The version it is read at.
        version: i16,
        /// The field being read.
        field: &'static str,
        /// Its offset in the body.
        offset: usize,
        /// The length read.
        length: i32,
    },
    /// Structurally sound bytes that still do not decode (e.g. a string that is not UTF-8).
    #[error("consumer protocol {message} v{version} does not decode: {detail}")]
    Malformed {
        /// The message being read.
        message: ConsumerProtocolMessage,
        /// The version it is read at.
        version: i16,
        /// The decoder's description.
        detail: String,
    },
    /// A value that cannot be encoded (e.g. a string longer than 32767 bytes).
    #[error("cannot encode consumer protocol {message} v{version}: {detail}")]
    Encode {
        /// The message being written.
        message: ConsumerProtocolMessage,
        /// The version chosen.
        version: i16,
        /// What went wrong.
        detail: String,
    },
}
