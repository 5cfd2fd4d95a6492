//! What a load run counts and how it reports it: latencies, failures by reason, nearest-rank
//! percentiles, and the summary line and JSON report of the harness's `mcp-load`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

/// Distinct failure reasons kept; later ones are counted as `(other errors)`.
const MAX_ERROR_KINDS: usize = 20;

/// The outcome of some calls.
#[derive(Debug, Default)]
pub(super) struct Stats {
    /// Latencies of the successful calls, in nanoseconds.
    pub(super) lat_ns: Vec<u64>,
    /// Failed calls.
    pub(super) failed: u64,
    /// Failed calls by reason.
    pub(super) errors: BTreeMap<String, u64>,
    /// Successful calls answered over SSE (all of them, on this transport).
    pub(super) sse: u64,
}

impl Stats {
    /// Counts a failed call.
    pub(super) fn fail(&mut self, reason: String) {
        self.failed += 1;
        self.count_error(reason, 1);
    }

    /// Adds another worker's outcome.
    pub(super) fn merge(&mut self, other: Stats) {
        self.lat_ns.extend(other.lat_ns);
        self.failed += other.failed;
        for (reason, n) in other.errors {
            self.count_error(reason, n);
        }
        self.sse += other.sse;
    }

    fn count_error(&mut self, reason: String, n: u64) {
        let key = if self.errors.contains_key(&reason) || self.errors.len() < MAX_ERROR_KINDS {
            reason
        } else {
            "(other errors)".to_owned()
        };
        *self.errors.entry(key).or_default() += n;
    }
}

/// When workers stop taking new calls: at a deadline, after a count, or both.
#[derive(Debug, Clone)]
pub(super) struct Stop {
    /// No call starts after this.
    pub(super) deadline: Option<Instant>,
    /// Calls left to start, shared by the workers.
    pub(super) remaining: Option<Arc<AtomicI64>>,
}

impl Stop {
    /// Whether one more call may start (and, with a count, takes it).
    pub(super) fn take(&self) -> bool {
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            return false;
        }
        match &self.remaining {
            Some(r) => r.fetch_sub(1, Ordering::Relaxed) > 0,
            None => true,
        }
    }
}

/// The nearest-rank percentile `p` of sorted nanoseconds, in milliseconds (NaN when empty).
pub(super) fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let idx = rank.clamp(1, sorted.len()) - 1;
    sorted[idx] as f64 / 1e6
}

/// Milliseconds rounded to microseconds, `null` when not finite.
fn ms(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

/// What a measured run was, besides its [`Stats`].
#[derive(Debug)]
pub(super) struct RunInfo<'a> {
    /// The report's name.
    pub(super) label: &'a str,
    /// The SSE endpoint.
    pub(super) url: &'a str,
    /// The tool called.
    pub(super) tool: &'a str,
    /// Its arguments.
    pub(super) arguments: &'a Value,
    /// The protocol version asked for.
    pub(super) protocol_version: &'a str,
    /// The protocol version the server answered.
    pub(super) negotiated_protocol_version: &'a str,
    /// Sessions the workers shared.
    pub(super) sessions: usize,
    /// Calls in flight.
    pub(super) concurrency: usize,
    /// Warm-up seconds before the run.
    pub(super) warmup_s: f64,
    /// How long the measured run took.
    pub(super) elapsed: Duration,
}

/// A finished run: its numbers, ready for the summary line and the JSON report.
#[derive(Debug)]
pub(super) struct Summary {
    /// The report, with the keys of `mcp-load --json`.
    pub(super) report: Value,
    /// The human-readable line and one line per failure reason.
    pub(super) text: String,
    /// Successful calls.
    pub(super) ok: u64,
    /// Failed calls.
    pub(super) failed: u64,
}

/// Summarises a run.
pub(super) fn summarize(info: &RunInfo<'_>, mut st: Stats) -> Summary {
    st.lat_ns.sort_unstable();
    let ok = st.lat_ns.len() as u64;
    let secs = info.elapsed.as_secs_f64();
    let rps = if secs > 0.0 { ok as f64 / secs } else { 0.0 };
    let mean = if ok > 0 {
        st.lat_ns.iter().map(|&x| x as f64).sum::<f64>() / ok as f64 / 1e6
    } else {
        f64::NAN
    };
    let (p50, p90, p99) = (
        pct(&st.lat_ns, 50.0),
        pct(&st.lat_ns, 90.0),
        pct(&st.lat_ns, 99.0),
    );
    let min = st.lat_ns.first().map_or(f64::NAN, |&x| x as f64 / 1e6);
    let max = st.lat_ns.last().map_or(f64::NAN, |&x| x as f64 / 1e6);
    let report = json!({
        "label": info.label,
        "url": info.url,
        "tool": info.tool,
        "arguments": info.arguments,
        "mode": "session",
        "protocol_version": info.protocol_version,
        "negotiated_protocol_version": info.negotiated_protocol_version,
        "sessions": info.sessions,
        "concurrency": info.concurrency,
        "warmup_s": info.warmup_s,
        "elapsed_s": (secs * 1000.0).round() / 1000.0,
        "calls": ok + st.failed,
        "ok": ok,
        "failed": st.failed,
        "throughput_rps": (rps * 10.0).round() / 10.0,
        "latency_ms": {
            "min": ms(min), "mean": ms(mean), "p50": ms(p50), "p90": ms(p90),
            "p99": ms(p99), "max": ms(max)
        },
        "responses": {"sse": st.sse, "json": 0},
        "errors": st.errors,
    });
    let mut text = format!(
        "{}: c={} ok={} failed={} in {secs:.2}s  {rps:.1} calls/s  p50 {p50:.3} ms  p90 {p90:.3} ms  p99 {p99:.3} ms  max {max:.3} ms  (sse {} / json 0)",
        info.label, info.concurrency, ok, st.failed, st.sse
    );
    for (reason, n) in &st.errors {
        text.push_str(&format!("\n  {n} × {reason}"));
    }
    Summary {
        report,
        text,
        ok,
        failed: st.failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<u64> = (1..=100).map(|x| x * 1_000_000).collect();
        assert_eq!(pct(&v, 50.0), 50.0);
        assert_eq!(pct(&v, 99.0), 99.0);
        assert_eq!(pct(&v, 100.0), 100.0);
        assert_eq!(pct(&[5_000_000], 50.0), 5.0);
        assert!(pct(&[], 50.0).is_nan());
    }

    #[test]
    fn failure_reasons_are_capped() {
        let mut st = Stats::default();
        for i in 0..MAX_ERROR_KINDS + 5 {
            st.fail(format!("reason {i}"));
        }
        st.fail("reason 0".to_owned());
        assert_eq!(st.failed, MAX_ERROR_KINDS as u64 + 6);
        assert_eq!(st.errors["reason 0"], 2);
        assert_eq!(st.errors["(other errors)"], 5);
    }

    #[test]
    fn a_count_stops_after_that_many_calls() {
        let stop = Stop {
            deadline: None,
            remaining: Some(Arc::new(AtomicI64::new(2))),
        };
        assert!(stop.take());
        assert!(stop.take());
        assert!(!stop.take());
    }

    #[test]
    fn the_report_has_mcp_loads_keys() {
        let args = json!({"message": "x"});
        let info = RunInfo {
            label: "l",
            url: "http://127.0.0.1:1/sse",
            tool: "echo",
            arguments: &args,
            protocol_version: "2024-11-05",
            negotiated_protocol_version: "2024-11-05",
            sessions: 1,
            concurrency: 2,
            warmup_s: 0.0,
            elapsed: Duration::from_secs(2),
        };
        let st = Stats {
            lat_ns: vec![3_000_000, 1_000_000],
            failed: 1,
            errors: BTreeMap::from([("boom".to_owned(), 1)]),
            sse: 2,
        };
        let s = summarize(&info, st);
        assert_eq!((s.ok, s.failed), (2, 1));
        let mut keys: Vec<&str> = s
            .report
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "arguments",
                "calls",
                "concurrency",
                "elapsed_s",
                "errors",
                "failed",
                "label",
                "latency_ms",
                "mode",
                "negotiated_protocol_version",
                "ok",
                "protocol_version",
                "responses",
                "sessions",
                "throughput_rps",
                "tool",
                "url",
                "warmup_s"
            ]
        );
        assert_eq!(s.report["calls"], 3);
        assert_eq!(s.report["throughput_rps"], 1.0);
        assert_eq!(s.report["latency_ms"]["p50"], 1.0);
        assert_eq!(s.report["latency_ms"]["max"], 3.0);
        assert!(s.text.contains("1 × boom"), "{}", s.text);
    }
}
