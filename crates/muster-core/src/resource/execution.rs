//! The `WorkflowExecution` kind: the durable, append-only record of one workflow run.

mod api;
mod retention;
mod size_guard;

use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use api::{ApiExecutionRecord, ApiStepRecord};
pub use retention::RetentionPolicy;
pub use size_guard::{MAX_RECORD_BYTES, TRUNCATION_MARKER};

use super::Kind;

/// Label holding the workflow name of an execution record.
pub const WORKFLOW_LABEL: &str = "muster.giantswarm.io/workflow";
/// Label holding the status of an execution record.
pub const STATUS_LABEL: &str = "muster.giantswarm.io/status";

/// The `WorkflowExecution` kind marker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkflowExecution;

impl Kind for WorkflowExecution {
    const KIND: &'static str = "WorkflowExecution";
    const PLURAL: &'static str = "workflowexecutions";
    type Spec = ExecutionRecord;
    type Status = NoStatus;
}

/// The status of a kind that has none (execution records are history, not reconciled).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoStatus {}

/// The identifier of an execution: a UUID, also the record's `metadata.name`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct ExecutionId(String);

impl ExecutionId {
    /// A fresh random (v4) UUID.
    pub fn new_v4() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }

    /// Wraps an existing id.
    pub fn from_string(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Status of an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionStatus {
    /// Still running (or its process died; see the stores' recovery).
    Inprogress,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
}

impl ExecutionStatus {
    /// Every status.
    pub const ALL: [Self; 3] = [Self::Inprogress, Self::Completed, Self::Failed];

    /// The spelling on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Inprogress => "inprogress",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    /// Parses the spelling on the wire.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "inprogress" => Some(Self::Inprogress),
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// Status of one step of an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// Running.
    Inprogress,
    /// Finished successfully.
    Completed,
    /// Failed.
    Failed,
    /// Not run because its condition did not hold.
    Skipped,
}

impl StepStatus {
    /// Every status.
    pub const ALL: [Self; 4] = [
        Self::Inprogress,
        Self::Completed,
        Self::Failed,
        Self::Skipped,
    ];

    /// The spelling on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Inprogress => "inprogress",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// [`StepStatus::Failed`] when `failed`, else [`StepStatus::Completed`].
    pub const fn finished(failed: bool) -> Self {
        if failed {
            Self::Failed
        } else {
            Self::Completed
        }
    }
}

/// `spec` of a WorkflowExecution: the record of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionRecord {
    /// Name of the workflow that ran.
    pub workflow_name: String,
    /// `inprogress`, `completed` or `failed`.
    pub status: ExecutionStatus,
    /// When the run began.
    pub started_at: DateTime<Utc>,
    /// When it finished; unset while in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
    /// Total duration in milliseconds.
    #[serde(default)]
    pub duration_ms: i64,
    /// The arguments the workflow was called with.
    #[serde(default)]
    pub input: Value,
    /// The final result; unset on failure or while in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, set only on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// True when oversized payloads were replaced by a truncation marker.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Per-step records, in the order the steps started.
    #[serde(default)]
    pub steps: Vec<StepRecord>,
}

impl ExecutionRecord {
    /// A record of a run that has just started.
    pub fn started(workflow_name: impl Into<String>, input: Value, at: DateTime<Utc>) -> Self {
        Self {
            workflow_name: workflow_name.into(),
            status: ExecutionStatus::Inprogress,
            started_at: at,
            completed_at: None,
            duration_ms: 0,
            input,
            result: None,
            error: None,
            truncated: false,
            steps: Vec::new(),
        }
    }

    /// Inserts or replaces a step record. A record with the same `step_id` and `stored_as`
    /// replaces the earlier one (a transition such as inprogress → completed); any other is
    /// appended.
    pub fn upsert_step(&mut self, step: StepRecord) {
        // Transitions update recent records, so search from the end.
        match self
            .steps
            .iter_mut()
            .rev()
            .find(|s| s.step_id == step.step_id && s.stored_as == step.stored_as)
        {
            Some(existing) => *existing = step,
            None => self.steps.push(step),
        }
    }

    /// Marks the run finished at `at` with `outcome`.
    pub fn finish(&mut self, outcome: ExecutionOutcome, at: DateTime<Utc>) {
        self.completed_at = Some(at);
        self.duration_ms = (at - self.started_at).num_milliseconds().max(0);
        match outcome {
            ExecutionOutcome::Completed(result) => {
                self.status = ExecutionStatus::Completed;
                self.result = Some(result);
                self.error = None;
            }
            ExecutionOutcome::Failed(error) => {
                self.status = ExecutionStatus::Failed;
                self.result = None;
                self.error = Some(error);
            }
        }
    }

    /// The short form listed by `core_workflow_execution_list`.
    pub fn summary(&self, id: &ExecutionId) -> ExecutionSummary {
        ExecutionSummary {
            id: id.clone(),
            workflow_name: self.workflow_name.clone(),
            status: self.status,
            started_at: self.started_at,
            completed_at: self.completed_at,
            duration_ms: self.duration_ms,
            step_count: self.steps.len(),
            error: self.error.clone(),
        }
    }

    /// Replaces the payloads of `step` that exceed the per-payload limit (an eighth of
    /// [`MAX_RECORD_BYTES`]) by the truncation marker; returns whether it did. Stores use it
    /// to keep a record that is over the limit from growing by large payloads without
    /// re-measuring the whole record on every step.
    pub fn shrink_step_payloads(step: &mut StepRecord) -> bool {
        size_guard::shrink_step(step)
    }

    /// The length of the record's compact JSON, measured without building it.
    pub fn json_size(&self) -> usize {
        size_guard::json_len(self)
    }

    /// Keeps the whole record within [`MAX_RECORD_BYTES`]: payloads over an eighth of it are
    /// replaced by [`TRUNCATION_MARKER`]; when that is not enough, smaller payloads are
    /// replaced and long errors cut, then the oldest finished step records are dropped; and
    /// `truncated` is set. Returns whether anything was truncated.
    pub fn enforce_size_limit(&mut self) -> bool {
        size_guard::enforce(self)
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutionOutcome {
    /// It completed with this result.
    Completed(Value),
    /// It failed with this error.
    Failed(String),
}

/// The record of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    /// The step id.
    pub step_id: String,
    /// The tool called, when the step calls one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `inprogress`, `completed`, `failed` or `skipped`.
    pub status: StepStatus,
    /// When the step began.
    pub started_at: DateTime<Utc>,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
    /// Duration in milliseconds.
    #[serde(default)]
    pub duration_ms: i64,
    /// The resolved arguments.
    #[serde(default)]
    pub input: Value,
    /// The (reshaped) result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error of a failed step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The key the result is referenceable under in `.results`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_as: Option<String>,
}

/// One line of an execution listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionSummary {
    /// The execution id.
    pub id: ExecutionId,
    /// The workflow.
    pub workflow_name: String,
    /// Its status.
    pub status: ExecutionStatus,
    /// When it began.
    pub started_at: DateTime<Utc>,
    /// When it finished.
    pub completed_at: Option<DateTime<Utc>>,
    /// Duration in milliseconds.
    pub duration_ms: i64,
    /// Number of step records.
    pub step_count: usize,
    /// The error of a failed run.
    pub error: Option<String>,
}
