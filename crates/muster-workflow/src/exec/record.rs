//! Writing step transitions to the execution store and events to the event sink.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use muster_core::event::message::Details;
use muster_core::event::{Event, EventSink};
use muster_core::resource::execution::{ExecutionId, StepRecord, StepStatus};
use muster_core::store::ExecutionStore;
use serde_json::Value;

use crate::metrics::WorkflowMetrics;

/// Records one run: its id, the store, the sink and the workflow's name.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    pub(crate) id: ExecutionId,
    pub(crate) store: Arc<dyn ExecutionStore>,
    pub(crate) events: Option<Arc<dyn EventSink>>,
    pub(crate) metrics: Option<WorkflowMetrics>,
    pub(crate) workflow: String,
    pub(crate) namespace: String,
    /// The most bytes of one event message or step error.
    pub(crate) max_message_bytes: usize,
    /// How many step records reached an end (completed, failed or skipped): the steps the
    /// execution record holds.
    pub(crate) finished: Arc<AtomicUsize>,
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
    /// Records an event of `reason` about the workflow, in the original's wording.
    pub(crate) fn event(&self, reason: &str, details: &Details) {
        if let Some(sink) = &self.events {
            let mut event =
                Event::about("Workflow", &self.workflow, &self.namespace, reason, details);
            if event.message.len() > self.max_message_bytes {
                event.message =
                    muster_core::text::truncate_message(&event.message, self.max_message_bytes)
                        .into_owned();
            }
            sink.record(event);
        }
    }

    /// How many steps of this run have a final record.
    pub(crate) fn finished_steps(&self) -> usize {
        self.finished.load(Ordering::Relaxed)
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
            &Details {
                tool: tool.map(str::to_owned),
                ..Details::step(step_id)
            },
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
                self.event("WorkflowStepCompleted", &Details::step(id));
            }
            Err(e) => {
                self.write(started, StepStatus::Failed, None, Some(e.to_owned()))
                    .await?;
                self.event(
                    "WorkflowStepFailed",
                    &Details {
                        error: Some(e.to_owned()),
                        allow_failure,
                        ..Details::step(id)
                    },
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
            &Details {
                result: Some(false),
                ..Details::step(step_id)
            },
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
            .map_err(|e| format!("failed to record step {}: {e}", s.step_id))?;
        if done {
            self.finished.fetch_add(1, Ordering::Relaxed);
            if let Some(metrics) = &self.metrics {
                let elapsed = (now - s.started_at).to_std().unwrap_or_default();
                metrics.step(status, elapsed);
            }
        }
        Ok(())
    }
}
