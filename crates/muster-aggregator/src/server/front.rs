//! The middleware of the MCP endpoints as plain tower services.
//!
//! axum's `middleware::from_fn` clones the inner service, boxes it and boxes two futures
//! on every request, per layer; on the path of every tool call that was a good part of what
//! the front door cost. Here the check that needs no waiting ([`HostGuard`]) adds nothing
//! to the request's future, and what the sessions need
//! ([`SessionFront`]: activity tracking, the `DELETE` status, the lean call path) is one
//! boxed future.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::{BoxFuture, Either};
use tower::{Layer, Service};

use super::hosts::HostCheck;
use super::lean::{self, LeanState};
use super::sessions::{self, SESSION_HEADER, SessionTable};

/// Refuses requests whose `Host` or `Origin` is not allowed, with `403`.
#[derive(Debug, Clone)]
pub(super) struct HostGuardLayer(Arc<HostCheck>);

impl HostGuardLayer {
    pub(super) fn new(check: HostCheck) -> Self {
        Self(Arc::new(check))
    }
}

impl<S> Layer<S> for HostGuardLayer {
    type Service = HostGuard<S>;

    fn layer(&self, inner: S) -> HostGuard<S> {
        HostGuard {
            check: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`HostGuardLayer`].
#[derive(Debug, Clone)]
pub(super) struct HostGuard<S> {
    check: Arc<HostCheck>,
    inner: S,
}

impl<S> Service<Request> for HostGuard<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.check.refusal(request.headers(), request.uri()) {
            None => Either::Right(self.inner.call(request)),
            Some(body) => Either::Left(ready(Ok((StatusCode::FORBIDDEN, body).into_response()))),
        }
    }
}

/// What the MCP endpoints do for sessions, around the endpoints themselves: a request
/// naming a session keeps it open until its response (streams included) has been sent; a
/// session `DELETE` is answered `204` instead of rmcp's `202` (the Python SDK accepts only
/// 200, 204 or 405 there and logs an error otherwise); plain meta-tool calls take the lean
/// path ([`lean`]).
#[derive(Debug, Clone)]
pub(super) struct SessionFrontLayer {
    table: Arc<SessionTable>,
    lean: LeanState,
}

impl SessionFrontLayer {
    pub(super) fn new(table: Arc<SessionTable>, lean: LeanState) -> Self {
        Self { table, lean }
    }
}

impl<S> Layer<S> for SessionFrontLayer {
    type Service = SessionFront<S>;

    fn layer(&self, inner: S) -> SessionFront<S> {
        SessionFront {
            table: self.table.clone(),
            lean: self.lean.clone(),
            inner,
        }
    }
}

/// The service of [`SessionFrontLayer`].
#[derive(Debug, Clone)]
pub(super) struct SessionFront<S> {
    table: Arc<SessionTable>,
    lean: LeanState,
    inner: S,
}

impl<S> Service<Request> for SessionFront<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The inner service is readied when the request reaches it.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The clone stays for the next request; this one takes the service that was readied.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let delete = request.method() == Method::DELETE;
        let activity = request
            .headers()
            .get(&SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|id| self.table.open(id));
        let lean = self.lean.clone();
        Box::pin(async move {
            let mut response = lean::answer_or_forward(&lean, request, inner).await;
            if delete && response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
            }
            Ok(match activity {
                None => response,
                Some(activity) => {
                    response.map(|body| Body::new(sessions::Guarded::new(body, activity)))
                }
            })
        })
    }
}
