//! The axum router: which path serves what, and the small HTTP-level adjustments.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::future::RouteFuture;
use axum::routing::{get, post};
use futures::future::Either;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use tower::util::Either as EitherService;
use tower::{Layer, Service};

use super::front::{HostGuardLayer, SessionFrontLayer};
use super::hosts::HostCheck;
use super::lean::LeanState;
use super::sessions::Store;
use super::{Aggregator, MCP_PATH, jsonrpc_errors, observe, sse, trace};

/// The paths of the MCP endpoints: streamable HTTP, and the legacy SSE stream and messages.
const MCP_PATHS: [&str; 3] = [MCP_PATH, "/sse", "/message"];

/// The router of `aggregator`.
pub(super) fn router(aggregator: &Aggregator) -> Router {
    routes(aggregator, mcp_stack(aggregator))
}

/// What `muster serve` answers on its port: the router, with the MCP paths taken straight to
/// their stack.
pub(super) fn front_door(aggregator: &Aggregator) -> FrontDoor<impl McpStack> {
    let mcp = mcp_stack(aggregator);
    FrontDoor {
        router: routes(aggregator, mcp.clone()),
        mcp,
    }
}

/// The service of the MCP paths: the tower stack from the span of the request to the
/// endpoints.
pub(super) trait McpStack:
    Service<Request, Response = Response, Error = Infallible, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> McpStack for S where
    S: Service<Request, Response = Response, Error = Infallible, Future: Send>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// The MCP endpoints (`/mcp`, `/sse`, `/message`) behind the span, Host check, authentication
/// and session layers.
fn mcp_stack(aggregator: &Aggregator) -> impl McpStack {
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
        Some(auth) => EitherService::Left(auth.protect(Router::new().fallback_service(sessions))),
        None => EitherService::Right(sessions),
    };
    tower::ServiceBuilder::new()
        .layer(trace::layer())
        .layer(HostGuardLayer::new(HostCheck::new(
            &aggregator.inner.allowed_hosts,
        )))
        .service(behind_auth)
}

/// Every path of `aggregator`'s port, the MCP ones served by `guarded`.
fn routes(aggregator: &Aggregator, guarded: impl McpStack) -> Router {
    let mut router = Router::new()
        .route("/health", get(health))
        .merge(observe::routes(aggregator));
    for path in MCP_PATHS {
        router = router.route_service(path, guarded.clone());
    }
    if let Some(auth) = &aggregator.inner.auth {
        router = router.merge(auth.routes());
    }
    #[cfg(feature = "http-client")]
    if let Some(auth) = &aggregator.inner.backend_auth {
        router = router.merge(auth.routes());
    }
    router.fallback(not_found)
}

/// The MCP paths of the router, matched without it: on the path of every tool call, axum's
/// routing would match the path, record it and its parameters in the request's extensions
/// and box the route's service and future once more.
#[derive(Clone)]
pub(super) struct FrontDoor<S> {
    mcp: S,
    router: Router,
}

impl<S: McpStack> Service<Request> for FrontDoor<S> {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, RouteFuture<Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.mcp.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if MCP_PATHS.contains(&request.uri().path()) {
            Either::Left(self.mcp.call(request))
        } else {
            Either::Right(self.router.call(request))
        }
    }
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
