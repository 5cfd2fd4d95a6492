//! Running steps: one `match` over the step kinds.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use muster_core::resource::execution::StepStatus;
use muster_core::tool::{CallContext, ToolArguments, ToolCall, ToolService};
use rmcp::model::CallToolResult;
use serde_json::Value;
use tower::ServiceExt;
use tracing::Instrument as _;

use super::outcome::{Entry, Fragment, Halt, failure_result};
use super::record::Recorder;
use super::scope::Scope;
use crate::budget::{BUDGET_EXCEEDED, EvaluationError, Evaluator, deadline_in, with_deadline};
use crate::plan::{PlannedStep, StepKind};
use crate::query::Query;
use crate::value_tree::LeafMode;

/// How long a cancelled call may take to stop before it is dropped.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the steps of one execution.
#[derive(Debug, Clone)]
pub(crate) struct Runner {
    pub(crate) tools: ToolService,
    pub(crate) recorder: Recorder,
    pub(crate) context: CallContext,
    /// Tool steps finished so far, the progress reported to the caller.
    pub(crate) finished_steps: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Runs jq programs off the async workers, under the evaluation budget.
    pub(crate) evaluator: Evaluator,
}

/// A tool call that produced a result (which may report an error).
#[derive(Debug)]
pub(crate) struct ToolOutcome {
    /// The first text content parsed as JSON, or the text, or the structured content.
    pub(crate) value: Value,
    pub(crate) is_error: bool,
    /// The first text content, for error messages.
    pub(crate) text: Option<String>,
}

impl Runner {
    /// Calls a tool through the same service clients reach; a call that produced no result is
    /// an `Err` with the message.
    pub(crate) async fn call_tool(&self, name: &str, args: Value) -> Result<ToolOutcome, String> {
        if self.context.cancellation.is_cancelled() {
            return Err(self.cancelled());
        }
        let arguments = match args {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => return Err(format!("arguments must be an object, got {other}")),
        };
        let mut context = self.context.clone();
        context.workflow_depth += 1;
        context.progress = None;
        let call = ToolCall::in_context(name, arguments.map(ToolArguments::from), context);
        let mut call = std::pin::pin!(self.tools.clone().oneshot(call));
        let result = tokio::select! {
            result = &mut call => result,
            () = self.context.cancellation.cancelled() => {
                // The callee got the same cancellation: give it a moment to stop and record
                // its end (a nested workflow finishes its record) before dropping it.
                let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
                return Err(self.cancelled());
            }
        };
        Ok(outcome_of(result.map_err(|e| e.to_string())?))
    }

    /// Why the run is cancelled: its call tree's reason, or its caller going away.
    pub(crate) fn cancelled(&self) -> String {
        match self.context.tree.as_ref().and_then(|t| t.stop_reason()) {
            Some(reason) => format!("workflow cancelled: {reason}"),
            None => "workflow cancelled".to_owned(),
        }
    }

    /// Cuts an error text to the message budget.
    pub(crate) fn bounded(&self, error: String) -> String {
        let max = self.recorder.max_message_bytes;
        match muster_core::text::truncate_message(&error, max) {
            std::borrow::Cow::Borrowed(_) => error,
            std::borrow::Cow::Owned(cut) => cut,
        }
    }

    /// Runs a template evaluation under the evaluation budget (see [`crate::budget`]).
    pub(crate) fn within_budget<T>(&self, f: impl FnOnce() -> T) -> T {
        with_deadline(Some(deadline_in(self.evaluator.budget())), f)
    }

    /// Explains a template error caused by the evaluation budget.
    pub(crate) fn explain_budget(&self, error: String) -> String {
        if error.contains(BUDGET_EXCEEDED) {
            format!("{error} ({})", self.budget_words())
        } else {
            error
        }
    }

    fn budget_words(&self) -> String {
        format!(
            "budget {}ms, limits.workflows.evaluationTimeoutMs",
            self.evaluator.budget().as_millis()
        )
    }

    /// Runs a step's jq program on the evaluation pool, under the budget.
    pub(crate) async fn run_jq(
        &self,
        query: &std::sync::Arc<Query>,
        data: Value,
        scope: &Scope,
    ) -> Result<Value, String> {
        let query = std::sync::Arc::clone(query);
        let input = scope.input_shared();
        let vars = scope.vars();
        let over_budget = || {
            format!(
                "jq program exceeded its time budget ({})",
                self.budget_words()
            )
        };
        match self
            .evaluator
            .run(move || query.run(&data, &input, &vars))
            .await
        {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if e.to_string().contains(BUDGET_EXCEEDED) => Err(over_budget()),
            Ok(Err(e)) => Err(self.bounded(e.to_string())),
            Err(EvaluationError::Timeout(_)) => Err(over_budget()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Runs `steps` one after another against `scope`, merging each step's results before the
    /// next; stops at the first halt.
    pub(crate) async fn run_sequence(
        &self,
        steps: &[PlannedStep],
        scope: &mut Scope,
        suffix: &str,
    ) -> Fragment {
        let mut all = Fragment::default();
        for step in steps {
            let fragment = self.run_step(step, scope, suffix).await;
            scope.merge(&fragment.results);
            let halted = fragment.halt.is_some();
            all.absorb(fragment);
            if halted {
                break;
            }
        }
        all
    }

    /// Runs one step of any kind. `suffix` (e.g. `_2` or `_0_1`) names the loop iteration the
    /// step runs in, for its execution record.
    pub(crate) fn run_step<'a>(
        &'a self,
        step: &'a PlannedStep,
        scope: &'a Scope,
        suffix: &'a str,
    ) -> BoxFuture<'a, Fragment> {
        async move {
            if self.context.cancellation.is_cancelled() {
                return Fragment::halted(Halt::Engine(self.cancelled()));
            }
            let tool_name = match &step.kind {
                StepKind::Tool { tool, .. } => tool.as_str(),
                _ => "",
            };
            let condition = match &step.condition {
                None => None,
                Some(c) => match self.evaluate_condition(&step.id, c, scope).await {
                    Ok(info) => Some(info),
                    Err(halt) => return Fragment::halted(halt),
                },
            };
            if let Some(info) = condition.as_ref().filter(|c| !c.passed) {
                let stored_as = format!("{}{suffix}", step.id);
                if let Err(e) = self
                    .recorder
                    .skipped(
                        &step.id,
                        &stored_as,
                        Some(tool_name).filter(|t| !t.is_empty()),
                    )
                    .await
                {
                    return Fragment::halted(Halt::Engine(e));
                }
                return Fragment {
                    entries: vec![Entry {
                        id: step.id.clone(),
                        tool: tool_name.to_owned(),
                        status: StepStatus::Skipped,
                        condition: Some(info.clone()),
                        allow_failure: step.allow_failure,
                        result: None,
                        output: step.output,
                        error: None,
                    }],
                    ..Fragment::default()
                };
            }
            let mut fragment = match &step.kind {
                StepKind::Tool {
                    tool,
                    args,
                    paginate,
                } => {
                    let span = muster_core::call_span!(
                        target: super::spans::SPAN_TARGET,
                        "step",
                        otel.name = %format_args!("step {}", step.id),
                        muster.step = %step.id,
                        gen_ai.tool.name = %tool,
                    );
                    self.run_tool_step(step, tool, args, paginate.as_ref(), scope, suffix)
                        .instrument(span)
                        .await
                }
                StepKind::ForEach { .. } => self.run_for_each(step, scope, suffix).await,
                StepKind::Parallel(group) => self.run_parallel(step, group, scope, suffix).await,
            };
            if let (Some(info), Some(first)) = (condition, fragment.entries.first_mut())
                && first.id == step.id
            {
                first.condition = Some(info);
            }
            fragment
        }
        .boxed()
    }

    async fn run_tool_step(
        &self,
        step: &PlannedStep,
        tool: &str,
        args: &crate::value_tree::Node,
        paginate: Option<&muster_core::resource::workflow::Paginate>,
        scope: &Scope,
        suffix: &str,
    ) -> Fragment {
        if let Some(tree) = &self.context.tree
            && let Err(reason) = tree.take_step()
        {
            return Fragment::halted(Halt::Engine(reason));
        }
        let args = match self.within_budget(|| args.render(&scope.roots(), LeafMode::Arguments)) {
            Ok(a) => a,
            Err(e) => {
                return Fragment::halted(Halt::Engine(self.explain_budget(format!(
                    "failed to resolve arguments for step {}: failed to render arguments for argument '{}': {}",
                    step.id, e.path, e.error
                ))));
            }
        };
        let stored_as = format!("{}{suffix}", step.id);
        let started = match self
            .recorder
            .start(&step.id, &stored_as, Some(tool), args.clone())
            .await
        {
            Ok(s) => s,
            Err(e) => return Fragment::halted(Halt::Engine(e)),
        };
        let outcome = match paginate {
            Some(p) => self.call_paginated(tool, args, p).await,
            None => self.call_tool(tool, args).await.and_then(|o| {
                if o.is_error {
                    Err(o
                        .text
                        .unwrap_or_else(|| "tool returned an error".to_owned()))
                } else {
                    Ok(o.value)
                }
            }),
        };
        let outcome = match (outcome, &step.jq) {
            (Ok(value), Some(q)) => self.run_jq(q, value, scope).await,
            (outcome, _) => outcome.map_err(|e| self.bounded(e)),
        };
        let recorded = self
            .recorder
            .end(
                &started,
                outcome.as_ref().map_err(String::as_str),
                step.allow_failure,
            )
            .await;
        if let Err(e) = recorded {
            return Fragment::halted(Halt::Engine(e));
        }
        self.report_progress(&step.id, outcome.is_ok());
        let mut entry = Entry {
            id: step.id.clone(),
            tool: tool.to_owned(),
            status: StepStatus::Completed,
            condition: None,
            allow_failure: step.allow_failure,
            result: None,
            output: step.output,
            error: None,
        };
        match outcome {
            Ok(value) => {
                entry.result = Some(value.clone());
                Fragment {
                    results: vec![(step.id.clone(), value)],
                    entries: vec![entry],
                    ..Fragment::default()
                }
            }
            Err(error) => {
                entry.status = StepStatus::Failed;
                let halt = (!step.allow_failure).then(|| {
                    entry.error = Some(error.clone());
                    Halt::Step {
                        id: step.id.clone(),
                        error: error.clone(),
                    }
                });
                Fragment {
                    results: vec![(step.id.clone(), failure_result(&error))],
                    entries: vec![entry],
                    halt,
                    failed: true,
                }
            }
        }
    }

    async fn run_parallel(
        &self,
        step: &PlannedStep,
        group: &[PlannedStep],
        scope: &Scope,
        suffix: &str,
    ) -> Fragment {
        // Every sub-step sees the results as they were before the group.
        let runs = group.iter().map(|sub| self.run_step(sub, scope, suffix));
        let fragments = futures_util::future::join_all(runs).await;
        let mut all = Fragment::default();
        for fragment in fragments {
            all.absorb(fragment);
        }
        if let Some(Halt::Step { .. }) = &all.halt
            && step.allow_failure
        {
            all.halt = None;
        }
        all
    }

    fn report_progress(&self, step_id: &str, ok: bool) {
        if let Some(sink) = &self.context.progress {
            let status = StepStatus::finished(!ok).as_str();
            let finished = self
                .finished_steps
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            sink.report(muster_core::tool::ProgressUpdate {
                progress: finished as f64,
                total: None,
                message: Some(format!("step {step_id} {status}")),
            });
        }
    }
}

/// Reads a tool result the way the original does.
pub(crate) fn outcome_of(result: CallToolResult) -> ToolOutcome {
    let text = result
        .content
        .iter()
        .find_map(|c| c.as_text())
        .map(|t| t.text.clone());
    let value = match (&text, result.structured_content) {
        (Some(t), _) => serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.clone())),
        (None, Some(structured)) => structured,
        (None, None) => Value::Null,
    };
    ToolOutcome {
        value,
        is_error: result.is_error.unwrap_or(false),
        text,
    }
}
