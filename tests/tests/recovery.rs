//! Health checks and automatic recovery of `muster serve`, as its events tell them: a stdio
//! server whose process dies in a call is started again by the recovery loop
//! (`MUSTER_ORCHESTRATOR_RETRY_INTERVAL`, 1 s under test) with `MCPServerRecoveryStarted`
//! and `MCPServerRecoverySucceeded`; a server that stops answering pings while connected
//! gets one `MCPServerHealthCheckFailed` per healthy → unhealthy transition.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{McpClient, MusterConfig, deps, workspace_root};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The Python fixture server (FastMCP over stdio), with a ten-second timeout (it bounds the
/// start and each ping).
fn py_server(name: &str) -> String {
    let script = workspace_root().join("crates/muster-aggregator/tests/fixtures/py_server.py");
    json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": name},
        "spec": {
            "type": "stdio",
            "autoStart": true,
            "timeout": 10,
            "command": deps::python().unwrap().display().to_string(),
            "args": [script.display().to_string()],
        },
    })
    .to_string()
}

/// The reasons of the events about `server`, oldest first.
fn reasons(client: &McpClient, server: &str) -> Vec<String> {
    let envelope = client
        .call(
            "core_events",
            json!({"resourceType": "MCPServer", "resourceName": server, "limit": 200}),
        )
        .unwrap();
    let text = envelope.content[0]["text"].as_str().unwrap_or("[]");
    let events: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
    let mut reasons: Vec<String> = events
        .iter()
        .filter_map(|e| e["reason"].as_str().map(str::to_owned))
        .collect();
    reasons.reverse();
    reasons
}

/// Polls `reasons` until `done` holds or `limit` passes; returns the last reasons seen.
fn wait_for(
    client: &McpClient,
    server: &str,
    limit: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let seen = reasons(client, server);
        if done(&seen) || Instant::now() >= deadline {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn count(reasons: &[String], reason: &str) -> usize {
    reasons.iter().filter(|r| *r == reason).count()
}

#[test]
fn a_crashed_stdio_server_is_recovered_with_events() {
    let dir = MusterConfig::new()
        .file("mcpservers/py.yaml", py_server("py"))
        .expect_tool("x_py_add")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();

    let crashed = client.call("x_py_crash", json!({}));
    assert!(
        crashed.map(|e| e.is_error).unwrap_or(true),
        "a crashing call must fail"
    );
    let seen = wait_for(&client, "py", Duration::from_secs(30), |r| {
        count(r, "MCPServerRecoverySucceeded") >= 1
    });
    let started = seen.iter().position(|r| r == "MCPServerRecoveryStarted");
    let succeeded = seen.iter().position(|r| r == "MCPServerRecoverySucceeded");
    assert!(
        matches!((started, succeeded), (Some(a), Some(b)) if a < b),
        "recovery started, then succeeded, expected; events: {seen:?}\n{}",
        muster.log()
    );
    assert_eq!(count(&seen, "MCPServerRecoveryFailed"), 0, "{seen:?}");

    // The recovered server answers calls again.
    let sum = client.call("x_py_add", json!({"a": 2, "b": 3})).unwrap();
    assert!(!sum.is_error, "{:?}", sum.raw);
}

#[test]
fn a_server_that_stops_answering_pings_fails_its_health_check_once() {
    let dir = MusterConfig::new()
        .file("mcpservers/py.yaml", py_server("py"))
        .expect_tool("x_py_add")
        .write()
        .unwrap();
    let mut muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let children = muster.children();
    assert!(!children.is_empty(), "the stdio server runs as a child");
    let signal = |sig: &str| {
        for child in &children {
            let status = std::process::Command::new("kill")
                .args([sig, &child.pid().to_string()])
                .status()
                .unwrap();
            assert!(status.success(), "kill {sig} {child:?}");
        }
    };

    // Stopped, the process keeps its pipes open but answers nothing: pings time out.
    signal("-STOP");
    let seen = wait_for(&client, "py", Duration::from_secs(40), |r| {
        count(r, "MCPServerHealthCheckFailed") >= 1
    });
    // More failed pings are the same unhealthy spell: no second event.
    std::thread::sleep(Duration::from_secs(12));
    let seen_later = reasons(&client, "py");
    signal("-CONT");
    assert_eq!(
        count(&seen, "MCPServerHealthCheckFailed"),
        1,
        "one health-check failure expected; events: {seen:?}\n{}",
        muster.log()
    );
    assert_eq!(
        count(&seen_later, "MCPServerHealthCheckFailed"),
        1,
        "{seen_later:?}"
    );

    // Answering again, the server serves calls.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let sum = client.call("x_py_add", json!({"a": 1, "b": 1}));
        if sum.as_ref().is_ok_and(|e| !e.is_error) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not come back: {sum:?}\n{}",
            muster.log()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}
