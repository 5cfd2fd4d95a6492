//! Traces and call logs of tool calls.
//!
//! Spans go to the `tracing` target [`SPAN_TARGET`]: an application that wants traces
//! enables that target in a `tracing-opentelemetry` layer (as `muster serve` does when
//! tracing is configured); without one the spans are disabled at their call site and cost
//! nothing. The W3C trace context (`traceparent`, `tracestate`) of a call is read from the
//! request's `_meta` (SEP-414) or, failing that, its HTTP headers, through the global
//! OpenTelemetry propagator, and the `traceparent` of muster's own span replaces the caller's
//! in the `_meta` that goes to the MCP server.
//!
//! Call logs go to the target [`CALL_LOG_TARGET`] at `INFO`: one event per tool call with the
//! tool, the server, the outcome and the duration in milliseconds; never arguments, results
//! or session ids.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use muster_core::tool::ToolError;
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt as _;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::metrics::outcome_of;

/// The `tracing` target of muster's spans.
pub const SPAN_TARGET: &str = "muster::otel";

/// The `tracing` target of the one-line-per-call log.
pub const CALL_LOG_TARGET: &str = "muster::call";

/// The W3C trace context keys.
const TRACE_KEYS: [&str; 2] = ["traceparent", "tracestate"];

/// The header of the W3C trace context's parent, looked for in every request's headers
/// (named once, not parsed from text at each look).
static TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// The share of calls with no sampled parent whose traces are kept (`f64` bits); 1 unless
/// [`set_head_sample_ratio`] says otherwise.
static HEAD_SAMPLE_RATIO: AtomicU64 = AtomicU64::new(0x3FF0_0000_0000_0000);

thread_local! {
    /// The state of the sampling coin.
    static COIN: Cell<u64> = Cell::new(seed());
}

pub use muster_core::trace_sampling::{Unsampled, in_unsampled_call};

/// Sets the share of requests, among those whose caller sent no sampled or unsampled
/// `traceparent`, whose calls are traced: the exporter's sample ratio. A request over HTTP
/// that is not sampled is run as [`Unsampled`], so its calls open no span at all (the spans
/// of an unsampled trace would only be built to be dropped by the exporter's sampler), and
/// what it hands to rmcp's session workers carries an unsampled `traceparent`.
pub fn set_head_sample_ratio(ratio: f64) {
    HEAD_SAMPLE_RATIO.store(ratio.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
}

/// Whether the trace of a request with `headers` is sampled: as its `traceparent` says,
/// else by the head sample ratio.
pub(crate) fn head_sampled(headers: &http::HeaderMap) -> bool {
    if let Some(flags) = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(sampled_flag)
    {
        return flags;
    }
    let ratio = f64::from_bits(HEAD_SAMPLE_RATIO.load(Ordering::Relaxed));
    if ratio >= 1.0 {
        return true;
    }
    // The top 53 bits of the coin as a number in [0, 1).
    let draw = (next_coin() >> 11) as f64 / (1u64 << 53) as f64;
    draw < ratio
}

/// The sampled flag of a valid W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`).
fn sampled_flag(traceparent: &str) -> Option<bool> {
    let mut parts = traceparent.trim().split('-');
    let (Some(version), Some(trace_id), Some(span_id), Some(flags), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace_id, 32)
        && trace_id.bytes().any(|b| b != b'0')
        && hex(span_id, 16)
        && span_id.bytes().any(|b| b != b'0')
        && hex(flags, 2);
    valid.then(|| u8::from_str_radix(flags, 16).is_ok_and(|f| f & 1 == 1))
}

/// A `traceparent` of a new trace that is not sampled: what a request that leaves an
/// unsampled call carries, so that the spans further on are not sampled either.
pub(crate) fn unsampled_traceparent() -> http::HeaderValue {
    let (high, low, span) = (next_coin(), next_coin(), next_coin() | 1);
    let value = format!("00-{high:016x}{low:016x}-{span:016x}-00");
    http::HeaderValue::from_str(&value).unwrap_or_else(|_| http::HeaderValue::from_static(""))
}

fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    // Without the system's random source the coin starts from the clock.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos());
        bytes = (nanos as u64).to_le_bytes();
    }
    u64::from_le_bytes(bytes) | 1
}

/// xorshift64*: the sampling coin needs to be fair, not secret.
fn next_coin() -> u64 {
    COIN.with(|coin| {
        let mut x = coin.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        coin.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// Makes `span` a child of the trace context in `meta`, if it holds one.
pub(crate) fn set_parent_from_meta(span: &Span, meta: Option<&JsonObject>) {
    let Some(meta) = meta.filter(|m| m.contains_key("traceparent")) else {
        return;
    };
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&MetaExtractor(meta)));
    let _ = span.set_parent(parent);
}

/// Writes the trace context of `span` into `meta`, replacing the caller's, when `span` is
/// recorded by an OpenTelemetry layer.
pub(crate) fn inject_into_meta(span: &Span, meta: &mut Option<JsonObject>) {
    if span.is_disabled() {
        return;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    let meta = meta.get_or_insert_with(JsonObject::new);
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&context, &mut MetaInjector(meta));
    });
}

/// Makes `span` a child of the trace context in the HTTP `headers`, if they hold one.
pub(crate) fn set_parent_from_headers(span: &Span, headers: &http::HeaderMap) {
    if !headers.contains_key("traceparent") {
        return;
    }
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    let _ = span.set_parent(parent);
}

/// Writes the trace context of `span` into `headers`, replacing the caller's, when `span`
/// is recorded by an OpenTelemetry layer.
pub(crate) fn inject_into_headers(span: &Span, headers: &mut http::HeaderMap) {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    for key in TRACE_KEYS {
        headers.remove(key);
    }
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&context, &mut HeaderInjector(headers));
    });
}

/// `meta` with the trace context of the HTTP `headers` when `meta` has none of its own.
pub fn with_header_trace_context(
    meta: Option<JsonObject>,
    headers: Option<&http::HeaderMap>,
) -> Option<JsonObject> {
    if meta.as_ref().is_some_and(|m| m.contains_key("traceparent")) {
        return meta;
    }
    let Some(headers) = headers.filter(|h| h.contains_key(&TRACEPARENT)) else {
        return meta;
    };
    let mut meta = meta.unwrap_or_default();
    for key in TRACE_KEYS {
        if let Some(value) = headers.get(key).and_then(|v| v.to_str().ok()) {
            meta.insert(key.to_owned(), Value::from(value));
        }
    }
    Some(meta)
}

/// Whether call logs are wanted by the subscriber.
pub(crate) fn call_log_enabled() -> bool {
    tracing::enabled!(target: CALL_LOG_TARGET, tracing::Level::INFO)
}

/// Logs one finished call of `tool` on `server`.
pub(crate) fn log_call(
    tool: &str,
    server: &str,
    result: &Result<CallToolResult, ToolError>,
    elapsed: Duration,
) {
    let outcome = outcome_of(result);
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    match result {
        Err(e) => tracing::info!(
            target: CALL_LOG_TARGET,
            tool,
            server,
            outcome,
            duration_ms,
            error = %e,
            "tool call"
        ),
        Ok(_) => tracing::info!(
            target: CALL_LOG_TARGET,
            tool,
            server,
            outcome,
            duration_ms,
            "tool call"
        ),
    }
}

struct MetaExtractor<'a>(&'a JsonObject);

impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct MetaInjector<'a>(&'a mut JsonObject);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampled_flag_of_a_traceparent() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        assert_eq!(
            sampled_flag(&format!("00-{id}-00f067aa0ba902b7-01")),
            Some(true)
        );
        assert_eq!(
            sampled_flag(&format!("00-{id}-00f067aa0ba902b7-00")),
            Some(false)
        );
        assert_eq!(sampled_flag(&format!("00-{id}-0000000000000000-01")), None);
        assert_eq!(sampled_flag("00-00-00f067aa0ba902b7-01"), None);
        assert_eq!(sampled_flag("garbage"), None);
        let fresh = unsampled_traceparent();
        assert_eq!(sampled_flag(fresh.to_str().unwrap()), Some(false));
    }

    #[test]
    fn calls_without_a_parent_are_sampled_at_the_ratio() {
        let headers = http::HeaderMap::new();
        set_head_sample_ratio(0.25);
        let kept = (0..20_000).filter(|_| head_sampled(&headers)).count();
        set_head_sample_ratio(1.0);
        assert!((4_000..6_000).contains(&kept), "{kept} of 20000");
        assert!(head_sampled(&headers));
        let mut parent = http::HeaderMap::new();
        parent.insert(
            "traceparent",
            http::HeaderValue::from_static(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            ),
        );
        assert!(!head_sampled(&parent));
    }

    #[test]
    fn header_trace_context_fills_in_only_when_meta_has_none() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            "00-aa-bb-01".parse().unwrap_or_else(|_| unreachable!()),
        );
        headers.insert(
            "tracestate",
            "v=1".parse().unwrap_or_else(|_| unreachable!()),
        );
        let from_headers = with_header_trace_context(None, Some(&headers)).unwrap_or_default();
        assert_eq!(from_headers["traceparent"], "00-aa-bb-01");
        assert_eq!(from_headers["tracestate"], "v=1");

        let mut own = JsonObject::new();
        own.insert("traceparent".into(), Value::from("00-cc-dd-01"));
        let kept = with_header_trace_context(Some(own), Some(&headers)).unwrap_or_default();
        assert_eq!(kept["traceparent"], "00-cc-dd-01");
        assert!(kept.get("tracestate").is_none());

        assert!(with_header_trace_context(None, None).is_none());
    }
}
