//! The API shape of an execution record: snake_case keys with the id inside, as returned by
//! `core_workflow_execution_get` and stored in filesystem mode.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ExecutionId, ExecutionRecord, ExecutionStatus, StepRecord, StepStatus};

/// An execution record in the API's snake_case shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiExecutionRecord {
    /// The execution id.
    pub execution_id: ExecutionId,
    /// The workflow.
    pub workflow_name: String,
    /// `inprogress`, `completed` or `failed`.
    pub status: ExecutionStatus,
    /// When the run began.
    pub started_at: DateTime<Utc>,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
    /// Duration in milliseconds.
    #[serde(default)]
    pub duration_ms: i64,
    /// The arguments.
    #[serde(default)]
    pub input: Value,
    /// The final result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error of a failed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per-step records.
    #[serde(default)]
    pub steps: Vec<ApiStepRecord>,
    /// Whether payloads were truncated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A step record in the API's snake_case shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiStepRecord {
    /// The step id.
    pub step_id: String,
    /// The tool called.
    #[serde(default)]
    pub tool: String,
    /// The step's status.
    pub status: StepStatus,
    /// When it began.
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
    /// The result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The key the result is stored under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_as: Option<String>,
}

impl ApiExecutionRecord {
    /// The API form of `record` stored under `id`.
    pub fn new(id: &ExecutionId, record: &ExecutionRecord) -> Self {
        Self {
            execution_id: id.clone(),
            workflow_name: record.workflow_name.clone(),
            status: record.status,
            started_at: record.started_at,
            completed_at: record.completed_at,
            duration_ms: record.duration_ms,
            input: record.input.clone(),
            result: record.result.clone(),
            error: record.error.clone(),
            steps: record.steps.iter().map(ApiStepRecord::from).collect(),
            truncated: record.truncated,
        }
    }

    /// The id and the record.
    pub fn into_record(self) -> (ExecutionId, ExecutionRecord) {
        let record = ExecutionRecord {
            workflow_name: self.workflow_name,
            status: self.status,
            started_at: self.started_at,
            completed_at: self.completed_at,
            duration_ms: self.duration_ms,
            input: self.input,
            result: self.result,
            error: self.error,
            truncated: self.truncated,
            steps: self.steps.into_iter().map(StepRecord::from).collect(),
        };
        (self.execution_id, record)
    }
}

impl From<&StepRecord> for ApiStepRecord {
    fn from(s: &StepRecord) -> Self {
        Self {
            step_id: s.step_id.clone(),
            tool: s.tool.clone().unwrap_or_default(),
            status: s.status,
            started_at: s.started_at,
            completed_at: s.completed_at,
            duration_ms: s.duration_ms,
            input: s.input.clone(),
            result: s.result.clone(),
            error: s.error.clone(),
            stored_as: s.stored_as.clone(),
        }
    }
}

impl From<ApiStepRecord> for StepRecord {
    fn from(s: ApiStepRecord) -> Self {
        Self {
            step_id: s.step_id,
            tool: Some(s.tool).filter(|t| !t.is_empty()),
            status: s.status,
            started_at: s.started_at,
            completed_at: s.completed_at,
            duration_ms: s.duration_ms,
            input: s.input,
            result: s.result,
            error: s.error,
            stored_as: s.stored_as,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn snake_case_round_trip() {
        let id = ExecutionId::new_v4();
        let mut rec = ExecutionRecord::started("wf", json!({"a": 1}), Utc::now());
        rec.upsert_step(StepRecord {
            step_id: "s".into(),
            tool: Some("x_t".into()),
            status: StepStatus::Completed,
            started_at: Utc::now(),
            completed_at: Some(Utc::now()),
            duration_ms: 3,
            input: json!({}),
            result: Some(json!({"ok": true})),
            error: None,
            stored_as: Some("s".into()),
        });
        let api = ApiExecutionRecord::new(&id, &rec);
        let json = serde_json::to_value(&api).unwrap();
        assert_eq!(json["execution_id"], id.as_str());
        assert_eq!(json["steps"][0]["step_id"], "s");
        assert_eq!(json["workflow_name"], "wf");
        let back: ApiExecutionRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back.into_record(), (id, rec));
    }
}
