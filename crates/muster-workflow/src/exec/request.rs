//! What a run is asked for ([`RunWorkflow`]) and why it may produce no document at all
//! ([`WorkflowError`]).

use std::sync::Arc;

use muster_core::tool::CallContext;
use rmcp::model::JsonObject;

use crate::plan::Plan;

/// A request to run one workflow.
#[derive(Debug, Clone)]
pub struct RunWorkflow {
    /// The compiled workflow.
    pub plan: Arc<Plan>,
    /// The caller's arguments (`None` for none).
    pub arguments: Option<JsonObject>,
    /// Session, caller, progress and cancellation of the call that started the run.
    pub context: CallContext,
}

impl RunWorkflow {
    /// A run of `plan` with `arguments` in an anonymous context.
    pub fn new(plan: Arc<Plan>, arguments: Option<JsonObject>) -> Self {
        Self {
            plan,
            arguments,
            context: CallContext::anonymous(),
        }
    }
}

/// Why a run could not even produce a response document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The execution record could not be written; nothing ran, or the end was not recorded.
    #[error("failed to record workflow execution: {0}")]
    Store(#[from] muster_core::StoreError),
    /// The run would nest workflows deeper than the limit.
    #[error("workflow nesting depth limit ({limit}) exceeded")]
    DepthExceeded {
        /// The limit.
        limit: u32,
    },
    /// The run would take its call tree over one of its bounds (runs or steps); the tree is
    /// stopped.
    #[error("{reason}")]
    TreeExceeded {
        /// Which bound, in words.
        reason: String,
    },
}
