//! [`MemoryStore`]: a complete, concurrent, in-memory [`ResourceStore`].

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use futures_core::stream::BoxStream;
use futures_util::StreamExt;
use tokio::sync::broadcast;

use super::{ResourceStore, StoreError, StoreEvent};
use crate::resource::{Kind, Object, ObjectKey};

/// How many unread events a watcher may fall behind before it is resynced.
const WATCH_BUFFER: usize = 1024;

/// An in-memory [`ResourceStore`] with working `watch`.
///
/// Cloning is cheap and clones share the same objects. Resource versions increase with every
/// write; the generation increases with every spec change. A watcher that falls more than
/// 1024 events behind receives a fresh [`StoreEvent::Resynced`] instead of the lost events.
#[derive(Debug)]
pub struct MemoryStore<K: Kind> {
    inner: Arc<Inner<K>>,
}

#[derive(Debug)]
struct Inner<K: Kind> {
    state: RwLock<State<K>>,
    events: broadcast::Sender<StoreEvent<K>>,
}

#[derive(Debug)]
struct State<K: Kind> {
    objects: BTreeMap<ObjectKey, Object<K>>,
    version: u64,
}

impl<K: Kind> Clone for MemoryStore<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Kind> Default for MemoryStore<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Kind> MemoryStore<K> {
    /// An empty store.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(WATCH_BUFFER);
        let state = RwLock::new(State {
            objects: BTreeMap::new(),
            version: 0,
        });
        Self {
            inner: Arc::new(Inner { state, events }),
        }
    }

    /// A store holding `objects` (applied in order).
    pub fn with_objects(objects: impl IntoIterator<Item = Object<K>>) -> Self {
        let store = Self::new();
        {
            let mut state = store.inner.write();
            for obj in objects {
                let _ = state.put(obj, true);
            }
        }
        store
    }
}

impl<K: Kind> Inner<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State<K>> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State<K>> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn snapshot(&self) -> Vec<Object<K>> {
        self.read().objects.values().cloned().collect()
    }

    fn publish(&self, event: StoreEvent<K>) {
        // No receiver is fine: nobody watches.
        let _ = self.events.send(event);
    }
}

impl<K: Kind> State<K> {
    /// Stores `obj`, assigning version, generation and creation time. With `keep_status`, the
    /// status of an existing object survives (apply semantics).
    fn put(&mut self, mut obj: Object<K>, keep_status: bool) -> Object<K> {
        self.version += 1;
        let key = obj.key();
        obj.metadata.namespace = Some(key.namespace.clone());
        obj.metadata.resource_version = Some(self.version.to_string());
        match self.objects.get(&key) {
            Some(old) => {
                let changed = old.spec != obj.spec;
                let generation = old.metadata.generation.unwrap_or(1);
                obj.metadata.generation = Some(if changed { generation + 1 } else { generation });
                obj.metadata.creation_timestamp = old.metadata.creation_timestamp;
                if keep_status {
                    obj.status.clone_from(&old.status);
                }
            }
            None => {
                obj.metadata.generation = Some(1);
                obj.metadata
                    .creation_timestamp
                    .get_or_insert_with(chrono::Utc::now);
            }
        }
        self.objects.insert(key, obj.clone());
        obj
    }
}

#[async_trait]
impl<K: Kind> ResourceStore<K> for MemoryStore<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Object<K>>, StoreError> {
        Ok(self.inner.read().objects.get(key).cloned())
    }

    async fn list(&self, namespace: Option<&str>) -> Result<Vec<Object<K>>, StoreError> {
        let state = self.inner.read();
        Ok(state
            .objects
            .iter()
            .filter(|(k, _)| namespace.is_none_or(|ns| k.namespace == ns))
            .map(|(_, o)| o.clone())
            .collect())
    }

    async fn create(&self, obj: Object<K>) -> Result<Object<K>, StoreError> {
        let stored = {
            let mut state = self.inner.write();
            let key = obj.key();
            if state.objects.contains_key(&key) {
                return Err(StoreError::AlreadyExists {
                    kind: K::KIND,
                    key: key.to_string(),
                });
            }
            state.put(obj, false)
        };
        self.inner.publish(StoreEvent::Applied(stored.clone()));
        Ok(stored)
    }

    async fn apply(&self, obj: Object<K>) -> Result<Object<K>, StoreError> {
        let stored = {
            let mut state = self.inner.write();
            let key = obj.key();
            if let (Some(expected), Some(current)) = (
                obj.metadata.resource_version.as_deref(),
                state.objects.get(&key),
            ) {
                let found = current
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default();
                if expected != found {
                    return Err(StoreError::Conflict {
                        key: key.to_string(),
                        expected: expected.to_owned(),
                        found,
                    });
                }
            }
            state.put(obj, true)
        };
        self.inner.publish(StoreEvent::Applied(stored.clone()));
        Ok(stored)
    }

    async fn delete(&self, key: &ObjectKey) -> Result<Object<K>, StoreError> {
        let removed = self.inner.write().objects.remove(key);
        let removed = removed.ok_or_else(|| StoreError::not_found(K::KIND, key))?;
        self.inner.publish(StoreEvent::Deleted(removed.clone()));
        Ok(removed)
    }

    async fn set_status(
        &self,
        key: &ObjectKey,
        status: K::Status,
    ) -> Result<Object<K>, StoreError> {
        let stored = {
            let mut state = self.inner.write();
            state.version += 1;
            let version = state.version.to_string();
            let obj = state
                .objects
                .get_mut(key)
                .ok_or_else(|| StoreError::not_found(K::KIND, key))?;
            obj.status = Some(status);
            obj.metadata.resource_version = Some(version);
            obj.clone()
        };
        self.inner.publish(StoreEvent::Applied(stored.clone()));
        Ok(stored)
    }

    fn watch(&self) -> BoxStream<'static, Result<StoreEvent<K>, StoreError>> {
        // Subscribe before taking the snapshot so no change falls between the two.
        let rx = self.inner.events.subscribe();
        let first = StoreEvent::Resynced(self.inner.snapshot());
        let inner = Arc::clone(&self.inner);
        let rest = futures_util::stream::unfold((rx, inner), |(mut rx, inner)| async move {
            let event = match rx.recv().await {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    StoreEvent::Resynced(inner.snapshot())
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((Ok(event), (rx, inner)))
        });
        futures_util::stream::once(std::future::ready(Ok(first)))
            .chain(rest)
            .boxed()
    }
}

#[cfg(test)]
mod tests;
