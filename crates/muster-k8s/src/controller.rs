//! Drives a [`Reconcile<K>`] with `kube_runtime::Controller`: the same reconcilers the
//! filesystem driver runs, on custom resources.
//!
//! - Every create and change of an object reconciles it; an [`Action::requeue`] requeues it.
//! - A failed reconcile is retried with exponential backoff per object (1 s doubling to 5 min),
//!   reset by the next success.
//! - A deleted object is cleaned up ([`Reconcile::cleanup`]) from the store's watch, including
//!   objects that vanished while the watch was down (seen at the relist). No finalizer is
//!   used: nothing muster holds for an object outlives the process, so deleting a resource
//!   never waits for muster.
//! - A periodic resync reconciles every object again, on the leader only.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::core::DynamicObject;
use kube::runtime::controller::{Action as KubeAction, Controller};
use kube::runtime::watcher;
use muster_core::reconcile::{Action, Reconcile, ReconcileError};
use muster_core::resource::{Kind, Object, ObjectKey};
use muster_core::store::{ResourceStore, StoreEvent};

use crate::convert::to_object;
use crate::leader::Leadership;
use crate::store::KubeStore;

/// The first retry delay after a failed reconcile.
const BACKOFF_BASE: Duration = Duration::from_secs(1);
/// The longest retry delay.
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct ControllerOptions {
    /// Every object is reconciled again this often (on the leader); `None` disables it.
    pub resync: Option<Duration>,
    /// Who leads; without it this replica always does.
    pub leadership: Option<Leadership>,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            resync: Some(Duration::from_secs(30)),
            leadership: None,
        }
    }
}

/// Why one reconcile failed.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Reconcile(#[from] ReconcileError),
}

struct Context<K: Kind> {
    reconciler: Arc<dyn Reconcile<K>>,
    failures: Mutex<HashMap<ObjectKey, u32>>,
}

impl<K: Kind> Context<K> {
    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, u32>> {
        self.failures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The delay after the `n`-th failure in a row.
fn backoff(n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
    BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_MAX)
}

fn to_kube_action(action: Action) -> KubeAction {
    match action.requeue_after() {
        Some(d) => KubeAction::requeue(d),
        None => KubeAction::await_change(),
    }
}

async fn reconcile<K: Kind>(
    obj: Arc<DynamicObject>,
    ctx: Arc<Context<K>>,
) -> Result<KubeAction, Failure> {
    if obj.metadata.deletion_timestamp.is_some() {
        // Being deleted: the cleanup runs when it is gone.
        return Ok(KubeAction::await_change());
    }
    let object: Object<K> = match to_object(&obj) {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!(kind = K::KIND, error = %e, "skipping an object muster cannot read");
            return Ok(KubeAction::await_change());
        }
    };
    let key = object.key();
    let action = ctx.reconciler.apply(Arc::new(object)).await?;
    ctx.failures().remove(&key);
    Ok(to_kube_action(action))
}

fn error_policy<K: Kind>(
    obj: Arc<DynamicObject>,
    error: &Failure,
    ctx: Arc<Context<K>>,
) -> KubeAction {
    let key = ObjectKey::new(
        obj.metadata.namespace.clone().unwrap_or_default(),
        obj.metadata.name.clone().unwrap_or_default(),
    );
    let n = {
        let mut failures = ctx.failures();
        let n = failures.entry(key.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let delay = backoff(n);
    tracing::warn!(kind = K::KIND, object = %key, error = %error, retry_in = ?delay, "reconcile failed");
    KubeAction::requeue(delay)
}

/// Runs `reconciler` for every object of `store`'s kind in the namespaces it serves, until
/// the process ends: one `kube_runtime::Controller` per watch the store runs (one per listed
/// namespace, or one over every namespace).
pub async fn run_controller<K: Kind>(
    store: KubeStore<K>,
    reconciler: Arc<dyn Reconcile<K>>,
    options: ControllerOptions,
) {
    let ctx = Arc::new(Context {
        reconciler: reconciler.clone(),
        failures: Mutex::default(),
    });
    let applies = store.watched_apis().into_iter().map(|api| {
        let mut controller = Controller::new_with(
            api,
            watcher::Config::default(),
            store.api_resource().clone(),
        );
        if let Some(every) = options.resync {
            let leadership = options.leadership.clone();
            let ticks = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(every))
                .skip(1)
                .filter(move |_| {
                    std::future::ready(leadership.as_ref().is_none_or(Leadership::is_leader))
                })
                .map(|_| ());
            controller = controller.reconcile_all_on(ticks);
        }
        controller
            .run(reconcile::<K>, error_policy::<K>, ctx.clone())
            .for_each(|result| async move {
                if let Err(e) = result {
                    tracing::debug!(kind = K::KIND, error = %e, "controller");
                }
            })
    });
    let deletes = cleanups(store.clone(), reconciler);
    tokio::join!(futures::future::join_all(applies), deletes);
}

/// Calls [`Reconcile::cleanup`] for every object that goes away.
async fn cleanups<K: Kind>(store: KubeStore<K>, reconciler: Arc<dyn Reconcile<K>>) {
    let mut known: BTreeMap<ObjectKey, Object<K>> = BTreeMap::new();
    let mut events = store.watch();
    while let Some(event) = events.next().await {
        let gone: Vec<Object<K>> = match event {
            Ok(StoreEvent::Applied(obj)) => {
                known.insert(obj.key(), obj);
                Vec::new()
            }
            Ok(StoreEvent::Deleted(obj)) => {
                known.remove(&obj.key());
                vec![obj]
            }
            Ok(StoreEvent::Resynced(all)) => {
                let now: BTreeMap<ObjectKey, Object<K>> =
                    all.into_iter().map(|o| (o.key(), o)).collect();
                let gone = known
                    .iter()
                    .filter(|(k, _)| !now.contains_key(*k))
                    .map(|(_, o)| o.clone())
                    .collect();
                known = now;
                gone
            }
            Ok(_) => Vec::new(),
            Err(e) => {
                tracing::warn!(kind = K::KIND, error = %e, "the watch of deletions failed");
                Vec::new()
            }
        };
        for obj in gone {
            let key = obj.key();
            if let Err(e) = reconciler.cleanup(Arc::new(obj)).await {
                tracing::warn!(kind = K::KIND, object = %key, error = %e, "cleanup failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(8));
        assert_eq!(backoff(30), BACKOFF_MAX);
    }
}
