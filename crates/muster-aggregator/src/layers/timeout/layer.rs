//! [`ProgressTimeoutLayer`].

use std::time::Duration;

use super::ProgressTimeout;

/// Wraps services in [`ProgressTimeout`].
#[derive(Debug, Clone, Copy)]
pub struct ProgressTimeoutLayer {
    idle: Duration,
    total: Duration,
}

impl ProgressTimeoutLayer {
    /// A layer allowing `idle` without progress and `total` in all per call.
    pub const fn new(idle: Duration, total: Duration) -> Self {
        Self { idle, total }
    }
}

impl<S> tower::Layer<S> for ProgressTimeoutLayer {
    type Service = ProgressTimeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ProgressTimeout::new(inner, self.idle, self.total)
    }
}
