//! The HTTP server span of every request to the MCP endpoints (`/mcp`, `/sse`,
//! `/message`): tower-http's [`TraceLayer`], on the `tracing` target of muster's spans, so
//! it is exported with them when traces are configured and is disabled at its call site
//! otherwise.
//!
//! The span continues the caller's `traceparent` header, and the meta-tool span of a call
//! that carries no trace context in `_meta` is the HTTP span's child: caller, `POST /mcp`,
//! `tools/call call_tool`, `tools/call <tool>`. A lean call runs inside the span; a request
//! handed to rmcp's session workers goes on with the span's own `traceparent` in place of
//! the caller's ([`continue_trace`]).

use std::convert::Infallible;
use std::future::Future;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::Response;
use futures::FutureExt;
use futures::future::{Either, Map};
use tower::{Layer, Service};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::observe;

/// tower-http's layer that opens the server span of each request.
type TowerHttpSpan = TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    fn(&Request<Body>) -> Span,
    (),
    fn(&Response<Body>, Duration, &Span),
    (),
    (),
    (),
>;

/// A server span per request; requests that leave it for rmcp's session workers go with
/// [`continue_trace`]. While no subscriber wants muster's spans (traces not configured),
/// requests skip tower-http's layer altogether.
pub(super) fn layer() -> HttpSpanLayer {
    HttpSpanLayer(
        TraceLayer::new_for_http()
            .make_span_with(make_span as fn(&Request<Body>) -> Span)
            .on_request(())
            .on_response(on_response as fn(&Response<Body>, Duration, &Span))
            .on_body_chunk(())
            .on_eos(())
            .on_failure(()),
    )
}

/// The layer of [`layer`].
#[derive(Clone)]
pub(super) struct HttpSpanLayer(TowerHttpSpan);

impl<S: Clone> Layer<S> for HttpSpanLayer {
    type Service = HttpSpan<S>;

    fn layer(&self, inner: S) -> HttpSpan<S> {
        HttpSpan {
            traced: self.0.layer(inner.clone()),
            plain: inner,
        }
    }
}

/// The future of tower-http's span service in front of `S`.
type TracedFuture<S> = <<TowerHttpSpan as Layer<S>>::Service as Service<Request<Body>>>::Future;
/// What that future gives.
type TracedOutput<S> = <TracedFuture<S> as Future>::Output;
/// Its response with the body as [`Body`].
type TracedToPlain<S> = fn(TracedOutput<S>) -> Result<Response<Body>, Infallible>;

fn boxed_body<B>(result: Result<Response<B>, Infallible>) -> Result<Response<Body>, Infallible>
where
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let Ok(response) = result;
    Ok(response.map(Body::new))
}

/// The service of [`HttpSpanLayer`]: the request through tower-http's span when spans are
/// wanted, straight to the inner service otherwise.
#[derive(Clone)]
pub(super) struct HttpSpan<S> {
    traced: <TowerHttpSpan as Layer<S>>::Service,
    plain: S,
}

impl<S> Service<Request<Body>> for HttpSpan<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Either<
        Map<TracedFuture<S>, TracedToPlain<S>>,
        Either<S::Future, observe::Unsampled<S::Future>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if let Err(e) = std::task::ready!(self.traced.poll_ready(cx)) {
            match e {}
        }
        self.plain.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if !tracing::enabled!(target: observe::SPAN_TARGET, tracing::Level::INFO) {
            return Either::Right(Either::Left(self.plain.call(request)));
        }
        if observe::head_sampled(request.headers()) {
            Either::Left(
                self.traced
                    .call(request)
                    .map(boxed_body as TracedToPlain<S>),
            )
        } else {
            // Not sampled: no span is made for it, here or in the call it carries.
            Either::Right(Either::Right(observe::Unsampled::new(
                self.plain.call(request),
            )))
        }
    }
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

/// Hands the current (HTTP) span's trace context on in the request's headers, in place of
/// the caller's.
pub(super) fn continue_trace(mut request: Request) -> Request {
    let span = Span::current();
    if !span.is_disabled() {
        observe::inject_into_headers(&span, request.headers_mut());
    } else if observe::in_unsampled_call() && !request.headers().contains_key("traceparent") {
        // The session's worker samples its spans by their parent: this one is not sampled.
        request
            .headers_mut()
            .insert("traceparent", observe::unsampled_traceparent());
    }
    request
}
