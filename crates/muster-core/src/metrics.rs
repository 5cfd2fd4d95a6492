//! The shared parts of muster's Prometheus metrics: a lock-free duration histogram and its
//! buckets.
//!
//! Every crate registers its own metric families in a
//! [`prometheus_client::registry::Registry`] the application owns (the aggregator its tool
//! calls, the workflow engine its executions), so a crate used on its own carries no metrics
//! unless its user asks for them, and none depends on another for them.
//!
//! [`DurationHistogram`] replaces `prometheus_client`'s own histogram on hot paths: that one
//! takes a mutex per observation; this one is a few relaxed atomic additions.
//!
//! ```
//! use std::time::Duration;
//! use muster_core::metrics::DurationHistogram;
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let latency = DurationHistogram::default();
//! registry.register("demo_duration_seconds", "How long demos take", latency.clone());
//! latency.observe(Duration::from_millis(3));
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains("demo_duration_seconds_bucket{le=\"0.0025\"} 0"));
//! assert!(text.contains("demo_duration_seconds_bucket{le=\"0.005\"} 1"));
//! assert!(text.contains("demo_duration_seconds_bucket{le=\"+Inf\"} 1"));
//! assert!(text.contains("demo_duration_seconds_count 1"));
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Upper bounds, in seconds, of the buckets of every muster duration histogram: from half a
/// millisecond (a proxied call to a local server) to a minute (a long workflow).
pub const DURATION_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// The bucket bounds in nanoseconds, for comparisons without floating point.
const BOUNDS_NANOS: [u64; 16] = {
    let mut out = [0u64; 16];
    let mut i = 0;
    while i < 16 {
        // Exact: every bound is a whole number of 100 µs.
        out[i] = (DURATION_BUCKETS[i] * 10_000.0) as u64 * 100_000;
        i += 1;
    }
    out
};

/// A histogram of durations in seconds over [`DURATION_BUCKETS`], updated with atomics
/// only. Clones share the same counts.
#[derive(Debug, Clone, Default)]
pub struct DurationHistogram {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Observations per bucket (not cumulative); the last one is `+Inf`.
    counts: [AtomicU64; 17],
    /// The sum of every observation, in nanoseconds.
    sum_nanos: AtomicU64,
}

impl DurationHistogram {
    /// Records one observation.
    pub fn observe(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_NANOS
            .iter()
            .position(|&bound| nanos <= bound)
            .unwrap_or(BOUNDS_NANOS.len());
        self.inner.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.inner.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The number of observations.
    pub fn count(&self) -> u64 {
        self.inner
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// The buckets with their own (not cumulative) counts, as the encoders expect them, the
    /// count and the sum in seconds, each bucket read once.
    fn snapshot(&self) -> (Vec<(f64, u64)>, u64, f64) {
        let mut total = 0;
        let mut buckets = Vec::with_capacity(DURATION_BUCKETS.len() + 1);
        for (i, count) in self.inner.counts.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            total += count;
            let bound = DURATION_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY);
            buckets.push((bound, count));
        }
        let sum = self.inner.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        (buckets, total, sum)
    }
}

impl TypedMetric for DurationHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for DurationHistogram {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let (buckets, count, sum) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_exact() {
        assert_eq!(BOUNDS_NANOS[0], 500_000);
        assert_eq!(BOUNDS_NANOS[1], 1_000_000);
        assert_eq!(BOUNDS_NANOS[2], 2_500_000);
        assert_eq!(BOUNDS_NANOS[15], 60_000_000_000);
    }

    #[test]
    fn observations_land_in_their_bucket_and_add_up() {
        let h = DurationHistogram::default();
        h.observe(Duration::from_micros(500)); // on the bound: le 0.0005
        h.observe(Duration::from_micros(501));
        h.observe(Duration::from_secs(120)); // +Inf
        let (buckets, count, sum) = h.snapshot();
        assert_eq!(count, 3);
        assert_eq!(buckets[0], (0.0005, 1));
        assert_eq!(buckets[1], (0.001, 1));
        assert_eq!(buckets[15], (60.0, 0));
        assert_eq!(buckets[16], (f64::INFINITY, 1));
        assert!((sum - 120.001001).abs() < 1e-9, "{sum}");
        assert_eq!(h.clone().count(), 3);
    }
}
