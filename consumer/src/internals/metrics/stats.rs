//! Kafka's metric statistics, computed the way `org.apache.kafka.common.metrics.stats` computes
//! them, so a dashboard built on Java's `records-consumed-rate` or `fetch-latency-avg` reads the
//! same number from this client.
//!
//! A windowed statistic keeps `metrics.num.samples` samples of `metrics.sample.window.ms` each
//! (plus the one being filled, as Java's `SampledStat` keeps one extra); a sample whose last
//! event is older than `samples × window` is forgotten when measured. An average or maximum with
//! no event in the kept samples is NaN, as in Java. A rate divides the windowed sum (or count) by
//! the time the kept samples span, counting missing earlier windows as empty ones, so the first
//! seconds after start do not report a burst as a huge rate (Java's `Rate.windowSize`).
//!
//! Everything here is sans-IO: time comes in as milliseconds on the caller's clock.

/// How windowed statistics sample (Java's `MetricConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetricConfig {
    /// Samples kept (`metrics.num.samples`, at least 1).
    pub samples: usize,
    /// Length of one sample's window in ms (`metrics.sample.window.ms`).
    pub window_ms: u64,
}

impl Default for MetricConfig {
    fn default() -> Self {
        Self {
            samples: 2,
            window_ms: 30_000,
        }
    }
}

/// One sample of a windowed statistic.
#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    events: u64,
    start_ms: u64,
    last_event_ms: u64,
}

/// How a windowed statistic folds values into a sample and samples into a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Windowed {
    /// Mean of the values recorded.
    Avg,
    /// Largest value recorded.
    Max,
    /// Smallest value recorded.
    Min,
    /// Sum of the values recorded (a rate's numerator for bytes or records).
    Sum,
    /// Number of events (a rate's numerator for requests).
    Count,
}

impl Windowed {
    fn initial(self) -> f64 {
        match self {
            Self::Max => f64::NEG_INFINITY,
            Self::Min => f64::INFINITY,
            Self::Avg | Self::Sum | Self::Count => 0.0,
        }
    }

    fn fold(self, sample: f64, value: f64) -> f64 {
        match self {
            Self::Avg | Self::Sum => sample + value,
            Self::Count => sample + 1.0,
            Self::Max => sample.max(value),
            Self::Min => sample.min(value),
        }
    }
}

/// A statistic over the last few sample windows (Java's `SampledStat`).
#[derive(Debug, Clone)]
pub(crate) struct SampledStat {
    kind: Windowed,
    samples: Vec<Sample>,
    current: usize,
}

impl SampledStat {
    pub fn new(kind: Windowed) -> Self {
        Self {
            kind,
            samples: Vec::new(),
            current: 0,
        }
    }

    fn new_sample(&self, now_ms: u64) -> Sample {
        Sample {
            value: self.kind.initial(),
            events: 0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }

    pub fn record(&mut self, config: &MetricConfig, value: f64, now_ms: u64) {
        if self.samples.is_empty() {
            self.samples.push(self.new_sample(now_ms));
            self.current = 0;
        }
        if now_ms.saturating_sub(self.samples[self.current].start_ms) >= config.window_ms {
            // One sample more than configured is kept: the one being filled.
            let kept = config.samples.max(1) + 1;
            self.current = (self.current + 1) % kept;
            let fresh = self.new_sample(now_ms);
            if self.current >= self.samples.len() {
                self.samples.push(fresh);
                self.current = self.samples.len() - 1;
            } else {
                self.samples[self.current] = fresh;
            }
        }
        let sample = &mut self.samples[self.current];
        sample.value = self.kind.fold(sample.value, value);
        sample.events += 1;
        sample.last_event_ms = now_ms;
    }

    /// Forgets samples with no event within the last `samples × window`.
    fn purge(&mut self, config: &MetricConfig, now_ms: u64) {
        let expire_ms = config.samples.max(1) as u64 * config.window_ms;
        let initial = self.kind.initial();
        for sample in &mut self.samples {
            if now_ms.saturating_sub(sample.last_event_ms) >= expire_ms {
                *sample = Sample {
                    value: initial,
                    events: 0,
                    start_ms: now_ms,
                    last_event_ms: now_ms,
                };
            }
        }
    }

    pub fn measure(&mut self, config: &MetricConfig, now_ms: u64) -> f64 {
        self.purge(config, now_ms);
        let events: u64 = self.samples.iter().map(|s| s.events).sum();
        match self.kind {
            Windowed::Sum | Windowed::Count => self.samples.iter().map(|s| s.value).sum(),
            _ if events == 0 => f64::NAN,
            Windowed::Avg => self.samples.iter().map(|s| s.value).sum::<f64>() / events as f64,
            Windowed::Max => self
                .samples
                .iter()
                .map(|s| s.value)
                .fold(f64::NEG_INFINITY, f64::max),
            Windowed::Min => self
                .samples
                .iter()
                .map(|s| s.value)
                .fold(f64::INFINITY, f64::min),
        }
    }

    /// The span, in ms, the kept samples cover for a rate (Java's `Rate.windowSize`): from the
    /// oldest kept sample's start to now, at least `samples - 1` whole windows.
    fn window_size_ms(&mut self, config: &MetricConfig, now_ms: u64) -> u64 {
        self.purge(config, now_ms);
        let oldest_start_ms = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let elapsed_ms = now_ms.saturating_sub(oldest_start_ms);
        let window_ms = config.window_ms.max(1);
        let full_windows = elapsed_ms / window_ms;
        let min_full_windows = config.samples.max(1) as u64 - 1;
        if full_windows < min_full_windows {
            elapsed_ms + (min_full_windows - full_windows) * window_ms
        } else {
            elapsed_ms
        }
    }
}

/// A per-time-unit rate of a windowed sum or count (Java's `Rate`).
#[derive(Debug, Clone)]
pub(crate) struct Rate {
    stat: SampledStat,
    unit_ms: f64,
}

impl Rate {
    /// A rate per second of the values recorded (bytes, records).
    pub fn of_sum_per_second() -> Self {
        Self {
            stat: SampledStat::new(Windowed::Sum),
            unit_ms: 1_000.0,
        }
    }

    /// A rate of events per `unit_ms` (per second: 1000; per hour: 3 600 000).
    pub fn of_count(unit_ms: f64) -> Self {
        Self {
            stat: SampledStat::new(Windowed::Count),
            unit_ms,
        }
    }

    pub fn record(&mut self, config: &MetricConfig, value: f64, now_ms: u64) {
        self.stat.record(config, value, now_ms);
    }

    pub fn measure(&mut self, config: &MetricConfig, now_ms: u64) -> f64 {
        let value = self.stat.measure(config, now_ms);
        let window_ms = self.stat.window_size_ms(config, now_ms);
        if window_ms == 0 {
            // Java divides by zero here too and reports what that gives (NaN or infinity);
            // a measurement in the same millisecond as the first record has no span yet.
            return f64::NAN;
        }
        value / (window_ms as f64 / self.unit_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(samples: usize, window_ms: u64) -> MetricConfig {
        MetricConfig { samples, window_ms }
    }

    #[test]
    fn avg_max_min_are_nan_without_events_and_exact_with_them() {
        let c = config(2, 1_000);
        for kind in [Windowed::Avg, Windowed::Max, Windowed::Min] {
            assert!(SampledStat::new(kind).measure(&c, 0).is_nan(), "{kind:?}");
        }
        let mut avg = SampledStat::new(Windowed::Avg);
        let mut max = SampledStat::new(Windowed::Max);
        let mut min = SampledStat::new(Windowed::Min);
        for (value, at) in [(10.0, 0), (30.0, 500), (-2.0, 1_200)] {
            avg.record(&c, value, at);
            max.record(&c, value, at);
            min.record(&c, value, at);
        }
        assert_eq!(avg.measure(&c, 1_300), 38.0 / 3.0);
        assert_eq!(max.measure(&c, 1_300), 30.0);
        assert_eq!(min.measure(&c, 1_300), -2.0);
    }

    #[test]
    fn samples_expire_after_samples_times_window_without_events() {
        let c = config(2, 1_000);
        let mut max = SampledStat::new(Windowed::Max);
        max.record(&c, 50.0, 0);
        max.record(&c, 7.0, 1_500);
        // The first sample's last event is 1 999 ms old: kept.
        assert_eq!(max.measure(&c, 1_999), 50.0);
        // 2 000 ms old: forgotten; the second sample still counts.
        assert_eq!(max.measure(&c, 2_000), 7.0);
        assert!(max.measure(&c, 3_500).is_nan());
    }

    #[test]
    fn ring_keeps_one_sample_more_than_configured() {
        let c = config(2, 1_000);
        let mut sum = SampledStat::new(Windowed::Sum);
        for at in [0, 1_000, 2_000, 3_000] {
            sum.record(&c, 1.0, at);
        }
        // Three samples are kept (two plus the current); the one from 0 was recycled.
        assert_eq!(sum.samples.len(), 3);
        assert_eq!(sum.measure(&c, 2_999), 3.0);
    }

    /// Java's `RateTest`/`MetricsTest` behaviour: before `samples - 1` full windows have
    /// passed, the missing windows count as empty ones.
    #[test]
    fn rate_counts_missing_early_windows_as_empty() {
        let c = config(2, 1_000);
        let mut rate = Rate::of_count(1_000.0);
        rate.record(&c, 0.0, 0);
        rate.record(&c, 0.0, 30);
        rate.record(&c, 0.0, 60);
        // 3 events over 60 ms + one empty 1 000 ms window.
        assert_eq!(rate.measure(&c, 60), 3.0 / 1.06);
        // Once a whole window has passed the span is the real one.
        rate.record(&c, 0.0, 1_500);
        assert_eq!(rate.measure(&c, 2_000), 4.0 / 2.0);
    }

    #[test]
    fn rate_of_sum_divides_the_values_by_seconds() {
        let c = config(2, 30_000);
        let mut rate = Rate::of_sum_per_second();
        rate.record(&c, 1_000.0, 0);
        rate.record(&c, 2_000.0, 10_000);
        // 3 000 bytes over 10 s plus one empty 30 s window.
        assert_eq!(rate.measure(&c, 10_000), 3_000.0 / 40.0);
    }

    #[test]
    fn rate_per_hour() {
        let c = config(2, 30_000);
        let mut rate = Rate::of_count(3_600_000.0);
        rate.record(&c, 0.0, 0);
        assert_eq!(rate.measure(&c, 30_000), 1.0 / (30_000.0 / 3_600_000.0));
    }

    #[test]
    fn rate_is_zero_once_all_events_expired() {
        let c = config(2, 1_000);
        let mut rate = Rate::of_sum_per_second();
        rate.record(&c, 100.0, 0);
        assert_eq!(rate.measure(&c, 5_000), 0.0);
    }
}
