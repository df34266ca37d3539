//! Kafka's named metrics as gauges on the [`metrics`](::metrics) facade (the `metrics`
//! feature), so whatever exporter the application installed (Prometheus, OpenTelemetry,
//! StatsD) reports them.
//!
//! A gauge is named `kafka.consumer.<group>.<name>` and labelled with the metric's tags
//! (`client-id`, and `topic`/`partition` where Java has them): the names the Prometheus JMX
//! exporter gives a Java consumer's MBeans (`kafka_consumer_consumer_fetch_manager_metrics_
//! records_lag_max{client_id="…"}` once an exporter replaces `.` and `-`).

use crate::metric::{Metric, MetricName};
use crate::rt::{Duration, Instant};

/// How often the background task sets the gauges at most. Rates and averages move over
/// `metrics.sample.window.ms` windows (30 s by default): a second is fresh enough for any
/// scrape interval and costs one measurement of a few dozen numbers.
const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// Sets the gauges when due.
#[derive(Debug, Default)]
pub(crate) struct Publisher {
    last_at: Option<Instant>,
}

impl Publisher {
    /// Whether a second has passed since the last publication (or there was none).
    pub fn due(&self, now: Instant) -> bool {
        self.last_at.is_none_or(|at| now >= at + PUBLISH_INTERVAL)
    }

    /// Sets one gauge per metric.
    pub fn publish(&mut self, metrics: &[Metric], now: Instant) {
        self.last_at = Some(now);
        for metric in metrics {
            let name = facade_name(&metric.name);
            ::metrics::describe_gauge!(name.clone(), metric.description);
            let labels: Vec<::metrics::Label> = metric
                .name
                .tags
                .iter()
                .map(|(key, value)| ::metrics::Label::new(*key, value.clone()))
                .collect();
            ::metrics::gauge!(name, labels).set(metric.value);
        }
    }
}

/// `kafka.consumer.<group>.<name>`.
fn facade_name(name: &MetricName) -> String {
    format!("kafka.consumer.{}.{}", name.group, name.name)
}
