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
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use muster_core::tool::{ProgressSink, ToolCall, ToolError};
use rmcp::model::CallToolResult;
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
        let started = Instant::now();
        // Progress only notes when it came; the call's timer looks when it fires, so
        // progress wakes no task of its own.
        let last_progress = Arc::new(AtomicU64::new(0));
        let caller = call.context.progress.take();
        let noted = last_progress.clone();
        call.context.progress = Some(ProgressSink::new(move |update| {
            let after = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            noted.fetch_max(after, Ordering::Release);
            if let Some(caller) = &caller {
                caller.report(update);
            }
        }));
        let response = self.inner.call(call);
        Box::pin(async move {
            // One timer for both budgets: it fires at whichever ends first (the idle one
            // when both end together), and again later when progress came meanwhile.
            let hard = started + total;
            let deadline = tokio::time::sleep_until((started + idle).min(hard));
            tokio::pin!(response, deadline);
            loop {
                tokio::select! {
                    biased;
                    result = &mut response => return result,
                    () = &mut deadline => {
                        let last = Duration::from_nanos(last_progress.load(Ordering::Acquire));
                        let quiet_until = started + last + idle;
                        let next = quiet_until.min(hard);
                        if next > deadline.deadline() {
                            deadline.as_mut().reset(next);
                            continue;
                        }
                        return Err(if quiet_until <= hard {
                            Elapsed::new(Budget::Idle, idle)
                        } else {
                            Elapsed::new(Budget::Total, total)
                        }
                        .into());
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muster_core::tool::ProgressUpdate;
    use tower::{Service, ServiceExt};

    /// A tool that reports progress every `every` for `steps` times, then answers.
    fn reporting(
        every: Duration,
        steps: u32,
    ) -> impl Service<
        ToolCall,
        Response = CallToolResult,
        Error = ToolError,
        Future = Pin<Box<dyn Future<Output = Result<CallToolResult, ToolError>> + Send>>,
    > + Clone {
        tower::service_fn(
            move |call: ToolCall| -> Pin<Box<dyn Future<Output = _> + Send>> {
                Box::pin(async move {
                    for step in 0..steps {
                        tokio::time::sleep(every).await;
                        if let Some(sink) = &call.context.progress {
                            sink.report(ProgressUpdate {
                                progress: f64::from(step),
                                total: None,
                                message: None,
                            });
                        }
                    }
                    Ok(CallToolResult::success(vec![]))
                })
            },
        )
    }

    async fn outcome(
        service: impl Service<
            ToolCall,
            Response = CallToolResult,
            Error = ToolError,
            Future = Pin<Box<dyn Future<Output = Result<CallToolResult, ToolError>> + Send>>,
        > + Send
        + 'static,
        idle: u64,
        total: u64,
    ) -> Result<(), Duration> {
        let timed = ProgressTimeout::new(
            service,
            Duration::from_secs(idle),
            Duration::from_secs(total),
        );
        match timed.oneshot(ToolCall::new("t", None)).await {
            Ok(_) => Ok(()),
            Err(ToolError::Timeout { after }) => Err(after),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn progress_extends_the_idle_budget_up_to_the_total() {
        let secs = Duration::from_secs;
        // Progress every 2 s for 10 s: within an idle budget of 5 s and a total of 20 s.
        assert_eq!(outcome(reporting(secs(2), 5), 5, 20).await, Ok(()));
        // The same with a total of 7 s stops at 7 s.
        assert_eq!(outcome(reporting(secs(2), 5), 5, 7).await, Err(secs(7)));
        // Progress every 6 s is too rare for an idle budget of 5 s.
        assert_eq!(outcome(reporting(secs(6), 5), 5, 60).await, Err(secs(5)));
        // With both budgets equal, silence reports the idle one, as it ends first.
        assert_eq!(outcome(reporting(secs(6), 5), 5, 5).await, Err(secs(5)));
        // A total below the idle budget is raised to it.
        assert_eq!(outcome(reporting(secs(6), 5), 5, 1).await, Err(secs(5)));
    }
}
