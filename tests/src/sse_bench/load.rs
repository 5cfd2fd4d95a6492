//! `sse-bench load`: a load generator for MCP servers over the legacy HTTP+SSE transport,
//! with the options, the summary line, the `--json` report and the exit codes of the shared
//! harness's `mcp-load`, so that its numbers stand beside mcp-load's.
//!
//! It opens `--sessions` sessions (default one; each a `GET` of the event stream, its
//! endpoint event, `initialize` and `notifications/initialized`), then keeps `-c` calls of
//! `--tool` in flight, the workers sharing the sessions round-robin: each worker posts a
//! `tools/call` with an id of its own on a pool of keep-alive HTTP/1 connections and waits
//! for the response with that id on the session's stream. A call's latency runs from sending
//! its `POST` to parsing its response off the stream.
//!
//! A call fails when: the `POST` is not answered 2xx, the stream ends first, the response is
//! a JSON-RPC error, `result.isError` is true, `--expect` does not match, or it times out.

mod reply;
mod session;
mod sse_scan;
mod stats;

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use bytes::Bytes;
use hyper::Uri;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;

use session::{Connection, SseSession, http_client};
use stats::{RunInfo, Stats, Stop, summarize};

/// Exit status: every measured call succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit status: some calls failed, none were made, or the report could not be written.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: the options are wrong.
pub const EXIT_USAGE: u8 = 2;
/// Exit status: a session could not be opened.
pub const EXIT_SETUP: u8 = 3;

/// The first revision without the legacy HTTP+SSE transport's sessions (and without
/// `initialize`): dates compare correctly as strings.
const FIRST_SESSIONLESS_REVISION: &str = "2026-07-28";

/// Options of `sse-bench load`: those of the harness's `mcp-load`, where an option given twice
/// takes its last value (`-H` adds one header each time).
#[derive(Debug, Clone, clap::Args)]
#[command(args_override_self = true)]
pub struct LoadOptions {
    /// The SSE endpoint, plain http (e.g. http://127.0.0.1:18100/sse).
    #[arg(long)]
    pub url: String,
    /// Tool to call.
    #[arg(long, default_value = "echo")]
    pub tool: String,
    /// Its arguments object, as JSON.
    #[arg(long, default_value = r#"{"message":"x"}"#)]
    pub args: String,
    /// Calls kept in flight.
    #[arg(short = 'c', long, default_value_t = 1)]
    pub concurrency: usize,
    /// Measure for this many seconds (default: 10, unless --count is given).
    #[arg(short = 'd', long)]
    pub duration: Option<f64>,
    /// Stop after this many measured calls in total.
    #[arg(short = 'n', long)]
    pub count: Option<u64>,
    /// Seconds of calls made and discarded before measuring.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Sessions to open; workers share them round-robin.
    #[arg(long, default_value_t = 1)]
    pub sessions: usize,
    /// Refused: the legacy SSE transport always has a session (accepted for mcp-load's
    /// option set).
    #[arg(long)]
    pub stateless: bool,
    /// The protocolVersion `initialize` asks for.
    #[arg(long, default_value = "2024-11-05")]
    pub protocol_version: String,
    /// Extra header 'Name: value' on every request (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// A call counts as successful only if its result text contains this.
    #[arg(long)]
    pub expect: Option<String>,
    /// Per-call timeout in seconds (also the limit of each session setup step).
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
    /// Runtime threads of this client.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Name used in the report (default: the URL).
    #[arg(long, default_value = "")]
    pub label: String,
    /// Write the report as JSON to this file ('-' for stdout).
    #[arg(long = "json")]
    pub json: Option<String>,
    /// Open a session, print the tool names, exit.
    #[arg(long)]
    pub list_tools: bool,
    /// No human-readable report.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// The options, checked and parsed.
#[derive(Debug)]
struct Settings {
    url: Uri,
    args: Value,
    headers: Vec<(HeaderName, HeaderValue)>,
    duration: Option<f64>,
    timeout: Duration,
    label: String,
}

impl LoadOptions {
    /// Checks the options that clap cannot.
    fn settings(&self) -> Result<Settings, String> {
        let url: Uri = self
            .url
            .parse()
            .map_err(|e| format!("--url {:?}: {e}", self.url))?;
        if url.scheme_str() != Some("http") {
            return Err("--url must be a plain http:// URL".to_owned());
        }
        let args: Value = serde_json::from_str(&self.args).map_err(|e| format!("--args: {e}"))?;
        if !args.is_object() {
            return Err("--args must be a JSON object".to_owned());
        }
        if self.concurrency == 0 || self.sessions == 0 || self.threads == 0 {
            return Err("--concurrency, --sessions and --threads must be at least 1".to_owned());
        }
        if self.stateless {
            return Err("--stateless: the legacy SSE transport always has a session".to_owned());
        }
        if self.protocol_version.as_str() >= FIRST_SESSIONLESS_REVISION {
            return Err(format!(
                "--protocol-version {}: revisions from {FIRST_SESSIONLESS_REVISION} on have no \
                 legacy SSE transport",
                self.protocol_version
            ));
        }
        let timeout = Duration::try_from_secs_f64(self.timeout)
            .map_err(|e| format!("--timeout {}: {e}", self.timeout))?;
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        let duration = match (self.duration, self.count) {
            (None, None) => Some(10.0),
            (d, _) => d,
        };
        let label = if self.label.is_empty() {
            url.to_string()
        } else {
            self.label.clone()
        };
        Ok(Settings {
            url,
            args,
            headers,
            duration,
            timeout,
            label,
        })
    }
}

/// A `-H 'Name: value'` option.
fn parse_header(h: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (k, v) = h
        .split_once(':')
        .ok_or_else(|| format!("header {h:?} is not 'Name: value'"))?;
    let name = HeaderName::from_bytes(k.trim().as_bytes())
        .map_err(|e| format!("header name {k:?}: {e}"))?;
    let value = HeaderValue::from_str(v.trim()).map_err(|e| format!("header value {v:?}: {e}"))?;
    Ok((name, value))
}

/// What each worker sends: the tail of every `tools/call` body after its id, and the check.
#[derive(Debug)]
struct CallSpec {
    body_suffix: String,
    expect: Option<String>,
}

impl CallSpec {
    fn body(&self, id: u64) -> Bytes {
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{id}{}"#,
            self.body_suffix
        ))
    }
}

/// Runs the load as `options` say, printing as `mcp-load` prints; returns the exit status
/// ([`EXIT_OK`], [`EXIT_FAILED`], [`EXIT_USAGE`] or [`EXIT_SETUP`]).
pub async fn run(options: &LoadOptions) -> u8 {
    let settings = match options.settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sse-bench load: {e}");
            return EXIT_USAGE;
        }
    };
    let conn = Connection {
        client: http_client(),
        url: settings.url.clone(),
        headers: settings.headers.clone().into(),
        protocol_version: options.protocol_version.clone(),
        timeout: settings.timeout,
    };
    let mut sessions = Vec::with_capacity(options.sessions);
    for i in 0..options.sessions {
        match SseSession::open(&conn, &format!("sse-bench-load-{i}")).await {
            Ok(s) => sessions.push(Arc::new(s)),
            Err(e) => {
                eprintln!("sse-bench load: session setup failed: {e}");
                return EXIT_SETUP;
            }
        }
    }
    if options.list_tools {
        return match sessions[0].list_tools().await {
            Ok(names) => {
                for name in names {
                    println!("{name}");
                }
                EXIT_OK
            }
            Err(e) => {
                eprintln!("sse-bench load: {e}");
                EXIT_FAILED
            }
        };
    }

    let params = serde_json::json!({"name": options.tool, "arguments": settings.args});
    let spec = Arc::new(CallSpec {
        body_suffix: format!(r#","method":"tools/call","params":{params}}}"#),
        expect: options.expect.clone(),
    });
    if options.warmup > 0.0 {
        let stop = Stop {
            deadline: Some(Instant::now() + Duration::from_secs_f64(options.warmup)),
            remaining: None,
        };
        let (w, _) = phase(&spec, &sessions, options.concurrency, stop, 0).await;
        if w.lat_ns.is_empty() && w.failed > 0 && !options.quiet {
            let first = w.errors.keys().next().cloned().unwrap_or_default();
            eprintln!("sse-bench load: every warm-up call failed, e.g. {first}");
        }
    }
    let stop = Stop {
        deadline: settings
            .duration
            .map(|d| Instant::now() + Duration::from_secs_f64(d)),
        remaining: options
            .count
            .map(|n| Arc::new(AtomicI64::new(i64::try_from(n).unwrap_or(i64::MAX)))),
    };
    let (st, elapsed) = phase(&spec, &sessions, options.concurrency, stop, 500_000_000).await;
    let negotiated = sessions[0].protocol_version.clone();
    drop(sessions);

    let url = settings.url.to_string();
    let info = RunInfo {
        label: &settings.label,
        url: &url,
        tool: &options.tool,
        arguments: &settings.args,
        protocol_version: &options.protocol_version,
        negotiated_protocol_version: &negotiated,
        sessions: options.sessions,
        concurrency: options.concurrency,
        warmup_s: options.warmup,
        elapsed,
    };
    let summary = summarize(&info, st);
    if !options.quiet {
        println!("{}", summary.text);
    }
    if let Some(path) = &options.json
        && let Err(e) = write_report(path, &summary.report)
    {
        eprintln!("sse-bench load: {e}");
        return EXIT_FAILED;
    }
    if summary.ok > 0 && summary.failed == 0 {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

/// Writes the report to `path` ('-': stdout).
fn write_report(path: &str, report: &Value) -> Result<(), String> {
    let text =
        serde_json::to_string_pretty(report).map_err(|e| format!("serializing the report: {e}"))?;
    if path == "-" {
        println!("{text}");
        Ok(())
    } else {
        std::fs::write(path, text + "\n").map_err(|e| format!("writing {path}: {e}"))
    }
}

/// Runs `concurrency` workers until `stop`: their merged stats and the time taken.
async fn phase(
    spec: &Arc<CallSpec>,
    sessions: &[Arc<SseSession>],
    concurrency: usize,
    stop: Stop,
    id_offset: u64,
) -> (Stats, Duration) {
    let start = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|w| {
            tokio::spawn(worker(
                Arc::clone(spec),
                Arc::clone(&sessions[w % sessions.len()]),
                stop.clone(),
                id_offset + (w as u64 + 1) * 1_000_000_000,
            ))
        })
        .collect();
    let mut total = Stats::default();
    for w in workers {
        match w.await {
            Ok(st) => total.merge(st),
            Err(e) => total.fail(format!("worker panicked: {e}")),
        }
    }
    (total, start.elapsed())
}

/// One worker: a call at a time until `stop`, ids counting up from `id_base`.
async fn worker(spec: Arc<CallSpec>, session: Arc<SseSession>, stop: Stop, id_base: u64) -> Stats {
    let mut st = Stats::default();
    let mut id = id_base;
    while stop.take() {
        id += 1;
        match session
            .call(id, spec.body(id), spec.expect.as_deref())
            .await
        {
            Ok(latency) => {
                st.lat_ns
                    .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
                st.sse += 1;
            }
            Err(e) => st.fail(e),
        }
    }
    st
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        load: LoadOptions,
    }

    fn parse(args: &[&str]) -> LoadOptions {
        Cli::try_parse_from(std::iter::once("load").chain(args.iter().copied()))
            .unwrap()
            .load
    }

    #[test]
    fn options_parse_as_mcp_load_takes_them() {
        let o = parse(&[
            "--url",
            "http://127.0.0.1:1/sse",
            "-c",
            "32",
            "--tool",
            "call_tool",
            "--args",
            r#"{"name":"x_bench_echo","arguments":{"message":"x"}}"#,
            "-H",
            "X-A: b",
            "--count=5",
            "-q",
            "--json",
            "-",
        ]);
        assert_eq!(o.concurrency, 32);
        assert_eq!(o.count, Some(5));
        let s = o.settings().unwrap();
        assert_eq!(s.duration, None);
        assert_eq!(s.headers[0].0.as_str(), "x-a");
        assert_eq!(s.label, "http://127.0.0.1:1/sse");
        let s = parse(&["--url", "http://h/sse"]).settings().unwrap();
        assert_eq!(s.duration, Some(10.0));
    }

    #[test]
    fn a_repeated_option_takes_its_last_value() {
        let o = parse(&[
            "--url",
            "http://h/sse",
            "--timeout",
            "30",
            "-n",
            "1",
            "--timeout",
            "5",
            "-H",
            "A: 1",
            "-H",
            "B: 2",
        ]);
        assert_eq!(o.timeout, 5.0);
        assert_eq!(o.headers, ["A: 1", "B: 2"]);
    }

    #[test]
    fn options_clap_cannot_check_are_refused() {
        for args in [
            &["--url", "https://h/sse"][..],
            &["--url", "http://h/sse", "--args", "[1]"],
            &["--url", "http://h/sse", "-c", "0"],
            &["--url", "http://h/sse", "--stateless"],
            &["--url", "http://h/sse", "--protocol-version", "2026-07-28"],
            &["--url", "http://h/sse", "-H", "no colon"],
            &["--url", "http://h/sse", "--timeout=-1"],
        ] {
            assert!(parse(args).settings().is_err(), "{args:?}");
        }
    }

    #[test]
    fn call_bodies_carry_their_ids() {
        let spec = CallSpec {
            body_suffix: r#","method":"tools/call","params":{}}"#.to_owned(),
            expect: None,
        };
        let body: Value = serde_json::from_slice(&spec.body(42)).unwrap();
        assert_eq!(body["id"], 42);
        assert_eq!(body["method"], "tools/call");
    }
}
