//! `sse-bench`, the legacy SSE baseline of `tests/benches/transport_variants.py`: its server
//! speaks the transport (endpoint event, `202` then the reply on the stream, `400` / `404`,
//! a session ending with its stream), and its load generator counts good calls as ok, bad
//! ones as failed, in mcp-load's report and exit statuses.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use muster_tests::{eventually, free_port};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_sse-bench");

/// A running `sse-bench serve`, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Self {
        let port = free_port().expect("free port");
        let child = Command::new(BIN)
            .args(["serve", "--port", &port.to_string(), "--threads", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sse-bench serve starts");
        let server = Self { child, port };
        eventually("sse-bench serve listening", Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", port)).ok()
        })
        .expect("listening");
        server
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `sse-bench load` against `server` with `args`: its exit status and JSON report.
fn load(server: &Server, args: &[&str]) -> (i32, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report.json");
    let out = Command::new(BIN)
        .args(["load", "--url", &server.url("/sse"), "--warmup", "0"])
        .arg("--json")
        .arg(&report)
        .args(["--timeout", "5"])
        .args(args)
        .output()
        .expect("sse-bench load runs");
    let code = out.status.code().expect("exit status");
    let report = read_json(&report).unwrap_or_else(|| {
        panic!(
            "no report (exit {code}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, report)
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[test]
fn twenty_echo_calls_at_concurrency_four_all_succeed() {
    let server = Server::start();
    let (code, report) = load(
        &server,
        &[
            "-n",
            "20",
            "-c",
            "4",
            "--args",
            r#"{"message":"hello sse"}"#,
            "--expect",
            "hello sse",
        ],
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["calls"], 20, "{report:#}");
    assert_eq!(report["ok"], 20, "{report:#}");
    assert_eq!(report["failed"], 0, "{report:#}");
    assert_eq!(report["errors"], serde_json::json!({}), "{report:#}");
    assert_eq!(report["responses"]["sse"], 20, "{report:#}");
    assert_eq!(report["sessions"], 1);
    assert_eq!(report["concurrency"], 4);
    assert_eq!(report["mode"], "session");
    assert_eq!(report["negotiated_protocol_version"], "2024-11-05");
    assert!(
        report["latency_ms"]["p50"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0)
    );
}

#[test]
fn an_unknown_tool_and_a_wrong_message_are_failed_calls() {
    let server = Server::start();
    let (code, report) = load(&server, &["-n", "5", "-c", "2", "--tool", "nope"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        (report["ok"].as_u64(), report["failed"].as_u64()),
        (Some(0), Some(5))
    );
    assert_eq!(
        report["errors"]["JSON-RPC error -32602: tool not found"], 5,
        "{report:#}"
    );

    let (code, report) = load(
        &server,
        &["-n", "3", "--args", r#"{"message":"x"}"#, "--expect", "y"],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        (report["ok"].as_u64(), report["failed"].as_u64()),
        (Some(0), Some(3))
    );
    assert_eq!(
        report["errors"][r#"result text lacks "y": x"#], 3,
        "{report:#}"
    );

    let (code, report) = load(&server, &["-n", "2", "--args", r#"{"text":"x"}"#]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["failed"], 2, "{report:#}");
    assert_eq!(
        report["errors"]["tool result isError: failed to deserialize parameters: missing field `message`"],
        2,
        "{report:#}"
    );
}

#[test]
fn a_server_that_cannot_be_reached_is_a_setup_failure() {
    let port = free_port().expect("free port");
    let out = Command::new(BIN)
        .args(["load", "--url", &format!("http://127.0.0.1:{port}/sse")])
        .args(["-n", "1", "--timeout", "2"])
        .output()
        .expect("sse-bench load runs");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
}

/// The first whole event of a stream: its `event:` and `data:` fields.
fn next_event(stream: &mut impl std::io::Read, buf: &mut Vec<u8>) -> (String, String) {
    loop {
        if let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 2);
            let field = |name: &str| {
                event
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim_start().to_owned())
                    .unwrap_or_default()
            };
            return (field("event:"), field("data:"));
        }
        let mut chunk = [0_u8; 4096];
        let n = stream.read(&mut chunk).expect("reading the stream");
        assert!(n > 0, "the stream ended");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn the_server_speaks_legacy_sse_and_forgets_a_session_with_its_stream() {
    let server = Server::start();
    let http = reqwest::blocking::Client::new();
    let mut stream = http
        .get(server.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .expect("GET /sse");
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .is_ok_and(|t| t.starts_with("text/event-stream"))
    );
    let mut buf = Vec::new();
    let (event, endpoint) = next_event(&mut stream, &mut buf);
    assert_eq!(event, "endpoint");
    assert!(endpoint.starts_with("/messages?sessionId="), "{endpoint}");
    let messages = server.url(&endpoint);
    let post = |url: &str, body: &str| {
        http.post(url)
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .expect("POST")
            .status()
            .as_u16()
    };

    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    assert_eq!(post(&messages, init), 202);
    let (event, data) = next_event(&mut stream, &mut buf);
    assert_eq!(event, "message");
    let reply: Value = serde_json::from_str(&data).expect("JSON reply");
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        reply["result"]["capabilities"]["tools"],
        serde_json::json!({})
    );

    assert_eq!(
        post(
            &messages,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ),
        202
    );
    let list = r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#;
    assert_eq!(post(&messages, list), 202);
    let (_, data) = next_event(&mut stream, &mut buf);
    let reply: Value = serde_json::from_str(&data).expect("JSON reply");
    assert_eq!(reply["id"], "l", "the notification got no reply: {reply}");
    assert_eq!(reply["result"]["tools"][0]["name"], "echo");
    assert_eq!(reply["result"]["tools"][1]["name"], "sleep_ms");

    assert_eq!(post(&messages, "{not json"), 400);
    assert_eq!(post(&server.url("/messages"), init), 400);
    assert_eq!(
        post(&server.url("/messages?sessionId=nosuchsession"), init),
        404
    );

    drop(stream);
    eventually(
        "the session forgotten once its stream is dropped",
        Duration::from_secs(5),
        || (post(&messages, init) == 404).then_some(()),
    )
    .expect("session ended");
}
