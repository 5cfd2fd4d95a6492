//! `core_workflow_list`, `_get`, `_create`, `_update`, `_delete`, `_validate`, `_available`.

use muster_core::event::message::Details;
use muster_core::resource::workflow::WorkflowSpec;
use muster_core::resource::{Object, ObjectKey, Workflow, check_name};
use muster_core::store::StoreError;
use muster_core::tool::{CallContext, ToolError};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Map, Value, json};

use super::WorkflowTools;
use super::args::{self, error, text};
use super::wording;
use crate::Plan;

/// Arguments the definition tools accept at the top level.
const DEFINITION_ARGS: [&str; 8] = [
    "name",
    "version",
    "description",
    "args",
    "steps",
    "onFailure",
    "on_failure",
    "output",
];

/// The group part of error texts, as the Kubernetes API spells the resource.
const RESOURCE: &str = "workflows.muster.giantswarm.io";

/// A definition read from tool arguments, validated and compiled.
struct Definition {
    name: String,
    spec: WorkflowSpec,
}

/// Reads and validates a definition; the error is the message the tool reports.
fn definition(mut args: JsonObject) -> Result<Definition, String> {
    let name = args::string(&args, "name").ok_or("name argument is required")?;
    check_name(&name).map_err(|v| format!("validation failed: {v}"))?;
    if !args.contains_key("steps") {
        return Err("steps argument is required".to_owned());
    }
    args.remove("name");
    args.remove("version");
    let spec: WorkflowSpec = serde_json::from_value(Value::Object(args))
        .map_err(|e| format!("failed to parse request: {e}"))?;
    Plan::compile(&name, &spec)
        .map_err(|e| format!("validation failed: {}", wording::describe(&spec, &e)))?;
    Ok(Definition { name, spec })
}

fn with_warnings(message: String, spec: &WorkflowSpec) -> String {
    spec.warnings()
        .into_iter()
        .fold(message, |m, w| format!("{m}\nwarning: {w}"))
}

impl WorkflowTools {
    /// Reads a definition from tool arguments and records the validation outcome as an
    /// event on the workflow (when the arguments name one).
    fn checked_definition(&self, args: JsonObject) -> Result<Definition, String> {
        let name = args::string(&args, "name");
        let result = definition(args);
        if let Some(name) = name {
            match &result {
                Ok(_) => self.event(&name, "WorkflowValidationSucceeded", &Details::default()),
                Err(e) => self.event(&name, "WorkflowValidationFailed", &Details::error(e)),
            }
        }
        result
    }

    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey::new(&self.inner.namespace, name)
    }

    async fn refresh_logged(&self) {
        if let Err(e) = self.refresh().await {
            tracing::warn!(error = %e, "refreshing workflow tools failed");
        }
    }

    pub(super) async fn list(
        &self,
        args: JsonObject,
        ctx: &CallContext,
    ) -> Result<CallToolResult, ToolError> {
        if let Err(e) = args::only(&args, &["include_system"]) {
            return Ok(e);
        }
        let mut workflows = self
            .inner
            .workflows
            .list(Some(&self.inner.namespace))
            .await
            .map_err(|e| ToolError::failed(format!("failed to list workflows: {e}")))?;
        workflows.sort_by(|a, b| a.name().cmp(b.name()));
        let mut items = Vec::with_capacity(workflows.len());
        for wf in &workflows {
            let available = self
                .missing_tools(wf.name(), ctx)
                .await
                .is_some_and(|m| m.is_empty());
            let mut item = Map::new();
            item.insert("name".into(), json!(wf.name()));
            item.insert("available".into(), json!(available));
            if let Some(d) = &wf.spec.description {
                item.insert("description".into(), json!(d));
            }
            items.push(Value::Object(item));
        }
        Ok(args::json(&json!({ "workflows": items })))
    }

    pub(super) async fn get(
        &self,
        args: JsonObject,
        ctx: &CallContext,
    ) -> Result<CallToolResult, ToolError> {
        let name = match args::name(&args, "name argument is required") {
            Ok(n) => n,
            Err(e) => return Ok(e),
        };
        let Some(wf) = self.get_workflow(&name).await? else {
            return Ok(error(format!(
                "Failed to get workflow: workflow {name} not found"
            )));
        };
        let available = self
            .missing_tools(&name, ctx)
            .await
            .is_some_and(|m| m.is_empty());
        let mut model = match serde_json::to_value(&wf.spec) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        model.insert("name".into(), json!(name));
        if !wf.metadata.labels.is_empty() {
            model.insert("labels".into(), json!(wf.metadata.labels));
        }
        model.insert("available".into(), json!(available));
        if let Some(created) = wf.metadata.creation_timestamp {
            model.insert("createdAt".into(), json!(created));
        }
        let yaml = serde_norway::to_string(&wf).unwrap_or_default();
        Ok(args::json(&json!({ "workflow": model, "yaml": yaml })))
    }

    pub(super) async fn create(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        if let Err(e) = args::only(&args, &DEFINITION_ARGS) {
            return Ok(e);
        }
        let def = match self.checked_definition(args) {
            Ok(d) => d,
            Err(e) if e == "name argument is required" => return Ok(error(e)),
            Err(e) => return Err(ToolError::failed(format!("failed to create workflow: {e}"))),
        };
        let obj = Object::<Workflow>::new(&def.name, def.spec.clone())
            .in_namespace(&self.inner.namespace);
        match self.inner.workflows.create(obj).await {
            Ok(_) => {}
            Err(StoreError::AlreadyExists { .. }) => {
                return Err(ToolError::failed(format!(
                    "failed to create workflow: {RESOURCE} \"{}\" already exists",
                    def.name
                )));
            }
            Err(e) => return Err(ToolError::failed(format!("failed to create workflow: {e}"))),
        }
        self.refresh_logged().await;
        let name = &def.name;
        let steps = Details {
            steps: Some(def.spec.steps.len()),
            ..Details::default()
        };
        self.event(name, "WorkflowCreated", &steps);
        self.event(name, "WorkflowToolRegistered", &Details::default());
        self.event(name, "WorkflowCapabilitiesRefreshed", &Details::default());
        Ok(text(with_warnings(
            "Workflow created successfully".to_owned(),
            &def.spec,
        )))
    }

    pub(super) async fn update(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        if let Err(e) = args::only(&args, &DEFINITION_ARGS) {
            return Ok(e);
        }
        let def = match self.checked_definition(args) {
            Ok(d) => d,
            Err(e) if e == "name argument is required" => return Ok(error(e)),
            Err(e) => return Ok(error(format!("Failed to update workflow: {e}"))),
        };
        let Some(mut existing) = self.get_workflow(&def.name).await? else {
            return Ok(error(format!(
                "Failed to update workflow: {RESOURCE} \"{}\" not found",
                def.name
            )));
        };
        existing.spec = def.spec.clone();
        existing.metadata.resource_version = None;
        if let Err(e) = self.inner.workflows.apply(existing).await {
            return Ok(error(format!("Failed to update workflow: {e}")));
        }
        self.refresh_logged().await;
        let name = &def.name;
        let steps = Details {
            steps: Some(def.spec.steps.len()),
            ..Details::default()
        };
        self.event(name, "WorkflowUpdated", &steps);
        Ok(text(with_warnings(
            format!("Workflow '{name}' updated successfully"),
            &def.spec,
        )))
    }

    pub(super) async fn delete(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        let name = match args::name(&args, "name argument is required") {
            Ok(n) => n,
            Err(e) => return Ok(e),
        };
        match self.inner.workflows.delete(&self.key(&name)).await {
            Ok(_) => {}
            Err(StoreError::NotFound { .. }) => {
                return Ok(error(format!(
                    "Failed to delete workflow: failed to delete workflow: {RESOURCE} \"{name}\" not found"
                )));
            }
            Err(e) => return Ok(error(format!("Failed to delete workflow: {e}"))),
        }
        self.refresh_logged().await;
        self.event(&name, "WorkflowDeleted", &Details::default());
        Ok(text(format!("Workflow '{name}' deleted successfully")))
    }

    pub(super) fn validate(&self, args: JsonObject) -> Result<CallToolResult, ToolError> {
        if let Err(e) = args::only(&args, &DEFINITION_ARGS) {
            return Ok(e);
        }
        Ok(match self.checked_definition(args) {
            Ok(def) => text(with_warnings(
                format!("Validation successful for workflow {}", def.name),
                &def.spec,
            )),
            Err(e) => error(format!("Validation failed: {e}")),
        })
    }

    pub(super) async fn available(
        &self,
        args: JsonObject,
        ctx: &CallContext,
    ) -> Result<CallToolResult, ToolError> {
        let name = match args::name(&args, "name argument is required") {
            Ok(n) => n,
            Err(e) => return Ok(e),
        };
        Ok(match self.missing_tools(&name, ctx).await {
            None => error(format!("workflow {name} not found")),
            Some(missing) => args::json(&json!({ "name": name, "available": missing.is_empty() })),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn validation_speaks_the_original_wording() {
        let args = json!({"name": "w", "steps": [{"id": "a"}, {"id": "b", "tool": "x_t"}]});
        let Value::Object(args) = args else {
            unreachable!()
        };
        let Err(message) = definition(args) else {
            panic!("a step without tool is invalid")
        };
        assert_eq!(
            message,
            "validation failed: steps: step 0 (a): one of tool, forEach, or parallel is required"
        );
    }
}
