//! A tool-call budget that progress extends.
//!
//! Every call gets `idle` (the server's `spec.timeout`) to answer; each progress notification
//! the server sends restarts that budget, up to `total` (`spec.progress.maxDuration`) from
//! the start of the call. When a budget runs out the call fails with
//! [`ToolError::Timeout`]; the inner call is dropped, which cancels it at the server.
//!
//! Progress still reaches the caller's own [`ProgressSink`], when it has one.

mod error;
mod layer;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use muster_core::tool::{ProgressSink, ToolCall, ToolError};
use rmcp::model::CallToolResult;
use tokio::sync::Notify;
use tokio::time::Instant;

pub use error::{Budget, Elapsed};
pub use layer::ProgressTimeoutLayer;

/// Applies a progress-extended timeout to every call of the inner service.
#[derive(Debug, Clone)]
pub struct ProgressTimeout<S> {
    inner: S,
    idle: Duration,
    total: Duration,
}

impl<S> ProgressTimeout<S> {
    /// Wraps `inner`: each call may go `idle` without progress and `total` in all (never less
    /// than `idle`).
    pub const fn new(inner: S, idle: Duration, total: Duration) -> Self {
        Self { inner, idle, total }
    }

    /// The inner service.
    pub const fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> tower::Service<ToolCall> for ProgressTimeout<S>
where
    S: tower::Service<ToolCall, Response = CallToolResult, Error = ToolError>,
    S::Future: Send + 'static,
{
    type Response = CallToolResult;
    type Error = ToolError;
    type Future = Pin<Box<dyn Future<Output = Result<CallToolResult, ToolError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut call: ToolCall) -> Self::Future {
        let idle = self.idle;
        let total = self.total.max(idle);
        let progressed = Arc::new(Notify::new());
        let caller = call.context.progress.take();
        let tick = progressed.clone();
        call.context.progress = Some(ProgressSink::new(move |update| {
            tick.notify_one();
            if let Some(caller) = &caller {
                caller.report(update);
            }
        }));
        let response = self.inner.call(call);
        Box::pin(async move {
            let started = Instant::now();
            let hard = tokio::time::sleep_until(started + total);
            let quiet = tokio::time::sleep_until(started + idle);
            tokio::pin!(response, hard, quiet);
            loop {
                tokio::select! {
                    biased;
                    result = &mut response => return result,
                    () = progressed.notified() => quiet.as_mut().reset(Instant::now() + idle),
                    () = &mut quiet => return Err(Elapsed::new(Budget::Idle, idle).into()),
                    () = &mut hard => return Err(Elapsed::new(Budget::Total, total).into()),
                }
            }
        })
    }
}
