//! What a GetTelemetrySubscriptions response asks of the client, validated as Java's
//! `ClientTelemetryUtils` validates it, and Java's rule for how long to wait after an error.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::error_code::ErrorCode;
use crate::records::Compression;

/// Java's `ClientTelemetryReporter.DEFAULT_PUSH_INTERVAL_MS` (5 minutes): the interval when
/// the broker sends an invalid one, and the wait after a retriable failure.
pub(crate) const DEFAULT_PUSH_INTERVAL_MS: u64 = 5 * 60 * 1000;

/// Which metrics a subscription requests (Java's `getSelectorFromRequestedMetrics`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MetricSelector {
    /// An empty list: no metrics (the client asks again after the interval, pushing nothing).
    None,
    /// The single entry `*`: every metric.
    All,
    /// Metrics whose telemetry name starts with one of these prefixes.
    Prefixes(Vec<String>),
}

impl MetricSelector {
    /// The selector for the `requested_metrics` of a response.
    pub fn from_requested(requested: &[impl AsRef<str>]) -> Self {
        match requested {
            [] => Self::None,
            [only] if only.as_ref() == "*" => Self::All,
            many => Self::Prefixes(many.iter().map(|p| p.as_ref().to_owned()).collect()),
        }
    }

    /// Whether the metric named `name` (its telemetry name) is requested.
    pub fn selects(&self, name: &str) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Prefixes(prefixes) => prefixes.iter().any(|p| name.starts_with(p.as_str())),
        }
    }
}

/// A subscription in force (Java's `ClientTelemetrySubscription`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subscription {
    /// The id the broker assigned this client; sent back with every later request.
    pub client_instance_id: Uuid,
    /// The subscription's id, which each push names.
    pub subscription_id: i32,
    /// How often to push.
    pub push_interval_ms: u64,
    /// The codecs the broker accepts, in its order of preference.
    pub accepted_compression: Vec<Compression>,
    /// Push sums as deltas since the last push (else cumulative).
    pub delta_temporality: bool,
    /// Which metrics to push.
    pub selector: MetricSelector,
}

/// Java's `validateIntervalMs`: a push interval of zero or less from the broker is replaced
/// by the default.
pub(crate) fn validate_interval_ms(push_interval_ms: i32) -> u64 {
    match u64::try_from(push_interval_ms) {
        Ok(ms) if ms > 0 => ms,
        _ => {
            tracing::warn!(
                push_interval_ms,
                default_ms = DEFAULT_PUSH_INTERVAL_MS,
                "telemetry subscription push interval from the broker is invalid; using the default"
            );
            DEFAULT_PUSH_INTERVAL_MS
        }
    }
}

/// Java's `getCompressionTypesFromAcceptedList`: the known codecs, in the broker's order;
/// an unknown id is skipped.
pub(crate) fn accepted_compression(ids: &[i8]) -> Vec<Compression> {
    ids.iter()
        .filter_map(|&id| {
            let codec = u8::try_from(id).ok().and_then(Compression::from_id);
            if codec.is_none() {
                tracing::warn!(id, "accepted compression type is unknown; ignoring it");
            }
            codec
        })
        .collect()
}

/// Java's `preferredCompressionType`: the broker's first choice that has not failed us
/// before, else none.
pub(crate) fn preferred_compression(
    accepted: &[Compression],
    failed: &BTreeSet<u8>,
) -> Compression {
    accepted
        .iter()
        .copied()
        .find(|codec| !failed.contains(&codec.id()))
        .unwrap_or(Compression::None)
}

/// How long to wait after a response carrying `error` (Java's `maybeFetchErrorIntervalMs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorWait {
    /// Not an error.
    None,
    /// Fetch the subscription again after this many milliseconds (0: at once).
    RetryAfterMs(u64),
    /// Java's `Integer.MAX_VALUE`: the error cannot be cured by retrying; telemetry is off
    /// for the rest of the client's life.
    Disable,
}

/// Java's `maybeFetchErrorIntervalMs(errorCode, intervalMs)`; `push_interval_ms` is the
/// current subscription's interval (`None`: no subscription yet, Java's -1).
pub(crate) fn error_wait(error: ErrorCode, push_interval_ms: Option<u64>) -> ErrorWait {
    if error.code() == 0 {
        return ErrorWait::None;
    }
    match error {
        ErrorCode::INVALID_REQUEST | ErrorCode::INVALID_RECORD | ErrorCode::UNSUPPORTED_VERSION => {
            ErrorWait::Disable
        }
        ErrorCode::UNKNOWN_SUBSCRIPTION_ID | ErrorCode::UNSUPPORTED_COMPRESSION_TYPE => {
            ErrorWait::RetryAfterMs(0)
        }
        ErrorCode::TELEMETRY_TOO_LARGE | ErrorCode::THROTTLING_QUOTA_EXCEEDED => {
            ErrorWait::RetryAfterMs(push_interval_ms.unwrap_or(DEFAULT_PUSH_INTERVAL_MS))
        }
        // Java: "Unmapped error for telemetry, disable telemetry."
        _ => ErrorWait::Disable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_empty_is_none_star_is_all_else_prefixes() {
        let none = MetricSelector::from_requested(&[] as &[&str]);
        assert_eq!(none, MetricSelector::None);
        assert!(!none.selects("org.apache.kafka.consumer.fetch.manager.fetch.total"));
        let all = MetricSelector::from_requested(&["*"]);
        assert_eq!(all, MetricSelector::All);
        assert!(all.selects("anything"));
        // `*` among others is a prefix like any other (Java matches the single-entry case only).
        let mixed = MetricSelector::from_requested(&["*", "org.apache.kafka.consumer.coordinator"]);
        assert!(!mixed.selects("org.apache.kafka.consumer.fetch.manager.fetch.total"));
        assert!(mixed.selects("org.apache.kafka.consumer.coordinator.commit.total"));
        let prefixes = MetricSelector::from_requested(&["org.apache.kafka.consumer.fetch"]);
        assert!(prefixes.selects("org.apache.kafka.consumer.fetch.manager.records.lag.max"));
        assert!(!prefixes.selects("org.apache.kafka.consumer.coordinator.commit.total"));
    }

    #[test]
    fn interval_zero_or_negative_becomes_the_default() {
        assert_eq!(validate_interval_ms(1000), 1000);
        assert_eq!(validate_interval_ms(0), DEFAULT_PUSH_INTERVAL_MS);
        assert_eq!(validate_interval_ms(-5), DEFAULT_PUSH_INTERVAL_MS);
    }

    #[test]
    fn compression_keeps_broker_order_skips_unknown_and_failed() {
        let accepted = accepted_compression(&[4, 9, 3, -1, 1]);
        assert_eq!(
            accepted,
            [Compression::Zstd, Compression::Lz4, Compression::Gzip]
        );
        assert_eq!(
            preferred_compression(&accepted, &BTreeSet::new()),
            Compression::Zstd
        );
        let failed = BTreeSet::from([Compression::Zstd.id()]);
        assert_eq!(preferred_compression(&accepted, &failed), Compression::Lz4);
        assert_eq!(
            preferred_compression(&[], &BTreeSet::new()),
            Compression::None
        );
    }

    #[test]
    fn error_waits_follow_maybe_fetch_error_interval_ms() {
        assert_eq!(error_wait(ErrorCode::from_i16(0), Some(7)), ErrorWait::None);
        for disabling in [
            ErrorCode::INVALID_REQUEST,
            ErrorCode::INVALID_RECORD,
            ErrorCode::UNSUPPORTED_VERSION,
            ErrorCode::UNKNOWN_SERVER_ERROR,
            ErrorCode::from_i16(999),
        ] {
            assert_eq!(
                error_wait(disabling, Some(7)),
                ErrorWait::Disable,
                "{disabling}"
            );
        }
        for at_once in [
            ErrorCode::UNKNOWN_SUBSCRIPTION_ID,
            ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
        ] {
            assert_eq!(error_wait(at_once, Some(7)), ErrorWait::RetryAfterMs(0));
        }
        for later in [
            ErrorCode::TELEMETRY_TOO_LARGE,
            ErrorCode::THROTTLING_QUOTA_EXCEEDED,
        ] {
            assert_eq!(error_wait(later, Some(7)), ErrorWait::RetryAfterMs(7));
            assert_eq!(
                error_wait(later, None),
                ErrorWait::RetryAfterMs(DEFAULT_PUSH_INTERVAL_MS)
            );
        }
    }
}
