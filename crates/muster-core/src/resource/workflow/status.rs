//! The observed state of a Workflow.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::Condition;

/// `status` of a Workflow, written by the Workflow reconciler.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowStatus {
    /// Whether the spec passes structural validation.
    #[serde(default)]
    pub valid: bool,
    /// Every validation error message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_errors: Vec<String>,
    /// Tools mentioned in steps (informational).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referenced_tools: Vec<String>,
    /// Number of steps.
    #[serde(default)]
    pub step_count: u32,
    /// Standard conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
