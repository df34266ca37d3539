//! Kafka's protocol error codes as the consumer reports them.
//!
//! The consumer's errors carry the broker's code as an [`ErrorCode`], a type of this crate:
//! the wire-protocol library behind it can change without changing this API, and a code this
//! version does not know (from a newer broker) is kept as its number rather than lost.

use std::fmt;

use crate::protocol::ResponseError;

/// A Kafka protocol error code (Java's `org.apache.kafka.common.protocol.Errors`), as a broker
/// sent it. Each known code has a constant named as in Java, so a caller matches on
/// `Some(ErrorCode::NOT_COORDINATOR)`; [`code`](Self::code) is the number on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(i16);

impl ErrorCode {
    /// The error code `code` (any number: one this version does not know is kept as is).
    pub const fn from_i16(code: i16) -> Self {
        Self(code)
    }

    /// The number on the wire.
    pub const fn code(self) -> i16 {
        self.0
    }

    /// Whether the protocol marks the error retriable (Java's `RetriableException`
    /// subclasses); an unknown code is not.
    pub fn is_retriable(self) -> bool {
        self.response_error().is_some_and(|e| e.is_retriable())
    }

    /// The code of a decoded protocol error.
    pub(crate) const fn of(error: ResponseError) -> Self {
        Self(error.code())
    }

    /// The decoded protocol error, `None` for 0 (no error).
    pub(crate) const fn response_error(self) -> Option<ResponseError> {
        ResponseError::try_from_code(self.0)
    }

    #[doc = "The server experienced an unexpected error when processing the request."]
    pub const UNKNOWN_SERVER_ERROR: Self = Self(-1);
    #[doc = "The requested offset is not within the range of offsets maintained by the server."]
    pub const OFFSET_OUT_OF_RANGE: Self = Self(1);
    #[doc = "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt."]
    pub const CORRUPT_MESSAGE: Self = Self(2);
    #[doc = "This server does not host this topic-partition."]
    pub const UNKNOWN_TOPIC_OR_PARTITION: Self = Self(3);
    #[doc = "The requested fetch size is invalid."]
    pub const INVALID_FETCH_SIZE: Self = Self(4);
    #[doc = "There is no leader for this topic-partition as we are in the middle of a leadership election."]
    pub const LEADER_NOT_AVAILABLE: Self = Self(5);
    #[doc = "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition."]
    pub const NOT_LEADER_OR_FOLLOWER: Self = Self(6);
    #[doc = "The request timed out."]
    pub const REQUEST_TIMED_OUT: Self = Self(7);
    #[doc = "The broker is not available."]
    pub const BROKER_NOT_AVAILABLE: Self = Self(8);
    #[doc = "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition."]
    pub const REPLICA_NOT_AVAILABLE: Self = Self(9);
    #[doc = "The request included a message larger than the max message size the server will accept."]
    pub const MESSAGE_TOO_LARGE: Self = Self(10);
    #[doc = "The controller moved to another broker."]
    pub const STALE_CONTROLLER_EPOCH: Self = Self(11);
    #[doc = "The metadata field of the offset request was too large."]
    pub const OFFSET_METADATA_TOO_LARGE: Self = Self(12);
    #[doc = "The server disconnected before a response was received."]
    pub const NETWORK_EXCEPTION: Self = Self(13);
    #[doc = "The coordinator is loading and hence can't process requests."]
    pub const COORDINATOR_LOAD_IN_PROGRESS: Self = Self(14);
    #[doc = "The coordinator is not available."]
    pub const COORDINATOR_NOT_AVAILABLE: Self = Self(15);
    #[doc = "This is not the correct coordinator."]
    pub const NOT_COORDINATOR: Self = Self(16);
    #[doc = "The request attempted to perform an operation on an invalid topic."]
    pub const INVALID_TOPIC_EXCEPTION: Self = Self(17);
    #[doc = "The request included message batch larger than the configured segment size on the server."]
    pub const RECORD_LIST_TOO_LARGE: Self = Self(18);
    #[doc = "Messages are rejected since there are fewer in-sync replicas than required."]
    pub const NOT_ENOUGH_REPLICAS: Self = Self(19);
    #[doc = "Messages are written to the log, but to fewer in-sync replicas than required."]
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: Self = Self(20);
    #[doc = "Produce request specified an invalid value for required acks."]
    pub const INVALID_REQUIRED_ACKS: Self = Self(21);
    #[doc = "Specified group generation id is not valid."]
    pub const ILLEGAL_GENERATION: Self = Self(22);
    #[doc = "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list."]
    pub const INCONSISTENT_GROUP_PROTOCOL: Self = Self(23);
    #[doc = "The configured groupId is invalid."]
    pub const INVALID_GROUP_ID: Self = Self(24);
    #[doc = "The coordinator is not aware of this member."]
    pub const UNKNOWN_MEMBER_ID: Self = Self(25);
    #[doc = "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms)."]
    pub const INVALID_SESSION_TIMEOUT: Self = Self(26);
    #[doc = "The group is rebalancing, so a rejoin is needed."]
    pub const REBALANCE_IN_PROGRESS: Self = Self(27);
    #[doc = "The committing offset data size is not valid."]
    pub const INVALID_COMMIT_OFFSET_SIZE: Self = Self(28);
    #[doc = "Topic authorization failed."]
    pub const TOPIC_AUTHORIZATION_FAILED: Self = Self(29);
    #[doc = "Group authorization failed."]
    pub const GROUP_AUTHORIZATION_FAILED: Self = Self(30);
    #[doc = "Cluster authorization failed."]
    pub const CLUSTER_AUTHORIZATION_FAILED: Self = Self(31);
    #[doc = "The timestamp of the message is out of acceptable range."]
    pub const INVALID_TIMESTAMP: Self = Self(32);
    #[doc = "The broker does not support the requested SASL mechanism."]
    pub const UNSUPPORTED_SASL_MECHANISM: Self = Self(33);
    #[doc = "Request is not valid given the current SASL state."]
    pub const ILLEGAL_SASL_STATE: Self = Self(34);
    #[doc = "The version of API is not supported."]
    pub const UNSUPPORTED_VERSION: Self = Self(35);
    #[doc = "Topic with this name already exists."]
    pub const TOPIC_ALREADY_EXISTS: Self = Self(36);
    #[doc = "Number of partitions is below 1."]
    pub const INVALID_PARTITIONS: Self = Self(37);
    #[doc = "Replication factor is below 1 or larger than the number of available brokers."]
    pub const INVALID_REPLICATION_FACTOR: Self = Self(38);
    #[doc = "Replica assignment is invalid."]
    pub const INVALID_REPLICA_ASSIGNMENT: Self = Self(39);
    #[doc = "Configuration is invalid."]
    pub const INVALID_CONFIG: Self = Self(40);
    #[doc = "This is not the correct controller for this cluster."]
    pub const NOT_CONTROLLER: Self = Self(41);
    #[doc = "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details."]
    pub const INVALID_REQUEST: Self = Self(42);
    #[doc = "The message format version on the broker does not support the request."]
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: Self = Self(43);
    #[doc = "Request parameters do not satisfy the configured policy."]
    pub const POLICY_VIOLATION: Self = Self(44);
    #[doc = "The broker received an out of order sequence number."]
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: Self = Self(45);
    #[doc = "The broker received a duplicate sequence number."]
    pub const DUPLICATE_SEQUENCE_NUMBER: Self = Self(46);
    #[doc = "Producer attempted to produce with an old epoch."]
    pub const INVALID_PRODUCER_EPOCH: Self = Self(47);
    #[doc = "The producer attempted a transactional operation in an invalid state."]
    pub const INVALID_TXN_STATE: Self = Self(48);
    #[doc = "The producer attempted to use a producer id which is not currently assigned to its transactional id."]
    pub const INVALID_PRODUCER_ID_MAPPING: Self = Self(49);
    #[doc = "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms)."]
    pub const INVALID_TRANSACTION_TIMEOUT: Self = Self(50);
    #[doc = "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing."]
    pub const CONCURRENT_TRANSACTIONS: Self = Self(51);
    #[doc = "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer."]
    pub const TRANSACTION_COORDINATOR_FENCED: Self = Self(52);
    #[doc = "Transactional Id authorization failed."]
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Self = Self(53);
    #[doc = "Security features are disabled."]
    pub const SECURITY_DISABLED: Self = Self(54);
    #[doc = "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest."]
    pub const OPERATION_NOT_ATTEMPTED: Self = Self(55);
    #[doc = "Disk error when trying to access log file on the disk."]
    pub const KAFKA_STORAGE_ERROR: Self = Self(56);
    #[doc = "The user-specified log directory is not found in the broker config."]
    pub const LOG_DIR_NOT_FOUND: Self = Self(57);
    #[doc = "SASL Authentication failed."]
    pub const SASL_AUTHENTICATION_FAILED: Self = Self(58);
    #[doc = "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception."]
    pub const UNKNOWN_PRODUCER_ID: Self = Self(59);
    #[doc = "A partition reassignment is in progress."]
    pub const REASSIGNMENT_IN_PROGRESS: Self = Self(60);
    #[doc = "Delegation Token feature is not enabled."]
    pub const DELEGATION_TOKEN_AUTH_DISABLED: Self = Self(61);
    #[doc = "Delegation Token is not found on server."]
    pub const DELEGATION_TOKEN_NOT_FOUND: Self = Self(62);
    #[doc = "Specified Principal is not valid Owner/Renewer."]
    pub const DELEGATION_TOKEN_OWNER_MISMATCH: Self = Self(63);
    #[doc = "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels."]
    pub const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: Self = Self(64);
    #[doc = "Delegation Token authorization failed."]
    pub const DELEGATION_TOKEN_AUTHORIZATION_FAILED: Self = Self(65);
    #[doc = "Delegation Token is expired."]
    pub const DELEGATION_TOKEN_EXPIRED: Self = Self(66);
    #[doc = "Supplied principalType is not supported."]
    pub const INVALID_PRINCIPAL_TYPE: Self = Self(67);
    #[doc = "The group is not empty."]
    pub const NON_EMPTY_GROUP: Self = Self(68);
    #[doc = "The group id does not exist."]
    pub const GROUP_ID_NOT_FOUND: Self = Self(69);
    #[doc = "The fetch session ID was not found."]
    pub const FETCH_SESSION_ID_NOT_FOUND: Self = Self(70);
    #[doc = "The fetch session epoch is invalid."]
    pub const INVALID_FETCH_SESSION_EPOCH: Self = Self(71);
    #[doc = "There is no listener on the leader broker that matches the listener on which metadata request was processed."]
    pub const LISTENER_NOT_FOUND: Self = Self(72);
    #[doc = "Topic deletion is disabled."]
    pub const TOPIC_DELETION_DISABLED: Self = Self(73);
    #[doc = "The leader epoch in the request is older than the epoch on the broker."]
    pub const FENCED_LEADER_EPOCH: Self = Self(74);
    #[doc = "The leader epoch in the request is newer than the epoch on the broker."]
    pub const UNKNOWN_LEADER_EPOCH: Self = Self(75);
    #[doc = "The requesting client does not support the compression type of given partition."]
    pub const UNSUPPORTED_COMPRESSION_TYPE: Self = Self(76);
    #[doc = "Broker epoch has changed."]
    pub const STALE_BROKER_EPOCH: Self = Self(77);
    #[doc = "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing."]
    pub const OFFSET_NOT_AVAILABLE: Self = Self(78);
    #[doc = "The group member needs to have a valid member id before actually entering a consumer group."]
    pub const MEMBER_ID_REQUIRED: Self = Self(79);
    #[doc = "The preferred leader was not available."]
    pub const PREFERRED_LEADER_NOT_AVAILABLE: Self = Self(80);
    #[doc = "The consumer group has reached its max size."]
    pub const GROUP_MAX_SIZE_REACHED: Self = Self(81);
    #[doc = "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id."]
    pub const FENCED_INSTANCE_ID: Self = Self(82);
    #[doc = "Eligible topic partition leaders are not available."]
    pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: Self = Self(83);
    #[doc = "Leader election not needed for topic partition."]
    pub const ELECTION_NOT_NEEDED: Self = Self(84);
    #[doc = "No partition reassignment is in progress."]
    pub const NO_REASSIGNMENT_IN_PROGRESS: Self = Self(85);
    #[doc = "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."]
    pub const GROUP_SUBSCRIBED_TO_TOPIC: Self = Self(86);
    #[doc = "This record has failed the validation on broker and hence will be rejected."]
    pub const INVALID_RECORD: Self = Self(87);
    #[doc = "There are unstable offsets that need to be cleared."]
    pub const UNSTABLE_OFFSET_COMMIT: Self = Self(88);
    #[doc = "The throttling quota has been exceeded."]
    pub const THROTTLING_QUOTA_EXCEEDED: Self = Self(89);
    #[doc = "There is a newer producer with the same transactionalId which fences the current one."]
    pub const PRODUCER_FENCED: Self = Self(90);
    #[doc = "A request illegally referred to a resource that does not exist."]
    pub const RESOURCE_NOT_FOUND: Self = Self(91);
    #[doc = "A request illegally referred to the same resource twice."]
    pub const DUPLICATE_RESOURCE: Self = Self(92);
    #[doc = "Requested credential would not meet criteria for acceptability."]
    pub const UNACCEPTABLE_CREDENTIAL: Self = Self(93);
    #[doc = "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters"]
    pub const INCONSISTENT_VOTER_SET: Self = Self(94);
    #[doc = "The given update version was invalid."]
    pub const INVALID_UPDATE_VERSION: Self = Self(95);
    #[doc = "Unable to update finalized features due to an unexpected server error."]
    pub const FEATURE_UPDATE_FAILED: Self = Self(96);
    #[doc = "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup."]
    pub const PRINCIPAL_DESERIALIZATION_FAILURE: Self = Self(97);
    #[doc = "Requested snapshot was not found"]
    pub const SNAPSHOT_NOT_FOUND: Self = Self(98);
    #[doc = "Requested position is not greater than or equal to zero, and less than the size of the snapshot."]
    pub const POSITION_OUT_OF_RANGE: Self = Self(99);
    #[doc = "This server does not host this topic ID."]
    pub const UNKNOWN_TOPIC_ID: Self = Self(100);
    #[doc = "This broker ID is already in use."]
    pub const DUPLICATE_BROKER_REGISTRATION: Self = Self(101);
    #[doc = "The given broker ID was not registered."]
    pub const BROKER_ID_NOT_REGISTERED: Self = Self(102);
    #[doc = "The log's topic ID did not match the topic ID in the request"]
    pub const INCONSISTENT_TOPIC_ID: Self = Self(103);
    #[doc = "The clusterId in the request does not match that found on the server"]
    pub const INCONSISTENT_CLUSTER_ID: Self = Self(104);
    #[doc = "The transactionalId could not be found"]
    pub const TRANSACTIONAL_ID_NOT_FOUND: Self = Self(105);
    #[doc = "The fetch session encountered inconsistent topic ID usage"]
    pub const FETCH_SESSION_TOPIC_ID_ERROR: Self = Self(106);
    #[doc = "The new ISR contains at least one ineligible replica."]
    pub const INELIGIBLE_REPLICA: Self = Self(107);
    #[doc = "The AlterPartition request successfully updated the partition state but the leader has changed."]
    pub const NEW_LEADER_ELECTED: Self = Self(108);
    #[doc = "The requested offset is moved to tiered storage."]
    pub const OFFSET_MOVED_TO_TIERED_STORAGE: Self = Self(109);
    #[doc = "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin."]
    pub const FENCED_MEMBER_EPOCH: Self = Self(110);
    #[doc = "The instance ID is still used by another member in the consumer group. That member must leave first."]
    pub const UNRELEASED_INSTANCE_ID: Self = Self(111);
    #[doc = "The assignor or its version range is not supported by the consumer group."]
    pub const UNSUPPORTED_ASSIGNOR: Self = Self(112);
    #[doc = "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API."]
    pub const STALE_MEMBER_EPOCH: Self = Self(113);
    #[doc = "The request was sent to an endpoint of the wrong type."]
    pub const MISMATCHED_ENDPOINT_TYPE: Self = Self(114);
    #[doc = "This endpoint type is not supported yet."]
    pub const UNSUPPORTED_ENDPOINT_TYPE: Self = Self(115);
    #[doc = "This controller ID is not known."]
    pub const UNKNOWN_CONTROLLER_ID: Self = Self(116);
    #[doc = "Client sent a push telemetry request with an invalid or outdated subscription ID."]
    pub const UNKNOWN_SUBSCRIPTION_ID: Self = Self(117);
    #[doc = "Client sent a push telemetry request larger than the maximum size the broker will accept."]
    pub const TELEMETRY_TOO_LARGE: Self = Self(118);
    #[doc = "The controller has considered the broker registration to be invalid."]
    pub const INVALID_REGISTRATION: Self = Self(119);
    #[doc = "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID."]
    pub const TRANSACTION_ABORTABLE: Self = Self(120);
    #[doc = "The record state is invalid. The acknowledgement of delivery could not be completed."]
    pub const INVALID_RECORD_STATE: Self = Self(121);
    #[doc = "The share session was not found."]
    pub const SHARE_SESSION_NOT_FOUND: Self = Self(122);
    #[doc = "The share session epoch is invalid."]
    pub const INVALID_SHARE_SESSION_EPOCH: Self = Self(123);
    #[doc = "The share coordinator rejected the request because the share-group state epoch did not match."]
    pub const FENCED_STATE_EPOCH: Self = Self(124);
    #[doc = "The voter key doesn't match the receiving replica's key."]
    pub const INVALID_VOTER_KEY: Self = Self(125);
    #[doc = "The voter is already part of the set of voters."]
    pub const DUPLICATE_VOTER: Self = Self(126);
    #[doc = "The voter is not part of the set of voters."]
    pub const VOTER_NOT_FOUND: Self = Self(127);
    #[doc = "The regular expression is not valid."]
    pub const INVALID_REGULAR_EXPRESSION: Self = Self(128);
    #[doc = "Client metadata is stale, client should rebootstrap to obtain new metadata."]
    pub const REBOOTSTRAP_REQUIRED: Self = Self(129);
    #[doc = "The supplied topology is invalid."]
    pub const STREAMS_INVALID_TOPOLOGY: Self = Self(130);
    #[doc = "The supplied topology epoch is invalid."]
    pub const STREAMS_INVALID_TOPOLOGY_EPOCH: Self = Self(131);
    #[doc = "The supplied topology epoch is outdated."]
    pub const STREAMS_TOPOLOGY_FENCED: Self = Self(132);
    #[doc = "The limit of share sessions has been reached."]
    pub const SHARE_SESSION_LIMIT_REACHED: Self = Self(133);
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

/// The error's name (`NotCoordinator`), or `Unknown error code: N`.
impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.response_error() {
            Some(error) => fmt::Display::fmt(&error, f),
            None => f.write_str("NoError"),
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.response_error() {
            Some(error) => fmt::Debug::fmt(&error, f),
            None => f.write_str("NoError"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every constant is the protocol library's code of the same name, and every code that
    /// library knows has a constant: a new library version cannot add or renumber a code
    /// unnoticed.
    #[test]
    fn constants_match_the_protocol_codes() {
        let constants = [
            (
                ErrorCode::UNKNOWN_SERVER_ERROR,
                ResponseError::UnknownServerError,
            ),
            (
                ErrorCode::OFFSET_OUT_OF_RANGE,
                ResponseError::OffsetOutOfRange,
            ),
            (ErrorCode::CORRUPT_MESSAGE, ResponseError::CorruptMessage),
            (
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                ResponseError::UnknownTopicOrPartition,
            ),
            (
                ErrorCode::INVALID_FETCH_SIZE,
                ResponseError::InvalidFetchSize,
            ),
            (
                ErrorCode::LEADER_NOT_AVAILABLE,
                ResponseError::LeaderNotAvailable,
            ),
            (
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                ResponseError::NotLeaderOrFollower,
            ),
            (ErrorCode::REQUEST_TIMED_OUT, ResponseError::RequestTimedOut),
            (
                ErrorCode::BROKER_NOT_AVAILABLE,
                ResponseError::BrokerNotAvailable,
            ),
            (
                ErrorCode::REPLICA_NOT_AVAILABLE,
                ResponseError::ReplicaNotAvailable,
            ),
            (ErrorCode::MESSAGE_TOO_LARGE, ResponseError::MessageTooLarge),
            (
                ErrorCode::STALE_CONTROLLER_EPOCH,
                ResponseError::StaleControllerEpoch,
            ),
            (
                ErrorCode::OFFSET_METADATA_TOO_LARGE,
                ResponseError::OffsetMetadataTooLarge,
            ),
            (
                ErrorCode::NETWORK_EXCEPTION,
                ResponseError::NetworkException,
            ),
            (
                ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                ResponseError::CoordinatorLoadInProgress,
            ),
            (
                ErrorCode::COORDINATOR_NOT_AVAILABLE,
                ResponseError::CoordinatorNotAvailable,
            ),
            (ErrorCode::NOT_COORDINATOR, ResponseError::NotCoordinator),
            (
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                ResponseError::InvalidTopicException,
            ),
            (
                ErrorCode::RECORD_LIST_TOO_LARGE,
                ResponseError::RecordListTooLarge,
            ),
            (
                ErrorCode::NOT_ENOUGH_REPLICAS,
                ResponseError::NotEnoughReplicas,
            ),
            (
                ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                ResponseError::NotEnoughReplicasAfterAppend,
            ),
            (
                ErrorCode::INVALID_REQUIRED_ACKS,
                ResponseError::InvalidRequiredAcks,
            ),
            (
                ErrorCode::ILLEGAL_GENERATION,
                ResponseError::IllegalGeneration,
            ),
            (
                ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                ResponseError::InconsistentGroupProtocol,
            ),
            (ErrorCode::INVALID_GROUP_ID, ResponseError::InvalidGroupId),
            (ErrorCode::UNKNOWN_MEMBER_ID, ResponseError::UnknownMemberId),
            (
                ErrorCode::INVALID_SESSION_TIMEOUT,
                ResponseError::InvalidSessionTimeout,
            ),
            (
                ErrorCode::REBALANCE_IN_PROGRESS,
                ResponseError::RebalanceInProgress,
            ),
            (
                ErrorCode::INVALID_COMMIT_OFFSET_SIZE,
                ResponseError::InvalidCommitOffsetSize,
            ),
            (
                ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                ResponseError::TopicAuthorizationFailed,
            ),
            (
                ErrorCode::GROUP_AUTHORIZATION_FAILED,
                ResponseError::GroupAuthorizationFailed,
            ),
            (
                ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                ResponseError::ClusterAuthorizationFailed,
            ),
            (
                ErrorCode::INVALID_TIMESTAMP,
                ResponseError::InvalidTimestamp,
            ),
            (
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                ResponseError::UnsupportedSaslMechanism,
            ),
            (
                ErrorCode::ILLEGAL_SASL_STATE,
                ResponseError::IllegalSaslState,
            ),
            (
                ErrorCode::UNSUPPORTED_VERSION,
                ResponseError::UnsupportedVersion,
            ),
            (
                ErrorCode::TOPIC_ALREADY_EXISTS,
                ResponseError::TopicAlreadyExists,
            ),
            (
                ErrorCode::INVALID_PARTITIONS,
                ResponseError::InvalidPartitions,
            ),
            (
                ErrorCode::INVALID_REPLICATION_FACTOR,
                ResponseError::InvalidReplicationFactor,
            ),
            (
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                ResponseError::InvalidReplicaAssignment,
            ),
            (ErrorCode::INVALID_CONFIG, ResponseError::InvalidConfig),
            (ErrorCode::NOT_CONTROLLER, ResponseError::NotController),
            (ErrorCode::INVALID_REQUEST, ResponseError::InvalidRequest),
            (
                ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
                ResponseError::UnsupportedForMessageFormat,
            ),
            (ErrorCode::POLICY_VIOLATION, ResponseError::PolicyViolation),
            (
                ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
                ResponseError::OutOfOrderSequenceNumber,
            ),
            (
                ErrorCode::DUPLICATE_SEQUENCE_NUMBER,
                ResponseError::DuplicateSequenceNumber,
            ),
            (
                ErrorCode::INVALID_PRODUCER_EPOCH,
                ResponseError::InvalidProducerEpoch,
            ),
            (ErrorCode::INVALID_TXN_STATE, ResponseError::InvalidTxnState),
            (
                ErrorCode::INVALID_PRODUCER_ID_MAPPING,
                ResponseError::InvalidProducerIdMapping,
            ),
            (
                ErrorCode::INVALID_TRANSACTION_TIMEOUT,
                ResponseError::InvalidTransactionTimeout,
            ),
            (
                ErrorCode::CONCURRENT_TRANSACTIONS,
                ResponseError::ConcurrentTransactions,
            ),
            (
                ErrorCode::TRANSACTION_COORDINATOR_FENCED,
                ResponseError::TransactionCoordinatorFenced,
            ),
            (
                ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                ResponseError::TransactionalIdAuthorizationFailed,
            ),
            (
                ErrorCode::SECURITY_DISABLED,
                ResponseError::SecurityDisabled,
            ),
            (
                ErrorCode::OPERATION_NOT_ATTEMPTED,
                ResponseError::OperationNotAttempted,
            ),
            (
                ErrorCode::KAFKA_STORAGE_ERROR,
                ResponseError::KafkaStorageError,
            ),
            (ErrorCode::LOG_DIR_NOT_FOUND, ResponseError::LogDirNotFound),
            (
                ErrorCode::SASL_AUTHENTICATION_FAILED,
                ResponseError::SaslAuthenticationFailed,
            ),
            (
                ErrorCode::UNKNOWN_PRODUCER_ID,
                ResponseError::UnknownProducerId,
            ),
            (
                ErrorCode::REASSIGNMENT_IN_PROGRESS,
                ResponseError::ReassignmentInProgress,
            ),
            (
                ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED,
                ResponseError::DelegationTokenAuthDisabled,
            ),
            (
                ErrorCode::DELEGATION_TOKEN_NOT_FOUND,
                ResponseError::DelegationTokenNotFound,
            ),
            (
                ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH,
                ResponseError::DelegationTokenOwnerMismatch,
            ),
            (
                ErrorCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                ResponseError::DelegationTokenRequestNotAllowed,
            ),
            (
                ErrorCode::DELEGATION_TOKEN_AUTHORIZATION_FAILED,
                ResponseError::DelegationTokenAuthorizationFailed,
            ),
            (
                ErrorCode::DELEGATION_TOKEN_EXPIRED,
                ResponseError::DelegationTokenExpired,
            ),
            (
                ErrorCode::INVALID_PRINCIPAL_TYPE,
                ResponseError::InvalidPrincipalType,
            ),
            (ErrorCode::NON_EMPTY_GROUP, ResponseError::NonEmptyGroup),
            (
                ErrorCode::GROUP_ID_NOT_FOUND,
                ResponseError::GroupIdNotFound,
            ),
            (
                ErrorCode::FETCH_SESSION_ID_NOT_FOUND,
                ResponseError::FetchSessionIdNotFound,
            ),
            (
                ErrorCode::INVALID_FETCH_SESSION_EPOCH,
                ResponseError::InvalidFetchSessionEpoch,
            ),
            (
                ErrorCode::LISTENER_NOT_FOUND,
                ResponseError::ListenerNotFound,
            ),
            (
                ErrorCode::TOPIC_DELETION_DISABLED,
                ResponseError::TopicDeletionDisabled,
            ),
            (
                ErrorCode::FENCED_LEADER_EPOCH,
                ResponseError::FencedLeaderEpoch,
            ),
            (
                ErrorCode::UNKNOWN_LEADER_EPOCH,
                ResponseError::UnknownLeaderEpoch,
            ),
            (
                ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
                ResponseError::UnsupportedCompressionType,
            ),
            (
                ErrorCode::STALE_BROKER_EPOCH,
                ResponseError::StaleBrokerEpoch,
            ),
            (
                ErrorCode::OFFSET_NOT_AVAILABLE,
                ResponseError::OffsetNotAvailable,
            ),
            (
                ErrorCode::MEMBER_ID_REQUIRED,
                ResponseError::MemberIdRequired,
            ),
            (
                ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
                ResponseError::PreferredLeaderNotAvailable,
            ),
            (
                ErrorCode::GROUP_MAX_SIZE_REACHED,
                ResponseError::GroupMaxSizeReached,
            ),
            (
                ErrorCode::FENCED_INSTANCE_ID,
                ResponseError::FencedInstanceId,
            ),
            (
                ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                ResponseError::EligibleLeadersNotAvailable,
            ),
            (
                ErrorCode::ELECTION_NOT_NEEDED,
                ResponseError::ElectionNotNeeded,
            ),
            (
                ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                ResponseError::NoReassignmentInProgress,
            ),
            (
                ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC,
                ResponseError::GroupSubscribedToTopic,
            ),
            (ErrorCode::INVALID_RECORD, ResponseError::InvalidRecord),
            (
                ErrorCode::UNSTABLE_OFFSET_COMMIT,
                ResponseError::UnstableOffsetCommit,
            ),
            (
                ErrorCode::THROTTLING_QUOTA_EXCEEDED,
                ResponseError::ThrottlingQuotaExceeded,
            ),
            (ErrorCode::PRODUCER_FENCED, ResponseError::ProducerFenced),
            (
                ErrorCode::RESOURCE_NOT_FOUND,
                ResponseError::ResourceNotFound,
            ),
            (
                ErrorCode::DUPLICATE_RESOURCE,
                ResponseError::DuplicateResource,
            ),
            (
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                ResponseError::UnacceptableCredential,
            ),
            (
                ErrorCode::INCONSISTENT_VOTER_SET,
                ResponseError::InconsistentVoterSet,
            ),
            (
                ErrorCode::INVALID_UPDATE_VERSION,
                ResponseError::InvalidUpdateVersion,
            ),
            (
                ErrorCode::FEATURE_UPDATE_FAILED,
                ResponseError::FeatureUpdateFailed,
            ),
            (
                ErrorCode::PRINCIPAL_DESERIALIZATION_FAILURE,
                ResponseError::PrincipalDeserializationFailure,
            ),
            (
                ErrorCode::SNAPSHOT_NOT_FOUND,
                ResponseError::SnapshotNotFound,
            ),
            (
                ErrorCode::POSITION_OUT_OF_RANGE,
                ResponseError::PositionOutOfRange,
            ),
            (ErrorCode::UNKNOWN_TOPIC_ID, ResponseError::UnknownTopicId),
            (
                ErrorCode::DUPLICATE_BROKER_REGISTRATION,
                ResponseError::DuplicateBrokerRegistration,
            ),
            (
                ErrorCode::BROKER_ID_NOT_REGISTERED,
                ResponseError::BrokerIdNotRegistered,
            ),
            (
                ErrorCode::INCONSISTENT_TOPIC_ID,
                ResponseError::InconsistentTopicId,
            ),
            (
                ErrorCode::INCONSISTENT_CLUSTER_ID,
                ResponseError::InconsistentClusterId,
            ),
            (
                ErrorCode::TRANSACTIONAL_ID_NOT_FOUND,
                ResponseError::TransactionalIdNotFound,
            ),
            (
                ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR,
                ResponseError::FetchSessionTopicIdError,
            ),
            (
                ErrorCode::INELIGIBLE_REPLICA,
                ResponseError::IneligibleReplica,
            ),
            (
                ErrorCode::NEW_LEADER_ELECTED,
                ResponseError::NewLeaderElected,
            ),
            (
                ErrorCode::OFFSET_MOVED_TO_TIERED_STORAGE,
                ResponseError::OffsetMovedToTieredStorage,
            ),
            (
                ErrorCode::FENCED_MEMBER_EPOCH,
                ResponseError::FencedMemberEpoch,
            ),
            (
                ErrorCode::UNRELEASED_INSTANCE_ID,
                ResponseError::UnreleasedInstanceId,
            ),
            (
                ErrorCode::UNSUPPORTED_ASSIGNOR,
                ResponseError::UnsupportedAssignor,
            ),
            (
                ErrorCode::STALE_MEMBER_EPOCH,
                ResponseError::StaleMemberEpoch,
            ),
            (
                ErrorCode::MISMATCHED_ENDPOINT_TYPE,
                ResponseError::MismatchedEndpointType,
            ),
            (
                ErrorCode::UNSUPPORTED_ENDPOINT_TYPE,
                ResponseError::UnsupportedEndpointType,
            ),
            (
                ErrorCode::UNKNOWN_CONTROLLER_ID,
                ResponseError::UnknownControllerId,
            ),
            (
                ErrorCode::UNKNOWN_SUBSCRIPTION_ID,
                ResponseError::UnknownSubscriptionId,
            ),
            (
                ErrorCode::TELEMETRY_TOO_LARGE,
                ResponseError::TelemetryTooLarge,
            ),
            (
                ErrorCode::INVALID_REGISTRATION,
                ResponseError::InvalidRegistration,
            ),
            (
                ErrorCode::TRANSACTION_ABORTABLE,
                ResponseError::TransactionAbortable,
            ),
            (
                ErrorCode::INVALID_RECORD_STATE,
                ResponseError::InvalidRecordState,
            ),
            (
                ErrorCode::SHARE_SESSION_NOT_FOUND,
                ResponseError::ShareSessionNotFound,
            ),
            (
                ErrorCode::INVALID_SHARE_SESSION_EPOCH,
                ResponseError::InvalidShareSessionEpoch,
            ),
            (
                ErrorCode::FENCED_STATE_EPOCH,
                ResponseError::FencedStateEpoch,
            ),
            (ErrorCode::INVALID_VOTER_KEY, ResponseError::InvalidVoterKey),
            (ErrorCode::DUPLICATE_VOTER, ResponseError::DuplicateVoter),
            (ErrorCode::VOTER_NOT_FOUND, ResponseError::VoterNotFound),
            (
                ErrorCode::INVALID_REGULAR_EXPRESSION,
                ResponseError::InvalidRegularExpression,
            ),
            (
                ErrorCode::REBOOTSTRAP_REQUIRED,
                ResponseError::RebootstrapRequired,
            ),
            (
                ErrorCode::STREAMS_INVALID_TOPOLOGY,
                ResponseError::StreamsInvalidTopology,
            ),
            (
                ErrorCode::STREAMS_INVALID_TOPOLOGY_EPOCH,
                ResponseError::StreamsInvalidTopologyEpoch,
            ),
            (
                ErrorCode::STREAMS_TOPOLOGY_FENCED,
                ResponseError::StreamsTopologyFenced,
            ),
            (
                ErrorCode::SHARE_SESSION_LIMIT_REACHED,
                ResponseError::ShareSessionLimitReached,
            ),
        ];
        for (constant, error) in constants {
            assert_eq!(constant, ErrorCode::of(error));
            assert_eq!(constant.to_string(), error.to_string());
            assert_eq!(format!("{constant:?}"), format!("{error:?}"));
            assert_eq!(constant.is_retriable(), error.is_retriable());
        }
        let known = (i16::MIN..=i16::MAX)
            .filter(|code| {
                ResponseError::try_from_code(*code)
                    .is_some_and(|e| !matches!(e, ResponseError::Unknown(_)))
            })
            .count();
        assert_eq!(known, constants.len(), "a code without a constant");
        assert!(ErrorCode::NOT_COORDINATOR.is_retriable());
        assert!(!ErrorCode::FENCED_INSTANCE_ID.is_retriable());
        let unknown = ErrorCode::from_i16(1_000);
        assert_eq!(unknown.code(), 1_000);
        assert!(!unknown.is_retriable());
        assert_eq!(unknown.to_string(), "Unknown error code: 1000");
        assert_eq!(i16::from(ErrorCode::OFFSET_OUT_OF_RANGE), 1);
    }
}
