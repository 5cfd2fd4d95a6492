//! [`KubeStore`]: the `ResourceStore` of MCPServer and Workflow custom resources.
//!
//! Reads come from a kube-runtime reflector: a watch with resourceVersion and bookmarks that
//! relists on `410 Gone` and backs off on errors. Writes go to the API server with optimistic
//! concurrency: a conflict re-reads the object and retries, unless the caller named the
//! resourceVersion it expects, in which case the conflict is returned. Status goes through the
//! `/status` subresource with `observedGeneration`, and only while this replica leads when a
//! [`Leadership`] is given.

mod scope;
mod status;
mod sync;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use muster_core::ValidationErrors;
use muster_core::resource::{Kind, Object, ObjectKey};
use muster_core::store::{ResourceStore, StoreError, StoreEvent};
use tokio::sync::{broadcast, watch};

use crate::convert::{api_resource, key_of, store_error, to_dynamic, to_object};
use crate::leader::Leadership;

pub use scope::Namespaces;

/// How often a write is retried after a conflict before giving up.
const CONFLICT_RETRIES: usize = 8;
/// How long a write waits for the reflector to show it, so a list right after sees it.
const READ_YOUR_WRITES: Duration = Duration::from_secs(3);

/// A rule every object written through the store must pass (e.g. the Kubernetes-mode
/// credential refusals of MCPServer).
pub type WriteRule<K> = Arc<dyn Fn(&Object<K>) -> Result<(), ValidationErrors> + Send + Sync>;

/// A change seen by the reflector task, fanned out to every `watch` stream.
#[derive(Debug, Clone)]
enum Change {
    Applied(Arc<DynamicObject>),
    Deleted(Arc<DynamicObject>),
    Resynced,
}

/// The `ResourceStore` of kind `K` over the Kubernetes API: muster's namespace, and the other
/// [`Namespaces`] it is built to watch. Cheap to clone.
pub struct KubeStore<K: Kind> {
    inner: Arc<Inner<K>>,
}

impl<K: Kind> Clone for KubeStore<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<K: Kind> {
    client: kube::Client,
    /// The API of muster's own namespace.
    api: Api<DynamicObject>,
    resource: ApiResource,
    namespace: String,
    watched: Namespaces,
    /// One reflector per watch (one per namespace, or one over every namespace).
    readers: Vec<Store<DynamicObject>>,
    changes: broadcast::Sender<Change>,
    ready: Vec<watch::Receiver<bool>>,
    leadership: Option<Leadership>,
    write_rule: Option<WriteRule<K>>,
    /// Statuses computed while another replica led, written when this one takes the lead,
    /// each with the sequence number of its `set_status` call.
    pending: Mutex<HashMap<ObjectKey, (u64, K::Status)>>,
    /// The sequence number of the newest `set_status` call of each object: a write that is
    /// no longer the newest gives up, so an older status never overwrites a newer one.
    newest: Mutex<HashMap<ObjectKey, u64>>,
    /// The next sequence number.
    sequence: std::sync::atomic::AtomicU64,
}

impl<K: Kind> fmt::Debug for KubeStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeStore")
            .field("kind", &K::KIND)
            .field("namespace", &self.inner.namespace)
            .finish_non_exhaustive()
    }
}

/// Builds a [`KubeStore`].
#[must_use]
pub struct KubeStoreBuilder<K: Kind> {
    client: kube::Client,
    namespace: String,
    watched: Namespaces,
    leadership: Option<Leadership>,
    write_rule: Option<WriteRule<K>>,
}

impl<K: Kind> fmt::Debug for KubeStoreBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeStoreBuilder")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl<K: Kind> KubeStoreBuilder<K> {
    /// Serves objects of `namespaces` besides muster's own (default: muster's namespace
    /// only). [`Namespaces::All`] watches every namespace with one cluster-wide watch, so the
    /// service account needs `list` and `watch` cluster-wide; a list watches each namespace
    /// on its own.
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.watched = namespaces.including(&self.namespace);
        self
    }

    /// Status is written only while `leadership` says this replica leads; other replicas
    /// leave it alone, so statuses never flap between replicas.
    pub fn leadership(mut self, leadership: Leadership) -> Self {
        self.leadership = Some(leadership);
        self
    }

    /// Every create and apply must pass `rule`, or fails with [`StoreError::Invalid`].
    pub fn write_rule(mut self, rule: WriteRule<K>) -> Self {
        self.write_rule = Some(rule);
        self
    }

    /// Starts the reflector (on the current tokio runtime) and returns the store. Reads wait
    /// for the first complete list; [`KubeStore::ready`] waits for it explicitly.
    pub fn start(self) -> KubeStore<K> {
        let resource = api_resource::<K>();
        let api =
            Api::<DynamicObject>::namespaced_with(self.client.clone(), &self.namespace, &resource);
        let (changes, _) = broadcast::channel(1024);
        let mut readers = Vec::new();
        let mut ready = Vec::new();
        for watched in self.watched.apis(&self.client, &resource) {
            let writer = reflector::store::Writer::new(resource.clone());
            readers.push(writer.as_reader());
            let (ready_tx, ready_rx) = watch::channel(false);
            ready.push(ready_rx);
            let stream = reflector::reflector(
                writer,
                watcher(watched, watcher::Config::default()).default_backoff(),
            );
            tokio::spawn(sync::run(
                K::KIND,
                stream.boxed(),
                changes.clone(),
                ready_tx,
            ));
        }
        let store = KubeStore {
            inner: Arc::new(Inner {
                client: self.client,
                api,
                resource,
                namespace: self.namespace,
                watched: self.watched,
                readers,
                changes,
                ready,
                leadership: self.leadership.clone(),
                write_rule: self.write_rule,
                pending: Mutex::default(),
                newest: Mutex::default(),
                sequence: std::sync::atomic::AtomicU64::new(0),
            }),
        };
        if let Some(leadership) = self.leadership {
            tokio::spawn(store.clone().flush_on_leadership(leadership));
        }
        store
    }
}

impl<K: Kind> KubeStore<K> {
    /// A store of kind `K` in `namespace`.
    pub fn builder(client: kube::Client, namespace: impl Into<String>) -> KubeStoreBuilder<K> {
        let namespace = namespace.into();
        KubeStoreBuilder {
            client,
            watched: Namespaces::Listed(vec![namespace.clone()]),
            namespace,
            leadership: None,
            write_rule: None,
        }
    }

    /// Waits until the reflector holds a complete list (or `timeout` passes); returns whether
    /// it does.
    pub async fn ready(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.wait_ready())
            .await
            .is_ok_and(|r| r)
    }

    /// Waits until every reflector holds a complete list; false when one has stopped.
    async fn wait_ready(&self) -> bool {
        for ready in &self.inner.ready {
            if ready.clone().wait_for(|r| *r).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Whether every reflector holds a complete list.
    fn is_ready(&self) -> bool {
        self.inner.ready.iter().all(|r| *r.borrow())
    }

    /// Every object the reflectors hold.
    fn cached(&self) -> Vec<Arc<DynamicObject>> {
        self.inner.readers.iter().flat_map(Store::state).collect()
    }

    /// Writes the statuses held back while another replica led, each time this one takes
    /// the lead.
    async fn flush_on_leadership(self, mut leadership: Leadership) {
        while let Some(leads) = leadership.changed().await {
            if !leads {
                continue;
            }
            let pending: Vec<(ObjectKey, (u64, K::Status))> = self
                .inner
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .drain()
                .collect();
            for (key, (sequence, status)) in pending {
                match self.write_status(&key, status, sequence).await {
                    Ok(_) | Err(StoreError::NotFound { .. }) => {}
                    Err(e) => tracing::warn!(object = %key, error = %e, "writing a status failed"),
                }
            }
        }
    }

    /// Whether this replica writes `status` of `key` now. When another replica leads, it
    /// keeps `status` to write should it take the lead, and answers `false`.
    ///
    /// The status is held first and leadership checked after: a lead taken meanwhile either
    /// is seen here (and this call writes) or flushes after the hold, so a status is never
    /// left unwritten by a replica that leads.
    fn writes_or_holds(&self, key: &ObjectKey, status: &K::Status, sequence: u64) -> bool {
        let Some(leadership) = &self.inner.leadership else {
            return true;
        };
        if leadership.is_leader() {
            return true;
        }
        let mut pending = self
            .inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        pending.insert(key.clone(), (sequence, status.clone()));
        if !leadership.is_leader() {
            return false;
        }
        // The lead came meanwhile: written here, so no stale copy is flushed later.
        pending.remove(key);
        true
    }

    /// Whether the `set_status` call numbered `sequence` is still the newest for `key`.
    fn is_newest(&self, key: &ObjectKey, sequence: u64) -> bool {
        self.inner
            .newest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .is_none_or(|newest| *newest == sequence)
    }

    /// Writes `status` of `key` for the `set_status` call numbered `sequence`, with
    /// optimistic concurrency; gives up (answering the object as it is) once a newer call
    /// for the same object was made, so the newest status is the one that stays.
    async fn write_status(
        &self,
        key: &ObjectKey,
        status: K::Status,
        sequence: u64,
    ) -> Result<Object<K>, StoreError> {
        for _ in 0..CONFLICT_RETRIES {
            let Some(mut current) = self.get_dynamic(key).await? else {
                return Err(StoreError::not_found(K::KIND, key));
            };
            if !self.is_newest(key, sequence) || !self.writes_or_holds(key, &status, sequence) {
                return to_object(&current);
            }
            let value = status::with_observed_generation(&status, current.metadata.generation)
                .map_err(|e| StoreError::Codec {
                    message: format!("{} {key} status: {e}", K::KIND),
                })?;
            if current.data.get("status") == Some(&value) {
                return to_object(&current);
            }
            if let Some(data) = current.data.as_object_mut() {
                data.insert("status".into(), value);
            }
            match self
                .api_in(&key.namespace)
                .replace_status(&key.name, &PostParams::default(), &current)
                .await
            {
                Ok(written) => return to_object(&written),
                Err(e) => match store_error::<K>(key, e) {
                    StoreError::Conflict { .. } => {}
                    other => return Err(other),
                },
            }
        }
        Err(StoreError::Conflict {
            key: key.to_string(),
            expected: "any".to_owned(),
            found: format!("a new version on each of {CONFLICT_RETRIES} attempts"),
        })
    }

    /// The API of the store's kind in muster's namespace.
    pub fn api(&self) -> &Api<DynamicObject> {
        &self.inner.api
    }

    /// The APIs whose lists and watches cover the namespaces the store serves.
    pub(crate) fn watched_apis(&self) -> Vec<Api<DynamicObject>> {
        self.inner
            .watched
            .apis(&self.inner.client, &self.inner.resource)
    }

    /// The API of the store's kind in `namespace`.
    fn api_in(&self, namespace: &str) -> Api<DynamicObject> {
        if namespace == self.inner.namespace {
            return self.inner.api.clone();
        }
        Api::namespaced_with(self.inner.client.clone(), namespace, &self.inner.resource)
    }

    /// The API resource of the store's kind.
    pub fn api_resource(&self) -> &ApiResource {
        &self.inner.resource
    }

    /// muster's namespace: where the store writes what names no other.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// The namespaces the store serves.
    pub fn namespaces(&self) -> &Namespaces {
        &self.inner.watched
    }

    fn check_namespace(&self, key: &ObjectKey) -> Result<(), StoreError> {
        if self.inner.watched.contains(&key.namespace) {
            Ok(())
        } else {
            Err(StoreError::not_found(K::KIND, key))
        }
    }

    fn check_rule(&self, obj: &Object<K>) -> Result<(), StoreError> {
        match &self.inner.write_rule {
            Some(rule) => rule(obj).map_err(StoreError::from),
            None => Ok(()),
        }
    }

    /// Waits (bounded) until the reflector shows `key` at `version`, or gone for `None`.
    async fn await_reflected(&self, key: &ObjectKey, version: Option<&str>) {
        let target =
            ObjectRef::new_with(&key.name, self.inner.resource.clone()).within(&key.namespace);
        let deadline = tokio::time::Instant::now() + READ_YOUR_WRITES;
        while tokio::time::Instant::now() < deadline {
            let seen = self.inner.readers.iter().find_map(|r| r.get(&target));
            let done = match (version, &seen) {
                (None, None) => true,
                (Some(v), Some(obj)) => obj
                    .metadata
                    .resource_version
                    .as_deref()
                    .is_some_and(|have| at_least(have, v)),
                _ => false,
            };
            if done {
                return;
            }
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }

    async fn get_dynamic(&self, key: &ObjectKey) -> Result<Option<DynamicObject>, StoreError> {
        self.check_namespace(key)?;
        self.api_in(&key.namespace)
            .get_opt(&key.name)
            .await
            .map_err(|e| store_error::<K>(key, e))
    }
}

/// Whether resource version `have` is `want` or newer. Versions are opaque; when both are
/// numbers (as etcd's are) they are compared as such, otherwise only equality counts.
fn at_least(have: &str, want: &str) -> bool {
    match (have.parse::<u64>(), want.parse::<u64>()) {
        (Ok(h), Ok(w)) => h >= w,
        _ => have == want,
    }
}

#[async_trait]
impl<K: Kind> ResourceStore<K> for KubeStore<K> {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Object<K>>, StoreError> {
        match self.get_dynamic(key).await {
            Ok(Some(obj)) => to_object(&obj).map(Some),
            Ok(None) => Ok(None),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn list(&self, namespace: Option<&str>) -> Result<Vec<Object<K>>, StoreError> {
        if namespace.is_some_and(|ns| !self.inner.watched.contains(ns)) {
            return Ok(Vec::new());
        }
        let objects: Vec<Arc<DynamicObject>> = if self.is_ready() {
            self.cached()
        } else {
            let mut all = Vec::new();
            for api in self.watched_apis() {
                let list = api
                    .list(&kube::api::ListParams::default())
                    .await
                    .map_err(|e| StoreError::Backend(Box::new(e)))?;
                all.extend(list.items.into_iter().map(Arc::new));
            }
            all
        };
        let mut out: Vec<Object<K>> = objects
            .iter()
            .filter(|o| namespace.is_none_or(|ns| o.metadata.namespace.as_deref() == Some(ns)))
            .filter_map(|o| match to_object::<K>(o) {
                Ok(obj) => Some(obj),
                Err(e) => {
                    tracing::debug!(error = %e, "listing skips an unreadable object");
                    None
                }
            })
            .collect();
        out.sort_by_key(Object::key);
        Ok(out)
    }

    async fn create(&self, obj: Object<K>) -> Result<Object<K>, StoreError> {
        let key = obj.key();
        self.check_namespace(&key)?;
        self.check_rule(&obj)?;
        let mut dynamic = to_dynamic(&obj)?;
        dynamic.metadata.resource_version = None;
        if let Some(data) = dynamic.data.as_object_mut() {
            data.remove("status");
        }
        let created = self
            .api_in(&key.namespace)
            .create(&PostParams::default(), &dynamic)
            .await
            .map_err(|e| store_error::<K>(&key, e))?;
        self.await_reflected(&key, created.metadata.resource_version.as_deref())
            .await;
        to_object(&created)
    }

    async fn apply(&self, obj: Object<K>) -> Result<Object<K>, StoreError> {
        let key = obj.key();
        self.check_namespace(&key)?;
        self.check_rule(&obj)?;
        let expected = obj.metadata.resource_version.clone();
        let desired = to_dynamic(&obj)?;
        for _ in 0..CONFLICT_RETRIES {
            let Some(mut current) = self.get_dynamic(&key).await? else {
                if let Some(expected) = expected {
                    return Err(StoreError::Conflict {
                        key: key.to_string(),
                        expected,
                        found: "none (the object is gone)".to_owned(),
                    });
                }
                match self.create(obj.clone()).await {
                    Err(StoreError::AlreadyExists { .. }) => continue,
                    other => return other,
                }
            };
            let found = current
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default();
            if let Some(expected) = &expected
                && *expected != found
            {
                return Err(StoreError::Conflict {
                    key: key.to_string(),
                    expected: expected.clone(),
                    found,
                });
            }
            current.metadata.labels = desired.metadata.labels.clone();
            current.metadata.annotations = desired.metadata.annotations.clone();
            if let (Some(data), Some(spec)) =
                (current.data.as_object_mut(), desired.data.get("spec"))
            {
                data.insert("spec".into(), spec.clone());
            }
            match self
                .api_in(&key.namespace)
                .replace(&key.name, &PostParams::default(), &current)
                .await
            {
                Ok(replaced) => {
                    self.await_reflected(&key, replaced.metadata.resource_version.as_deref())
                        .await;
                    return to_object(&replaced);
                }
                Err(e) => match store_error::<K>(&key, e) {
                    StoreError::Conflict { .. } if expected.is_none() => {}
                    StoreError::Conflict { .. } => {
                        return Err(StoreError::Conflict {
                            key: key.to_string(),
                            expected: expected.unwrap_or_default(),
                            found: "a newer one".to_owned(),
                        });
                    }
                    other => return Err(other),
                },
            }
        }
        Err(StoreError::Conflict {
            key: key.to_string(),
            expected: "any".to_owned(),
            found: format!("a new version on each of {CONFLICT_RETRIES} attempts"),
        })
    }

    async fn delete(&self, key: &ObjectKey) -> Result<Object<K>, StoreError> {
        let Some(current) = self.get_dynamic(key).await? else {
            return Err(StoreError::not_found(K::KIND, key));
        };
        self.api_in(&key.namespace)
            .delete(&key.name, &DeleteParams::default())
            .await
            .map_err(|e| store_error::<K>(key, e))?;
        self.await_reflected(key, None).await;
        self.inner
            .newest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
        to_object(&current)
    }

    async fn set_status(
        &self,
        key: &ObjectKey,
        status: K::Status,
    ) -> Result<Object<K>, StoreError> {
        let sequence = self
            .inner
            .sequence
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner
            .newest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), sequence);
        self.write_status(key, status, sequence).await
    }

    fn watch(&self) -> BoxStream<'static, Result<StoreEvent<K>, StoreError>> {
        let changes = self.inner.changes.subscribe();
        futures::stream::unfold(
            (self.clone(), changes, false),
            |(store, mut changes, started)| async move {
                if !started {
                    if !store.wait_ready().await {
                        return None;
                    }
                    let first = snapshot::<K>(&store.cached());
                    return Some((Ok(first), (store, changes, true)));
                }
                let event = match changes.recv().await {
                    Ok(Change::Applied(obj)) => applied::<K>(&obj),
                    Ok(Change::Deleted(obj)) => match to_object::<K>(&obj) {
                        Ok(o) => StoreEvent::Deleted(o),
                        // It never became a service, so nothing is left to clean up but
                        // what a resync settles.
                        Err(_) => snapshot::<K>(&store.cached()),
                    },
                    Ok(Change::Resynced) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        snapshot::<K>(&store.cached())
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                };
                Some((Ok(event), (store, changes, true)))
            },
        )
        .boxed()
    }
}

fn applied<K: Kind>(obj: &DynamicObject) -> StoreEvent<K> {
    match to_object::<K>(obj) {
        Ok(o) => StoreEvent::Applied(o),
        Err(e) => {
            let key = key_of(obj);
            StoreEvent::Invalid {
                source: format!("{} {key}", K::KIND),
                key: Some(key),
                error: e.to_string(),
            }
        }
    }
}

fn snapshot<K: Kind>(objects: &[Arc<DynamicObject>]) -> StoreEvent<K> {
    let mut all: Vec<Object<K>> = objects
        .iter()
        .filter_map(|o| to_object::<K>(o).ok())
        .collect();
    all.sort_by_key(Object::key);
    StoreEvent::Resynced(all)
}
