//! Metrics under Apache Kafka's names.
//!
//! The consumer measures what Java's `KafkaConsumer` measures, under the same group, name and
//! tags (`consumer-fetch-manager-metrics` / `records-lag-max` / `client-id`), computed the same
//! way (windowed over `metrics.num.samples` samples of `metrics.sample.window.ms`), so
//! dashboards and alerts written for Java consumers read this one unchanged.
//! [`ConsumerMetrics::kafka`](crate::consumer::ConsumerMetrics::kafka) is a snapshot of them;
//! with the `metrics` feature, the background task also sets them as gauges on the
//! [`metrics`](https://docs.rs/metrics) facade, so any of its exporters (Prometheus,
//! OpenTelemetry, StatsD) reports them.

use std::fmt;

/// The group of fetch metrics (Java's `consumer-fetch-manager-metrics`).
pub const FETCH_MANAGER_GROUP: &str = "consumer-fetch-manager-metrics";
/// The group of group-coordination metrics (Java's `consumer-coordinator-metrics`).
pub const COORDINATOR_GROUP: &str = "consumer-coordinator-metrics";
/// The group of application-side and connection metrics (Java's `consumer-metrics`).
pub const CONSUMER_GROUP: &str = "consumer-metrics";
/// The group of per-broker connection metrics (Java's `consumer-node-metrics`), tagged
/// `node-id` (`node-<id>`; the bootstrap servers' placeholder ids are negative).
pub const NODE_GROUP: &str = "consumer-node-metrics";

/// A metric's identity: Java's `MetricName` (group, name and tags).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MetricName {
    /// The group, e.g. [`FETCH_MANAGER_GROUP`].
    pub group: &'static str,
    /// The name, e.g. `records-lag-max`.
    pub name: &'static str,
    /// The tags: always `client-id`; `topic` (with `.` written `_`, as Java does) for
    /// per-topic metrics; `topic` and `partition` for per-partition ones; `node-id` for
    /// per-broker ones.
    pub tags: Vec<(&'static str, String)>,
}

impl MetricName {
    /// The value of tag `key`, if the metric has it.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Display for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.group, self.name)?;
        for (key, value) in &self.tags {
            write!(f, ",{key}={value}")?;
        }
        Ok(())
    }
}

/// One metric's value at the time of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Which metric.
    pub name: MetricName,
    /// What it measures (Java's description).
    pub description: &'static str,
    /// The value. NaN where Java reports NaN: an average or maximum with no event in the
    /// sample windows.
    pub value: f64,
}
