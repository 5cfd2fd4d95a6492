//! The `observability` section of `config.yaml`: metrics, traces and logs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `observability` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct ObservabilityConfig {
    /// Prometheus metrics at `/metrics`.
    pub metrics: MetricsConfig,
    /// OpenTelemetry traces exported over OTLP.
    pub tracing: TracingConfig,
    /// Log lines.
    pub logs: LogsConfig,
}

/// `observability.metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct MetricsConfig {
    /// Serve `GET /metrics` in the Prometheus text format on the MCP port (default true).
    pub enabled: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// `observability.tracing`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct TracingConfig {
    /// Export traces (default false). Also on when `OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, unless `OTEL_SDK_DISABLED=true`.
    pub enabled: bool,
    /// The OTLP/HTTP endpoint (`http://collector:4318`); `/v1/traces` is appended. Empty:
    /// the `OTEL_EXPORTER_OTLP_*` variables, else `http://localhost:4318`.
    pub endpoint: String,
    /// `service.name` of the spans (default `muster`; `OTEL_SERVICE_NAME` overrides).
    pub service_name: String,
    /// The share of root traces recorded, 0.0 to 1.0 (default 1.0). A trace whose caller
    /// sent a sampled `traceparent` is recorded whatever the ratio.
    pub sample_ratio: f64,
}

impl Default for TracingConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: String::new(),
            service_name: "muster".to_owned(),
            sample_ratio: 1.0,
        }
    }
}

/// `observability.logs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct LogsConfig {
    /// The format of every log line: `text` (default) or `json`. `muster serve
    /// --log-format` overrides it.
    pub format: LogFormat,
    /// Write one line per tool call: tool, server, outcome, duration, session (default
    /// false). `muster serve --log-calls` turns it on.
    pub calls: bool,
}

/// The format of log lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}
