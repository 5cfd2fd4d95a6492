//! The HTTP server span of every request to the MCP endpoints (`/mcp`, `/sse`,
//! `/message`): tower-http's [`TraceLayer`], on the `tracing` target of muster's spans, so
//! it is exported with them when traces are configured and is disabled at its call site
//! otherwise.
//!
//! The span continues the caller's `traceparent` header. The request then goes on with the
//! span's own `traceparent` in place of the caller's, so the meta-tool span of a call that
//! carries no trace context in `_meta` is the HTTP span's child: caller, `POST /mcp`,
//! `tools/call call_tool`, `tools/call <tool>`.

use axum::body::Body;
use axum::extract::Request;
use axum::http::Response;
use std::time::Duration;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::observe;

/// The layer that opens the server span of each request.
pub(super) type HttpSpanLayer = TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    fn(&Request<Body>) -> Span,
    (),
    fn(&Response<Body>, Duration, &Span),
    (),
    (),
    (),
>;

/// A server span per request; put [`continue_trace`] inside it.
pub(super) fn layer() -> HttpSpanLayer {
    TraceLayer::new_for_http()
        .make_span_with(make_span as fn(&Request<Body>) -> Span)
        .on_request(())
        .on_response(on_response as fn(&Response<Body>, Duration, &Span))
        .on_body_chunk(())
        .on_eos(())
        .on_failure(())
}

/// The span of `request`, a child of the trace context of its headers.
fn make_span(request: &Request<Body>) -> Span {
    let span = tracing::info_span!(
        target: observe::SPAN_TARGET,
        "http_request",
        otel.name = %format_args!("{} {}", request.method(), request.uri().path()),
        otel.kind = "server",
        http.request.method = %request.method(),
        url.path = request.uri().path(),
        http.response.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() {
        observe::set_parent_from_headers(&span, request.headers());
    }
    span
}

/// Records the status of the response on the span.
fn on_response(response: &Response<Body>, _latency: Duration, span: &Span) {
    span.record("http.response.status_code", response.status().as_u16());
}

/// Hands the span's trace context on in the request's headers; a
/// [`MapRequest`](tower::util::MapRequest) inside the span's layer.
pub(super) fn continue_trace(mut request: Request) -> Request {
    let span = Span::current();
    if !span.is_disabled() {
        observe::inject_into_headers(&span, request.headers_mut());
    }
    request
}
