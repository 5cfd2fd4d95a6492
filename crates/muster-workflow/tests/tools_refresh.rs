//! The workflow tools' catalog against a store whose reads can be held back: a refresh that
//! read the store before a write never hides what a later refresh published.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream::BoxStream;
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::resource::{Object, ObjectKey, Workflow};
use muster_core::store::{
    MemoryExecutionStore, MemoryStore, ResourceStore, StoreError, StoreEvent,
};
use muster_core::tool::{StaticAvailability, ToolCall, ToolError, ToolProvider};
use muster_workflow::{Engine, WorkflowTools};
use tokio::sync::{Notify, Semaphore};
use tower::util::BoxCloneSyncService;

/// A [`MemoryStore`] whose `list` answers only once `release` has a permit when `held` is
/// set: the read happens at once, its answer comes later.
#[derive(Debug)]
struct HeldStore {
    inner: MemoryStore<Workflow>,
    held: std::sync::atomic::AtomicBool,
    reading: Notify,
    release: Semaphore,
}

impl HeldStore {
    fn new() -> Self {
        Self {
            inner: MemoryStore::new(),
            held: std::sync::atomic::AtomicBool::new(false),
            reading: Notify::new(),
            release: Semaphore::new(0),
        }
    }
}

#[async_trait]
impl ResourceStore<Workflow> for HeldStore {
    async fn get(&self, key: &ObjectKey) -> Result<Option<Object<Workflow>>, StoreError> {
        self.inner.get(key).await
    }

    async fn list(&self, namespace: Option<&str>) -> Result<Vec<Object<Workflow>>, StoreError> {
        let listed = self.inner.list(namespace).await;
        if self.held.swap(false, std::sync::atomic::Ordering::AcqRel) {
            self.reading.notify_one();
            let _permit = self.release.acquire().await.unwrap();
        }
        listed
    }

    async fn create(&self, obj: Object<Workflow>) -> Result<Object<Workflow>, StoreError> {
        self.inner.create(obj).await
    }

    async fn apply(&self, obj: Object<Workflow>) -> Result<Object<Workflow>, StoreError> {
        self.inner.apply(obj).await
    }

    async fn delete(&self, key: &ObjectKey) -> Result<Object<Workflow>, StoreError> {
        self.inner.delete(key).await
    }

    async fn set_status(
        &self,
        key: &ObjectKey,
        status: <Workflow as muster_core::resource::Kind>::Status,
    ) -> Result<Object<Workflow>, StoreError> {
        self.inner.set_status(key, status).await
    }

    fn watch(&self) -> BoxStream<'static, Result<StoreEvent<Workflow>, StoreError>> {
        self.inner.watch()
    }
}

fn greet() -> Object<Workflow> {
    let spec: WorkflowSpec = serde_json::from_value(serde_json::json!({
        "steps": [{"id": "say", "tool": "echo"}],
    }))
    .unwrap();
    Object::new("greet", spec).in_namespace("default")
}

fn workflow_tools(store: Arc<HeldStore>) -> WorkflowTools {
    let no_tools = BoxCloneSyncService::new(tower::service_fn(|call: ToolCall| async move {
        Err::<rmcp::model::CallToolResult, _>(ToolError::UnknownTool {
            name: call.name.to_string(),
        })
    }));
    let executions = Arc::new(MemoryExecutionStore::new());
    let engine = Engine::builder(no_tools, executions.clone()).build();
    let availability = StaticAvailability(["echo".to_owned()].into_iter().collect());
    WorkflowTools::builder(store, executions, engine, Arc::new(availability)).build()
}

fn exposes(tools: &WorkflowTools, name: &str) -> bool {
    tools.catalog().tools.iter().any(|t| t.name == name)
}

#[tokio::test]
async fn a_refresh_that_read_before_a_write_does_not_hide_the_written_workflow() {
    let store = Arc::new(HeldStore::new());
    let tools = workflow_tools(store.clone());

    // An older refresh (as the watch stream's first resync starts one) reads an empty store
    // and is held before it updates the catalog.
    store.held.store(true, std::sync::atomic::Ordering::Release);
    let older = tokio::spawn({
        let tools = tools.clone();
        async move { tools.refresh().await }
    });
    store.reading.notified().await;

    // A write, then the refresh its caller runs before answering.
    store.inner.create(greet()).await.unwrap();
    let newer = tokio::spawn({
        let tools = tools.clone();
        async move { tools.refresh().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;

    store.release.add_permits(1);
    older.await.unwrap().unwrap();
    newer.await.unwrap().unwrap();
    assert!(
        exposes(&tools, "workflow_greet"),
        "the catalog lost the workflow written before the last refresh: {:?}",
        tools
            .catalog()
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    );
}
