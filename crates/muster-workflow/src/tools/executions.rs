//! `core_workflow_execution_list` and `core_workflow_execution_get`.

use muster_core::resource::execution::{
    ApiExecutionRecord, ExecutionId, ExecutionStatus, StepStatus,
};
use muster_core::store::ExecutionFilter;
use muster_core::tool::ToolError;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Map, Value, json};

use super::WorkflowTools;
use super::args::{self, error};

const STATUS_ENUM: &str = "status must be one of the enum values: inprogress, completed, failed";

/// Reads a bounded integer argument with the original's messages.
fn bounded(
    args: &JsonObject,
    key: &str,
    default: i64,
    min: i64,
    max: Option<i64>,
) -> Result<i64, String> {
    let Some(v) = args.get(key).filter(|v| !v.is_null()) else {
        return Ok(default);
    };
    let n = v
        .as_f64()
        .ok_or_else(|| format!("{key} must be a number"))?;
    if n < min as f64 {
        return Err(format!("{key} must be at least {min} (minimum value)"));
    }
    if let Some(max) = max
        && n > max as f64
    {
        return Err(format!("{key} must be at most {max} (maximum value)"));
    }
    Ok(n as i64)
}

fn filter(args: &JsonObject) -> Result<ExecutionFilter, String> {
    let status = match args.get("status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(ExecutionStatus::parse(s).ok_or(STATUS_ENUM)?),
        Some(_) => return Err(STATUS_ENUM.to_owned()),
    };
    let limit = bounded(args, "limit", 50, 1, Some(1000))?;
    let offset = bounded(args, "offset", 0, 0, None)?;
    Ok(ExecutionFilter {
        workflow_name: args::string(args, "workflow_name"),
        status,
        limit: usize::try_from(limit).unwrap_or(50),
        offset: usize::try_from(offset).unwrap_or(0),
    })
}

impl WorkflowTools {
    pub(super) async fn execution_list(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let filter = match filter(&args) {
            Ok(f) => f,
            Err(e) => return Ok(error(e)),
        };
        let page = match self.inner.executions.list(&filter).await {
            Ok(p) => p,
            Err(e) => return Ok(error(format!("Failed to list executions: {e}"))),
        };
        let items: Vec<Value> = page
            .items
            .iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("execution_id".into(), json!(s.id));
                m.insert("workflow_name".into(), json!(s.workflow_name));
                m.insert("status".into(), json!(s.status));
                m.insert("started_at".into(), json!(s.started_at));
                if let Some(c) = s.completed_at {
                    m.insert("completed_at".into(), json!(c));
                }
                m.insert("duration_ms".into(), json!(s.duration_ms));
                m.insert("step_count".into(), json!(s.step_count));
                if let Some(e) = &s.error {
                    m.insert("error".into(), json!(e));
                }
                Value::Object(m)
            })
            .collect();
        Ok(args::json(&json!({
            "executions": items,
            "total": page.total,
            "limit": page.limit,
            "offset": page.offset,
            "has_more": page.has_more,
        })))
    }

    pub(super) async fn execution_get(
        &self,
        args: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let id = match args.get("execution_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Ok(error("execution_id is required")),
        };
        let include_steps = match args.get("include_steps") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Ok(error("include_steps must be a boolean value")),
        };
        let step_id = match args.get("step_id") {
            None => None,
            Some(Value::Null) => return Ok(error("step_id cannot be null")),
            Some(Value::String(s)) if s.is_empty() => {
                return Ok(error("step_id is invalid: cannot be empty"));
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Ok(error("step_id must be a string")),
        };
        let id = ExecutionId::from_string(id);
        let record = match self.inner.executions.get(&id).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                return Ok(error(format!(
                    "Failed to get execution: execution {id} not found"
                )));
            }
            Err(e) => return Ok(error(format!("Failed to get execution: {e}"))),
        };
        let api = ApiExecutionRecord::new(&id, &record);
        if let Some(step_id) = step_id {
            let Some(step) = api.steps.iter().find(|s| s.step_id == step_id).cloned() else {
                return Ok(error(format!(
                    "Failed to get execution: step {step_id} not found in execution {id}"
                )));
            };
            let failed = step.status == StepStatus::Failed;
            let mut doc = match serde_json::to_value(&api) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            };
            doc.remove("result");
            doc.insert(
                "input".into(),
                if failed { api.input.clone() } else { json!({}) },
            );
            match step.error.clone().filter(|_| failed) {
                Some(e) => doc.insert("error".into(), json!(e)),
                None => doc.remove("error"),
            };
            doc.insert("steps".into(), json!([step]));
            return Ok(args::json(&Value::Object(doc)));
        }
        let mut doc = match serde_json::to_value(&api) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if !include_steps {
            doc.remove("steps");
            doc.remove("truncated");
            if let Some(Value::Object(result)) = doc.get_mut("result") {
                result.remove("steps");
                result.remove("template_vars");
            }
        }
        Ok(args::json(&Value::Object(doc)))
    }
}
