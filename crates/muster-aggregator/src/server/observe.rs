//! The operations endpoints beside `/health`: `GET /ready`. They answer whatever the `Host`,
//! so probes and scrapers can reach muster by pod IP.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::Aggregator;

/// The routes of `aggregator`'s operations endpoints.
pub(super) fn routes(aggregator: &Aggregator) -> Router {
    Router::new()
        .route("/ready", get(ready))
        .with_state(aggregator.clone())
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
