//! API version negotiation: per API, the highest version both we and the broker support.
//!
//! Pure functions over ApiVersions responses; the connection task performs the exchange.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::{Message, Request, StrBytes, VersionRange};

use super::{Api, ResponseError};

/// What we call ourselves in ApiVersions v3+ (`client.software.name`; shows up in broker metrics).
pub const CLIENT_SOFTWARE_NAME: &str = "kafka-consumer-rs";

/// The APIs the consumer sends. A broker lacking any of them cannot serve this client.
#[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
pub const CONSUMER_APIS: [ApiKey; 13] = [
    ApiKey::ApiVersions,
    ApiKey::Metadata,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::FindCoordinator,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::ConsumerGroupHeartbeat,
];

/// The ApiVersions request we open every connection with.
pub fn api_versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")))
}

/// A broker's supported version range per API key, from its ApiVersions response.
///
/// Shared, not copied: the background task reads every connected node's table on each of its
/// steps, and cloning the map there was a tenth of a simulated run's wall time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiVersionsTable {
    broker_ranges: Arc<BTreeMap<i16, VersionRange>>,
}

impl ApiVersionsTable {
    /// The table a (successful) ApiVersions response describes.
    pub fn from_response(response: &ApiVersionsResponse) -> Self {
        let broker_ranges = response
            .api_keys
            .iter()
            .map(|v| {
                let range = VersionRange {
                    min: v.min_version,
                    max: v.max_version,
                };
                (v.api_key, range)
            })
            .collect();
        Self {
            broker_ranges: Arc::new(broker_ranges),
        }
    }

    /// The broker's range for `api`, if it listed the API.
    pub fn broker_range(&self, api: i16) -> Option<VersionRange> {
        self.broker_ranges.get(&api).copied()
    }

    /// The highest version of `api` in both `ours` and the broker's range, or an error naming
    /// the API and both ranges.
    pub fn select(&self, api: Api, ours: VersionRange) -> Result<i16, UnsupportedApi> {
        let broker = self.broker_range(api.0);
        match broker.map(|b| b.intersect(&ours)) {
            Some(common) if !common.is_empty() => Ok(common.max),
            _ => Err(UnsupportedApi {
                api,
                ours: ApiVersionRange::of(ours),
                broker: broker.map(ApiVersionRange::of),
            }),
        }
    }
}

/// A range of versions of an API, both ends included (the wire protocol library's own range
/// type stays out of the consumer's errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApiVersionRange {
    /// The lowest version.
    pub min: i16,
    /// The highest version.
    pub max: i16,
}

impl ApiVersionRange {
    pub(crate) const fn of(range: VersionRange) -> Self {
        Self {
            min: range.min,
            max: range.max,
        }
    }
}

/// `min..max`.
impl fmt::Display for ApiVersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.min, self.max)
    }
}

/// No version of an API is supported by both sides.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct UnsupportedApi {
    /// The API.
    pub api: Api,
    /// The versions we can speak.
    pub ours: ApiVersionRange,
    /// The versions the broker listed, or `None` when it did not list the API at all.
    pub broker: Option<ApiVersionRange>,
}

impl fmt::Display for UnsupportedApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no common version of {}: we support {}",
            self.api, self.ours
        )?;
        match self.broker {
            Some(broker) => write!(f, ", the broker supports {broker}"),
            None => write!(f, ", the broker does not offer it"),
        }
    }
}

/// What to do with an ApiVersions response.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiVersionsOutcome {
    /// Negotiation is done.
    Negotiated(ApiVersionsTable),
    /// The broker rejected our version (UNSUPPORTED_VERSION) and listed its own range for
    /// ApiVersions: ask again at this version, as the Java client does.
    RetryAt(i16),
}

/// ApiVersions failed: the connection cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiVersionsError {
    /// The broker answered with an error code.
    #[error("ApiVersions v{version} failed with broker error {error} (code {})", .error.code())]
    Broker {
        /// The version we sent.
        version: i16,
        /// The broker's error.
        error: crate::error::ErrorCode,
    },
    /// The broker supports no ApiVersions version we do.
    #[error(transparent)]
    Unsupported(#[from] UnsupportedApi),
}

/// Interprets the response to an ApiVersions request sent at `sent_version`.
pub fn handle_api_versions_response(
    response: &ApiVersionsResponse,
    sent_version: i16,
) -> Result<ApiVersionsOutcome, ApiVersionsError> {
    let Some(error) = ResponseError::try_from_code(response.error_code) else {
        return Ok(ApiVersionsOutcome::Negotiated(
            ApiVersionsTable::from_response(response),
        ));
    };
    if error != ResponseError::UnsupportedVersion {
        return Err(ApiVersionsError::Broker {
            version: sent_version,
            error: crate::error::ErrorCode::of(error),
        });
    }
    let table = ApiVersionsTable::from_response(response);
    let api = Api(ApiVersionsRequest::KEY);
    let version = table.select(api, ApiVersionsRequest::VERSIONS)?;
    if version < sent_version {
        Ok(ApiVersionsOutcome::RetryAt(version))
    } else {
        // The broker rejected a version it claims to support: retrying would loop.
        Err(ApiVersionsError::Broker {
            version: sent_version,
            error: crate::error::ErrorCode::of(error),
        })
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    use super::*;

    fn response(error_code: i16, ranges: &[(i16, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::default()
            .with_error_code(error_code)
            .with_api_keys(
                ranges
                    .iter()
                    .map(|&(key, min, max)| {
                        ApiVersion::default()
                            .with_api_key(key)
                            .with_min_version(min)
                            .with_max_version(max)
                    })
                    .collect(),
            )
    }

    fn range(min: i16, max: i16) -> VersionRange {
        VersionRange { min, max }
    }

    #[test]
    fn picks_the_highest_common_version_per_api() {
        let table = ApiVersionsTable::from_response(&response(0, &[(1, 0, 12), (3, 4, 13)]));
        assert_eq!(table.select(Api(1), range(4, 18)), Ok(12));
        assert_eq!(table.select(Api(3), range(0, 9)), Ok(9));
        assert_eq!(table.select(Api(3), range(13, 13)), Ok(13));
    }

    #[test]
    fn no_overlap_names_the_api_and_both_ranges() {
        let table = ApiVersionsTable::from_response(&response(0, &[(1, 0, 3)]));
        let err = table.select(Api(1), range(4, 18)).unwrap_err();
        assert_eq!(err.broker, Some(ApiVersionRange { min: 0, max: 3 }));
        assert_eq!(
            err.to_string(),
            "no common version of Fetch: we support 4..18, the broker supports 0..3"
        );
        let missing = table.select(Api(68), range(0, 1)).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "no common version of ConsumerGroupHeartbeat: we support 0..1, the broker does not offer it"
        );
    }

    #[test]
    fn success_negotiates_the_table() {
        let r = response(0, &[(18, 0, 4)]);
        assert_eq!(
            handle_api_versions_response(&r, 4),
            Ok(ApiVersionsOutcome::Negotiated(
                ApiVersionsTable::from_response(&r)
            ))
        );
    }

    #[test]
    fn unsupported_version_retries_at_the_brokers_highest() {
        let r = response(35, &[(18, 0, 2)]);
        assert_eq!(
            handle_api_versions_response(&r, 4),
            Ok(ApiVersionsOutcome::RetryAt(2))
        );
    }

    #[test]
    fn unsupported_version_without_a_lower_version_fails_instead_of_looping() {
        let r = response(35, &[(18, 0, 4)]);
        assert!(matches!(
            handle_api_versions_response(&r, 4),
            Err(ApiVersionsError::Broker {
                error: crate::error::ErrorCode::UNSUPPORTED_VERSION,
                ..
            })
        ));
        let no_entry = response(35, &[]);
        let err = handle_api_versions_response(&no_entry, 4).unwrap_err();
        assert!(err.to_string().contains("ApiVersions"), "{err}");
    }

    #[test]
    fn other_broker_errors_are_reported_by_name() {
        let err = handle_api_versions_response(&response(-1, &[]), 3).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ApiVersions v3 failed with broker error UnknownServerError (code -1)"
        );
    }
}
