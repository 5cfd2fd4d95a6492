//! Readiness: the checks behind `GET /ready` and the report they add up to.
//!
//! `GET /health` only says the process serves HTTP (liveness). `GET /ready` runs every
//! registered [`ReadinessCheck`] concurrently, each bounded by a timeout, and answers:
//!
//! - `200 {"status":"ready", ...}` when every check passed;
//! - `200 {"status":"degraded", ...}` when a non-critical check failed (an MCP server is
//!   down: muster still serves everything else, so it stays in rotation);
//! - `503 {"status":"not_ready", ...}` when a critical check failed (the Kubernetes API
//!   server or a store is unreachable).
//!
//! The body names every check with its state and, when it did not pass, why:
//!
//! ```json
//! {"status":"degraded","checks":[
//!   {"name":"config","status":"ok"},
//!   {"name":"mcpservers","status":"degraded","message":"1 of 3 not running: github (failed)"}
//! ]}
//! ```
//!
//! ```
//! # async fn demo() {
//! use std::sync::Arc;
//! use muster_aggregator::health::{CheckOutcome, Readiness, StaticCheck};
//!
//! let readiness = Readiness::new().with_check(Arc::new(StaticCheck::new(
//!     "config",
//!     CheckOutcome::Ok,
//! )));
//! let report = readiness.report().await;
//! assert!(report.is_ready());
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::services::Services;

/// How long one check may take before it counts as failed.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutcome {
    /// All is well.
    Ok,
    /// Working, but not fully: the text says what is missing.
    Degraded(String),
    /// Not working: the text says why.
    Failed(String),
}

/// One thing `/ready` looks at.
pub trait ReadinessCheck: Send + Sync + fmt::Debug {
    /// The check's name in the report (`config`, `kubernetes`, `mcpservers`).
    fn name(&self) -> &str;

    /// Whether a failure of this check makes muster not ready (`503`); a failed
    /// non-critical check only marks it `degraded`.
    fn critical(&self) -> bool {
        true
    }

    /// Runs the check. Must not block; `/ready` bounds it by its timeout.
    fn check(&self) -> BoxFuture<'_, CheckOutcome>;
}

/// A check with a fixed outcome: for facts settled at startup (the configuration was
/// loaded from this path).
#[derive(Debug, Clone)]
pub struct StaticCheck {
    name: String,
    outcome: CheckOutcome,
}

impl StaticCheck {
    /// A check called `name` that always reports `outcome`.
    pub fn new(name: impl Into<String>, outcome: CheckOutcome) -> Self {
        Self {
            name: name.into(),
            outcome,
        }
    }
}

impl ReadinessCheck for StaticCheck {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> BoxFuture<'_, CheckOutcome> {
        Box::pin(std::future::ready(self.outcome.clone()))
    }
}

/// The MCP servers muster runs: `degraded` (never `not_ready`) while one that should run
/// is not connected, naming it and its state.
#[derive(Debug, Clone)]
pub struct ServicesCheck {
    services: Services,
}

impl ServicesCheck {
    /// The check over `services`.
    pub fn new(services: Services) -> Self {
        Self { services }
    }
}

impl ReadinessCheck for ServicesCheck {
    fn name(&self) -> &str {
        "mcpservers"
    }

    fn critical(&self) -> bool {
        false
    }

    fn check(&self) -> BoxFuture<'_, CheckOutcome> {
        let snapshots = self.services.snapshots();
        Box::pin(async move {
            let total = snapshots.len();
            let down: Vec<String> = snapshots
                .iter()
                .filter(|s| s.state.is_failed())
                .map(|s| format!("{} ({})", s.name, s.state))
                .collect();
            if down.is_empty() {
                CheckOutcome::Ok
            } else {
                CheckOutcome::Degraded(format!(
                    "{} of {total} not running: {}",
                    down.len(),
                    down.join(", ")
                ))
            }
        })
    }
}

/// The overall state of a [`ReadinessReport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessStatus {
    /// Every check passed.
    Ready,
    /// Only non-critical checks failed.
    Degraded,
    /// A critical check failed.
    NotReady,
}

/// The state of one check in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Passed.
    Ok,
    /// Degraded, or a failed non-critical check.
    Degraded,
    /// A failed critical check.
    Failed,
}

/// One check's line in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The check's name.
    pub name: String,
    /// Its state.
    pub status: CheckStatus,
    /// Why it did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The body of `GET /ready`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadinessReport {
    /// The overall state.
    pub status: ReadinessStatus,
    /// Every check, in registration order.
    pub checks: Vec<CheckReport>,
}

impl ReadinessReport {
    /// Whether muster should receive traffic (`ready` or `degraded`).
    pub fn is_ready(&self) -> bool {
        self.status != ReadinessStatus::NotReady
    }
}

/// The checks of `/ready`. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Readiness {
    checks: Vec<Arc<dyn ReadinessCheck>>,
    timeout: Duration,
}

impl Default for Readiness {
    fn default() -> Self {
        Self::new()
    }
}

impl Readiness {
    /// No checks: always ready.
    pub fn new() -> Self {
        Self {
            checks: Vec::new(),
            timeout: DEFAULT_CHECK_TIMEOUT,
        }
    }

    /// Adds `check`.
    #[must_use]
    pub fn with_check(mut self, check: Arc<dyn ReadinessCheck>) -> Self {
        self.checks.push(check);
        self
    }

    /// Sets how long each check may take (default 3 s); a check that takes longer failed
    /// with `did not answer within <timeout>`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs every check concurrently and adds up the report.
    pub async fn report(&self) -> ReadinessReport {
        let timeout = self.timeout;
        let runs = self.checks.iter().map(|check| async move {
            let outcome = tokio::time::timeout(timeout, check.check())
                .await
                .unwrap_or_else(|_| {
                    CheckOutcome::Failed(format!("did not answer within {timeout:?}"))
                });
            (check.name().to_owned(), check.critical(), outcome)
        });
        let results = futures::future::join_all(runs).await;
        let mut status = ReadinessStatus::Ready;
        let checks = results
            .into_iter()
            .map(|(name, critical, outcome)| {
                let (check_status, message) = match outcome {
                    CheckOutcome::Ok => (CheckStatus::Ok, None),
                    CheckOutcome::Degraded(m) => (CheckStatus::Degraded, Some(m)),
                    CheckOutcome::Failed(m) if critical => (CheckStatus::Failed, Some(m)),
                    CheckOutcome::Failed(m) => (CheckStatus::Degraded, Some(m)),
                };
                status = match (status, check_status) {
                    (_, CheckStatus::Failed) | (ReadinessStatus::NotReady, _) => {
                        ReadinessStatus::NotReady
                    }
                    (_, CheckStatus::Degraded) | (ReadinessStatus::Degraded, _) => {
                        ReadinessStatus::Degraded
                    }
                    _ => ReadinessStatus::Ready,
                };
                CheckReport {
                    name,
                    status: check_status,
                    message,
                }
            })
            .collect();
        ReadinessReport { status, checks }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Slow;

    impl ReadinessCheck for Slow {
        fn name(&self) -> &str {
            "slow"
        }

        fn check(&self) -> BoxFuture<'_, CheckOutcome> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                CheckOutcome::Ok
            })
        }
    }

    #[derive(Debug)]
    struct Optional(CheckOutcome);

    impl ReadinessCheck for Optional {
        fn name(&self) -> &str {
            "optional"
        }

        fn critical(&self) -> bool {
            false
        }

        fn check(&self) -> BoxFuture<'_, CheckOutcome> {
            Box::pin(std::future::ready(self.0.clone()))
        }
    }

    fn stat(name: &str, outcome: CheckOutcome) -> Arc<dyn ReadinessCheck> {
        Arc::new(StaticCheck::new(name, outcome))
    }

    #[tokio::test]
    async fn no_checks_is_ready() {
        let report = Readiness::new().report().await;
        assert_eq!(report.status, ReadinessStatus::Ready);
        assert!(report.checks.is_empty());
    }

    #[tokio::test]
    async fn a_failed_optional_check_only_degrades() {
        let report = Readiness::new()
            .with_check(stat("config", CheckOutcome::Ok))
            .with_check(Arc::new(Optional(CheckOutcome::Failed("down".into()))))
            .report()
            .await;
        assert_eq!(report.status, ReadinessStatus::Degraded);
        assert!(report.is_ready());
        assert_eq!(report.checks[1].status, CheckStatus::Degraded);
        assert_eq!(report.checks[1].message.as_deref(), Some("down"));
    }

    #[tokio::test]
    async fn a_failed_critical_check_is_not_ready_whatever_comes_after() {
        let report = Readiness::new()
            .with_check(stat(
                "kubernetes",
                CheckOutcome::Failed("unreachable".into()),
            ))
            .with_check(Arc::new(Optional(CheckOutcome::Degraded("1 down".into()))))
            .with_check(stat("config", CheckOutcome::Ok))
            .report()
            .await;
        assert_eq!(report.status, ReadinessStatus::NotReady);
        assert!(!report.is_ready());
        let json = serde_json::to_value(&report).unwrap_or_default();
        assert_eq!(json["status"], "not_ready");
        assert_eq!(json["checks"][0]["status"], "failed");
        assert_eq!(json["checks"][2]["status"], "ok");
        assert!(json["checks"][2].get("message").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_check_fails_after_the_timeout() {
        let report = Readiness::new()
            .with_check(Arc::new(Slow))
            .with_timeout(Duration::from_millis(100))
            .report()
            .await;
        assert_eq!(report.status, ReadinessStatus::NotReady);
        assert_eq!(
            report.checks[0].message.as_deref(),
            Some("did not answer within 100ms")
        );
    }
}
