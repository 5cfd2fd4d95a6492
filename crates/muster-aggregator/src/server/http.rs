//! The axum router: which path serves what, and the small HTTP-level adjustments.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;

use super::lean::{self, LeanState};
use super::sessions::{self, Store};
use super::{Aggregator, MCP_PATH, hosts, jsonrpc_errors, observe, sse, trace};

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
    let endpoints = Router::new()
        .route_service(MCP_PATH, mcp)
        .route("/sse", get(sse::connect))
        .route("/message", post(sse::message))
        .with_state(sse::SseState::new(aggregator.clone()));
    // The middleware of the MCP endpoints is one unboxed stack: layered onto a `Router`,
    // every layer would box each route once more, and every request would clone the whole
    // chain of boxes (and each layer's state) again.
    let sessions = tower::ServiceBuilder::new()
        .layer(middleware::from_fn(session_delete_no_content))
        .layer(middleware::from_fn_with_state(
            table.clone(),
            sessions::track,
        ))
        .layer(middleware::from_fn_with_state(
            LeanState::new(aggregator.clone(), table),
            lean::layer,
        ))
        .service(endpoints);
    let behind_auth = match &aggregator.inner.auth {
        Some(auth) => auth.protect(Router::new().fallback_service(sessions)),
        None => Router::new().fallback_service(sessions),
    };
    let guarded = tower::ServiceBuilder::new()
        .layer(trace::layer())
        .layer(middleware::from_fn(trace::continue_trace))
        .layer(middleware::from_fn_with_state(
            Arc::new(aggregator.inner.allowed_hosts.clone()),
            hosts::guard,
        ))
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

/// Answers a session `DELETE` with 204 instead of rmcp's 202: the Python SDK accepts only
/// 200, 204 or 405 there and logs an error otherwise.
async fn session_delete_no_content(request: Request, next: Next) -> Response {
    let delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}
