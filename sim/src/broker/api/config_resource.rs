//! What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: Kafka's config
//! resource types (`ConfigResource.Type`), the per-resource error (`ApiError`), and the checks
//! on a resource's name that Kafka makes before looking at its configs.

use kafka_consumer::topic_name::invalid_topic_reason;
use kafka_protocol::error::ResponseError;
use kafka_protocol::protocol::StrBytes;

/// `ConfigResource.Type`, by the id the wire carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResourceType {
    /// 2.
    Topic,
    /// 4.
    Broker,
    /// 8.
    BrokerLogger,
    /// 16.
    ClientMetrics,
    /// 32.
    Group,
    /// Any other id (`ConfigResource.Type.UNKNOWN`).
    Unknown,
}

impl ResourceType {
    /// `ConfigResource.Type.forId`.
    pub(crate) fn from_id(id: i8) -> Self {
        match id {
            2 => Self::Topic,
            4 => Self::Broker,
            8 => Self::BrokerLogger,
            16 => Self::ClientMetrics,
            32 => Self::Group,
            _ => Self::Unknown,
        }
    }
}

/// A per-resource failure: Kafka's `ApiError` (code and message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub error: ResponseError,
    pub message: Option<String>,
}

impl ApiError {
    pub(crate) fn new(error: ResponseError, message: impl Into<String>) -> Self {
        Self {
            error,
            message: Some(message.into()),
        }
    }

    /// An error Kafka answers without a message of its own.
    pub(crate) fn bare(error: ResponseError) -> Self {
        Self {
            error,
            message: None,
        }
    }

    pub(crate) fn code(&self) -> i16 {
        self.error.code()
    }

    pub(crate) fn message(&self) -> Option<StrBytes> {
        self.message.clone().map(StrBytes::from_string)
    }
}

/// `Topic.validate`: INVALID_TOPIC_EXCEPTION naming the rule the name breaks.
pub(crate) fn validate_topic(name: &str) -> Result<(), ApiError> {
    match invalid_topic_reason(name) {
        Some(reason) => Err(ApiError::new(
            ResponseError::InvalidTopicException,
            format!("Topic name is invalid: {reason}"),
        )),
        None => Ok(()),
    }
}

/// A BROKER resource's name: empty (the cluster-wide default) or this broker's id, as Kafka's
/// `ConfigAdminManager.validateResourceNameIsCurrentNodeId` requires before forwarding.
pub(crate) fn validate_broker_name(name: &str, node_id: i32) -> Result<(), ApiError> {
    if name.is_empty() {
        return Ok(());
    }
    let id: i32 = name.parse().map_err(|_| {
        ApiError::new(
            ResponseError::InvalidRequest,
            format!("Node id must be an integer, but it is: {name}"),
        )
    })?;
    if id != node_id {
        return Err(ApiError::new(
            ResponseError::InvalidRequest,
            format!("Unexpected broker id, expected {node_id}, but received {name}"),
        ));
    }
    Ok(())
}

/// The answer for a resource type Kafka serves but the simulator does not model (broker
/// loggers, client metrics subscriptions, group configs, dynamic broker configs): an
/// INVALID_REQUEST that says so, rather than a made-up success.
pub(crate) fn not_modelled(what: &str) -> ApiError {
    ApiError::new(
        ResponseError::InvalidRequest,
        format!("{what} are not modelled by the simulated broker"),
    )
}

/// Whether a config list names some config twice: `Error due to duplicate config keys`.
pub(crate) fn duplicate_keys<'a>(names: impl Iterator<Item = &'a str>) -> Option<ApiError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut names = names;
    names.any(|name| !seen.insert(name)).then(|| {
        ApiError::new(
            ResponseError::InvalidRequest,
            "Error due to duplicate config keys",
        )
    })
}
