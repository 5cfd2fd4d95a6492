//! Reconcilers, in the shape of kube-runtime.
//!
//! A [`Reconcile<K>`] is written once and run by two drivers: the filesystem driver in
//! `muster-fs` and the Kubernetes controller in `muster-k8s`. It must be idempotent: running it
//! twice on the same object changes nothing the second time.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::BoxError;
use crate::resource::{Kind, Object};

/// What the driver does after a reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the object again after `duration`, even if nothing changes.
    pub const fn requeue(duration: Duration) -> Self {
        Self {
            requeue_after: Some(duration),
        }
    }

    /// Reconcile again only when the object changes.
    pub const fn await_change() -> Self {
        Self {
            requeue_after: None,
        }
    }

    /// When to reconcile again without a change, if at all.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// Why a reconcile failed. The driver retries with backoff.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// A store operation failed.
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
    /// Anything else the reconciler could not do.
    #[error("{0}")]
    Other(#[source] BoxError),
}

/// Brings the world in line with one object of kind `K`.
#[async_trait]
pub trait Reconcile<K: Kind>: Send + Sync {
    /// The object exists (was created, changed, or is being resynced).
    async fn apply(&self, obj: Arc<Object<K>>) -> Result<Action, ReconcileError>;

    /// The object is gone: release whatever it held.
    async fn cleanup(&self, obj: Arc<Object<K>>) -> Result<Action, ReconcileError>;
}
