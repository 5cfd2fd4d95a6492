//! The axum router: which path serves what, and the small HTTP-level adjustments.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use tower::Layer;
use tower::util::Either;

use super::front::{HostGuardLayer, SessionFrontLayer};
use super::hosts::HostCheck;
use super::lean::LeanState;
use super::sessions::Store;
use super::{Aggregator, MCP_PATH, jsonrpc_errors, observe, sse, trace};

/// The router of `aggregator`.
pub(super) fn router(aggregator: &Aggregator) -> Router {
    let factory = aggregator.clone();
    let table = aggregator.inner.sessions.clone();
    // The Host check is ours (with the original's wording), so rmcp's own is turned off.
    let mut config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(aggregator.inner.shutdown.child_token());
    let body_limit = config.max_request_body_bytes;
    // The session table restores parked sessions from what it remembers of them.
    config.session_store = Some(Arc::new(Store(table.clone())));
    let mcp = StreamableHttpService::new(move || Ok(factory.clone()), table.clone(), config);

    let mcp = tower::ServiceBuilder::new()
        .layer(middleware::from_fn_with_state(
            body_limit,
            jsonrpc_errors::guard,
        ))
        .service(mcp);
    let lean = LeanState::new(aggregator.clone(), table.clone());
    let endpoints = Router::new()
        .route_service(MCP_PATH, mcp)
        .route("/sse", get(sse::connect))
        .route("/message", post(sse::message))
        .with_state(sse::SseState::new(aggregator.clone(), lean.clone()));
    // The middleware of the MCP endpoints is one unboxed stack: layered onto a `Router`,
    // every layer would box each route once more, and every request would clone the whole
    // chain of boxes (and each layer's state) again.
    let sessions = SessionFrontLayer::new(table, lean).layer(endpoints);
    // Without authentication the sessions' stack is served as it is, not through one more
    // router.
    let behind_auth = match &aggregator.inner.auth {
        Some(auth) => Either::Left(auth.protect(Router::new().fallback_service(sessions))),
        None => Either::Right(sessions),
    };
    let guarded = tower::ServiceBuilder::new()
        .layer(trace::layer())
        .layer(HostGuardLayer::new(HostCheck::new(
            &aggregator.inner.allowed_hosts,
        )))
        .service(behind_auth);
    let mut router = Router::new()
        .route("/health", get(health))
        .merge(observe::routes(aggregator))
        .route_service(MCP_PATH, guarded.clone())
        .route_service("/sse", guarded.clone())
        .route_service("/message", guarded);
    if let Some(auth) = &aggregator.inner.auth {
        router = router.merge(auth.routes());
    }
    #[cfg(feature = "http-client")]
    if let Some(auth) = &aggregator.inner.backend_auth {
        router = router.merge(auth.routes());
    }
    router.fallback(not_found)
}

/// Every other path: the MCP endpoint answers on its own path only, so nothing that probes
/// `/`, `/api` or `/mcp/` reaches a session.
async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "404 page not found").into_response()
}

/// `GET /health`.
async fn health() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"status":"ok"}"#,
    )
        .into_response()
}
