//! The push payload: OpenTelemetry's `MetricsData` protobuf (opentelemetry-proto
//! `opentelemetry/proto/metrics/v1/metrics.proto`), encoded by hand. The messages used are
//! few and flat, so a small writer replaces a protobuf code generator and its build step.
//!
//! The layout is Java's `ClientTelemetryReporter.createPayload`: one `ResourceMetrics` per
//! metric, each carrying the client's resource and one `ScopeMetrics` with that one metric.
//! Fields at their proto3 default are left out, as protobuf-java leaves them out, except the
//! members of a `oneof` (a data point's value, a metric's gauge or sum) and set message fields,
//! which are written even when empty.

/// `AggregationTemporality` of a sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Temporality {
    /// `AGGREGATION_TEMPORALITY_DELTA` (1): the change since the previous push.
    Delta,
    /// `AGGREGATION_TEMPORALITY_CUMULATIVE` (2): the total since the start time.
    Cumulative,
}

impl Temporality {
    fn number(self) -> u64 {
        match self {
            Self::Delta => 1,
            Self::Cumulative => 2,
        }
    }
}

/// A `NumberDataPoint`'s value (`oneof value`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PointValue {
    /// `as_double` (field 4).
    Double(f64),
    /// `as_int` (field 6): Java's non-measurable `Integer`/`Long` gauges.
    Int(i64),
}

/// One `NumberDataPoint`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    /// `attributes` (field 7), string-valued.
    pub attributes: Vec<(String, String)>,
    /// `start_time_unix_nano` (field 2): sums only.
    pub start_time_unix_nano: Option<u64>,
    /// `time_unix_nano` (field 3).
    pub time_unix_nano: u64,
    /// The value.
    pub value: PointValue,
}

/// A metric's data (`oneof data`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MetricData {
    /// `gauge` (field 5).
    Gauge(Point),
    /// `sum` (field 7).
    Sum {
        point: Point,
        temporality: Temporality,
        monotonic: bool,
    },
}

/// One `Metric` with one data point (Java's `SinglePointMetric`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OtlpMetric {
    /// `name` (field 1); Java sets no description or unit.
    pub name: String,
    /// The data.
    pub data: MetricData,
}

/// Encodes a `MetricsData` message: `metrics`, each under a resource with `resource`
/// attributes.
pub(crate) fn encode_metrics_data(
    resource: &[(String, String)],
    metrics: &[OtlpMetric],
) -> Vec<u8> {
    let mut resource_message = Vec::new();
    for (key, value) in resource {
        message(&mut resource_message, 1, &key_value(key, value));
    }
    let mut out = Vec::new();
    for metric in metrics {
        let mut scope_metrics = Vec::new();
        message(&mut scope_metrics, 2, &encode_metric(metric));
        let mut resource_metrics = Vec::new();
        message(&mut resource_metrics, 1, &resource_message);
        message(&mut resource_metrics, 2, &scope_metrics);
        message(&mut out, 1, &resource_metrics);
    }
    out
}

fn encode_metric(metric: &OtlpMetric) -> Vec<u8> {
    let mut out = Vec::new();
    bytes_field(&mut out, 1, metric.name.as_bytes());
    match &metric.data {
        MetricData::Gauge(point) => {
            let mut gauge = Vec::new();
            message(&mut gauge, 1, &encode_point(point));
            message(&mut out, 5, &gauge);
        }
        MetricData::Sum {
            point,
            temporality,
            monotonic,
        } => {
            let mut sum = Vec::new();
            message(&mut sum, 1, &encode_point(point));
            varint_field(&mut sum, 2, temporality.number());
            if *monotonic {
                varint_field(&mut sum, 3, 1);
            }
            message(&mut out, 7, &sum);
        }
    }
    out
}

fn encode_point(point: &Point) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(start) = point.start_time_unix_nano.filter(|&t| t != 0) {
        fixed64_field(&mut out, 2, start);
    }
    if point.time_unix_nano != 0 {
        fixed64_field(&mut out, 3, point.time_unix_nano);
    }
    match point.value {
        PointValue::Double(value) => fixed64_field(&mut out, 4, value.to_bits()),
        PointValue::Int(value) => fixed64_field(&mut out, 6, value as u64),
    }
    for (key, value) in &point.attributes {
        message(&mut out, 7, &key_value(key, value));
    }
    out
}

/// A `KeyValue` whose `AnyValue` is a `string_value`.
fn key_value(key: &str, value: &str) -> Vec<u8> {
    let mut any_value = Vec::new();
    bytes_field(&mut any_value, 1, value.as_bytes());
    let mut out = Vec::new();
    bytes_field(&mut out, 1, key.as_bytes());
    message(&mut out, 2, &any_value);
    out
}

// Wire types (protobuf encoding): 0 varint, 1 64-bit, 2 length-delimited.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LENGTH_DELIMITED: u32 = 2;

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn tag(out: &mut Vec<u8>, field: u32, wire_type: u32) {
    varint(out, u64::from(field << 3 | wire_type));
}

fn varint_field(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, VARINT);
    varint(out, value);
}

fn fixed64_field(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, FIXED64);
    out.extend_from_slice(&value.to_le_bytes());
}

/// A string, bytes or embedded message field (proto3 omits an empty string).
fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    if !bytes.is_empty() {
        message(out, field, bytes);
    }
}

/// An embedded message field, written even when empty (the field is set).
fn message(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    tag(out, field, LENGTH_DELIMITED);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point, MetricsData};
    use prost::Message;

    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn varints_are_little_endian_base_128() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        out.clear();
        varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
    }

    /// The payload decodes with the OpenTelemetry project's own generated types.
    #[test]
    fn payload_decodes_as_opentelemetry_metrics_data() {
        let metrics = [
            OtlpMetric {
                name: "org.apache.kafka.consumer.fetch.manager.records.consumed.total".into(),
                data: MetricData::Sum {
                    point: Point {
                        attributes: attrs(&[("topic", "t")]),
                        start_time_unix_nano: Some(1_000),
                        time_unix_nano: 2_000,
                        value: PointValue::Double(42.0),
                    },
                    temporality: Temporality::Cumulative,
                    monotonic: true,
                },
            },
            OtlpMetric {
                name: "org.apache.kafka.consumer.fetch.manager.records.lag.max".into(),
                data: MetricData::Gauge(Point {
                    attributes: Vec::new(),
                    start_time_unix_nano: None,
                    time_unix_nano: 3_000,
                    value: PointValue::Double(0.0),
                }),
            },
            OtlpMetric {
                name: "org.apache.kafka.consumer.fetch.manager.preferred.read.replica".into(),
                data: MetricData::Sum {
                    point: Point {
                        attributes: Vec::new(),
                        start_time_unix_nano: Some(5),
                        time_unix_nano: 6,
                        value: PointValue::Int(-1),
                    },
                    temporality: Temporality::Delta,
                    monotonic: false,
                },
            },
        ];
        let resource = attrs(&[("group_id", "g")]);
        let bytes = encode_metrics_data(&resource, &metrics);
        let decoded = MetricsData::decode(bytes.as_slice()).expect("valid MetricsData");
        assert_eq!(decoded.resource_metrics.len(), 3);
        for rm in &decoded.resource_metrics {
            let attributes = &rm.resource.as_ref().unwrap().attributes;
            assert_eq!(attributes[0].key, "group_id");
            assert_eq!(
                attributes[0].value.as_ref().unwrap().value,
                Some(Value::StringValue("g".into()))
            );
            assert_eq!(rm.scope_metrics.len(), 1);
            assert_eq!(rm.scope_metrics[0].metrics.len(), 1);
        }
        let metric_at = |i: usize| &decoded.resource_metrics[i].scope_metrics[0].metrics[0];
        let sum = metric_at(0);
        assert_eq!(sum.name, metrics[0].name);
        let Some(metric::Data::Sum(data)) = &sum.data else {
            panic!("{sum:?}")
        };
        assert_eq!(data.aggregation_temporality, 2);
        assert!(data.is_monotonic);
        let point = &data.data_points[0];
        assert_eq!(
            (point.start_time_unix_nano, point.time_unix_nano),
            (1_000, 2_000)
        );
        assert_eq!(point.value, Some(number_data_point::Value::AsDouble(42.0)));
        assert_eq!(point.attributes[0].key, "topic");
        let gauge = metric_at(1);
        let Some(metric::Data::Gauge(data)) = &gauge.data else {
            panic!("{gauge:?}")
        };
        // A zero value is still written: it is a oneof member.
        assert_eq!(
            data.data_points[0].value,
            Some(number_data_point::Value::AsDouble(0.0))
        );
        assert_eq!(data.data_points[0].time_unix_nano, 3_000);
        let delta = metric_at(2);
        let Some(metric::Data::Sum(data)) = &delta.data else {
            panic!("{delta:?}")
        };
        assert_eq!(data.aggregation_temporality, 1);
        assert!(!data.is_monotonic);
        assert_eq!(
            data.data_points[0].value,
            Some(number_data_point::Value::AsInt(-1))
        );
    }

    #[test]
    fn no_metrics_is_an_empty_message() {
        assert!(encode_metrics_data(&[], &[]).is_empty());
    }
}
