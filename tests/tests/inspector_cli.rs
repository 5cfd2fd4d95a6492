//! The MCP Inspector's CLI (`mcp-inspector --cli`, on Node 22) as a client of `muster serve`
//! over streamable HTTP, with server-everything behind muster over stdio.

#![allow(missing_docs, clippy::unwrap_used)]

use std::process::Command;

use muster_tests::{Envelope, META_TOOLS, MusterConfig, deps};
use serde_json::Value;

/// Runs `mcp-inspector --cli <url> <args...>` and parses what it prints as JSON. `HOME` is a
/// throwaway directory: the Inspector keeps its state under `~/.mcp-inspector`.
fn inspector(url: &str, args: &[&str]) -> Value {
    let bin = deps::node22_bin_dir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(bin.join("mcp-inspector"))
        .arg("--cli")
        .arg(url)
        .args(args)
        .env("PATH", deps::path_with(&bin).unwrap())
        .env("HOME", home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mcp-inspector {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

#[test]
fn inspector_lists_meta_tools_and_calls_echo_through_call_tool() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let url = muster.mcp_url();

    let listed = inspector(&url, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, META_TOOLS);

    // `--tool-arg key=value` parses the value as JSON when it can, so `arguments` arrives as
    // an object.
    let called = inspector(
        &url,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "call_tool",
            "--tool-arg",
            "name=x_everything_echo",
            "--tool-arg",
            r#"arguments={"message":"hi"}"#,
        ],
    );
    assert_ne!(called["isError"], true, "{called}");
    let envelope = Envelope::from_call_tool_result(&called).unwrap();
    assert!(!envelope.is_error, "{}", envelope.raw);
    assert_eq!(envelope.text(), "Echo: hi");
}
