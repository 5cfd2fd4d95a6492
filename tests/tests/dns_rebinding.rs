//! The DNS-rebinding guard of `muster serve` with the default configuration: a web page
//! that makes a browser talk to muster under its own name (`Host: attacker.example`) or from
//! its own origin gets no session, so it cannot create and start a stdio server that runs a
//! command; configured `allowedHosts` add to the loopback names; the MCP endpoint answers on
//! its path only.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use muster_tests::{HANDSHAKE_PROTOCOL_VERSION, McpClient, MusterConfig};
use reqwest::blocking::Client;
use serde_json::{Value, json};

fn http() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "0"},
        },
    })
}

/// POSTs `body` to `url` with `headers`; `(status, session id, body)`.
fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Option<String>, String) {
    let mut request = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, session, response.text().unwrap_or_default())
}

/// The attack: a session under the attacker's Host/Origin, then a stdio server whose command
/// writes `marker`, then its start. Returns the status of every step it got to.
fn attack(url: &str, headers: &[(&str, &str)], marker: &Path) -> Vec<u16> {
    let mut statuses = Vec::new();
    let (status, session, _) = post(url, headers, &initialize());
    statuses.push(status);
    let Some(session) = session.filter(|_| status < 300) else {
        return statuses;
    };
    let mut with_session: Vec<(&str, &str)> = headers.to_vec();
    with_session.push(("mcp-session-id", &session));
    with_session.push(("mcp-protocol-version", HANDSHAKE_PROTOCOL_VERSION));
    let notify = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    statuses.push(post(url, &with_session, &notify).0);
    let script = format!("touch {}", marker.display());
    let create = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "call_tool", "arguments": {
            "name": "core_mcpserver_create",
            "arguments": {"name": "pwn", "type": "stdio", "command": "sh", "args": ["-c", script]},
        }},
    });
    statuses.push(post(url, &with_session, &create).0);
    let start = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "call_tool", "arguments": {
            "name": "core_service_start", "arguments": {"name": "pwn"},
        }},
    });
    statuses.push(post(url, &with_session, &start).0);
    statuses
}

#[test]
fn a_foreign_host_or_origin_cannot_run_a_command() {
    let dir = MusterConfig::new().write().unwrap();
    let muster = dir.start().unwrap();
    let url = muster.mcp_url();
    let marker = dir.path().join("pwned");

    for headers in [
        vec![
            ("host", "attacker.example"),
            ("origin", "http://attacker.example"),
        ],
        vec![("host", "attacker.example:8090")],
        // A rebinding page that only sets its origin (the browser's Host is the loopback one
        // when the page itself is served from a loopback port).
        vec![("origin", "http://attacker.example")],
        vec![("origin", "null")],
    ] {
        let statuses = attack(&url, &headers, &marker);
        assert_eq!(statuses, vec![403], "{headers:?}");
    }
    let (status, _, body) = post(
        &url,
        &[
            ("host", "attacker.example"),
            ("origin", "http://attacker.example"),
        ],
        &initialize(),
    );
    assert_eq!(status, 403);
    assert_eq!(body, r#"Forbidden: invalid Host header "attacker.example""#);
    let (status, _, body) = post(
        &url,
        &[("origin", "http://attacker.example")],
        &initialize(),
    );
    assert_eq!(status, 403);
    assert_eq!(
        body,
        r#"Forbidden: invalid Origin header "http://attacker.example""#
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "the attacker's command ran");

    // The loopback names, with and without a matching Origin, are served.
    let origin = format!("http://localhost:{}", dir.port());
    let client = McpClient::connect_with_headers(&url, &[("origin", &origin)]).unwrap();
    assert!(
        client
            .list_tools()
            .unwrap()
            .contains(&"call_tool".to_owned())
    );
    let host = format!("localhost:{}", dir.port());
    McpClient::connect_with_headers(&url, &[("host", &host)]).unwrap();
    McpClient::connect_with_headers(&url, &[("host", &format!("[::1]:{}", dir.port()))]).unwrap();
}

#[test]
fn the_mcp_endpoint_answers_on_its_path_only() {
    let dir = MusterConfig::new().write().unwrap();
    let muster = dir.start().unwrap();
    let base = format!("http://127.0.0.1:{}", dir.port());
    for path in ["/", "/api", "/mcp/", "/mcpx", "/anything/mcp"] {
        let (status, session, _) = post(&format!("{base}{path}"), &[], &initialize());
        assert_eq!(status, 404, "{path}");
        assert_eq!(session, None, "{path}");
    }
    let (status, session, _) = post(&muster.mcp_url(), &[], &initialize());
    assert_eq!(status, 200);
    assert!(session.is_some());
    let health = http().get(format!("{base}/health")).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);
}

#[test]
fn configured_hosts_add_to_the_loopback_names() {
    let dir = MusterConfig::new()
        .aggregator_setting("allowedHosts: [muster.example.com]")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let url = muster.mcp_url();
    McpClient::connect_with_headers(
        &url,
        &[
            ("host", "muster.example.com"),
            ("origin", "https://muster.example.com"),
        ],
    )
    .unwrap();
    // Loopback still works: the start above already waited on it, once more explicitly.
    McpClient::connect_with_headers(&url, &[("host", "localhost")]).unwrap();
    let marker = dir.path().join("pwned");
    let statuses = attack(
        &url,
        &[
            ("host", "attacker.example"),
            ("origin", "http://attacker.example"),
        ],
        &marker,
    );
    assert_eq!(statuses, vec![403]);
    let statuses = attack(
        &url,
        &[
            ("host", "muster.example.com"),
            ("origin", "http://attacker.example"),
        ],
        &marker,
    );
    assert_eq!(statuses, vec![403]);
    assert!(!marker.exists());
}
