//! Telemetry names for Kafka's metrics (Java's `TelemetryMetricNamingConvention` with
//! `ClientTelemetryProvider.DOMAIN` as the prefix, and the labels
//! `ClientTelemetryReporter.EXCLUDE_LABELS` leaves out).

use crate::metric::MetricName;

/// Java's `ClientTelemetryProvider.DOMAIN`: every pushed metric's name starts with it.
pub(crate) const DOMAIN: &str = "org.apache.kafka";

/// The tag left out of the attributes (after cleaning): the broker knows the client id from
/// the request itself (Java's `EXCLUDE_LABELS`).
const EXCLUDED_TAG: &str = "client_id";

/// `org.apache.kafka.<group>.<name>`: lower case, `-` written `.`, and `.metrics` dropped from
/// the group, so `consumer-fetch-manager-metrics` / `records-lag-max` becomes
/// `org.apache.kafka.consumer.fetch.manager.records.lag.max` (Java's `fullMetricName`).
pub(crate) fn telemetry_name(name: &MetricName) -> String {
    let group = clean(name.group, '.').replace(".metrics", "");
    format!("{DOMAIN}.{group}.{}", clean(name.name, '.'))
}

/// The metric's tags as attributes: keys lower case with `-` written `_` (Java's
/// `cleanTags`), values as they are, `client_id` left out.
pub(crate) fn attributes(name: &MetricName) -> Vec<(String, String)> {
    name.tags
        .iter()
        .map(|(key, value)| (clean(key, '_'), value.clone()))
        .filter(|(key, _)| key != EXCLUDED_TAG)
        .collect()
}

/// Java's `clean`: lower case, every `-` replaced by `joiner`.
fn clean(raw: &str, joiner: char) -> String {
    raw.to_lowercase().replace('-', &joiner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{CONSUMER_GROUP, COORDINATOR_GROUP, FETCH_MANAGER_GROUP, NODE_GROUP};

    fn metric(
        group: &'static str,
        name: &'static str,
        tags: &[(&'static str, &str)],
    ) -> MetricName {
        MetricName {
            group,
            name,
            tags: tags.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
        }
    }

    #[test]
    fn names_follow_the_telemetry_naming_convention() {
        let cases = [
            (
                FETCH_MANAGER_GROUP,
                "records-lag-max",
                "org.apache.kafka.consumer.fetch.manager.records.lag.max",
            ),
            (
                FETCH_MANAGER_GROUP,
                "records-consumed-total",
                "org.apache.kafka.consumer.fetch.manager.records.consumed.total",
            ),
            (
                COORDINATOR_GROUP,
                "commit-total",
                "org.apache.kafka.consumer.coordinator.commit.total",
            ),
            (
                CONSUMER_GROUP,
                "last-poll-seconds-ago",
                "org.apache.kafka.consumer.last.poll.seconds.ago",
            ),
            (
                NODE_GROUP,
                "request-latency-avg",
                "org.apache.kafka.consumer.node.request.latency.avg",
            ),
        ];
        for (group, name, expected) in cases {
            assert_eq!(telemetry_name(&metric(group, name, &[])), expected);
        }
    }

    #[test]
    fn tags_become_attributes_without_client_id() {
        let name = metric(
            FETCH_MANAGER_GROUP,
            "records-lag",
            &[
                ("client-id", "c1"),
                ("topic", "my_topic"),
                ("partition", "3"),
                ("node-id", "node-1"),
            ],
        );
        assert_eq!(
            attributes(&name),
            [
                ("topic".to_owned(), "my_topic".to_owned()),
                ("partition".to_owned(), "3".to_owned()),
                ("node_id".to_owned(), "node-1".to_owned()),
            ]
        );
    }
}
