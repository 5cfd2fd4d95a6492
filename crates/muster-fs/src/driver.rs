//! The filesystem counterpart of kube-runtime's `Controller`: runs a [`Reconcile`]
//! implementation from a store's watch events, with requeues and retries.
//!
//! Every object is reconciled in its own task; reconciles of the same object run one after
//! another in event order, reconciles of different objects run concurrently, so a slow server
//! never delays the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use muster_core::reconcile::{Action, Reconcile};
use muster_core::resource::{Kind, Object, ObjectKey};
use muster_core::store::{ResourceStore, StoreEvent};

/// Retries of a failed reconcile: the wait doubles from `initial` up to `max`, at most
/// `attempts` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The first wait.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
    /// Retries after the first failure.
    pub attempts: u32,
}

impl Default for RetryPolicy {
    /// 1 s doubling to 5 min, 5 retries, as muster's reconcilers do.
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(300),
            attempts: 5,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// Runs a reconciler over the objects of one store.
pub struct Driver<K: Kind> {
    store: Arc<dyn ResourceStore<K>>,
    reconciler: Arc<dyn Reconcile<K>>,
    retry: RetryPolicy,
    locks: Arc<Mutex<HashMap<ObjectKey, Arc<tokio::sync::Mutex<()>>>>>,
}

impl<K: Kind> std::fmt::Debug for Driver<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("kind", &K::KIND)
            .field("retry", &self.retry)
            .finish()
    }
}

impl<K: Kind> Clone for Driver<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            reconciler: self.reconciler.clone(),
            retry: self.retry,
            locks: self.locks.clone(),
        }
    }
}

impl<K: Kind> Driver<K> {
    /// A driver reconciling the objects of `store` with `reconciler`.
    pub fn new(store: Arc<dyn ResourceStore<K>>, reconciler: Arc<dyn Reconcile<K>>) -> Self {
        Self {
            store,
            reconciler,
            retry: RetryPolicy::default(),
            locks: Arc::default(),
        }
    }

    /// Uses `retry` for failed reconciles.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Runs until the store's watch stream ends.
    pub async fn run(self) {
        // The last state of every object seen, so one that vanishes between two resyncs can
        // still be cleaned up.
        let mut known: HashMap<ObjectKey, Object<K>> = HashMap::new();
        let mut events = self.store.watch();
        while let Some(event) = events.next().await {
            match event {
                Ok(StoreEvent::Resynced(all)) => {
                    let now: HashMap<ObjectKey, Object<K>> =
                        all.into_iter().map(|o| (o.key(), o)).collect();
                    for (key, obj) in known.drain() {
                        if !now.contains_key(&key) {
                            self.spawn_cleanup(obj);
                        }
                    }
                    for obj in now.values() {
                        self.spawn_apply(obj.clone());
                    }
                    known = now;
                }
                Ok(StoreEvent::Applied(obj)) => {
                    known.insert(obj.key(), obj.clone());
                    self.spawn_apply(obj);
                }
                Ok(StoreEvent::Deleted(obj)) => {
                    known.remove(&obj.key());
                    self.spawn_cleanup(obj);
                }
                Ok(StoreEvent::Invalid { source, error, .. }) => {
                    tracing::warn!(kind = K::KIND, %source, %error, "definition is invalid; other definitions are unaffected");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(kind = K::KIND, error = %e, "watching definitions failed"),
            }
        }
    }

    fn lock_for(&self, key: &ObjectKey) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone()
    }

    fn spawn_apply(&self, obj: Object<K>) {
        let this = self.clone();
        tokio::spawn(async move { this.apply_with_retry(Arc::new(obj)).await });
    }

    fn spawn_cleanup(&self, obj: Object<K>) {
        let this = self.clone();
        tokio::spawn(async move {
            let lock = this.lock_for(&obj.key());
            let _guard = lock.lock().await;
            if let Err(e) = this.reconciler.cleanup(Arc::new(obj)).await {
                tracing::warn!(kind = K::KIND, error = %e, "cleanup failed");
            }
        });
    }

    async fn apply_with_retry(&self, obj: Arc<Object<K>>) {
        let key = obj.key();
        let mut attempt = 0;
        loop {
            let result = {
                let lock = self.lock_for(&key);
                let _guard = lock.lock().await;
                self.reconciler.apply(obj.clone()).await
            };
            match result {
                Ok(action) => {
                    self.schedule_requeue(&key, action);
                    return;
                }
                Err(e) if attempt < self.retry.attempts => {
                    attempt += 1;
                    let wait = self.retry.delay(attempt);
                    tracing::warn!(kind = K::KIND, %key, error = %e, ?wait, "reconcile failed; retrying");
                    tokio::time::sleep(wait).await;
                }
                Err(e) => {
                    tracing::error!(kind = K::KIND, %key, error = %e, "reconcile failed; giving up until the next change");
                    return;
                }
            }
        }
    }

    fn schedule_requeue(&self, key: &ObjectKey, action: Action) {
        let Some(after) = action.requeue_after() else {
            return;
        };
        let this = self.clone();
        let key = key.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Ok(Some(obj)) = this.store.get(&key).await {
                this.apply_with_retry(Arc::new(obj)).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use muster_core::reconcile::ReconcileError;
    use muster_core::resource::Workflow;
    use muster_core::resource::workflow::{Step, WorkflowSpec};
    use muster_core::store::MemoryStore;

    use super::*;

    #[derive(Debug, Default)]
    struct Counting {
        applied: AtomicUsize,
        cleaned: AtomicUsize,
        fail_first: AtomicUsize,
    }

    #[async_trait]
    impl Reconcile<Workflow> for Counting {
        async fn apply(&self, _: Arc<Object<Workflow>>) -> Result<Action, ReconcileError> {
            if self.fail_first.load(Ordering::SeqCst) > 0 {
                self.fail_first.fetch_sub(1, Ordering::SeqCst);
                return Err(ReconcileError::Other("transient".into()));
            }
            self.applied.fetch_add(1, Ordering::SeqCst);
            Ok(Action::await_change())
        }

        async fn cleanup(&self, _: Arc<Object<Workflow>>) -> Result<Action, ReconcileError> {
            self.cleaned.fetch_add(1, Ordering::SeqCst);
            Ok(Action::await_change())
        }
    }

    fn wf(name: &str) -> Object<Workflow> {
        Object::new(
            name,
            WorkflowSpec {
                steps: vec![Step::tool("s", "t")],
                ..WorkflowSpec::default()
            },
        )
    }

    #[tokio::test(start_paused = true)]
    async fn applies_cleans_up_and_retries() {
        let store = MemoryStore::with_objects([wf("a")]);
        let reconciler = Arc::new(Counting {
            fail_first: AtomicUsize::new(2),
            ..Counting::default()
        });
        let driver = Driver::new(Arc::new(store.clone()), reconciler.clone());
        tokio::spawn(driver.run());
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(
            reconciler.applied.load(Ordering::SeqCst),
            1,
            "applied after two retries"
        );
        store.create(wf("b")).await.unwrap();
        store.delete(&ObjectKey::named("a")).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(reconciler.applied.load(Ordering::SeqCst), 2);
        assert_eq!(reconciler.cleaned.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn retry_delays_double_and_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1), Duration::from_secs(1));
        assert_eq!(p.delay(3), Duration::from_secs(4));
        assert_eq!(p.delay(20), Duration::from_secs(300));
    }
}
