//! `muster serve --example` serves the example configuration built into the binary from a
//! temporary directory: its workflows are there, the checkout's `examples/config` is never
//! written (status write-back goes to the copy), and the copy is gone after muster stops.

#![allow(missing_docs, clippy::unwrap_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use muster_tests::{McpClient, muster_bin, workspace_root};
use serde_json::json;
use tokio::time::Instant;

/// Every file under `dir` with its bytes, sorted by path.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_built_in_example_is_served_from_a_copy() {
    let checkout = workspace_root().join("examples/config");
    let before = snapshot(&checkout);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(muster_bin().unwrap())
        .args(["serve", "--example", "--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let url = format!("http://localhost:{port}/mcp");
    let deadline = Instant::now() + Duration::from_secs(60);
    let workflows = loop {
        let listed = McpClient::connect(&url)
            .and_then(|c| c.call("core_workflow_list", json!({})))
            .map(|e| e.text().to_owned());
        match listed {
            Ok(text) if text.contains("greet-all") => break text,
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            other => panic!("the example's workflows never appeared: {other:?}"),
        }
    };
    for name in [
        "collect-inventory",
        "greet-all",
        "inventory-page",
        "sum-and-check",
        "weather-report",
    ] {
        assert!(workflows.contains(name), "{name} missing: {workflows}");
    }
    // Give the status write-back time to run against the copy.
    std::thread::sleep(Duration::from_secs(2));

    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let exit = child.wait().unwrap();
    assert!(exit.success(), "muster exited with {exit}: {stderr}");

    let copy = stderr
        .split("(config ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no config directory announced: {stderr}"));
    assert!(
        copy.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("muster-example-")),
        "{copy:?}"
    );
    assert!(!copy.exists(), "{} was left behind", copy.display());
    assert!(
        snapshot(&checkout) == before,
        "serving the example changed files under examples/config"
    );
}
