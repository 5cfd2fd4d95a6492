//! The official Python SDK as a client of `muster serve`, with server-everything behind
//! muster over stdio: over streamable HTTP, the initialize handshake and the newest protocol
//! the installed SDK offers; over legacy SSE, one call and 20 at once
//! (`tests/fixtures/py_client.py`).

#![allow(missing_docs, clippy::unwrap_used)]

use std::process::Command;

use muster_tests::{ConfigDir, Envelope, META_TOOLS, MusterConfig, deps, fixture};
use serde_json::{Value, json};

fn muster_with_everything() -> ConfigDir {
    MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .write()
        .unwrap()
}

/// Runs the fixture and returns its JSON report.
fn py_client(url: &str, mode: &str) -> Value {
    let out = Command::new(deps::python().unwrap())
        .arg(fixture("py_client.py"))
        .args([url, mode])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "py_client.py {mode} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn assert_meta_tools_and_echo(report: &Value) {
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools, META_TOOLS, "tools/list: {report}");

    let call = &report["call"];
    assert_ne!(call["isError"], true, "call_tool failed: {call}");
    let envelope = Envelope::from_call_tool_result(call).unwrap();
    assert!(!envelope.is_error, "{}", envelope.raw);
    assert_eq!(envelope.text(), "Echo: hi");
}

#[test]
fn python_sdk_initialize_handshake() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let report = py_client(&muster.mcp_url(), "legacy");
    assert_meta_tools_and_echo(&report);
    // The handshake era: a dated version older than the SDK's newest (modern) one.
    let version = report["protocol_version"].as_str().unwrap();
    assert!(version.starts_with("20"), "negotiated {version:?}");
    assert_ne!(
        report["protocol_version"], report["newest_version"],
        "{report}"
    );
}

#[test]
fn python_sdk_newest_protocol() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let report = py_client(&muster.mcp_url(), "newest");
    assert_meta_tools_and_echo(&report);
    assert_eq!(
        report["protocol_version"], report["newest_version"],
        "the SDK (mcp {}) fell back from its newest protocol: {report}",
        report["sdk"]
    );
}

#[test]
fn python_sdk_legacy_sse_client() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let sse_url = muster.mcp_url().replace("/mcp", "/sse");
    let report = py_client(&sse_url, "sse");
    assert_meta_tools_and_echo(&report);
    assert_eq!(report["concurrent_ok"], true, "{report}");
    // A call with a progress token: every step's progress before the result.
    assert_eq!(report["progress"], json!([1.0, 2.0, 3.0]), "{report}");
    assert!(
        report["long_running"]
            .as_str()
            .is_some_and(|text| text.starts_with("Long running operation completed")),
        "{report}"
    );
}
