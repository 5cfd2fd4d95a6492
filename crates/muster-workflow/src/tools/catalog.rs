//! The tool definitions: the `core_workflow_*` tools and one `workflow_<name>` per workflow.

use std::sync::Arc;

use muster_core::resource::{Object, Workflow};
use rmcp::model::{JsonObject, MetaObject, Tool};
use serde_json::{Value, json};

/// Prefix of the tools that run workflows.
pub const WORKFLOW_TOOL_PREFIX: &str = "workflow_";

/// Key under a workflow tool's `_meta` holding the workflow's labels (for discovery filters).
pub const LABELS_META_KEY: &str = "muster.giantswarm.io/labels";

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(JsonObject::new()),
    }
}

fn definition_schema(name_required: bool, steps_required: bool) -> Arc<JsonObject> {
    let mut required = Vec::new();
    if name_required {
        required.push("name");
    }
    if steps_required {
        required.push("steps");
    }
    schema(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Name of the workflow"},
            "version": {"type": "string", "description": "Version of the workflow (informational)"},
            "description": {"type": "string", "description": "What the workflow does"},
            "args": {"type": "object", "description": "Argument definitions: name -> {type, required, default, description}"},
            "steps": {"type": "array", "description": "Steps: each exactly one of tool, forEach or parallel", "items": {"type": "object"}},
            "onFailure": {"type": "array", "description": "Cleanup steps run when the workflow fails", "items": {"type": "object"}},
            "output": {"type": "object", "description": "Output template returned in place of the default response"}
        },
        "required": required
    }))
}

fn name_only(description: &str) -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": description}},
        "required": ["name"]
    }))
}

/// The nine `core_workflow_*` tools, sorted by name.
pub(super) fn core_tools() -> Vec<Tool> {
    let mut tools = vec![
        Tool::new(
            "core_workflow_list",
            "List workflows with their availability for the caller",
            schema(json!({
                "type": "object",
                "properties": {"include_system": {"type": "boolean", "description": "Include system workflows (accepted for compatibility)", "default": true}}
            })),
        ),
        Tool::new(
            "core_workflow_get",
            "Get a workflow definition",
            name_only("Name of the workflow"),
        ),
        Tool::new(
            "core_workflow_create",
            "Create a workflow",
            definition_schema(true, true),
        ),
        Tool::new(
            "core_workflow_update",
            "Replace a workflow's definition",
            definition_schema(true, true),
        ),
        Tool::new(
            "core_workflow_delete",
            "Delete a workflow",
            name_only("Name of the workflow"),
        ),
        Tool::new(
            "core_workflow_validate",
            "Validate a workflow definition without storing it",
            definition_schema(true, true),
        ),
        Tool::new(
            "core_workflow_available",
            "Whether every tool a workflow needs is available to the caller",
            name_only("Name of the workflow"),
        ),
        Tool::new(
            "core_workflow_execution_list",
            "List workflow executions, newest first",
            schema(json!({
                "type": "object",
                "properties": {
                    "workflow_name": {"type": "string", "description": "Only executions of this workflow"},
                    "status": {"type": "string", "enum": ["inprogress", "completed", "failed"], "description": "Only executions in this status"},
                    "limit": {"type": "number", "minimum": 1, "maximum": 1000, "default": 50, "description": "Page size"},
                    "offset": {"type": "number", "minimum": 0, "default": 0, "description": "Executions to skip"}
                }
            })),
        ),
        Tool::new(
            "core_workflow_execution_get",
            "Get one workflow execution with its steps",
            schema(json!({
                "type": "object",
                "properties": {
                    "execution_id": {"type": "string", "description": "The execution id"},
                    "include_steps": {"type": "boolean", "default": true, "description": "Include the step records"},
                    "step_id": {"type": "string", "description": "Only this step"}
                },
                "required": ["execution_id"]
            })),
        ),
    ];
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

/// The `workflow_<name>` tool of a workflow: its description and an input schema from `args`.
pub(super) fn workflow_tool(wf: &Object<Workflow>) -> Tool {
    let mut properties = JsonObject::new();
    let mut required = Vec::new();
    for (name, def) in &wf.spec.args {
        let mut prop = JsonObject::new();
        if let Some(t) = &def.type_ {
            prop.insert("type".into(), json!(t));
        }
        if let Some(d) = &def.description {
            prop.insert("description".into(), json!(d));
        }
        if let Some(d) = &def.default {
            prop.insert("default".into(), d.clone());
        }
        properties.insert(name.clone(), Value::Object(prop));
        if def.required {
            required.push(name.clone());
        }
    }
    let input = json!({"type": "object", "properties": properties, "required": required});
    let description = wf
        .spec
        .description
        .clone()
        .unwrap_or_else(|| format!("Execute workflow {}", wf.name()));
    let mut tool = Tool::new(
        format!("{WORKFLOW_TOOL_PREFIX}{}", wf.name()),
        description,
        schema(input),
    );
    if !wf.metadata.labels.is_empty() {
        let mut meta = JsonObject::new();
        meta.insert(LABELS_META_KEY.into(), json!(wf.metadata.labels));
        tool.meta = Some(MetaObject(meta));
    }
    tool
}
