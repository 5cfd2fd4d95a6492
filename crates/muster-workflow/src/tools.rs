//! The workflow tools as one [`ToolProvider`]: a `workflow_<name>` tool per workflow, and the
//! `core_workflow_*` tools that manage definitions and read execution records.
//!
//! Definitions come from any [`ResourceStore<Workflow>`], records from any
//! [`ExecutionStore`]; whether the tools a workflow needs exist for a caller is asked of a
//! [`ToolAvailability`]. The provider keeps a catalog snapshot that [`WorkflowTools::refresh`]
//! (or the loop of [`WorkflowTools::watch`]) rebuilds when definitions change.

mod args;
mod availability;
mod catalog;
mod definitions;
mod executions;
mod run;
mod wording;

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use futures_util::StreamExt;
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::resource::{Object, ObjectKey, Workflow};
use muster_core::store::{ExecutionStore, ResourceStore, StoreError};
use muster_core::tool::{
    Catalog, Revision, ToolAvailability, ToolCall, ToolError, ToolProvider, ToolService,
};
use muster_core::{EventSink, ValidationErrors};
use rmcp::model::CallToolResult;
use tokio::sync::watch;
use tower::util::BoxCloneSyncService;

use crate::{Engine, Plan};

pub use catalog::{LABELS_META_KEY, WORKFLOW_TOOL_PREFIX};

/// The workflow tools. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WorkflowTools {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    workflows: Arc<dyn ResourceStore<Workflow>>,
    executions: Arc<dyn ExecutionStore>,
    engine: Engine,
    availability: Arc<dyn ToolAvailability>,
    events: Option<Arc<dyn EventSink>>,
    namespace: String,
    plans: RwLock<HashMap<String, (WorkflowSpec, Arc<Plan>)>>,
    catalog: RwLock<Arc<Catalog>>,
    revisions: watch::Sender<Revision>,
    /// Held across a refresh's read of the store and its update of the catalog, so refreshes
    /// run one after another and a slow one never overwrites a newer one's catalog.
    refreshing: tokio::sync::Mutex<()>,
}

/// Builds [`WorkflowTools`].
#[derive(Debug)]
#[must_use]
pub struct WorkflowToolsBuilder {
    inner: Inner,
}

impl WorkflowToolsBuilder {
    /// Records events (`WorkflowCreated`, `WorkflowUnavailable`, …) in `sink`.
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.inner.events = Some(sink);
        self
    }

    /// The namespace workflows are read from and written to (default `default`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.inner.namespace = namespace.into();
        self
    }

    /// The provider.
    pub fn build(self) -> WorkflowTools {
        WorkflowTools {
            inner: Arc::new(self.inner),
        }
    }
}

impl WorkflowTools {
    /// Workflow tools over `workflows` and `executions`, running workflows with `engine` and
    /// asking `availability` which tools exist for a caller.
    pub fn builder(
        workflows: Arc<dyn ResourceStore<Workflow>>,
        executions: Arc<dyn ExecutionStore>,
        engine: Engine,
        availability: Arc<dyn ToolAvailability>,
    ) -> WorkflowToolsBuilder {
        let catalog = Catalog {
            tools: catalog::core_tools(),
            ..Catalog::default()
        };
        WorkflowToolsBuilder {
            inner: Inner {
                workflows,
                executions,
                engine,
                availability,
                events: None,
                namespace: muster_core::DEFAULT_NAMESPACE.to_owned(),
                plans: RwLock::default(),
                catalog: RwLock::new(Arc::new(catalog)),
                revisions: watch::Sender::new(Revision::default()),
                refreshing: tokio::sync::Mutex::new(()),
            },
        }
    }

    /// Rebuilds the catalog from the store; publishes a new revision when it changed.
    ///
    /// Refreshes are serialised: one that starts after a store write has returned always
    /// leaves a catalog that reflects that write, even while an older refresh is in flight.
    pub async fn refresh(&self) -> Result<(), StoreError> {
        let _one_at_a_time = self.inner.refreshing.lock().await;
        let workflows = self
            .inner
            .workflows
            .list(Some(&self.inner.namespace))
            .await?;
        // Forget the plans of workflows that are gone.
        self.inner
            .plans
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|name, _| workflows.iter().any(|w| w.name() == name));
        let mut tools = catalog::core_tools();
        for wf in &workflows {
            if self.plan_for(wf).is_ok() {
                tools.push(catalog::workflow_tool(wf));
            }
        }
        let changed = {
            let mut current = self
                .inner
                .catalog
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if current.tools == tools {
                false
            } else {
                let revision = current.revision.next();
                *current = Arc::new(Catalog {
                    revision,
                    tools,
                    ..Catalog::default()
                });
                true
            }
        };
        if changed {
            let revision = self.catalog().revision;
            self.inner.revisions.send_replace(revision);
        }
        Ok(())
    }

    /// Keeps the catalog current from the store's watch stream; runs until the stream ends.
    pub async fn watch(self) {
        let mut events = self.inner.workflows.watch();
        while let Some(event) = events.next().await {
            if event.is_ok()
                && let Err(e) = self.refresh().await
            {
                tracing::warn!(error = %e, "refreshing workflow tools failed");
            }
        }
    }

    /// The compiled plan of a stored workflow, compiled once per spec.
    fn plan_for(&self, wf: &Object<Workflow>) -> Result<Arc<Plan>, ValidationErrors> {
        let name = wf.name();
        if let Some((spec, plan)) = self
            .inner
            .plans
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            && *spec == wf.spec
        {
            return Ok(plan.clone());
        }
        let plan = Arc::new(Plan::compile(name, &wf.spec)?);
        self.inner
            .plans
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), (wf.spec.clone(), plan.clone()));
        Ok(plan)
    }

    async fn get_workflow(&self, name: &str) -> Result<Option<Object<Workflow>>, ToolError> {
        let key = ObjectKey::new(&self.inner.namespace, name);
        self.inner
            .workflows
            .get(&key)
            .await
            .map_err(|e| ToolError::failed(e.to_string()))
    }

    /// Records an event of `reason` about the workflow `name`, in the original's wording.
    fn event(&self, name: &str, reason: &str, details: &muster_core::event::message::Details) {
        if let Some(sink) = &self.inner.events {
            sink.record(muster_core::Event::about(
                "Workflow",
                name,
                &self.inner.namespace,
                reason,
                details,
            ));
        }
    }

    async fn call(self, mut call: ToolCall) -> Result<CallToolResult, ToolError> {
        let arguments = call.take_arguments()?;
        let name = call.name.as_str();
        if let Some(workflow) = name.strip_prefix(WORKFLOW_TOOL_PREFIX) {
            return self.run_workflow(workflow, arguments, call.context).await;
        }
        let args = arguments.unwrap_or_default();
        match name {
            "core_workflow_list" => self.list(args, &call.context).await,
            "core_workflow_get" => self.get(args, &call.context).await,
            "core_workflow_create" => self.create(args).await,
            "core_workflow_update" => self.update(args).await,
            "core_workflow_delete" => self.delete(args).await,
            "core_workflow_validate" => self.validate(args),
            "core_workflow_available" => self.available(args, &call.context).await,
            "core_workflow_execution_list" => self.execution_list(args).await,
            "core_workflow_execution_get" => self.execution_get(args).await,
            other => Err(ToolError::UnknownTool {
                name: other.to_owned(),
            }),
        }
    }
}

impl ToolProvider for WorkflowTools {
    fn name(&self) -> &str {
        "workflow"
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.inner
            .catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.inner.revisions.subscribe()
    }

    fn service(&self) -> ToolService {
        let tools = self.clone();
        BoxCloneSyncService::new(tower::service_fn(move |call| tools.clone().call(call)))
    }
}
