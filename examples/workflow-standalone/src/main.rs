//! Runs `workflow.yaml` against two tools written with `tower::service_fn`, using only
//! `muster-workflow` (and `muster-core` for the contracts): no aggregator, no server.
//!
//! Run with: `cargo run -p example-workflow-standalone`

use std::sync::Arc;

use muster_core::resource::{Object, Workflow};
use muster_core::store::{ExecutionFilter, ExecutionStore, MemoryExecutionStore};
use muster_core::tool::{ToolCall, ToolError};
use muster_workflow::{Engine, Plan, RunWorkflow};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use tower::util::BoxCloneSyncService;

/// `shout` upper-cases `text`; `count` counts `items`.
async fn tools(call: ToolCall) -> Result<CallToolResult, ToolError> {
    let args = call.arguments_or_empty()?;
    let reply = match call.name.as_str() {
        "shout" => {
            json!({ "text": args.get("text").and_then(Value::as_str).unwrap_or("").to_uppercase() })
        }
        "count" => {
            json!({ "total": args.get("items").and_then(Value::as_array).map_or(0, Vec::len) })
        }
        other => {
            return Err(ToolError::UnknownTool {
                name: other.to_owned(),
            });
        }
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(
        reply.to_string(),
    )]))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workflow: Object<Workflow> = serde_norway::from_str(include_str!("../workflow.yaml"))?;
    let plan = Arc::new(Plan::compile(workflow.name(), &workflow.spec)?);

    let executions = Arc::new(MemoryExecutionStore::new());
    let engine = Engine::builder(
        BoxCloneSyncService::new(tower::service_fn(tools)),
        executions.clone(),
    )
    .build();

    let arguments = json!({ "team": ["ada", "grace", "linus"] });
    let response = engine
        .run(RunWorkflow::new(plan, arguments.as_object().cloned()))
        .await?;
    println!("{}", serde_json::to_string_pretty(&response.document)?);

    let page = executions.list(&ExecutionFilter::default()).await?;
    for run in page.items {
        println!(
            "execution {} of {}: {:?} with {} step records",
            run.id, run.workflow_name, run.status, run.step_count
        );
    }
    Ok(())
}
