//! The workflow engine's Prometheus metrics: executions and steps by status, with their
//! durations.
//!
//! [`WorkflowMetrics::register`] adds the families to an application's
//! [`prometheus_client::registry::Registry`];
//! [`EngineBuilder::metrics`](crate::EngineBuilder::metrics) makes the engine count its runs.
//! An engine without them counts nothing.
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `muster_workflow_executions_total` | counter | `workflow`, `status` (`completed`, `failed`) |
//! | `muster_workflow_execution_duration_seconds` | histogram | `workflow` |
//! | `muster_workflow_steps_total` | counter | `status` (`completed`, `failed`, `skipped`) |
//! | `muster_workflow_step_duration_seconds` | histogram | |
//!
//! `workflow` is the name of a defined workflow: bounded by the definitions, never by input.

use std::sync::Arc;
use std::time::Duration;

use muster_core::metrics::DurationHistogram;
use muster_core::resource::execution::StepStatus;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    workflow: String,
    status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkflowLabel {
    workflow: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    status: &'static str,
}

/// The engine's metric families. Cheap to clone; clones share the families.
#[derive(Debug, Clone)]
pub struct WorkflowMetrics {
    inner: Arc<Families>,
}

#[derive(Debug)]
struct Families {
    executions: Family<ExecutionLabels, Counter>,
    execution_duration: Family<WorkflowLabel, DurationHistogram>,
    /// Completed, failed, skipped: resolved once.
    steps: [Counter; 3],
    step_duration: DurationHistogram,
}

impl WorkflowMetrics {
    /// Registers the engine's families in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let executions = Family::<ExecutionLabels, Counter>::default();
        let execution_duration = Family::<WorkflowLabel, DurationHistogram>::default();
        let step_family = Family::<StepLabels, Counter>::default();
        let step_duration = DurationHistogram::default();
        registry.register(
            "muster_workflow_executions",
            "Workflow executions by workflow and final status",
            executions.clone(),
        );
        registry.register(
            "muster_workflow_execution_duration_seconds",
            "Duration of workflow executions by workflow",
            execution_duration.clone(),
        );
        registry.register(
            "muster_workflow_steps",
            "Workflow tool steps by final status",
            step_family.clone(),
        );
        registry.register(
            "muster_workflow_step_duration_seconds",
            "Duration of workflow tool steps",
            step_duration.clone(),
        );
        let steps = ["completed", "failed", "skipped"]
            .map(|status| step_family.get_or_create_owned(&StepLabels { status }));
        Self {
            inner: Arc::new(Families {
                executions,
                execution_duration,
                steps,
                step_duration,
            }),
        }
    }

    /// Counts an execution of `workflow` that ended after `elapsed`.
    pub(crate) fn execution(&self, workflow: &str, failed: bool, elapsed: Duration) {
        let status = if failed { "failed" } else { "completed" };
        self.inner
            .executions
            .get_or_create(&ExecutionLabels {
                workflow: workflow.to_owned(),
                status,
            })
            .inc();
        self.inner
            .execution_duration
            .get_or_create(&WorkflowLabel {
                workflow: workflow.to_owned(),
            })
            .observe(elapsed);
    }

    /// Counts a step that reached `status` after `elapsed` (skipped steps take no time).
    pub(crate) fn step(&self, status: StepStatus, elapsed: Duration) {
        let index = match status {
            StepStatus::Completed => 0,
            StepStatus::Failed => 1,
            StepStatus::Skipped => 2,
            StepStatus::Inprogress => return,
        };
        self.inner.steps[index].inc();
        if status != StepStatus::Skipped {
            self.inner.step_duration.observe(elapsed);
        }
    }
}
