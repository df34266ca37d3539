//! A sensor: several statistics of one recorded quantity, each published under its own Kafka
//! metric name (Java's `Sensor` with its `SensorBuilder` shapes: avg, max, min, value, meter).

use crate::metric::Metric;
use crate::metric::MetricName;

use super::stats::{MetricConfig, Rate, SampledStat, Windowed};

/// A metric's fixed identity: its group, name and description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetricSpec {
    pub group: &'static str,
    pub name: &'static str,
    pub description: &'static str,
}

/// One statistic of a sensor.
#[derive(Debug, Clone)]
enum Stat {
    Windowed(SampledStat),
    Rate(Rate),
    /// Java's `CumulativeSum`.
    Total(f64),
    /// Java's `CumulativeCount`.
    Count(f64),
    /// Java's `Value`: the last value recorded (NaN before any).
    Last(f64),
}

impl Stat {
    fn record(&mut self, config: &MetricConfig, value: f64, now_ms: u64) {
        match self {
            Self::Windowed(stat) => stat.record(config, value, now_ms),
            Self::Rate(rate) => rate.record(config, value, now_ms),
            Self::Total(total) => *total += value,
            Self::Count(count) => *count += 1.0,
            Self::Last(last) => *last = value,
        }
    }

    fn measure(&mut self, config: &MetricConfig, now_ms: u64) -> f64 {
        match self {
            Self::Windowed(stat) => stat.measure(config, now_ms),
            Self::Rate(rate) => rate.measure(config, now_ms),
            Self::Total(value) | Self::Count(value) | Self::Last(value) => *value,
        }
    }
}

/// Statistics of one quantity.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sensor {
    stats: Vec<(&'static MetricSpec, Stat)>,
}

impl Sensor {
    pub fn new() -> Self {
        Self::default()
    }

    fn with(mut self, spec: &'static MetricSpec, stat: Stat) -> Self {
        self.stats.push((spec, stat));
        self
    }

    pub fn avg(self, spec: &'static MetricSpec) -> Self {
        self.with(spec, Stat::Windowed(SampledStat::new(Windowed::Avg)))
    }

    pub fn max(self, spec: &'static MetricSpec) -> Self {
        self.with(spec, Stat::Windowed(SampledStat::new(Windowed::Max)))
    }

    pub fn min(self, spec: &'static MetricSpec) -> Self {
        self.with(spec, Stat::Windowed(SampledStat::new(Windowed::Min)))
    }

    /// The last value recorded.
    pub fn value(self, spec: &'static MetricSpec) -> Self {
        self.with(spec, Stat::Last(f64::NAN))
    }

    /// The sum of all values recorded, since start.
    pub fn total(self, spec: &'static MetricSpec) -> Self {
        self.with(spec, Stat::Total(0.0))
    }

    /// The number of recordings, since start.
    pub fn count(self, spec: &'static MetricSpec) -> Self {
        self.with(spec, Stat::Count(0.0))
    }

    /// Java's default `Meter`: the values' rate per second and their total.
    pub fn meter(self, rate: &'static MetricSpec, total: &'static MetricSpec) -> Self {
        self.with(rate, Stat::Rate(Rate::of_sum_per_second()))
            .total(total)
    }

    /// Java's `Meter(new WindowedCount(), …)`: recordings per second and their number.
    pub fn count_meter(self, rate: &'static MetricSpec, total: &'static MetricSpec) -> Self {
        self.with(rate, Stat::Rate(Rate::of_count(1_000.0)))
            .count(total)
    }

    /// Recordings per hour (`rebalance-rate-per-hour`).
    pub fn count_rate_per_hour(self, rate: &'static MetricSpec) -> Self {
        self.with(rate, Stat::Rate(Rate::of_count(3_600_000.0)))
    }

    pub fn record(&mut self, config: &MetricConfig, value: f64, now_ms: u64) {
        for (_, stat) in &mut self.stats {
            stat.record(config, value, now_ms);
        }
    }

    /// Appends each statistic's value, tagged `tags`.
    pub fn measure_into(
        &mut self,
        config: &MetricConfig,
        now_ms: u64,
        tags: &[(&'static str, String)],
        out: &mut Vec<Metric>,
    ) {
        for (spec, stat) in &mut self.stats {
            out.push(metric(spec, tags, stat.measure(config, now_ms)));
        }
    }
}

/// `spec` with `tags` and `value`.
pub(crate) fn metric(spec: &MetricSpec, tags: &[(&'static str, String)], value: f64) -> Metric {
    Metric {
        name: MetricName {
            group: spec.group,
            name: spec.name,
            tags: tags.to_vec(),
        },
        description: spec.description,
        value,
    }
}

/// Milliseconds on a metrics clock that starts at the first instant it sees: the statistics
/// only compare times with each other.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MetricsClock {
    base: Option<crate::rt::Instant>,
}

impl MetricsClock {
    pub fn ms(&mut self, now: crate::rt::Instant) -> u64 {
        let base = *self.base.get_or_insert(now);
        u64::try_from(now.saturating_duration_since(base).as_millis()).unwrap_or(u64::MAX)
    }
}
