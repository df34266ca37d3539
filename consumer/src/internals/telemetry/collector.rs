//! From the consumer's metrics to the data points of one push (Java's
//! `KafkaMetricsCollector`, `ClientTelemetryEmitter` and `SinglePointMetric`).
//!
//! Java decides a metric's kind by its measurable: a `CumulativeSum` or `CumulativeCount`
//! (every `*-total` metric of the consumer, Meter totals included) is a monotonic sum, any
//! other measurable (rates, averages, maxima, values) a double gauge, and a non-measurable
//! `Gauge<Integer>` (`preferred-read-replica`) an integer gauge. Sums are cumulative from the
//! time the metric was first seen, or, when the subscription asks for delta temporality, the
//! change since the previous push.

use std::collections::{BTreeMap, BTreeSet};

use crate::metric::Metric;

use super::naming::{attributes, telemetry_name};
use super::otlp::{MetricData, OtlpMetric, Point, PointValue, Temporality};
use super::subscription::MetricSelector;

/// A metric's identity in the ledger: its telemetry name and attributes.
type Key = (String, Vec<(String, String)>);

/// What Java's `StateLedger` remembers of one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    /// When the metric was first seen (`metricAdded`), the start of its cumulative sums.
    added_unix_nano: u64,
    /// The last value pushed as a delta and when (`LastValueTracker`).
    last_delta: Option<(u64, f64)>,
}

/// The ledger behind sums, kept across pushes.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    ledger: BTreeMap<Key, Entry>,
}

/// Java's measurable classes, as this consumer's metrics map onto them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `CumulativeSum` / `CumulativeCount`.
    Sum,
    /// Any other measurable.
    DoubleGauge,
    /// A non-measurable `Gauge<Integer>`.
    IntGauge,
}

fn kind_of(metric: &Metric) -> Kind {
    if metric.name.name.ends_with("-total") {
        Kind::Sum
    } else if metric.name.name == "preferred-read-replica" {
        Kind::IntGauge
    } else {
        Kind::DoubleGauge
    }
}

impl Collector {
    /// Forgets every start time and last value (Java's `metricsReset`, when a new
    /// subscription changes the temporality).
    pub fn reset(&mut self) {
        self.ledger.clear();
    }

    /// Whether no metric is remembered.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.ledger.is_empty()
    }

    /// The data points of one push at `now_unix_nano`: the metrics `selector` selects, sums
    /// as deltas if `delta` (else cumulative). Every metric is remembered, selected or not,
    /// and one no longer measured is forgotten (Java's `metricRemoval`).
    pub fn collect(
        &mut self,
        metrics: &[Metric],
        selector: &MetricSelector,
        delta: bool,
        now_unix_nano: u64,
    ) -> Vec<OtlpMetric> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for metric in metrics {
            let name = telemetry_name(&metric.name);
            let attributes = attributes(&metric.name);
            let key: Key = (name, attributes);
            let entry = self.ledger.entry(key.clone()).or_insert(Entry {
                added_unix_nano: now_unix_nano,
                last_delta: None,
            });
            let selected = selector.selects(&key.0);
            let kind = kind_of(metric);
            let data = match kind {
                _ if !selected => None,
                Kind::Sum if delta => {
                    let (start, value) = match entry.last_delta {
                        Some((last_at, last_value)) => (last_at, metric.value - last_value),
                        None => (entry.added_unix_nano, metric.value),
                    };
                    entry.last_delta = Some((now_unix_nano, metric.value));
                    Some(sum(
                        key.1.clone(),
                        start,
                        now_unix_nano,
                        value,
                        Temporality::Delta,
                    ))
                }
                Kind::Sum => Some(sum(
                    key.1.clone(),
                    entry.added_unix_nano,
                    now_unix_nano,
                    metric.value,
                    Temporality::Cumulative,
                )),
                Kind::DoubleGauge => Some(MetricData::Gauge(Point {
                    attributes: key.1.clone(),
                    start_time_unix_nano: None,
                    time_unix_nano: now_unix_nano,
                    value: PointValue::Double(metric.value),
                })),
                Kind::IntGauge => Some(MetricData::Gauge(Point {
                    attributes: key.1.clone(),
                    start_time_unix_nano: None,
                    time_unix_nano: now_unix_nano,
                    value: PointValue::Int(metric.value as i64),
                })),
            };
            if let Some(data) = data {
                out.push(OtlpMetric {
                    name: key.0.clone(),
                    data,
                });
            }
            seen.insert(key);
        }
        self.ledger.retain(|key, _| seen.contains(key));
        out
    }
}

fn sum(
    attributes: Vec<(String, String)>,
    start_unix_nano: u64,
    now_unix_nano: u64,
    value: f64,
    temporality: Temporality,
) -> MetricData {
    MetricData::Sum {
        point: Point {
            attributes,
            start_time_unix_nano: Some(start_unix_nano),
            time_unix_nano: now_unix_nano,
            value: PointValue::Double(value),
        },
        temporality,
        monotonic: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{MetricName, COORDINATOR_GROUP, FETCH_MANAGER_GROUP};

    fn metric(group: &'static str, name: &'static str, value: f64) -> Metric {
        Metric {
            name: MetricName {
                group,
                name,
                tags: vec![("client-id", "c".to_owned())],
            },
            description: "",
            value,
        }
    }

    fn snapshot(consumed: f64) -> Vec<Metric> {
        vec![
            metric(FETCH_MANAGER_GROUP, "records-consumed-total", consumed),
            metric(FETCH_MANAGER_GROUP, "records-lag-max", 5.0),
            metric(FETCH_MANAGER_GROUP, "preferred-read-replica", -1.0),
            metric(COORDINATOR_GROUP, "commit-total", 1.0),
        ]
    }

    fn point_of(metric: &OtlpMetric) -> &Point {
        match &metric.data {
            MetricData::Gauge(point) | MetricData::Sum { point, .. } => point,
        }
    }

    #[test]
    fn cumulative_sums_start_when_first_seen_and_gauges_have_no_start() {
        let mut collector = Collector::default();
        let fetch = MetricSelector::from_requested(&["org.apache.kafka.consumer.fetch"]);
        let first = collector.collect(&snapshot(10.0), &fetch, false, 100);
        let second = collector.collect(&snapshot(25.0), &fetch, false, 200);
        assert_eq!(second.len(), 3, "the coordinator metric is not selected");
        let MetricData::Sum {
            point,
            temporality,
            monotonic,
        } = &second[0].data
        else {
            panic!("{:?}", second[0]);
        };
        assert_eq!(
            second[0].name,
            "org.apache.kafka.consumer.fetch.manager.records.consumed.total"
        );
        assert_eq!((*temporality, *monotonic), (Temporality::Cumulative, true));
        assert_eq!(point.start_time_unix_nano, Some(100));
        assert_eq!(point.time_unix_nano, 200);
        assert_eq!(point.value, PointValue::Double(25.0));
        assert!(point.attributes.is_empty(), "client_id is excluded");
        assert!(matches!(
            second[1].data,
            MetricData::Gauge(Point {
                start_time_unix_nano: None,
                ..
            })
        ));
        assert_eq!(point_of(&second[2]).value, PointValue::Int(-1));
        assert_eq!(first.len(), 3);
    }

    #[test]
    fn delta_sums_push_the_change_since_the_last_push() {
        let mut collector = Collector::default();
        let all = MetricSelector::All;
        let first = collector.collect(&snapshot(10.0), &all, true, 100);
        let second = collector.collect(&snapshot(25.0), &all, true, 200);
        let third = collector.collect(&snapshot(25.0), &all, true, 300);
        let consumed = |points: &[OtlpMetric]| {
            let MetricData::Sum {
                point, temporality, ..
            } = &points[0].data
            else {
                panic!();
            };
            assert_eq!(*temporality, Temporality::Delta);
            (point.start_time_unix_nano, point.value)
        };
        assert_eq!(consumed(&first), (Some(100), PointValue::Double(10.0)));
        assert_eq!(consumed(&second), (Some(100), PointValue::Double(15.0)));
        assert_eq!(consumed(&third), (Some(200), PointValue::Double(0.0)));
        assert_eq!(first.len(), 4);
    }

    #[test]
    fn forgotten_metrics_and_reset_restart_their_sums() {
        let mut collector = Collector::default();
        let all = MetricSelector::All;
        collector.collect(&snapshot(10.0), &all, true, 100);
        // The metric goes away (its partition was revoked) and comes back.
        collector.collect(&[], &all, true, 150);
        let back = collector.collect(&snapshot(3.0), &all, true, 200);
        assert_eq!(point_of(&back[0]).start_time_unix_nano, Some(200));
        assert_eq!(point_of(&back[0]).value, PointValue::Double(3.0));
        collector.reset();
        let after_reset = collector.collect(&snapshot(4.0), &all, true, 300);
        assert_eq!(point_of(&after_reset[0]).start_time_unix_nano, Some(300));
        assert_eq!(point_of(&after_reset[0]).value, PointValue::Double(4.0));
        assert!(collector
            .collect(&snapshot(4.0), &MetricSelector::None, true, 400)
            .is_empty());
    }
}
