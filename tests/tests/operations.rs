//! Running muster in production: `/health` and `/ready` of a real `muster serve`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{ConfigDir, MusterConfig, deps, free_port};
use serde_json::Value;
use tokio::time::Instant;

/// `GET <path>` on muster's port: status and body.
fn get(dir: &ConfigDir, path: &str) -> (u16, String) {
    let response =
        reqwest::blocking::get(format!("http://127.0.0.1:{}{path}", dir.port())).unwrap();
    (response.status().as_u16(), response.text().unwrap())
}

/// Polls `f` until it returns `Some`, for up to `timeout`.
fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ready_names_a_failed_server_as_degraded_and_stays_in_rotation() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .stdio_server(
            "broken",
            "/nonexistent/muster-test-command",
            Vec::<String>::new(),
        )
        .expect_tool("x_everything_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();

    let (status, body) = get(&dir, "/health");
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));

    let body: Value = eventually("the broken server to fail", Duration::from_secs(20), || {
        let (status, body) = get(&dir, "/ready");
        let body: Value = serde_json::from_str(&body).unwrap();
        (status == 200 && body["status"] == "degraded").then_some(body)
    });
    let checks = body["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["config", "filesystem", "mcpservers"], "{body}");
    assert_eq!(checks[0]["status"], "ok");
    assert_eq!(checks[1]["status"], "ok");
    assert_eq!(checks[2]["status"], "degraded");
    assert_eq!(
        checks[2]["message"],
        "1 of 2 not running: broken (failed)",
        "{body}\n{}",
        muster.log()
    );
}

#[test]
fn ready_fails_when_the_config_directory_goes_away() {
    let dir = MusterConfig::new().write().unwrap();
    let _muster = dir.start().unwrap();
    let (status, body) = get(&dir, "/ready");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "ready"
    );

    std::fs::remove_dir_all(dir.path()).unwrap();
    let (status, body) = get(&dir, "/ready");
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["checks"][1]["name"], "filesystem");
    assert_eq!(body["checks"][1]["status"], "failed");
    assert!(
        body["checks"][1]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot read "),
        "{body}"
    );
}

/// A real Prometheus (Debian's `prometheus`) scraping one target every second, with its
/// data in a temporary directory.
struct Prometheus {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn scraping(target: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: muster\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port().unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = std::process::Command::new(prometheus_binary())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus starts (Debian package `prometheus`, installed by .ci/run)");
        Self {
            child,
            port,
            _dir: dir,
        }
    }

    /// The result vector of the instant query `promql`, or `None` while Prometheus is not
    /// up.
    fn query(&self, promql: &str) -> Option<Vec<Value>> {
        let url = url::Url::parse_with_params(
            &format!("http://127.0.0.1:{}/api/v1/query", self.port),
            [("query", promql)],
        )
        .unwrap();
        let response = reqwest::blocking::get(url).ok()?;
        let body: Value = response.json().ok()?;
        assert_eq!(body["status"], "success", "{promql}: {body}");
        body["data"]["result"].as_array().cloned()
    }

    /// The single value of `promql` once it has one.
    fn value(&self, promql: &str, accept: impl Fn(f64) -> bool) -> f64 {
        eventually(promql, Duration::from_secs(60), || {
            let result = self.query(promql)?;
            let value: f64 = result.first()?["value"][1].as_str()?.parse().ok()?;
            accept(value).then_some(value)
        })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `prometheus` on PATH, or Debian's.
fn prometheus_binary() -> std::path::PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| "/usr/bin/prometheus".into())
}

#[test]
fn prometheus_scrapes_call_counters_and_latency_quantiles() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    for i in 0..5 {
        let envelope = client
            .call(
                "x_everything_echo",
                serde_json::json!({"message": format!("m{i}")}),
            )
            .unwrap();
        assert!(!envelope.is_error, "{}", envelope.text());
    }
    let failed = client
        .call("x_everything_no_such_tool", serde_json::json!({}))
        .unwrap();
    assert!(failed.is_error);

    // The exposition itself, as Prometheus reads it.
    let (status, text) = get(&dir, "/metrics");
    assert_eq!(status, 200);
    assert!(
        text.contains(
            "muster_tool_calls_total{server=\"everything\",kind=\"server\",outcome=\"ok\"} 5\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("muster_mcpserver_state{server=\"everything\",state=\"running\"} 1\n"),
        "{text}"
    );
    // This client's session, plus those of the readiness polls of the start, which may
    // still be open.
    let sessions: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("muster_sessions_active "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(sessions >= 1.0, "{text}");
    assert!(
        text.contains("muster_meta_tool_calls_total{tool=\"call_tool\",outcome=\"error\"} 1\n"),
        "{text}"
    );

    let prometheus = Prometheus::scraping(&format!("127.0.0.1:{}", dir.port()));
    let calls = prometheus.value(
        r#"muster_tool_calls_total{job="muster",server="everything",kind="server",outcome="ok"}"#,
        |v| v >= 5.0,
    );
    assert_eq!(calls, 5.0, "{}", prometheus.log());
    let p99 = prometheus.value(
        r#"histogram_quantile(0.99, sum by (le) (muster_tool_call_duration_seconds_bucket{server="everything"}))"#,
        f64::is_finite,
    );
    assert!(p99 > 0.0 && p99 <= 60.0, "p99 {p99}");
    let state = prometheus.value(
        r#"muster_mcpserver_state{server="everything",state="running"}"#,
        |v| v == 1.0,
    );
    assert_eq!(state, 1.0);
    let tools = prometheus.value(r#"muster_catalog_items{kind="tool"}"#, |v| v > 0.0);
    assert!(tools >= 1.0);
}

/// One span as an OTLP receiver got it.
#[derive(Debug, Clone)]
struct ReceivedSpan {
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
}

/// A small OTLP/HTTP receiver (`POST /v1/traces`, protobuf) built on the official
/// `opentelemetry-proto` messages.
struct OtlpReceiver {
    port: u16,
    spans: std::sync::Arc<std::sync::Mutex<Vec<ReceivedSpan>>>,
    _runtime: tokio::runtime::Runtime,
}

impl OtlpReceiver {
    fn start() -> Self {
        use opentelemetry_proto::tonic::collector::trace::v1::{
            ExportTraceServiceRequest, ExportTraceServiceResponse,
        };
        use prost::Message as _;

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let spans = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let store = spans.clone();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let store = store.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).unwrap();
                    let mut spans = store.lock().unwrap();
                    for span in request
                        .resource_spans
                        .iter()
                        .flat_map(|r| &r.scope_spans)
                        .flat_map(|s| &s.spans)
                    {
                        spans.push(ReceivedSpan {
                            name: span.name.clone(),
                            trace_id: hex(&span.trace_id),
                            span_id: hex(&span.span_id),
                            parent_span_id: hex(&span.parent_span_id),
                        });
                    }
                    ExportTraceServiceResponse::default().encode_to_vec()
                }
            }),
        );
        runtime.spawn(async move { axum::serve(listener, app).await });
        Self {
            port,
            spans,
            _runtime: runtime,
        }
    }

    fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().unwrap().clone()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A config with the Python test server (its `meta` tool echoes the `_meta` it got) and
/// traces exported to `receiver`, with `tracing` (indented lines) added to the tracing
/// section.
fn traced_py_server(receiver: &OtlpReceiver, tracing: &str) -> muster_tests::ConfigDir {
    let py_server = muster_tests::workspace_root()
        .join("crates/muster-aggregator/tests/fixtures/py_server.py")
        .display()
        .to_string();
    MusterConfig::new()
        .stdio_server("py", deps::python().unwrap(), [py_server])
        .expect_tool("x_py_meta")
        .config_section(&format!(
            "observability:\n  tracing:\n    enabled: true\n{tracing}    endpoint: http://127.0.0.1:{}\n",
            receiver.port
        ))
        .write()
        .unwrap()
}

#[test]
fn a_call_tool_is_traced_with_its_inner_call_and_the_backend_gets_the_traceparent() {
    let receiver = OtlpReceiver::start();
    let dir = traced_py_server(&receiver, "");
    let mut muster = dir.start().unwrap();

    // The caller's trace context in `_meta` (SEP-414).
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let client = muster.client().unwrap();
    let result = client
        .request(
            "tools/call",
            serde_json::json!({
                "name": "call_tool",
                "arguments": {"name": "x_py_meta", "arguments": {}},
                "_meta": {"traceparent": format!("00-{trace_id}-{caller_span}-01")},
            }),
        )
        .unwrap();
    let envelope = muster_tests::Envelope::from_call_tool_result(&result).unwrap();
    let seen: Value = serde_json::from_str(envelope.text()).unwrap();
    let upstream = seen["traceparent"].as_str().unwrap().to_owned();
    let parts: Vec<&str> = upstream.split('-').collect();
    assert_eq!(parts.len(), 4, "{upstream}");
    assert_eq!(
        parts[1], trace_id,
        "the backend continues the caller's trace"
    );
    assert_ne!(
        parts[2], caller_span,
        "the backend's parent is muster's span"
    );

    // The same from an HTTP `traceparent` header.
    let header_trace = "0af7651916cd43dd8448eb211c80319c";
    let header_client = muster_tests::McpClient::connect_with_headers(
        &dir.mcp_url(),
        &[(
            "traceparent",
            &format!("00-{header_trace}-b7ad6b7169203331-01"),
        )],
    )
    .unwrap();
    // The first call may beat the session's `notifications/initialized` and take the full
    // path; the later ones take the lean path of an initialized session. Both honour it.
    for _ in 0..3 {
        let envelope = header_client
            .call("x_py_meta", serde_json::json!({}))
            .unwrap();
        let seen: Value = serde_json::from_str(envelope.text()).unwrap();
        assert!(
            seen["traceparent"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("00-{header_trace}-"))),
            "{seen}"
        );
    }

    // Stopping muster flushes the spans it holds.
    muster.terminate(muster_tests::TERM_GRACE).unwrap();
    let spans = eventually("the spans", Duration::from_secs(10), || {
        let spans = receiver.spans();
        spans
            .iter()
            .any(|s| s.trace_id == trace_id && s.name == "tools/call meta")
            .then_some(spans)
    });
    let in_trace: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    let meta = in_trace
        .iter()
        .find(|s| s.name == "tools/call call_tool")
        .unwrap_or_else(|| panic!("{in_trace:#?}"));
    assert_eq!(meta.parent_span_id, caller_span, "{in_trace:#?}");
    let inner = in_trace
        .iter()
        .find(|s| s.name == "tools/call meta")
        .unwrap_or_else(|| panic!("{in_trace:#?}"));
    assert_eq!(inner.parent_span_id, meta.span_id, "{in_trace:#?}");
    assert_eq!(
        parts[2], inner.span_id,
        "the backend's parent is the inner span"
    );
    // With the context in the header, the front door's HTTP span sits between the caller
    // and the meta-tool span, on the rmcp path and the lean path alike.
    let in_header_trace: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.trace_id == header_trace)
        .collect();
    let http_spans: Vec<&&ReceivedSpan> = in_header_trace
        .iter()
        .filter(|s| s.name == "POST /mcp")
        .collect();
    assert!(!http_spans.is_empty(), "{in_header_trace:#?}");
    assert!(
        http_spans
            .iter()
            .all(|s| s.parent_span_id == "b7ad6b7169203331"),
        "{in_header_trace:#?}"
    );
    let calls: Vec<&&ReceivedSpan> = in_header_trace
        .iter()
        .filter(|s| s.name == "tools/call call_tool")
        .collect();
    assert_eq!(calls.len(), 3, "{in_header_trace:#?}");
    for call in calls {
        assert!(
            http_spans.iter().any(|h| h.span_id == call.parent_span_id),
            "{in_header_trace:#?}"
        );
    }
}

#[test]
fn unsampled_calls_make_no_spans_and_a_sampled_parent_is_followed() {
    let receiver = OtlpReceiver::start();
    let dir = traced_py_server(&receiver, "    sampleRatio: 0\n");
    let mut muster = dir.start().unwrap();

    // No parent and a ratio of 0: the calls are not traced, and the backend gets a
    // trace context that says so.
    let client = muster.client().unwrap();
    for _ in 0..5 {
        let envelope = client.call("x_py_meta", serde_json::json!({})).unwrap();
        let seen: Value = serde_json::from_str(envelope.text()).unwrap();
        if let Some(upstream) = seen["traceparent"].as_str() {
            assert!(upstream.ends_with("-00"), "{upstream}");
        }
    }
    // A caller whose trace is sampled is followed whatever the ratio.
    let sampled_trace = "0af7651916cd43dd8448eb211c80319c";
    let sampled = muster_tests::McpClient::connect_with_headers(
        &dir.mcp_url(),
        &[(
            "traceparent",
            &format!("00-{sampled_trace}-b7ad6b7169203331-01"),
        )],
    )
    .unwrap();
    for _ in 0..3 {
        sampled.call("x_py_meta", serde_json::json!({})).unwrap();
    }

    muster.terminate(muster_tests::TERM_GRACE).unwrap();
    let spans = eventually("the sampled spans", Duration::from_secs(10), || {
        let spans = receiver.spans();
        (spans
            .iter()
            .filter(|s| s.trace_id == sampled_trace && s.name == "tools/call meta")
            .count()
            == 3)
            .then_some(spans)
    });
    let others: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.trace_id != sampled_trace)
        .collect();
    assert!(others.is_empty(), "unsampled calls made spans: {others:#?}");
}

#[test]
fn one_json_line_per_call_without_arguments_or_results() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .config_section("observability:\n  logs:\n    format: json\n    calls: true\n")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let secret = "sk-call-log-secret-4711";
    let envelope = client
        .call("x_everything_echo", serde_json::json!({"message": secret}))
        .unwrap();
    assert!(envelope.text().contains(secret));
    let failed = client
        .call("x_everything_no_such_tool", serde_json::json!({}))
        .unwrap();
    assert!(failed.is_error);

    let lines: Vec<Value> = eventually("the call line", Duration::from_secs(10), || {
        let lines: Vec<Value> = muster
            .log()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["target"] == "muster::call")
            .collect();
        (!lines.is_empty()).then_some(lines)
    });
    assert_eq!(lines.len(), 1, "only resolved calls are logged: {lines:#?}");
    let fields = &lines[0]["fields"];
    assert_eq!(lines[0]["level"], "INFO");
    assert_eq!(fields["message"], "tool call");
    assert_eq!(fields["tool"], "echo");
    assert_eq!(fields["server"], "everything");
    assert_eq!(fields["outcome"], "ok");
    assert!(
        fields["duration_ms"].as_f64().is_some_and(|d| d > 0.0),
        "{fields}"
    );
    assert!(
        !muster.log().contains(secret),
        "arguments and results stay out of logs"
    );
}
