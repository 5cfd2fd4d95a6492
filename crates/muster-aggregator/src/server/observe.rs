//! The operations endpoints beside `/health`: `GET /ready` and `GET /metrics`. They answer
//! whatever the `Host`, so probes and scrapers can reach muster by pod IP.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::Aggregator;

/// The content type of the Prometheus text format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The routes of `aggregator`'s operations endpoints; `/metrics` only when a metrics
/// registry is set.
pub(super) fn routes(aggregator: &Aggregator) -> Router {
    let mut router = Router::new().route("/ready", get(ready));
    if aggregator.inner.metrics.is_some() {
        router = router.route("/metrics", get(metrics));
    }
    router.with_state(aggregator.clone())
}

/// `GET /ready`: the readiness report, `200` when ready or degraded, `503` otherwise.
async fn ready(State(aggregator): State<Aggregator>) -> Response {
    let report = aggregator.inner.readiness.report().await;
    let status = if report.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = serde_json::to_string(&report).unwrap_or_else(|_| "{}".to_owned());
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `GET /metrics`: every registered metric in the Prometheus text format.
async fn metrics(State(aggregator): State<Aggregator>) -> Response {
    let Some(registry) = aggregator.inner.metrics.as_ref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some(metrics) = aggregator.registry().metrics() {
        metrics.set_sessions(
            aggregator.inner.sessions.len() + aggregator.inner.peers.anonymous_count(),
        );
    }
    let mut body = String::new();
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut body, registry) {
        tracing::warn!(error = %e, "cannot encode the metrics");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, PROMETHEUS_TEXT)],
        body,
    )
        .into_response()
}
