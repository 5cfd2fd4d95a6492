//! [`Engine`]: the workflow executor as a tower `Service<RunWorkflow>`.

use std::sync::Arc;
use std::task::{Context, Poll};

use chrono::Utc;
use futures_util::future::BoxFuture;
use muster_core::config::WorkflowLimits;
use muster_core::event::EventSink;
use muster_core::event::message::Details;
use muster_core::resource::execution::{ExecutionOutcome, ExecutionStatus, StepStatus};
use muster_core::store::{ExecutionStore, NewExecution};
use muster_core::text::truncate_message;
use muster_core::tool::{RunTree, ToolService};
use serde_json::{Map, Value, json};

use super::input;
use super::outcome::{Fragment, Halt};
use super::record::Recorder;
use super::request::{RunWorkflow, WorkflowError};
use super::response::WorkflowResponse;
use super::run::Runner;
use super::scope::Scope;
use super::spans::SPAN_TARGET;
use crate::budget::Evaluator;
use crate::metrics::WorkflowMetrics;
use crate::plan::{Plan, StepKind};
use crate::value_tree::LeafMode;
use tracing::Instrument as _;

/// How deeply workflows may call workflows (`workflow_a` → `workflow_b` → …).
pub const MAX_WORKFLOW_DEPTH: u32 = 16;

/// Runs workflows. Cheap to clone; clones share their collaborators.
///
/// Its collaborators are exactly a [`ToolService`] for effects and an [`ExecutionStore`] for
/// durability (plus an optional [`EventSink`]).
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tools: ToolService,
    store: Arc<dyn ExecutionStore>,
    events: Option<Arc<dyn EventSink>>,
    metrics: Option<WorkflowMetrics>,
    namespace: String,
    limits: WorkflowLimits,
    evaluator: Evaluator,
}

/// Builds an [`Engine`].
#[derive(Debug)]
#[must_use]
pub struct EngineBuilder {
    inner: Inner,
}

impl EngineBuilder {
    /// Events go to `sink` (default: none).
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.inner.events = Some(sink);
        self
    }

    /// Counts executions and steps in `metrics` (default: not counted).
    pub fn metrics(mut self, metrics: WorkflowMetrics) -> Self {
        self.inner.metrics = Some(metrics);
        self
    }

    /// The namespace events are recorded in (default `default`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.inner.namespace = namespace.into();
        self
    }

    /// How deeply workflows may nest (default [`MAX_WORKFLOW_DEPTH`]).
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.inner.limits.max_depth = depth;
        self
    }

    /// Every bound of a run: depth, runs and steps of a call tree, evaluation budget,
    /// message sizes (default [`WorkflowLimits::default`]). Starts the evaluation pool the
    /// limits ask for.
    pub fn limits(mut self, limits: WorkflowLimits) -> Self {
        self.inner.evaluator = Evaluator::new(
            limits.evaluation_timeout(),
            limits.max_evaluations_in_flight as usize,
        );
        self.inner.limits = limits;
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        Engine {
            inner: Arc::new(self.inner),
        }
    }
}

impl Engine {
    /// An engine calling tools through `tools` and recording runs in `store`.
    pub fn builder(tools: ToolService, store: Arc<dyn ExecutionStore>) -> EngineBuilder {
        EngineBuilder {
            inner: Inner {
                tools,
                store,
                events: None,
                metrics: None,
                namespace: muster_core::DEFAULT_NAMESPACE.to_owned(),
                limits: WorkflowLimits::default(),
                evaluator: shared_evaluator(),
            },
        }
    }

    /// Runs a workflow to its end and answers with its response document.
    ///
    /// Failures of steps, templates and inputs are answered with a failure document
    /// (`is_error`); only a run that cannot be recorded or nests too deeply is an `Err`.
    ///
    /// The run is a span of the `tracing` target `muster::otel` named `workflow <name>`, and
    /// each tool step a `step <id>` span inside it.
    pub async fn run(&self, req: RunWorkflow) -> Result<WorkflowResponse, WorkflowError> {
        let span = muster_core::call_span!(
            target: SPAN_TARGET,
            "workflow",
            otel.name = %format_args!("workflow {}", req.plan.name()),
            muster.workflow = req.plan.name(),
        );
        self.run_in_span(req).instrument(span).await
    }

    async fn run_in_span(&self, req: RunWorkflow) -> Result<WorkflowResponse, WorkflowError> {
        let inner = &self.inner;
        let mut context = req.context;
        let limit = inner.limits.max_depth;
        if context.workflow_depth >= limit {
            // Runaway recursion: stop the whole tree, so the root reports this plainly.
            if let Some(tree) = &context.tree {
                tree.stop(format!(
                    "workflow nesting depth limit ({limit}) exceeded (limits.workflows.maxDepth)"
                ));
            }
            return Err(WorkflowError::DepthExceeded { limit });
        }
        let root = match &context.tree {
            Some(tree) => {
                tree.enter_run()
                    .map_err(|reason| WorkflowError::TreeExceeded { reason })?;
                None
            }
            None => {
                // The root of a call tree: every nested run shares its budget and token.
                let token = context.cancellation.child_token();
                context.cancellation = token.clone();
                let tree = Arc::new(RunTree::new(inner.limits.tree(), token));
                context.tree = Some(Arc::clone(&tree));
                Some(tree)
            }
        };
        let plan = req.plan;
        let (validated, debug) = input::validate(&plan.args, req.arguments.clone());
        let recorded_input = match &validated {
            Ok(v) => v.clone(),
            Err(_) => Value::Object(req.arguments.clone().unwrap_or_default()),
        };
        let id = inner
            .store
            .begin(NewExecution::now(plan.name(), recorded_input))
            .await?;
        // Should this future be dropped before the end is recorded (its caller went away and
        // did not wait), the record is finished as cancelled all the same.
        let mut unfinished = FinishOnDrop {
            store: Arc::clone(&inner.store),
            id: Some(id.clone()),
        };
        let recorder = Recorder {
            id: id.clone(),
            store: Arc::clone(&inner.store),
            events: inner.events.clone(),
            metrics: inner.metrics.clone(),
            workflow: plan.name().to_owned(),
            namespace: inner.namespace.clone(),
            max_message_bytes: inner.limits.max_message_bytes,
            finished: Arc::default(),
        };
        recorder.event(
            "WorkflowExecutionStarted",
            &Details {
                execution_id: Some(id.to_string()),
                ..Details::default()
            },
        );
        let started = tokio::time::Instant::now();
        let input = match validated {
            Ok(input) => input,
            Err(e) => {
                let error = format!("input validation failed: {e}");
                unfinished.disarm();
                if let Some(metrics) = &inner.metrics {
                    metrics.execution(plan.name(), true, started.elapsed());
                }
                return self.fail_early(&recorder, error).await;
            }
        };
        let runner = Runner {
            tools: inner.tools.clone(),
            recorder: recorder.clone(),
            context,
            finished_steps: Default::default(),
            evaluator: inner.evaluator.clone(),
        };
        let mut scope = Scope::new(input);
        let mut run = runner.run_sequence(&plan.steps, &mut scope, "").await;
        let failed_step = match &run.halt {
            Some(Halt::Step { id, error }) => Some((id.clone(), error.clone())),
            _ => None,
        };
        let (document, error) = match run.halt.take() {
            Some(halt) => {
                let handlers = run_on_failure(&runner, &plan, &mut scope).await;
                run.entries.extend(handlers.entries);
                match halt {
                    Halt::Engine(e) => (json!({ "error": e }), Some(e)),
                    Halt::Step { .. } => {
                        let doc =
                            default_document(&plan, &scope, &run, debug, ExecutionStatus::Failed);
                        (doc, Some(halt.message()))
                    }
                }
            }
            None => runner.within_budget(|| finish_document(&plan, &scope, &run, debug)),
        };
        // A stopped tree reports why it stopped, not the cascade of failures it caused.
        let (document, error) = match root.as_ref().and_then(|t| t.stop_reason()) {
            Some(reason) => (json!({ "error": reason }), Some(reason.to_owned())),
            None => (document, error),
        };
        let max = inner.limits.max_message_bytes;
        let error = error.map(|e| truncate_message(&e, max).into_owned());
        let elapsed = started.elapsed();
        let is_error = error.is_some();
        let response = WorkflowResponse::new(id.clone(), document, is_error);
        let outcome = match &error {
            Some(e) => ExecutionOutcome::Failed(e.clone()),
            None => ExecutionOutcome::Completed(response.document.clone()),
        };
        unfinished.disarm();
        inner.store.finish(&id, outcome, Utc::now()).await?;
        if let Some(metrics) = &inner.metrics {
            metrics.execution(plan.name(), is_error, elapsed);
        }
        match (error, failed_step) {
            (Some(_), Some((step, error))) => recorder.event(
                "WorkflowExecutionFailed",
                &Details {
                    error: Some(error),
                    ..Details::step(step)
                },
            ),
            (Some(e), None) => recorder.event("WorkflowExecutionFailed", &Details::error(e)),
            (None, _) => recorder.event(
                "WorkflowExecutionCompleted",
                &Details {
                    steps: Some(recorder.finished_steps()),
                    duration: Some(elapsed),
                    ..Details::default()
                },
            ),
        }
        Ok(response)
    }

    async fn fail_early(
        &self,
        recorder: &Recorder,
        error: String,
    ) -> Result<WorkflowResponse, WorkflowError> {
        let error = truncate_message(&error, self.inner.limits.max_message_bytes).into_owned();
        let response = WorkflowResponse::new(recorder.id.clone(), json!({ "error": error }), true);
        self.inner
            .store
            .finish(
                &recorder.id,
                ExecutionOutcome::Failed(error.clone()),
                Utc::now(),
            )
            .await?;
        recorder.event("WorkflowExecutionFailed", &Details::error(error));
        Ok(response)
    }
}

impl tower::Service<RunWorkflow> for Engine {
    type Response = WorkflowResponse;
    type Error = WorkflowError;
    type Future = BoxFuture<'static, Result<WorkflowResponse, WorkflowError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: RunWorkflow) -> Self::Future {
        let engine = self.clone();
        Box::pin(async move { engine.run(req).await })
    }
}

/// Finishes a run's record as cancelled when the run's future is dropped before it recorded
/// its end.
struct FinishOnDrop {
    store: Arc<dyn ExecutionStore>,
    id: Option<muster_core::resource::execution::ExecutionId>,
}

impl FinishOnDrop {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::clone(&self.store);
        runtime.spawn(async move {
            let outcome = ExecutionOutcome::Failed(DROPPED_ERROR.to_owned());
            if let Err(e) = store.finish(&id, outcome, Utc::now()).await {
                tracing::warn!(execution_id = %id, error = %e, "cannot record a cancelled run");
            }
        });
    }
}

/// The error recorded for a run whose caller went away without waiting for its end.
pub(crate) const DROPPED_ERROR: &str =
    "workflow cancelled: the caller went away before the run ended";

/// The evaluation pool of engines built without [`EngineBuilder::limits`], shared by all of
/// them so building engines never starts threads.
fn shared_evaluator() -> Evaluator {
    static SHARED: std::sync::OnceLock<Evaluator> = std::sync::OnceLock::new();
    SHARED.get_or_init(Evaluator::default).clone()
}

/// Runs the `onFailure` handlers one after another, each as if it allowed failure.
async fn run_on_failure(runner: &Runner, plan: &Plan, scope: &mut Scope) -> Fragment {
    let mut all = Fragment::default();
    for handler in &plan.on_failure {
        let mut fragment = runner.run_step(handler, scope, "").await;
        scope.merge(&fragment.results);
        for entry in &mut fragment.entries {
            if entry.status == StepStatus::Failed {
                entry.allow_failure = true;
                entry.error = None;
            }
        }
        fragment.halt = None;
        all.absorb(fragment);
    }
    all
}

/// The document of a run whose steps all finished: the output template when there is one,
/// the default document otherwise. Returns the error text when the output template fails.
fn finish_document(
    plan: &Plan,
    scope: &Scope,
    run: &Fragment,
    debug: bool,
) -> (Value, Option<String>) {
    let Some(output) = &plan.output else {
        return (
            default_document(plan, scope, run, debug, ExecutionStatus::Completed),
            None,
        );
    };
    let rendered = output.render(&scope.roots(), LeafMode::Typed).map_err(|e| {
        let at = if e.path.is_empty() {
            "output".to_owned()
        } else {
            format!("output.{}", e.path)
        };
        format!("failed to render output template: {at}: {}", e.error)
    });
    match rendered {
        Ok(Value::Object(rendered)) if !debug => (Value::Object(rendered), None),
        Ok(rendered) if debug => {
            let mut doc = default_document(plan, scope, run, true, ExecutionStatus::Completed);
            if let Value::Object(m) = &mut doc {
                m.insert("output".into(), rendered);
            }
            (doc, None)
        }
        Ok(_) => output_failure(
            plan,
            scope,
            run,
            "output template must render to an object".to_owned(),
        ),
        Err(e) => output_failure(plan, scope, run, e),
    }
}

fn output_failure(
    plan: &Plan,
    scope: &Scope,
    run: &Fragment,
    error: String,
) -> (Value, Option<String>) {
    let mut doc = default_document(plan, scope, run, true, ExecutionStatus::Completed);
    if let Value::Object(m) = &mut doc {
        m.insert("output_error".into(), Value::String(error.clone()));
    }
    (doc, Some(error))
}

/// `{execution_id, input, status, steps[], template_vars, workflow}` plus, on success, the
/// keys of the last step's object result when that step's output flag is off.
fn default_document(
    plan: &Plan,
    scope: &Scope,
    run: &Fragment,
    debug: bool,
    status: ExecutionStatus,
) -> Value {
    let mut doc = Map::new();
    doc.insert("input".into(), scope.input().clone());
    doc.insert("status".into(), json!(status.as_str()));
    doc.insert(
        "steps".into(),
        Value::Array(run.entries.iter().map(|e| e.to_json(debug)).collect()),
    );
    doc.insert("template_vars".into(), json!(template_vars(plan)));
    doc.insert("workflow".into(), json!(plan.name()));
    if status == ExecutionStatus::Completed
        && let Some(last) = plan.steps.last()
        && matches!(last.kind, StepKind::Tool { .. })
        && !last.output
        && let Some(Value::Object(result)) = scope.result(&last.id)
        && run
            .entries
            .iter()
            .rev()
            .find(|e| e.id == last.id)
            .is_some_and(|e| e.status == StepStatus::Completed)
    {
        for (k, v) in result {
            if k != "execution_id" {
                doc.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(doc)
}

fn template_vars(plan: &Plan) -> Vec<String> {
    fn walk(steps: &[crate::plan::PlannedStep], out: &mut Vec<String>) {
        for step in steps {
            match &step.kind {
                StepKind::Tool { args, .. } => args.input_references(out),
                StepKind::ForEach { body, .. } => walk(body, out),
                StepKind::Parallel(group) => walk(group, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(&plan.steps, &mut out);
    out
}
