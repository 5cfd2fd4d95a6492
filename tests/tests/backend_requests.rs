//! What a client reaches of a real backend besides its tools, through `muster serve` with
//! server-everything behind it over stdio: resources and prompts (meta-tools and the
//! top-level methods), the JSON-RPC errors of malformed requests, and the requests the
//! backend sends to the calling client during a call (sampling, elicitation), answered by
//! the official Python SDK (`tests/fixtures/py_relay_client.py`).

#![allow(missing_docs, clippy::unwrap_used)]

use std::process::Command;

use muster_tests::{
    ConfigDir, Envelope, HANDSHAKE_PROTOCOL_VERSION, McpClient, MusterConfig, deps, fixture,
};
use serde_json::{Value, json};

const SIMPLE_PROMPT: &str = "x_everything_simple-prompt";

fn muster_with_everything() -> ConfigDir {
    MusterConfig::new()
        .stdio_server("everything", deps::server_everything().unwrap(), ["stdio"])
        .expect_tool("x_everything_echo")
        .expect_tool("x_everything_trigger-sampling-request")
        .write()
        .unwrap()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The URI of the first resource `list_resources` reports.
fn some_resource(client: &McpClient) -> String {
    let listed = client.call_tool("list_resources", json!({})).unwrap();
    let listed: Value = serde_json::from_str(text(&listed)).unwrap();
    listed[0]["uri"].as_str().unwrap().to_owned()
}

#[test]
fn meta_tools_read_resources_and_render_prompts_of_a_real_backend() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();

    let uri = some_resource(&client);
    let got = client
        .call_tool("get_resource", json!({"uri": uri}))
        .unwrap();
    assert_ne!(got["isError"], true, "{got}");
    assert!(
        !text(&got).is_empty(),
        "get_resource {uri} was empty: {got}"
    );

    let got = client
        .call_tool("get_prompt", json!({"name": SIMPLE_PROMPT}))
        .unwrap();
    assert_ne!(got["isError"], true, "{got}");
    let messages: Value = serde_json::from_str(text(&got)).unwrap();
    assert!(
        messages[0]["content"]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{messages}"
    );

    let missing = client
        .call_tool("get_resource", json!({"uri": "demo://no/such/resource"}))
        .unwrap();
    assert_eq!(missing["isError"], true, "{missing}");
    assert_eq!(
        text(&missing),
        "Resource not found: demo://no/such/resource"
    );
    let missing = client
        .call_tool("get_prompt", json!({"name": "x_everything_nope"}))
        .unwrap();
    assert_eq!(missing["isError"], true, "{missing}");
    assert_eq!(text(&missing), "Prompt not found: x_everything_nope");
}

#[test]
fn top_level_prompts_get_and_resources_read_reach_the_backend() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();

    let uri = some_resource(&client);
    let read = client
        .request("resources/read", json!({"uri": uri}))
        .unwrap();
    assert!(
        read["contents"].as_array().is_some_and(|c| !c.is_empty()),
        "{read}"
    );
    let prompt = client
        .request("prompts/get", json!({"name": SIMPLE_PROMPT}))
        .unwrap();
    assert!(
        prompt["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{prompt}"
    );

    let error = client
        .request("prompts/get", json!({"name": "x_everything_nope"}))
        .unwrap_err();
    assert!(format!("{error:#}").contains("-32602"), "{error:#}");
    let error = client
        .request("resources/read", json!({"uri": "demo://no/such/resource"}))
        .unwrap_err();
    let error = format!("{error:#}");
    assert!(error.contains("-32002"), "{error}");
    assert!(error.contains("demo://no/such/resource"), "{error}");
}

/// POSTs `body` as it is and returns the status and the JSON answer.
fn post_raw(url: &str, session: Option<&str>, body: &str) -> (u16, Value) {
    let http = reqwest::blocking::Client::new();
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", HANDSHAKE_PROTOCOL_VERSION);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    // A JSON body, or an SSE stream whose data lines carry the message.
    let json = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .unwrap_or_else(|| json!({"raw": text}))
    });
    (status, json)
}

#[test]
fn malformed_requests_get_jsonrpc_errors() {
    let dir = MusterConfig::new().write().unwrap();
    let muster = dir.start().unwrap();
    let url = muster.mcp_url();

    let (status, answer) = post_raw(&url, None, "{\"jsonrpc\": \"2.0\", \"id\": 1,");
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");

    let client = muster.client().unwrap();
    let (status, answer) = post_raw(
        &url,
        client.session_id(),
        r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":123}}"#,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["id"], 41, "{answer}");
    // The session still works.
    assert!(
        client
            .list_tools()
            .unwrap()
            .contains(&"call_tool".to_owned())
    );
}

/// Runs the Python relay client: calls `tool` through `call_tool` and reports what the
/// client was asked.
fn relay_client(url: &str, tool: &str, arguments: Value) -> Value {
    let out = Command::new(deps::python().unwrap())
        .arg(fixture("py_relay_client.py"))
        .args([url, tool, &arguments.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "py_relay_client.py failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sampling_requests_of_a_backend_reach_the_calling_client() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let report = relay_client(
        &muster.mcp_url(),
        "x_everything_trigger-sampling-request",
        json!({"prompt": "tell me a joke", "maxTokens": 20}),
    );
    assert_eq!(
        report["asked"],
        json!(["sampling/createMessage"]),
        "{report}"
    );
    let envelope = Envelope::from_call_tool_result(&report["call"]).unwrap();
    assert!(!envelope.is_error, "{}", envelope.raw);
    let answer = envelope.raw.to_string();
    assert!(answer.contains("sampled: "), "{answer}");
    assert!(answer.contains("tell me a joke"), "{answer}");
    assert!(answer.contains("relay-test-model"), "{answer}");
}

#[test]
fn elicitation_requests_of_a_backend_reach_the_calling_client() {
    let dir = muster_with_everything();
    let muster = dir.start().unwrap();
    let report = relay_client(
        &muster.mcp_url(),
        "x_everything_trigger-elicitation-request",
        json!({}),
    );
    assert_eq!(report["asked"], json!(["elicitation/create"]), "{report}");
    let envelope = Envelope::from_call_tool_result(&report["call"]).unwrap();
    assert!(!envelope.is_error, "{}", envelope.raw);
    let answer = envelope.raw.to_string();
    assert!(answer.contains("accept"), "{answer}");
    assert!(answer.contains("Ada"), "{answer}");
}
