//! Whether the call being run belongs to a trace that is not sampled.
//!
//! The front door decides once per request whether its trace is sampled. A call whose trace
//! is not sampled is polled inside [`Unsampled`], and the places that open muster's spans
//! (meta-tools, tool calls, workflow runs and steps, all through
//! [`call_span!`](crate::call_span)) open none while [`in_unsampled_call`] holds: spans of
//! an unsampled trace would only be built to be dropped by the exporter's sampler, which
//! costs about as much as exporting them.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

thread_local! {
    /// Set while a call whose trace is not sampled is polled.
    static UNSAMPLED: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is polling a call whose trace is not sampled.
pub fn in_unsampled_call() -> bool {
    UNSAMPLED.with(Cell::get)
}

/// Opens an `INFO` span as `tracing::info_span!` does, or none (`Span::none()`) while
/// [`in_unsampled_call`] holds: the one way muster's call spans are opened. The calling
/// crate needs `tracing`.
#[macro_export]
macro_rules! call_span {
    ($($span:tt)*) => {
        if $crate::trace_sampling::in_unsampled_call() {
            ::tracing::Span::none()
        } else {
            ::tracing::info_span!($($span)*)
        }
    };
}

/// A future polled as a call whose trace is not sampled: [`in_unsampled_call`] holds while
/// it runs. A task spawned from such a call should be wrapped too.
pub struct Unsampled<F>(Pin<Box<F>>);

impl<F> Unsampled<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        Self(Box::pin(inner))
    }
}

impl<F> std::fmt::Debug for Unsampled<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Unsampled")
    }
}

impl<F: Future> Future for Unsampled<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let before = UNSAMPLED.with(|u| u.replace(true));
        let result = self.0.as_mut().poll(cx);
        UNSAMPLED.with(|u| u.set(before));
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_holds_only_while_the_future_runs() {
        assert!(!in_unsampled_call());
        let inside =
            futures_util::FutureExt::now_or_never(Unsampled::new(async { in_unsampled_call() }));
        assert_eq!(inside, Some(true));
        assert!(!in_unsampled_call());
    }
}
