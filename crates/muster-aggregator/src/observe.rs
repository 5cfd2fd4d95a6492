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
    let Some(headers) = headers.filter(|h| h.contains_key("traceparent")) else {
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
