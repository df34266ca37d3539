//! Every Kafka-named metric of one consumer as of now: the consumption metrics the fetch
//! buffer keeps and the request, group and `poll` metrics the shared registry keeps.

use crate::metric::Metric;
use crate::rt::Instant;

use super::fetch_buffer::FetchBuffer;
use super::metrics::SharedMetrics;

/// The values of every metric, measured at `now`. The two locks are taken one after the
/// other, never together.
pub(crate) fn measure_all(
    buffer: &FetchBuffer,
    metrics: &SharedMetrics,
    now: Instant,
) -> Vec<Metric> {
    let mut out = Vec::with_capacity(64);
    let assigned = buffer.measure_into(now, &mut out);
    metrics.measure_into(now, &assigned, &mut out);
    out
}
