//! The one-line messages of events, rendered from the original muster's templates so that
//! clients matching their texts keep working.
//!
//! Each reason has a fixed template; the optional parts (`[: <error>]`, `[ (<N> steps)]`, …)
//! appear only when the detail is set. An unknown reason renders `Event: <Reason> for
//! <ns>/<name>`.
//!
//! ```
//! use muster_core::event::message::{Details, render};
//!
//! let text = render("MCPServerFailed", "git", "default", &Details::error("spawn failed"));
//! assert_eq!(text, "MCPServer git operation failed: spawn failed");
//! let text = render("WorkflowStepFailed", "deploy", "default", &Details {
//!     step: Some("apply".into()),
//!     allow_failure: true,
//!     ..Details::default()
//! });
//! assert_eq!(text, "Workflow deploy step apply failed (allow_failure=true, continuing)");
//! ```

use std::time::Duration;

/// The facts a message may carry; unset ones leave their part of the template out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    /// The error, rendered as a `: <error>` tail.
    pub error: Option<String>,
    /// The step id of step events and of a failed execution.
    pub step: Option<String>,
    /// The tool a step calls.
    pub tool: Option<String>,
    /// How many steps a workflow has or an execution ran.
    pub steps: Option<usize>,
    /// How long an execution took.
    pub duration: Option<Duration>,
    /// The execution id.
    pub execution_id: Option<String>,
    /// A condition's result.
    pub result: Option<bool>,
    /// Tools a workflow needs that are missing.
    pub missing_tools: Vec<String>,
    /// A failed step that allows failure, so the run continues.
    pub allow_failure: bool,
}

impl Details {
    /// Details carrying only an error.
    pub fn error(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::default()
        }
    }

    /// Details carrying only a step id.
    pub fn step(step: impl Into<String>) -> Self {
        Self {
            step: Some(step.into()),
            ..Self::default()
        }
    }
}

/// The message of an event of `reason` about the resource `name` in `namespace`.
pub fn render(reason: &str, name: &str, namespace: &str, d: &Details) -> String {
    let error = d
        .error
        .as_deref()
        .filter(|e| !e.is_empty())
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    let step = d.step.as_deref().unwrap_or_default();
    let server = |what: &str| format!("MCPServer {name} {what}");
    let workflow = |what: &str| format!("Workflow {name} {what}");
    match reason {
        "MCPServerCreated" => server(&format!("successfully created in namespace {namespace}")),
        "MCPServerUpdated" => server(&format!("successfully updated in namespace {namespace}")),
        "MCPServerDeleted" => server(&format!("successfully deleted from namespace {namespace}")),
        "MCPServerStarting" => server("service is starting up"),
        "MCPServerStarted" => server("service started successfully"),
        "MCPServerStopped" => server("service stopped successfully"),
        "MCPServerRestarting" => server("service is restarting"),
        "MCPServerFailed" => server(&format!("operation failed{error}")),
        "MCPServerToolsDiscovered" => server("tools discovered and registered successfully"),
        "MCPServerToolsUnavailable" => server(&format!("tools became unavailable{error}")),
        "MCPServerHealthCheckFailed" => server(&format!("health check failed{error}")),
        "MCPServerRecoveryStarted" => server("automatic recovery process started"),
        "MCPServerRecoverySucceeded" => server("automatic recovery completed successfully"),
        "MCPServerRecoveryFailed" => server(&format!("automatic recovery failed{error}")),
        "MCPServerAuthRequired" => server("requires OAuth authentication to connect"),
        "MCPServerTokenForwarded" => {
            format!("MCPServer {name}: ID token successfully forwarded for SSO authentication")
        }
        "MCPServerTokenForwardingFailed" => {
            format!("MCPServer {name}: ID token forwarding failed{error}")
        }
        "MCPServerTokenExchanged" => format!(
            "MCPServer {name}: Token successfully exchanged via RFC 8693 for cross-cluster SSO"
        ),
        "MCPServerTokenExchangeFailed" => {
            format!("MCPServer {name}: RFC 8693 token exchange failed{error}")
        }
        "WorkflowCreated" => workflow(&format!("successfully created{}", with_steps(d))),
        "WorkflowUpdated" => workflow(&format!("successfully updated{}", with_steps(d))),
        "WorkflowDeleted" => workflow(&format!("successfully deleted from namespace {namespace}")),
        "WorkflowValidationFailed" => workflow(&format!("validation failed{error}")),
        "WorkflowValidationSucceeded" => workflow("validation completed successfully"),
        "WorkflowExecutionStarted" => workflow(&format!("execution started{}", execution(d))),
        "WorkflowExecutionCompleted" => {
            let steps = d.steps.map(|n| format!(" ({n} steps)")).unwrap_or_default();
            let took = d
                .duration
                .map(|t| format!(" in {}", muster_gotmpl::duration::format_std(t)))
                .unwrap_or_default();
            workflow(&format!("execution completed successfully{steps}{took}"))
        }
        "WorkflowExecutionFailed" => {
            let at = d
                .step
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(|s| format!(" at step {s}"))
                .unwrap_or_default();
            workflow(&format!("execution failed{at}{error}"))
        }
        "WorkflowExecutionTracked" => {
            workflow(&format!("execution state persisted{}", execution(d)))
        }
        "WorkflowStepStarted" => {
            let tool = d.tool.as_deref().unwrap_or_default();
            workflow(&format!("step {step} started (tool: {tool})"))
        }
        "WorkflowStepCompleted" => workflow(&format!("step {step} completed successfully")),
        "WorkflowStepFailed" => {
            let continuing = if d.allow_failure {
                " (allow_failure=true, continuing)"
            } else {
                ""
            };
            workflow(&format!("step {step} failed{continuing}{error}"))
        }
        "WorkflowStepSkipped" => workflow(&format!(
            "step {step} skipped: condition evaluation returned {}",
            d.result.unwrap_or(false)
        )),
        "WorkflowStepConditionEvaluated" => workflow(&format!(
            "step {step} condition evaluated to {}",
            d.result.unwrap_or(false)
        )),
        "WorkflowUnavailable" => {
            let missing = if d.missing_tools.is_empty() {
                String::new()
            } else {
                format!(" (missing tools: {})", d.missing_tools.join(", "))
            };
            workflow(&format!("is unavailable{missing}"))
        }
        // The original's text still names the tool `action_<name>`.
        "WorkflowToolRegistered" => {
            workflow(&format!("registered as tool 'action_{name}' in aggregator"))
        }
        "WorkflowCapabilitiesRefreshed" => {
            format!("Aggregator capabilities refreshed after workflow {name} changes")
        }
        other => format!("Event: {other} for {namespace}/{name}"),
    }
}

fn with_steps(d: &Details) -> String {
    d.steps
        .map(|n| format!(" with {n} steps"))
        .unwrap_or_default()
}

fn execution(d: &Details) -> String {
    d.execution_id
        .as_deref()
        .filter(|id| !id.is_empty())
        .map(|id| format!(" (execution: {id})"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(reason: &str) -> String {
        render(reason, "n", "ns", &Details::default())
    }

    #[test]
    fn every_template_of_the_original() {
        let cases = [
            (
                "MCPServerCreated",
                "MCPServer n successfully created in namespace ns",
            ),
            (
                "MCPServerUpdated",
                "MCPServer n successfully updated in namespace ns",
            ),
            (
                "MCPServerDeleted",
                "MCPServer n successfully deleted from namespace ns",
            ),
            ("MCPServerStarting", "MCPServer n service is starting up"),
            (
                "MCPServerStarted",
                "MCPServer n service started successfully",
            ),
            (
                "MCPServerStopped",
                "MCPServer n service stopped successfully",
            ),
            ("MCPServerRestarting", "MCPServer n service is restarting"),
            ("MCPServerFailed", "MCPServer n operation failed"),
            (
                "MCPServerToolsDiscovered",
                "MCPServer n tools discovered and registered successfully",
            ),
            (
                "MCPServerToolsUnavailable",
                "MCPServer n tools became unavailable",
            ),
            (
                "MCPServerHealthCheckFailed",
                "MCPServer n health check failed",
            ),
            (
                "MCPServerRecoveryStarted",
                "MCPServer n automatic recovery process started",
            ),
            (
                "MCPServerRecoverySucceeded",
                "MCPServer n automatic recovery completed successfully",
            ),
            (
                "MCPServerRecoveryFailed",
                "MCPServer n automatic recovery failed",
            ),
            (
                "MCPServerAuthRequired",
                "MCPServer n requires OAuth authentication to connect",
            ),
            (
                "MCPServerTokenForwarded",
                "MCPServer n: ID token successfully forwarded for SSO authentication",
            ),
            (
                "MCPServerTokenForwardingFailed",
                "MCPServer n: ID token forwarding failed",
            ),
            (
                "MCPServerTokenExchanged",
                "MCPServer n: Token successfully exchanged via RFC 8693 for cross-cluster SSO",
            ),
            (
                "MCPServerTokenExchangeFailed",
                "MCPServer n: RFC 8693 token exchange failed",
            ),
            ("WorkflowCreated", "Workflow n successfully created"),
            ("WorkflowUpdated", "Workflow n successfully updated"),
            (
                "WorkflowDeleted",
                "Workflow n successfully deleted from namespace ns",
            ),
            ("WorkflowValidationFailed", "Workflow n validation failed"),
            (
                "WorkflowValidationSucceeded",
                "Workflow n validation completed successfully",
            ),
            ("WorkflowExecutionStarted", "Workflow n execution started"),
            (
                "WorkflowExecutionCompleted",
                "Workflow n execution completed successfully",
            ),
            ("WorkflowExecutionFailed", "Workflow n execution failed"),
            (
                "WorkflowExecutionTracked",
                "Workflow n execution state persisted",
            ),
            (
                "WorkflowStepCompleted",
                "Workflow n step  completed successfully",
            ),
            ("WorkflowUnavailable", "Workflow n is unavailable"),
            (
                "WorkflowToolRegistered",
                "Workflow n registered as tool 'action_n' in aggregator",
            ),
            (
                "WorkflowCapabilitiesRefreshed",
                "Aggregator capabilities refreshed after workflow n changes",
            ),
            ("SomethingElse", "Event: SomethingElse for ns/n"),
        ];
        for (reason, message) in cases {
            assert_eq!(plain(reason), message, "{reason}");
        }
    }

    #[test]
    fn optional_parts_appear_when_set() {
        let d = Details {
            error: Some("boom".into()),
            step: Some("s1".into()),
            tool: Some("x_t".into()),
            steps: Some(3),
            duration: Some(Duration::from_micros(1500)),
            execution_id: Some("e-1".into()),
            result: Some(true),
            missing_tools: vec!["a".into(), "b".into()],
            allow_failure: true,
        };
        let r = |reason| render(reason, "w", "ns", &d);
        assert_eq!(
            r("WorkflowCreated"),
            "Workflow w successfully created with 3 steps"
        );
        assert_eq!(
            r("WorkflowExecutionStarted"),
            "Workflow w execution started (execution: e-1)"
        );
        assert_eq!(
            r("WorkflowExecutionCompleted"),
            "Workflow w execution completed successfully (3 steps) in 1.5ms"
        );
        assert_eq!(
            r("WorkflowExecutionFailed"),
            "Workflow w execution failed at step s1: boom"
        );
        assert_eq!(
            r("WorkflowStepStarted"),
            "Workflow w step s1 started (tool: x_t)"
        );
        assert_eq!(
            r("WorkflowStepFailed"),
            "Workflow w step s1 failed (allow_failure=true, continuing): boom"
        );
        assert_eq!(
            r("WorkflowStepSkipped"),
            "Workflow w step s1 skipped: condition evaluation returned true"
        );
        assert_eq!(
            r("WorkflowStepConditionEvaluated"),
            "Workflow w step s1 condition evaluated to true"
        );
        assert_eq!(
            r("WorkflowUnavailable"),
            "Workflow w is unavailable (missing tools: a, b)"
        );
        assert_eq!(r("MCPServerFailed"), "MCPServer w operation failed: boom");
    }
}
