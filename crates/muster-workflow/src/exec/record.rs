//! Writing step transitions to the execution store and events to the event sink.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use muster_core::event::{Event, EventSink, EventType};
use muster_core::resource::execution::{ExecutionId, StepRecord, StepStatus};
use muster_core::store::ExecutionStore;
use serde_json::Value;

/// Records one run: its id, the store, the sink and the workflow's name.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    pub(crate) id: ExecutionId,
    pub(crate) store: Arc<dyn ExecutionStore>,
    pub(crate) events: Option<Arc<dyn EventSink>>,
    pub(crate) workflow: String,
    pub(crate) namespace: String,
    /// The most bytes of one event message or step error.
    pub(crate) max_message_bytes: usize,
}

/// A step that has started.
#[derive(Debug)]
pub(crate) struct StartedStep {
    pub(crate) step_id: String,
    pub(crate) stored_as: String,
    pub(crate) tool: Option<String>,
    pub(crate) input: Value,
    pub(crate) started_at: DateTime<Utc>,
}

impl Recorder {
    pub(crate) fn event(&self, reason: &str, warning: bool, message: String) {
        if let Some(sink) = &self.events {
            let type_ = if warning {
                EventType::Warning
            } else {
                EventType::Normal
            };
            sink.record(Event::new(
                "Workflow",
                &self.workflow,
                &self.namespace,
                reason,
                type_,
                muster_core::text::truncate_message(&message, self.max_message_bytes),
            ));
        }
    }

    /// Records the start of a step before it runs.
    pub(crate) async fn start(
        &self,
        step_id: &str,
        stored_as: &str,
        tool: Option<&str>,
        input: Value,
    ) -> Result<StartedStep, String> {
        let started = StartedStep {
            step_id: step_id.to_owned(),
            stored_as: stored_as.to_owned(),
            tool: tool.map(str::to_owned),
            input,
            started_at: Utc::now(),
        };
        self.write(&started, StepStatus::Inprogress, None, None)
            .await?;
        self.event(
            "WorkflowStepStarted",
            false,
            format!("Workflow {} step {step_id} started", self.workflow),
        );
        Ok(started)
    }

    /// Records how a started step ended.
    pub(crate) async fn end(
        &self,
        started: &StartedStep,
        result: Result<&Value, &str>,
        allow_failure: bool,
    ) -> Result<(), String> {
        let id = &started.step_id;
        match result {
            Ok(v) => {
                self.write(started, StepStatus::Completed, Some(v.clone()), None)
                    .await?;
                self.event(
                    "WorkflowStepCompleted",
                    false,
                    format!("Workflow {} step {id} completed", self.workflow),
                );
            }
            Err(e) => {
                self.write(started, StepStatus::Failed, None, Some(e.to_owned()))
                    .await?;
                let tail = if allow_failure {
                    " (allow_failure=true, continuing)"
                } else {
                    ""
                };
                self.event(
                    "WorkflowStepFailed",
                    true,
                    format!("Workflow {} step {id} failed{tail}: {e}", self.workflow),
                );
            }
        }
        Ok(())
    }

    /// Records a step skipped by its condition.
    pub(crate) async fn skipped(
        &self,
        step_id: &str,
        stored_as: &str,
        tool: Option<&str>,
    ) -> Result<(), String> {
        let started = StartedStep {
            step_id: step_id.to_owned(),
            stored_as: stored_as.to_owned(),
            tool: tool.map(str::to_owned),
            input: Value::Object(serde_json::Map::new()),
            started_at: Utc::now(),
        };
        self.write(&started, StepStatus::Skipped, None, None)
            .await?;
        self.event(
            "WorkflowStepSkipped",
            false,
            format!(
                "Workflow {} step {step_id} skipped: condition not met",
                self.workflow
            ),
        );
        Ok(())
    }

    async fn write(
        &self,
        s: &StartedStep,
        status: StepStatus,
        result: Option<Value>,
        error: Option<String>,
    ) -> Result<(), String> {
        let now = Utc::now();
        let done = status != StepStatus::Inprogress;
        let record = StepRecord {
            step_id: s.step_id.clone(),
            tool: s.tool.clone(),
            status,
            started_at: s.started_at,
            completed_at: done.then_some(now),
            duration_ms: if done {
                (now - s.started_at).num_milliseconds().max(0)
            } else {
                0
            },
            input: s.input.clone(),
            result,
            error: error.map(|e| {
                muster_core::text::truncate_message(&e, self.max_message_bytes).into_owned()
            }),
            stored_as: Some(s.stored_as.clone()),
        };
        self.store
            .record_step(&self.id, record)
            .await
            .map_err(|e| format!("failed to record step {}: {e}", s.step_id))
    }
}
