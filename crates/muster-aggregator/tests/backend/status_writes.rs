//! A server's status written into its definition by the services: a write the store refuses
//! is tried again, rather than leaving the stored status stale until the server changes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use muster_aggregator::backend::BackendOptions;
use muster_aggregator::registry::Registry;
use muster_aggregator::services::{McpServerReconciler, Services};
use muster_core::reconcile::Reconcile;
use muster_core::resource::mcp_server::{McpServerSpec, McpServerStatus};
use muster_core::resource::{McpServer, Object, ObjectKey};
use muster_core::store::{MemoryStore, ResourceStore, StoreError, StoreEvent};

/// A [`MemoryStore`] that refuses the first `refusals` status writes.
#[derive(Debug)]
struct RefusingStore {
    inner: MemoryStore<McpServer>,
    refusals: AtomicUsize,
}

#[async_trait]
impl ResourceStore<McpServer> for RefusingStore {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Object<McpServer>>, StoreError> {
        self.inner.get(key).await
    }

    async fn list(&self, namespace: Option<&str>) -> Result<Vec<Object<McpServer>>, StoreError> {
        self.inner.list(namespace).await
    }

    async fn create(&self, obj: Object<McpServer>) -> Result<Object<McpServer>, StoreError> {
        self.inner.create(obj).await
    }

    async fn apply(&self, obj: Object<McpServer>) -> Result<Object<McpServer>, StoreError> {
        self.inner.apply(obj).await
    }

    async fn delete(&self, key: &ObjectKey) -> Result<Object<McpServer>, StoreError> {
        self.inner.delete(key).await
    }

    async fn set_status(
        &self,
        key: &ObjectKey,
        status: McpServerStatus,
    ) -> Result<Object<McpServer>, StoreError> {
        let refused = self
            .refusals
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(StoreError::Backend("the API server is unavailable".into()));
        }
        self.inner.set_status(key, status).await
    }

    fn watch(&self) -> BoxStream<'static, Result<StoreEvent<McpServer>, StoreError>> {
        self.inner.watch()
    }
}

#[tokio::test]
async fn a_refused_status_write_is_tried_again() {
    let store = Arc::new(RefusingStore {
        inner: MemoryStore::new(),
        refusals: AtomicUsize::new(1),
    });
    // A server that is not started: its status is written once and never changes after.
    let mut spec = McpServerSpec::streamable_http("http://127.0.0.1:9/mcp");
    spec.auto_start = false;
    let obj = store
        .create(Object::new("idle", spec).in_namespace("default"))
        .await
        .unwrap();
    let services =
        Services::builder(Registry::new(), BackendOptions::default(), store.clone()).build();
    let reconciler = McpServerReconciler::new(services.clone());
    reconciler.apply(Arc::new(obj.clone())).await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stored = store.inner.get(&obj.key()).await.unwrap().unwrap();
        if stored.status.as_ref().is_some_and(|s| s.state.is_some()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the status refused once was never written"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        store.refusals.load(Ordering::Acquire),
        0,
        "one write was refused"
    );
    services.stop_all().await;
}
