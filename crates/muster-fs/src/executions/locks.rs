//! One async lock per execution id, so that writes to the same record never interleave while
//! writes to different records proceed in parallel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use muster_core::resource::execution::ExecutionId;
use tokio::sync::OwnedMutexGuard;

type LockMap = HashMap<ExecutionId, Arc<tokio::sync::Mutex<()>>>;

/// Per-id async mutexes, created on demand and dropped once nobody holds or waits for them.
#[derive(Debug, Default)]
pub(crate) struct KeyedLocks {
    map: Arc<Mutex<LockMap>>,
}

/// Exclusive access to one id until dropped. It is `'static`, so it can move into a blocking
/// task and keep the record locked until the file work is done, even when the caller's future
/// is dropped half-way.
#[derive(Debug)]
pub(crate) struct KeyGuard {
    guard: Option<OwnedMutexGuard<()>>,
    id: ExecutionId,
    map: Arc<Mutex<LockMap>>,
}

impl KeyedLocks {
    /// Waits until `id` is free and takes it.
    pub(crate) async fn lock(&self, id: &ExecutionId) -> KeyGuard {
        let mutex = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(map.entry(id.clone()).or_default())
        };
        KeyGuard {
            guard: Some(mutex.lock_owned().await),
            id: id.clone(),
            map: Arc::clone(&self.map),
        }
    }

    /// Takes every id of `ids`, in sorted order so that two callers never deadlock.
    pub(crate) async fn lock_all(&self, ids: &[ExecutionId]) -> Vec<KeyGuard> {
        let mut sorted: Vec<&ExecutionId> = ids.iter().collect();
        sorted.sort();
        sorted.dedup();
        let mut guards = Vec::with_capacity(sorted.len());
        for id in sorted {
            guards.push(self.lock(id).await);
        }
        guards
    }

    /// How many ids have a lock right now (held or waited for).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        // Waiters clone the mutex under the map lock, so checking the count under it too
        // cannot remove a mutex somebody is about to wait for.
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.guard.take());
        if map.get(&self.id).is_some_and(|m| Arc::strong_count(m) == 1) {
            map.remove(&self.id);
        }
    }
}
