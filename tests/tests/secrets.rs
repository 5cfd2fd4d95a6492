//! Secrets planted in a stdio server's `env`, a remote server's `headers` and the user,
//! password and query of its URL never leave `muster serve --debug`: not in tool output,
//! `core_service_*` results, status written back to the definitions, the events file or the
//! log, even when a real server echoes them to stderr and into its errors, when the HTTP
//! client's errors quote the URL, and when a create carrying them is refused.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use muster_tests::{ConfigDir, McpClient, MusterConfig, deps};
use serde_json::{Value, json};
use tokio::time::Instant;

const STDIO_SECRET: &str = "stdio-env-secret-4f9a1c";
const URL_PASSWORD: &str = "url-password-7d2e";
const QUERY_SECRET: &str = "query-token-b81f03";
const HEADER_SECRET: &str = "header-secret-c55e9a";
const REFUSED_ENV: &str = "refused-env-secret-91aa";
const REFUSED_HEADER: &str = "refused-header-secret-0b7c";

const ALL: [&str; 6] = [
    STDIO_SECRET,
    URL_PASSWORD,
    QUERY_SECRET,
    HEADER_SECRET,
    REFUSED_ENV,
    REFUSED_HEADER,
];

/// server-everything behind a shell that prints the token to stderr first, as careless
/// servers print their environment.
fn leaky_server(name: &str, prefix: Option<&str>, token: &str) -> String {
    let everything = deps::server_everything().unwrap().display().to_string();
    let script =
        format!("echo \"{name} starting, API_TOKEN=$API_TOKEN\" >&2; exec '{everything}' stdio");
    let mut spec = json!({
        "type": "stdio",
        "autoStart": true,
        "command": "sh",
        "args": ["-c", script],
        "env": {"API_TOKEN": token},
    });
    if let Some(prefix) = prefix {
        spec["toolPrefix"] = json!(prefix);
    }
    muster_tests::mcp_server_document(name, spec)
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn remote_server(port: u16) -> String {
    json!({
        "apiVersion": "muster.giantswarm.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": "remote"},
        "spec": {
            "type": "streamable-http",
            "autoStart": true,
            "url": format!("http://robot:{URL_PASSWORD}@127.0.0.1:{port}/mcp?token={QUERY_SECRET}"),
            "headers": {"X-Api-Key": HEADER_SECRET},
            "timeout": 5,
        },
    })
    .to_string()
}

fn eventually(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    done()
}

/// The `status:` blocks of every definition under `dir`: what muster wrote back (the specs
/// above them hold the planted values as the user wrote them).
fn written_statuses(dir: &Path) -> String {
    let mut out = String::new();
    for kind in ["mcpservers", "workflows"] {
        let Ok(entries) = std::fs::read_dir(dir.join(kind)) else {
            continue;
        };
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if let Some((_, status)) = text.split_once("\nstatus:") {
                out.push_str(status);
                out.push('\n');
            }
        }
    }
    out
}

/// Every file under `dir`, as text.
fn all_text_under(dir: &Path) -> String {
    let mut out = String::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.push_str(&all_text_under(&path));
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push_str(&String::from_utf8_lossy(&bytes));
                out.push('\n');
            }
        }
    }
    out
}

fn assert_no_secret(place: &str, text: &str) {
    for secret in ALL {
        assert!(
            !text.contains(secret),
            "{secret} leaked into {place}:\n{text}"
        );
    }
}

fn service_status(client: &McpClient, name: &str) -> Value {
    let reply = client
        .call("core_service_status", json!({"name": name}))
        .unwrap();
    assert_no_secret("core_service_status", &reply.raw.to_string());
    reply.json().unwrap_or(Value::Null)
}

#[test]
fn planted_secrets_never_reach_outputs() {
    let dir = MusterConfig::new()
        .file(
            "mcpservers/leaky.yaml",
            leaky_server("leaky", None, STDIO_SECRET),
        )
        .file("mcpservers/remote.yaml", remote_server(closed_port()))
        .expect_tool("x_leaky_echo")
        .write()
        .unwrap();
    let mut muster = dir.start_with_args(&["--debug"]).unwrap();
    let client = muster.client().unwrap();

    // Echoed by the server: its own data, passed on as it is (only errors are redacted).
    let reply = client
        .call("x_leaky_echo", json!({"message": "no secret here"}))
        .unwrap();
    assert_eq!(reply.text(), "Echo: no secret here");

    // A refused create: its env and header values are logged nowhere.
    let refused = client
        .call(
            "core_mcpserver_create",
            json!({
                "name": "refused",
                "type": "streamable-http",
                "url": "https://mcp.example.com/mcp",
                "env": {"TOKEN": REFUSED_ENV},
                "headers": {"Authorization": format!("Bearer {REFUSED_HEADER}")},
                "timeout": 0,
            }),
        )
        .unwrap();
    assert!(refused.is_error, "{:?}", refused.raw);
    assert_no_secret("the refusal", &refused.raw.to_string());

    // Status of both servers: env and header values hidden, errors redacted.
    let leaky = service_status(&client, "leaky");
    assert_eq!(
        leaky["metadata"]["env"]["API_TOKEN"], "[redacted]",
        "{leaky}"
    );
    let remote_failed = eventually(Duration::from_secs(30), || {
        service_status(&client, "remote")["error"]
            .as_str()
            .is_some_and(|e| !e.is_empty())
    });
    assert!(remote_failed, "remote never reported its error");
    let remote = service_status(&client, "remote");
    assert_eq!(remote["metadata"]["headers"]["X-Api-Key"], "[redacted]");

    // The server dies; the stderr tail with its token reaches lastError and events.
    let children = muster.children();
    assert!(!children.is_empty(), "no stdio child");
    for child in &children {
        child.signal_group(nix::sys::signal::Signal::SIGKILL);
    }
    let crashed = eventually(Duration::from_secs(30), || {
        service_status(&client, "leaky")["error"]
            .as_str()
            .is_some_and(|e| e.contains("starting, API_TOKEN="))
    });
    assert!(
        crashed,
        "the exit never reached lastError: {}",
        service_status(&client, "leaky")
    );
    let error = service_status(&client, "leaky")["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(error.contains("API_TOKEN=[redacted]"), "{error}");
    let list = client.call("core_service_list", json!({})).unwrap();
    assert_no_secret("core_service_list", &list.raw.to_string());
    let events = client.call("core_events", json!({"limit": 200})).unwrap();
    assert_no_secret("core_events", &events.raw.to_string());

    // Let the status writer and the event log catch up, then read every file muster wrote.
    std::thread::sleep(Duration::from_secs(2));
    let statuses = written_statuses(dir.path());
    assert!(
        statuses.contains("[redacted]"),
        "no redacted status: {statuses}"
    );
    assert_no_secret("the status written back", &statuses);
    let events = all_text_under(&dir.path().join("events"));
    assert!(events.contains("[redacted]"), "no redacted event: {events}");
    assert_no_secret("the events file", &events);
    let log = muster.log();
    assert!(log.contains("DEBUG"), "not a --debug log:\n{log}");
    assert_no_secret("the --debug log", &log);
}

fn condition<'a>(dir: &ConfigDir, server: &str, text: &'a mut String) -> &'a str {
    *text = std::fs::read_to_string(dir.path().join(format!("mcpservers/{server}.yaml")))
        .unwrap_or_default();
    text
}

#[test]
fn servers_sharing_a_tool_prefix_are_reported_on_every_one() {
    let dir = MusterConfig::new()
        .file(
            "mcpservers/beta.yaml",
            leaky_server("beta", Some("shared"), "beta-token-1"),
        )
        .file(
            "mcpservers/alpha.yaml",
            leaky_server("alpha", Some("shared"), "alpha-token-1"),
        )
        .expect_tool("x_shared_echo")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let echo = client
        .call("x_shared_echo", json!({"message": "hi"}))
        .unwrap();
    assert_eq!(echo.text(), "Echo: hi");

    let mut text = String::new();
    let reported = eventually(Duration::from_secs(20), || {
        ["alpha", "beta"].iter().all(|s| {
            let status = condition(&dir, s, &mut text);
            status.contains("ToolPrefixConflict") && status.contains("alpha owns it")
        })
    });
    assert!(
        reported,
        "no ToolPrefixConflict condition:\n{}",
        condition(&dir, "beta", &mut text)
    );
    let events = client
        .call("core_events", json!({"limit": 200}))
        .unwrap()
        .raw
        .to_string();
    assert!(
        events.contains("MCPServerToolPrefixCollision"),
        "no collision event: {events}"
    );
}
