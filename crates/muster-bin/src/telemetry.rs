//! What `muster serve` exports besides its log lines: the settings of call logs, log format
//! and OpenTelemetry traces, read from the flags, `config.yaml` and the `OTEL_*` variables,
//! and the trace pipeline (OTLP over HTTP/protobuf, batched on its own thread).

use std::path::Path;

use muster_core::config::{LogFormat, ObservabilityConfig};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

use crate::cli::{Command, LogFormatArg};

/// How logs and traces are set up.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// JSON log lines instead of text.
    pub(crate) json: bool,
    /// One line per tool call.
    pub(crate) calls: bool,
    /// Export traces, with these settings.
    pub(crate) tracing: Option<TraceSettings>,
    /// A client command: the MCP client library's own log lines stay out unless `--debug`
    /// (the command reports what failed in its own words).
    pub(crate) client: bool,
}

/// The trace exporter's settings.
#[derive(Debug, Clone)]
pub(crate) struct TraceSettings {
    /// The endpoint of `observability.tracing.endpoint` (`/v1/traces` appended); `None`:
    /// the `OTEL_EXPORTER_OTLP_*` variables decide.
    pub(crate) endpoint: Option<String>,
    pub(crate) service_name: String,
    pub(crate) sample_ratio: f64,
}

/// The settings of `command`: only `serve` (and `standalone`) log calls and export traces.
pub(crate) fn settings(command: &Command) -> Settings {
    let args = match command {
        Command::Serve(args) => args,
        Command::Standalone(args) => &args.serve,
        _ => {
            return Settings {
                client: true,
                ..Settings::default()
            };
        }
    };
    let root = crate::commands::paths::expand_home(&args.config_path);
    let config = observability(&root);
    let json = match args.log_format {
        Some(format) => format == LogFormatArg::Json,
        None => config.logs.format == LogFormat::Json,
    };
    let set =
        |value: Result<String, std::env::VarError>| value.ok().filter(|v| !v.trim().is_empty());
    let disabled =
        set(std::env::var("OTEL_SDK_DISABLED")).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let from_env = set(std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")).is_some()
        || set(std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")).is_some();
    let tracing = (!disabled && (config.tracing.enabled || from_env)).then(|| TraceSettings {
        endpoint: Some(config.tracing.endpoint.trim_end_matches('/'))
            .filter(|e| !e.is_empty())
            .map(|e| format!("{e}/v1/traces")),
        service_name: set(std::env::var("OTEL_SERVICE_NAME"))
            .unwrap_or(config.tracing.service_name),
        sample_ratio: config.tracing.sample_ratio.clamp(0.0, 1.0),
    });
    Settings {
        json,
        calls: args.log_calls || config.logs.calls,
        tracing,
        client: false,
    }
}

/// The `observability` section of `root/config.yaml`; defaults when absent or broken
/// (`muster serve` reports a broken file itself once logging is up).
fn observability(root: &Path) -> ObservabilityConfig {
    std::fs::read_to_string(root.join("config.yaml"))
        .ok()
        .and_then(|text| serde_norway::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("observability").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// Builds the tracer provider of `settings` and installs the W3C trace-context propagator.
///
/// # Errors
///
/// When the exporter cannot be built (an endpoint that is not a URL).
pub(crate) fn tracer_provider(settings: &TraceSettings) -> anyhow::Result<SdkTracerProvider> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let Some(endpoint) = &settings.endpoint {
        exporter = exporter.with_endpoint(endpoint.clone());
    }
    // The exporter builds its own blocking HTTP client (reqwest, with the export timeout).
    let exporter = exporter
        .build()
        .map_err(|e| anyhow::anyhow!("cannot set up the OTLP trace exporter: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sample_ratio,
        ))))
        .with_resource(resource)
        .build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    Ok(provider)
}

/// The tracer muster's spans go to.
pub(crate) fn tracer(provider: &SdkTracerProvider) -> opentelemetry_sdk::trace::Tracer {
    provider.tracer("muster")
}
