//! `Reconcile<Workflow>`: validates a workflow and writes `valid`, `validationErrors`,
//! `referencedTools` and `stepCount` into its status.

use muster_core::event::message::Details;
use std::sync::Arc;

use async_trait::async_trait;
use muster_core::reconcile::{Action, Reconcile, ReconcileError};
use muster_core::resource::workflow::WorkflowStatus;
use muster_core::resource::{Condition, ConditionStatus, Object, Workflow};
use muster_core::store::ResourceStore;
use muster_core::{Event, EventSink};

use crate::Plan;

/// The Workflow reconciler. Idempotent: the status is written only when it changes.
#[derive(Debug, Clone)]
pub struct WorkflowReconciler {
    store: Arc<dyn ResourceStore<Workflow>>,
    events: Option<Arc<dyn EventSink>>,
}

impl WorkflowReconciler {
    /// A reconciler writing statuses through `store`.
    pub fn new(store: Arc<dyn ResourceStore<Workflow>>) -> Self {
        Self {
            store,
            events: None,
        }
    }

    /// Records `WorkflowValidationSucceeded`/`Failed` events in `sink`.
    #[must_use]
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }
}

/// The status of a workflow: structural validation plus compiled templates and jq programs.
pub fn workflow_status(wf: &Object<Workflow>) -> WorkflowStatus {
    let mut status = wf.spec.computed_status();
    if let Err(errors) = Plan::compile(wf.name(), &wf.spec) {
        status.valid = false;
        status.validation_errors = errors.messages();
    }
    let (condition_status, reason, message) = if status.valid {
        (
            ConditionStatus::True,
            "Valid",
            "The workflow passes validation".to_owned(),
        )
    } else {
        (
            ConditionStatus::False,
            "Invalid",
            status.validation_errors.join("; "),
        )
    };
    let last_transition_time = wf
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .filter(|c| c.status == condition_status)
        .and_then(|c| c.last_transition_time)
        .or_else(|| Some(chrono::Utc::now()));
    status.conditions = vec![Condition {
        type_: "Ready".to_owned(),
        status: condition_status,
        reason: reason.to_owned(),
        message,
        last_transition_time,
        observed_generation: wf.metadata.generation,
    }];
    status
}

#[async_trait]
impl Reconcile<Workflow> for WorkflowReconciler {
    async fn apply(&self, wf: Arc<Object<Workflow>>) -> Result<Action, ReconcileError> {
        let status = workflow_status(&wf);
        if wf.status.as_ref() == Some(&status) {
            return Ok(Action::await_change());
        }
        if let Some(sink) = &self.events {
            let (reason, details) = if status.valid {
                ("WorkflowValidationSucceeded", Details::default())
            } else {
                (
                    "WorkflowValidationFailed",
                    Details::error(status.validation_errors.join("; ")),
                )
            };
            sink.record(Event::about(
                "Workflow",
                wf.name(),
                wf.metadata.namespace_or_default(),
                reason,
                &details,
            ));
        }
        self.store.set_status(&wf.key(), status).await?;
        Ok(Action::await_change())
    }

    async fn cleanup(&self, _: Arc<Object<Workflow>>) -> Result<Action, ReconcileError> {
        Ok(Action::await_change())
    }
}
