//! Logging: to stderr, filtered, and redacted.
//!
//! Every line goes through the [`RedactorSet`] every backend registers its secret values
//! with, so a credential that reaches a log line anyway (inside a dependency's error text,
//! say) is cut out before it is written. `--debug` turns muster's own crates to `debug`;
//! rmcp stays at `warn`, because its `debug` lines carry whole protocol messages (the
//! arguments of a `core_mcpserver_create`, with their `env` and `headers`). `RUST_LOG`
//! overrides both, and asking it for rmcp's `debug` or `trace` lines asks for those
//! messages.

use std::io::{self, IsTerminal as _, Write};
use std::sync::OnceLock;

use muster_core::secret::RedactorSet;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::telemetry;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The redactors of every backend of this process.
pub(crate) fn redactions() -> &'static RedactorSet {
    static SET: OnceLock<RedactorSet> = OnceLock::new();
    SET.get_or_init(RedactorSet::new)
}

/// The directives of `--debug` besides the default level.
const DEBUG_QUIET: [&str; 1] = ["rmcp=warn"];

fn default_level(debug: bool, silent: bool) -> LevelFilter {
    if silent {
        LevelFilter::ERROR
    } else if debug {
        LevelFilter::DEBUG
    } else {
        LevelFilter::WARN
    }
}

/// The filter without `RUST_LOG`: `error` for `serve --silent`, `debug` (rmcp `warn`) with
/// `--debug`, `warn` otherwise.
fn default_filter(debug: bool, silent: bool) -> EnvFilter {
    let mut filter = EnvFilter::default().add_directive(default_level(debug, silent).into());
    if debug && !silent {
        for directive in DEBUG_QUIET {
            if let Ok(d) = directive.parse() {
                filter = filter.add_directive(d);
            }
        }
    }
    filter
}

/// Adds `directive` to `filter` (a constant, so it always parses).
fn with_directive(filter: EnvFilter, directive: &str) -> EnvFilter {
    match directive.parse() {
        Ok(d) => filter.add_directive(d),
        Err(_) => filter,
    }
}

/// What [`init`] set up and must be shut down at exit: the trace exporter, which flushes the
/// spans it still holds.
pub(crate) struct Guard(Option<opentelemetry_sdk::trace::SdkTracerProvider>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "traces not flushed at exit");
        }
    }
}

/// Logs go to stderr so they never mix with a command's output, in colour only on a
/// terminal, as text or JSON lines. `RUST_LOG` sets the filter when present; call logs
/// (target `muster::call`) are added when `settings.calls` is set. Spans of the target
/// `muster::otel` go to the OpenTelemetry exporter when traces are configured, never to the
/// log lines.
pub(crate) fn init(debug: bool, silent: bool, settings: &telemetry::Settings) -> Guard {
    let mut filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::builder()
            .with_default_directive(default_level(debug, silent).into())
            .parse_lossy(spec),
        _ if settings.client && !debug => with_directive(default_filter(debug, silent), "rmcp=off"),
        _ => default_filter(debug, silent),
    };
    if settings.calls && !silent {
        filter = with_directive(filter, "muster::call=info");
    }
    filter = with_directive(filter, "muster::otel=off");
    let fmt = tracing_subscriber::fmt::layer().with_writer(RedactingStderr);
    let fmt: Box<dyn Layer<Registry> + Send + Sync> = if settings.json {
        fmt.json()
            .with_current_span(false)
            .with_span_list(false)
            .boxed()
    } else {
        fmt.with_ansi(io::stderr().is_terminal()).boxed()
    };
    let mut problem = None;
    let provider = settings
        .tracing
        .as_ref()
        .and_then(|t| match telemetry::tracer_provider(t) {
            Ok(p) => Some(p),
            Err(e) => {
                problem = Some(e);
                None
            }
        });
    let otel = provider.as_ref().map(|p| {
        // Spans carry the attributes muster sets and nothing per poll: no busy/idle time
        // tracking, no code location, thread or target attributes (the same for every span),
        // and no OpenTelemetry context switched on every enter and exit — nothing in muster
        // reads the ambient context, parents are found through the spans themselves.
        tracing_opentelemetry::layer()
            .with_tracer(telemetry::tracer(p))
            .with_tracked_inactivity(false)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_context_activation(false)
            .with_filter(Targets::new().with_target("muster::otel", LevelFilter::INFO))
    });
    // Calls whose trace is not sampled make no spans at all.
    if let Some(tracing) = &settings.tracing {
        muster_aggregator::observe::set_head_sample_ratio(tracing.sample_ratio);
    }
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(otel)
        .init();
    if let Some(e) = problem {
        tracing::error!(error = %e, "traces are not exported");
    }
    Guard(provider)
}

/// Makes a [`LineWriter`] per log event.
struct RedactingStderr;

impl<'a> MakeWriter<'a> for RedactingStderr {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter { buf: Vec::new() }
    }
}

/// Collects one formatted event, then writes it redacted to stderr in one piece.
struct LineWriter {
    buf: Vec<u8>,
}

impl Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buf);
        let line = redactions().redact(&text);
        let _ = io::stderr().lock().write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use muster_core::secret::Redactor;

    use super::*;

    #[test]
    fn debug_keeps_protocol_messages_out() {
        let filter = default_filter(true, false).to_string();
        assert!(filter.contains("rmcp=warn"), "{filter}");
        assert!(filter.contains("debug"), "{filter}");
        assert_eq!(default_filter(false, false).to_string(), "warn");
        assert_eq!(default_filter(true, true).to_string(), "error");
    }

    #[test]
    fn lines_are_redacted_before_they_are_written() {
        let secret = Redactor::from_values(["log-secret-123"]);
        redactions().register(&secret);
        let mut writer = RedactingStderr.make_writer();
        writer
            .write_all(b"GET http://h/?token=log-secret-123\n")
            .unwrap();
        let text = String::from_utf8_lossy(&writer.buf).into_owned();
        assert_eq!(
            redactions().redact(&text),
            "GET http://h/?token=[redacted]\n"
        );
        writer.buf.clear();
    }
}
