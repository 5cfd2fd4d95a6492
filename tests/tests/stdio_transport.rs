//! `aggregator.transport: stdio`: `muster serve` speaks MCP on its own stdin and stdout —
//! the handshake, the meta-tools and a real backend's tool through `call_tool` — opens no
//! port, keeps its logs on stderr, and ends (stopping its servers) when stdin closes.

#![allow(missing_docs, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use muster_tests::{MusterConfig, deps, muster_bin};
use serde_json::{Value, json};

/// Reads lines from muster's stdout on a thread, so every wait is bounded.
fn lines(stdout: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The response to request `id`, skipping notifications; every stdout line must be JSON.
fn response(rx: &mpsc::Receiver<String>, id: u64) -> Value {
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("no response from muster on stdout");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries a non-JSON line ({e}): {line}"));
        if message["id"] == json!(id) {
            return message;
        }
    }
}

#[test]
fn serve_speaks_mcp_on_stdio() {
    let dir = MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .aggregator_setting("transport: stdio")
        .write()
        .unwrap();
    let mut child = Command::new(muster_bin().unwrap())
        .arg("serve")
        .arg("--config-path")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let rx = lines(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stdio-test", "version": "1"}}}),
    );
    let init = response(&rx, 1);
    assert_eq!(
        init["result"]["serverInfo"]["name"], "muster-aggregator",
        "{init}"
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = response(&rx, 2);
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"call_tool"), "{names:?}");

    // The backend comes up in the background; call its echo until it answers.
    let mut id = 3;
    let echoed = loop {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "call_tool",
            "arguments": {"name": "x_everything_echo", "arguments": {"message": "over stdio"}}}}),
        );
        let reply = response(&rx, id);
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if text.contains("over stdio") {
            break text;
        }
        assert!(id < 100, "the backend's tool never answered: {reply}");
        id += 1;
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(echoed.contains("Echo: over stdio"), "{echoed}");

    // No port is open.
    assert!(
        TcpStream::connect(("127.0.0.1", dir.port())).is_err(),
        "stdio transport must not listen on {}",
        dir.port()
    );

    // Closing stdin ends muster.
    drop(stdin);
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let status = child.wait_with_output().unwrap();
        done_tx.send(status).ok();
    });
    let output = done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("muster did not exit after stdin closed");
    assert!(
        output.status.success(),
        "exit status {}; stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}
