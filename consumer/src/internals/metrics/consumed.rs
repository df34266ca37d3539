//! What the application consumed, measured where it is handed out (the fetch buffer), as
//! Java's `FetchCollector` records it: bytes and records consumed (for the client and per
//! topic), and each partition's lag and lead after every collection from it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::metric::Metric;
use crate::rt::Instant;
use crate::types::TopicPartition;

use super::names::*;
use super::sensor::{MetricsClock, Sensor};
use super::stats::MetricConfig;

/// One collection from one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Consumed {
    pub records: usize,
    /// The records' sizes as encoded (Java's `Record.sizeInBytes`).
    pub bytes: usize,
    /// High watermark (read_uncommitted) or last stable offset (read_committed) minus the
    /// position after the collection; `None` when the broker did not say.
    pub lag: Option<i64>,
    /// The position minus the log start offset; `None` when the broker did not say.
    pub lead: Option<i64>,
}

#[derive(Debug, Clone)]
struct TopicSensors {
    bytes: Sensor,
    records: Sensor,
}

#[derive(Debug, Clone)]
struct PartitionSensors {
    lag: Sensor,
    lead: Sensor,
}

/// The fetch manager's application-side metrics.
#[derive(Debug, Clone)]
pub(crate) struct ConsumedMetrics {
    config: MetricConfig,
    clock: MetricsClock,
    client_id: String,
    bytes: Sensor,
    records: Sensor,
    lag_max: Sensor,
    lead_min: Sensor,
    topics: BTreeMap<Arc<str>, TopicSensors>,
    partitions: BTreeMap<TopicPartition, PartitionSensors>,
}

impl Default for ConsumedMetrics {
    fn default() -> Self {
        Self::new(MetricConfig::default(), String::new())
    }
}

impl ConsumedMetrics {
    pub fn new(config: MetricConfig, client_id: String) -> Self {
        Self {
            config,
            clock: MetricsClock::default(),
            client_id,
            bytes: Sensor::new().meter(&BYTES_CONSUMED_RATE, &BYTES_CONSUMED_TOTAL),
            records: Sensor::new().meter(&RECORDS_CONSUMED_RATE, &RECORDS_CONSUMED_TOTAL),
            lag_max: Sensor::new().max(&RECORDS_LAG_MAX),
            lead_min: Sensor::new().min(&RECORDS_LEAD_MIN),
            topics: BTreeMap::new(),
            partitions: BTreeMap::new(),
        }
    }

    pub fn record(&mut self, partition: &TopicPartition, consumed: Consumed, now: Instant) {
        let now_ms = self.clock.ms(now);
        let config = &self.config;
        if consumed.records > 0 {
            let topic = self
                .topics
                .entry(Arc::clone(&partition.topic))
                .or_insert_with(|| TopicSensors {
                    bytes: Sensor::new().meter(&BYTES_CONSUMED_RATE, &BYTES_CONSUMED_TOTAL),
                    records: Sensor::new().meter(&RECORDS_CONSUMED_RATE, &RECORDS_CONSUMED_TOTAL),
                });
            let (bytes, records) = (consumed.bytes as f64, consumed.records as f64);
            topic.bytes.record(config, bytes, now_ms);
            topic.records.record(config, records, now_ms);
            self.bytes.record(config, bytes, now_ms);
            self.records.record(config, records, now_ms);
        }
        if consumed.lag.is_none() && consumed.lead.is_none() {
            return;
        }
        let sensors =
            self.partitions
                .entry(partition.clone())
                .or_insert_with(|| PartitionSensors {
                    lag: Sensor::new()
                        .value(&PARTITION_RECORDS_LAG)
                        .max(&PARTITION_RECORDS_LAG_MAX)
                        .avg(&PARTITION_RECORDS_LAG_AVG),
                    lead: Sensor::new()
                        .value(&PARTITION_RECORDS_LEAD)
                        .min(&PARTITION_RECORDS_LEAD_MIN)
                        .avg(&PARTITION_RECORDS_LEAD_AVG),
                });
        if let Some(lag) = consumed.lag {
            sensors.lag.record(config, lag as f64, now_ms);
            self.lag_max.record(config, lag as f64, now_ms);
        }
        if let Some(lead) = consumed.lead {
            sensors.lead.record(config, lead as f64, now_ms);
            self.lead_min.record(config, lead as f64, now_ms);
        }
    }

    /// Drops the per-partition metrics of partitions no longer assigned, as Java's
    /// `FetchMetricsManager.maybeUpdateAssignment` removes their sensors.
    pub fn retain_partitions(&mut self, assigned: &BTreeSet<TopicPartition>) {
        self.partitions.retain(|tp, _| assigned.contains(tp));
    }

    pub fn measure_into(&mut self, now: Instant, out: &mut Vec<Metric>) {
        let now_ms = self.clock.ms(now);
        let config = &self.config;
        let client = [("client-id", self.client_id.clone())];
        for sensor in [
            &mut self.bytes,
            &mut self.records,
            &mut self.lag_max,
            &mut self.lead_min,
        ] {
            sensor.measure_into(config, now_ms, &client, out);
        }
        for (topic, sensors) in &mut self.topics {
            let tags = [
                ("client-id", self.client_id.clone()),
                ("topic", topic.replace('.', "_")),
            ];
            sensors.bytes.measure_into(config, now_ms, &tags, out);
            sensors.records.measure_into(config, now_ms, &tags, out);
        }
        for (tp, sensors) in &mut self.partitions {
            let tags = [
                ("client-id", self.client_id.clone()),
                ("topic", tp.topic.replace('.', "_")),
                ("partition", tp.partition.to_string()),
            ];
            sensors.lag.measure_into(config, now_ms, &tags, out);
            sensors.lead.measure_into(config, now_ms, &tags, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::Duration;

    fn find(metrics: &[Metric], name: &str, tags: &[(&str, &str)]) -> Option<f64> {
        metrics
            .iter()
            .find(|m| {
                m.name.name == name
                    && m.name.tags.len() == tags.len() + 1
                    && tags.iter().all(|(k, v)| m.name.tag(k) == Some(*v))
            })
            .map(|m| m.value)
    }

    #[test]
    fn consumption_is_measured_per_client_topic_and_partition() {
        let start = Instant::now();
        let mut metrics = ConsumedMetrics::new(
            MetricConfig {
                samples: 2,
                window_ms: 1_000,
            },
            "c1".into(),
        );
        let a0 = TopicPartition::new("orders.eu", 0);
        let a1 = TopicPartition::new("orders.eu", 1);
        let consumed = |records, bytes, lag, lead| Consumed {
            records,
            bytes,
            lag,
            lead,
        };
        metrics.record(&a0, consumed(10, 700, Some(5), Some(10)), start);
        metrics.record(
            &a1,
            consumed(4, 300, Some(9), None),
            start + Duration::from_millis(500),
        );
        metrics.record(
            &a0,
            consumed(0, 0, Some(5), Some(10)),
            start + Duration::from_millis(900),
        );
        let mut out = Vec::new();
        metrics.measure_into(start + Duration::from_millis(1_000), &mut out);
        assert_eq!(find(&out, "records-consumed-total", &[]), Some(14.0));
        assert_eq!(find(&out, "bytes-consumed-total", &[]), Some(1_000.0));
        // 14 records over the one second since the first sample began.
        assert_eq!(find(&out, "records-consumed-rate", &[]), Some(14.0));
        assert_eq!(find(&out, "records-lag-max", &[]), Some(9.0));
        assert_eq!(find(&out, "records-lead-min", &[]), Some(10.0));
        assert_eq!(
            find(&out, "records-consumed-total", &[("topic", "orders_eu")]),
            Some(14.0)
        );
        let p0 = [("topic", "orders_eu"), ("partition", "0")];
        assert_eq!(find(&out, "records-lag", &p0), Some(5.0));
        assert_eq!(find(&out, "records-lag-avg", &p0), Some(5.0));
        assert!(find(
            &out,
            "records-lead",
            &[("topic", "orders_eu"), ("partition", "1")]
        )
        .is_some_and(f64::is_nan));

        metrics.retain_partitions(&BTreeSet::from([a1]));
        let mut out = Vec::new();
        metrics.measure_into(start + Duration::from_millis(1_000), &mut out);
        assert_eq!(find(&out, "records-lag", &p0), None);
        assert_eq!(find(&out, "records-consumed-total", &[]), Some(14.0));
    }
}
