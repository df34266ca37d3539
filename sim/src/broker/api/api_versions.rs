//! ApiVersions (18): the APIs and version ranges this broker serves, by the Kafka release it
//! runs (`crate::kafka_version`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::VersionRange;

use crate::broker::dispatch::RequestCtx;
use crate::broker::Broker;

/// The group APIs: offered only when a group coordinator is plugged in.
const GROUP_APIS: [ApiKey; 12] = [
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// What this broker's release lists (`KafkaVersion`), in API key order; the group APIs only
/// with a coordinator.
fn offered(broker: &Broker) -> Vec<(ApiKey, VersionRange)> {
    broker
        .version
        .apis()
        .into_iter()
        .filter(|(key, _)| broker.coordinator.is_some() || !GROUP_APIS.contains(key))
        .collect()
}

/// The versions of `api` this broker serves, if any: its entry in [`offered`], looked up
/// without building the whole list, since every request asks.
pub(crate) fn supported_range(broker: &Broker, api: ApiKey) -> Option<VersionRange> {
    if broker.coordinator.is_none() && GROUP_APIS.contains(&api) {
        return None;
    }
    broker.version.api_range(api)
}

fn api_keys(broker: &Broker) -> Vec<ApiVersion> {
    offered(broker)
        .into_iter()
        .map(|(key, range)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(range.min)
                .with_max_version(range.max)
        })
        .collect()
}

/// The v0 body Kafka sends to an ApiVersions request of a version it does not know.
pub(crate) fn unsupported_version_response(broker: &Broker) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(api_keys(broker))
}

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: ApiVersionsRequest,
) -> ApiVersionsResponse {
    if ctx.version >= 3
        && !(valid_software_token(&request.client_software_name)
            && valid_software_token(&request.client_software_version))
    {
        // Kafka's `ApiVersionsRequest.isValid` (KIP-511): the error response lists no APIs.
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    ApiVersionsResponse::default().with_api_keys(api_keys(ctx.broker))
}

/// Kafka's `SOFTWARE_NAME_VERSION_PATTERN`, `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`: the
/// client software name and version are non-empty, start and end alphanumeric, and hold only
/// alphanumerics, '-' and '.'.
fn valid_software_token(token: &str) -> bool {
    let bytes = token.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
        }
        _ => false,
    }
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    _request: &ApiVersionsRequest,
    code: i16,
) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(code)
        .with_api_keys(api_keys(ctx.broker))
}
