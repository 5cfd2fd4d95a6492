//! The `limits` section of `config.yaml`: every bound on the work one caller can cause.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::text::DEFAULT_MAX_MESSAGE_BYTES;
use crate::tool::TreeLimits;

/// `limits`: bounds on workflows, the event log and backend results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct LimitsConfig {
    /// Workflow runs.
    pub workflows: WorkflowLimits,
    /// The event log files (filesystem mode).
    pub events: EventLimits,
    /// Results of MCP server backends.
    pub backends: BackendLimits,
}

impl LimitsConfig {
    /// Every setting out of its range, as `limits.<path>: <rule>`.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut at_least = |path: &str, value: u64, min: u64| {
            if value < min {
                out.push(format!(
                    "limits.{path}: must be at least {min}, got {value}"
                ));
            }
        };
        let w = &self.workflows;
        at_least("workflows.maxDepth", u64::from(w.max_depth), 1);
        at_least("workflows.maxRunsPerTree", w.max_runs_per_tree, 1);
        at_least("workflows.maxStepsPerTree", w.max_steps_per_tree, 1);
        at_least("workflows.evaluationTimeoutMs", w.evaluation_timeout_ms, 1);
        at_least(
            "workflows.maxEvaluationsInFlight",
            u64::from(w.max_evaluations_in_flight),
            1,
        );
        at_least("workflows.maxMessageBytes", w.max_message_bytes as u64, 256);
        at_least("events.maxFileBytes", self.events.max_file_bytes, 4096);
        at_least("events.maxFiles", u64::from(self.events.max_files), 1);
        at_least(
            "events.maxMessageBytes",
            self.events.max_message_bytes as u64,
            256,
        );
        at_least(
            "backends.maxResultBytes",
            self.backends.max_result_bytes as u64,
            1024,
        );
        out
    }
}

/// `limits.workflows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkflowLimits {
    /// How deeply workflows may call workflows (default 16).
    pub max_depth: u32,
    /// The most workflow runs one call from a client may cause, nested runs included
    /// (default 1000). The run over the bound stops the whole tree.
    pub max_runs_per_tree: u64,
    /// The most tool steps one call from a client may cause across every nested run
    /// (default 10000).
    pub max_steps_per_tree: u64,
    /// The time budget of one jq program or template evaluation, in milliseconds
    /// (default 10000). A step over it fails naming the step and the budget.
    pub evaluation_timeout_ms: u64,
    /// How many jq evaluations may run at once, runaway ones included (default 4).
    pub max_evaluations_in_flight: u32,
    /// The most bytes of one error or event message of a workflow run (default 8192).
    pub max_message_bytes: usize,
}

impl WorkflowLimits {
    /// The bounds of one call tree.
    pub fn tree(&self) -> TreeLimits {
        TreeLimits {
            max_runs: self.max_runs_per_tree,
            max_steps: self.max_steps_per_tree,
        }
    }

    /// The evaluation budget.
    pub fn evaluation_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.evaluation_timeout_ms)
    }
}

impl Default for WorkflowLimits {
    fn default() -> Self {
        Self {
            max_depth: 16,
            max_runs_per_tree: TreeLimits::DEFAULT_MAX_RUNS,
            max_steps_per_tree: TreeLimits::DEFAULT_MAX_STEPS,
            evaluation_timeout_ms: 10_000,
            max_evaluations_in_flight: 4,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// `limits.events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct EventLimits {
    /// Size at which the current event file is rotated, in bytes (default 32 MiB).
    pub max_file_bytes: u64,
    /// The most event files kept, rotated ones included (default 16); the oldest go first.
    pub max_files: u32,
    /// The longest event message written, in bytes (default 8192); longer ones are cut.
    pub max_message_bytes: usize,
}

impl Default for EventLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 32 * 1024 * 1024,
            max_files: 16,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// `limits.backends`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct BackendLimits {
    /// The largest message (one JSON-RPC line or body) a backend may send, in bytes
    /// (default 16 MiB). A larger result fails the call at once with an error saying so.
    pub max_result_bytes: usize,
}

impl Default for BackendLimits {
    fn default() -> Self {
        Self {
            max_result_bytes: 16 * 1024 * 1024,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ranges() {
        let limits: LimitsConfig = serde_json::from_value(serde_json::json!({
            "workflows": { "maxRunsPerTree": 5, "maxEvaluationsInFlight": 0 },
            "events": { "maxFiles": 3 }
        }))
        .unwrap();
        assert_eq!(limits.workflows.max_runs_per_tree, 5);
        assert_eq!(limits.workflows.max_depth, 16);
        assert_eq!(limits.events.max_files, 3);
        assert_eq!(limits.backends.max_result_bytes, 16 * 1024 * 1024);
        assert_eq!(
            limits.problems(),
            ["limits.workflows.maxEvaluationsInFlight: must be at least 1, got 0"]
        );
        assert!(LimitsConfig::default().problems().is_empty());
    }
}
