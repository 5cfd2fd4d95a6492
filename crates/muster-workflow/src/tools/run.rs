//! `workflow_<name>`: run a workflow.

use muster_core::tool::{CallContext, ToolError};
use rmcp::model::{CallToolResult, JsonObject};

use super::WorkflowTools;
use super::args::error;
use crate::RunWorkflow;

impl WorkflowTools {
    pub(super) async fn run_workflow(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        context: CallContext,
    ) -> Result<CallToolResult, ToolError> {
        let Some(wf) = self.get_workflow(name).await? else {
            return Ok(error(format!("workflow {name} not found")));
        };
        let plan = match self.plan_for(&wf) {
            Ok(plan) => plan,
            Err(e) => return Ok(error(format!("workflow {name} is invalid: {e}"))),
        };
        let missing = self.missing_tools(name, &context).await.unwrap_or_default();
        if !missing.is_empty() {
            self.event(
                name,
                "WorkflowUnavailable",
                &muster_core::event::message::Details {
                    missing_tools: missing.clone(),
                    ..Default::default()
                },
            );
            return Ok(error(format!(
                "workflow {name} is not available (missing required tools)"
            )));
        }
        let run = RunWorkflow {
            plan,
            arguments,
            context,
        };
        match self.inner.engine.run(run).await {
            Ok(response) => Ok(response.into_call_tool_result()),
            Err(e) => Err(ToolError::failed(e.to_string())),
        }
    }
}
