//! The aggregator's Prometheus metrics: tool calls, meta-tool calls, MCP servers, the
//! catalogue and sessions.
//!
//! [`AggregatorMetrics::register`] adds the families to an application's
//! [`prometheus_client::registry::Registry`]; hand the result to
//! [`RegistryBuilder::metrics`](crate::registry::RegistryBuilder::metrics) and the calls are
//! counted. The per-call cost is a few relaxed atomic additions: the counters and histograms
//! of each server are resolved when the catalogue is built, never looked up per call.
//! [`ServicesCollector`](crate::services::metrics::ServicesCollector) reads the state of the MCP
//! servers at scrape time.
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `muster_tool_calls_total` | counter | `server`, `kind`, `outcome` |
//! | `muster_tool_call_duration_seconds` | histogram | `server`, `kind` |
//! | `muster_meta_tool_calls_total` | counter | `tool`, `outcome` |
//! | `muster_meta_tool_duration_seconds` | histogram | `tool` |
//! | `muster_sessions_active` | gauge | |
//! | `muster_mcpserver_state` | gauge (1 for the current state) | `server`, `state` |
//! | `muster_mcpserver_connect_attempts_total` | counter | `server` |
//! | `muster_mcpserver_connect_failures_total` | counter | `server` |
//! | `muster_mcpserver_restarts_total` | counter | `server` |
//! | `muster_catalog_items` | gauge | `kind` (`tool`, `prompt`, `resource`) |
//!
//! `kind` is `server` for MCP server tools and the core provider's name (`core`,
//! `workflow`) for muster's own, whose `server` is empty. `outcome` is one of
//! [`OUTCOMES`]. No label carries a user, an argument or a session.

use std::sync::Arc;
use std::time::Duration;

use muster_core::metrics::DurationHistogram;
use muster_core::tool::ToolError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry as MetricsRegistry;
use rmcp::model::CallToolResult;

use crate::naming::META_TOOL_NAMES;

/// Every value of the `outcome` label: `ok`; `error` (the tool answered `isError: true`);
/// `timeout`, `cancelled`, `unavailable` (the server is not connected); `failed` (any other
/// error before a result).
pub const OUTCOMES: [&str; 6] = [
    "ok",
    "error",
    "timeout",
    "cancelled",
    "unavailable",
    "failed",
];

/// The `kind` of MCP server tools.
pub const SERVER_KIND: &str = "server";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    server: String,
    kind: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MetaCallLabels {
    tool: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MetaLabels {
    tool: &'static str,
}

/// The aggregator's metric families. Cheap to clone; clones share the families.
#[derive(Debug, Clone)]
pub struct AggregatorMetrics {
    inner: Arc<Families>,
}

#[derive(Debug, Default)]
struct Families {
    tool_calls: Family<ToolCallLabels, Counter>,
    tool_duration: Family<ToolLabels, DurationHistogram>,
    meta_calls: Family<MetaCallLabels, Counter>,
    meta_duration: Family<MetaLabels, DurationHistogram>,
    sessions: Gauge,
}

impl AggregatorMetrics {
    /// Registers the aggregator's families in `registry` (names as in the
    /// [module](self) table).
    pub fn register(registry: &mut MetricsRegistry) -> Self {
        let families = Families::default();
        registry.register(
            "muster_tool_calls",
            "Tool calls by server, tool kind and outcome",
            families.tool_calls.clone(),
        );
        registry.register(
            "muster_tool_call_duration_seconds",
            "Duration of tool calls by server and tool kind",
            families.tool_duration.clone(),
        );
        registry.register(
            "muster_meta_tool_calls",
            "Meta-tool calls by meta-tool and outcome",
            families.meta_calls.clone(),
        );
        registry.register(
            "muster_meta_tool_duration_seconds",
            "Duration of meta-tool calls, call_tool including the tool it calls",
            families.meta_duration.clone(),
        );
        registry.register(
            "muster_sessions_active",
            "MCP sessions currently open",
            families.sessions.clone(),
        );
        Self {
            inner: Arc::new(families),
        }
    }

    /// The handles of the tools of `server` (empty for core tools) of `kind`.
    pub(crate) fn tool_meter(&self, server: &str, kind: &str) -> CallMeter {
        let outcomes = OUTCOMES.map(|outcome| {
            self.inner.tool_calls.get_or_create_owned(&ToolCallLabels {
                server: server.to_owned(),
                kind: kind.to_owned(),
                outcome,
            })
        });
        let duration = self.inner.tool_duration.get_or_create_owned(&ToolLabels {
            server: server.to_owned(),
            kind: kind.to_owned(),
        });
        CallMeter(Arc::new(Meter { outcomes, duration }))
    }

    /// The handles of every meta-tool, in [`META_TOOL_NAMES`] order.
    pub(crate) fn meta_meters(&self) -> Vec<CallMeter> {
        META_TOOL_NAMES
            .iter()
            .map(|&tool| {
                let outcomes = OUTCOMES.map(|outcome| {
                    self.inner
                        .meta_calls
                        .get_or_create_owned(&MetaCallLabels { tool, outcome })
                });
                let duration = self
                    .inner
                    .meta_duration
                    .get_or_create_owned(&MetaLabels { tool });
                CallMeter(Arc::new(Meter { outcomes, duration }))
            })
            .collect()
    }

    /// Sets `muster_sessions_active`.
    pub fn set_sessions(&self, open: usize) {
        self.inner
            .sessions
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }
}

/// The resolved counters and histogram of one server and kind (or one meta-tool). Cheap to
/// clone.
#[derive(Debug, Clone)]
pub(crate) struct CallMeter(Arc<Meter>);

#[derive(Debug)]
struct Meter {
    /// One counter per [`OUTCOMES`] entry.
    outcomes: [Counter; 6],
    duration: DurationHistogram,
}

impl CallMeter {
    /// Counts one call that ended with `result` after `elapsed`.
    pub(crate) fn record(&self, result: &Result<CallToolResult, ToolError>, elapsed: Duration) {
        self.0.outcomes[outcome_index(result)].inc();
        self.0.duration.observe(elapsed);
    }

    /// Counts one call that answered after `elapsed`, with an error result when `is_error`.
    pub(crate) fn record_answer(&self, is_error: bool, elapsed: Duration) {
        self.0.outcomes[usize::from(is_error)].inc();
        self.0.duration.observe(elapsed);
    }
}

/// The `outcome` label of `result`.
pub(crate) fn outcome_of(result: &Result<CallToolResult, ToolError>) -> &'static str {
    OUTCOMES[outcome_index(result)]
}

/// The index in [`OUTCOMES`] of `result`.
fn outcome_index(result: &Result<CallToolResult, ToolError>) -> usize {
    match result {
        Ok(r) if r.is_error == Some(true) => 1,
        Ok(_) => 0,
        Err(ToolError::Timeout { .. }) => 2,
        Err(ToolError::Cancelled) => 3,
        Err(ToolError::Unavailable { .. }) => 4,
        Err(_) => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_name_each_kind_of_ending() {
        let ok = Ok(CallToolResult::success(vec![]));
        let error = Ok(CallToolResult::error(vec![]));
        let timeout = Err(ToolError::Timeout {
            after: Duration::from_secs(1),
        });
        let failed = Err(ToolError::failed("x"));
        let names: Vec<&str> = [ok, error, timeout, Err(ToolError::Cancelled), failed]
            .iter()
            .map(|r| OUTCOMES[outcome_index(r)])
            .collect();
        assert_eq!(names, ["ok", "error", "timeout", "cancelled", "failed"]);
    }
}
