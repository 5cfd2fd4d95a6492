//! Whether a workflow can run for a caller: every tool it needs exists for them.

use std::collections::HashSet;

use muster_core::tool::CallContext;

use super::{WORKFLOW_TOOL_PREFIX, WorkflowTools};

impl WorkflowTools {
    /// The tools `name` needs that the caller cannot call, in discovery order; `None` when
    /// the workflow does not exist (or is invalid).
    pub(super) async fn missing_tools(&self, name: &str, ctx: &CallContext) -> Option<Vec<String>> {
        let mut visiting = HashSet::new();
        self.missing_in(name, ctx, &mut visiting).await
    }

    fn missing_in<'a>(
        &'a self,
        name: &'a str,
        ctx: &'a CallContext,
        visiting: &'a mut HashSet<String>,
    ) -> futures_util::future::BoxFuture<'a, Option<Vec<String>>> {
        Box::pin(async move {
            let wf = self.get_workflow(name).await.ok().flatten()?;
            let plan = self.plan_for(&wf).ok()?;
            visiting.insert(name.to_owned());
            let mut missing = Vec::new();
            for tool in plan.required_tools() {
                if let Some(nested) = tool.strip_prefix(WORKFLOW_TOOL_PREFIX) {
                    // A nested workflow must exist and be available itself; a cycle stops here.
                    if visiting.contains(nested) {
                        continue;
                    }
                    match self.missing_in(nested, ctx, visiting).await {
                        Some(inner) if inner.is_empty() => {}
                        _ => missing.push(tool.clone()),
                    }
                } else if !tool.starts_with("core_")
                    && !self.inner.availability.is_available(tool, ctx)
                {
                    missing.push(tool.clone());
                }
            }
            Some(missing)
        })
    }
}
