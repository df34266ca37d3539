//! KIP-714 client metrics push: the consumer fetches a telemetry subscription from a broker
//! (which metrics, how often, which codecs) and pushes those metrics to it as OpenTelemetry
//! `MetricsData`, as Java's `ClientTelemetryReporter` does.
//!
//! - [`state`]: the sender's state machine (`ClientTelemetryState`).
//! - [`subscription`]: validating a subscription, choosing a codec, waiting after errors
//!   (`ClientTelemetryUtils`).
//! - [`naming`]: telemetry metric names (`TelemetryMetricNamingConvention`).
//! - [`collector`]: metrics to data points, sums as cumulative or delta (`KafkaMetricsCollector`).
//! - [`otlp`]: the protobuf encoding of the payload.
//! - [`manager`]: the sans-IO request manager the background task drives.

pub(crate) mod collector;
pub(crate) mod manager;
pub(crate) mod naming;
pub(crate) mod otlp;
pub(crate) mod state;
pub(crate) mod subscription;

pub(crate) use manager::{Sample, TelemetryManager};
