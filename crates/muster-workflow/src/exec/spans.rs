//! The `tracing` target of the engine's spans.

/// The `tracing` target of the engine's spans (runs and steps); enable it in an
/// OpenTelemetry layer to export them.
pub const SPAN_TARGET: &str = "muster::otel";
