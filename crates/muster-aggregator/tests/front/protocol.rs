//! Transport and protocol basics: tools/list, serverInfo, sessions, /health, the Host guard.

use muster_aggregator::meta_tools::META_TOOL_NAMES;
use muster_aggregator::registry::Registry;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Fixed, Served, TestResult, json_text, tool};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_exactly_the_eleven_meta_tools_in_order() -> TestResult {
    let served = Served::start(crate::support::registry_with_upstream().await).await;
    let client = served.client().await;

    let tools = client.running.list_all_tools().await?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, META_TOOL_NAMES);
    let call_tool = tools.iter().find(|t| t.name == "call_tool").unwrap();
    assert_eq!(
        serde_json::to_value(&*call_tool.input_schema)?,
        json!({"type": "object",
               "properties": {
                   "name": {"type": "string", "description": "Name of the tool to call"},
                   "arguments": {"type": "object",
                                 "description": "Arguments to pass to the tool (as JSON object)"}},
               "required": ["name"]})
    );
    assert_eq!(
        call_tool.description.as_deref(),
        Some("Execute a tool with the given arguments")
    );

    let info = client.running.peer_info().unwrap();
    let server = info.server_info.as_ref().unwrap();
    assert_eq!(server.name, "muster-aggregator");
    assert_eq!(server.version, "9.9.9");
    let capabilities = &info.capabilities;
    assert_eq!(
        capabilities.tools.as_ref().and_then(|t| t.list_changed),
        Some(true)
    );
    assert_eq!(
        capabilities.prompts.as_ref().and_then(|p| p.list_changed),
        Some(true)
    );
    assert_eq!(
        capabilities.resources.as_ref().and_then(|r| r.list_changed),
        Some(true)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_direct_tool_calls_are_protocol_errors() -> TestResult {
    let served = Served::start(Registry::new()).await;
    let client = served.client().await;
    let params = rmcp::model::CallToolRequestParams::new("x_upstream_echo");
    let err = client.running.call_tool(params).await.unwrap_err();
    assert!(
        err.to_string().contains("tool 'x_upstream_echo' not found"),
        "{err}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_carry_the_mcp_session_id() -> TestResult {
    let registry = Registry::new();
    registry.set_core(Fixed::new(
        "core",
        vec![tool("core_whoami", "Session", json!({}))],
    ));
    let served = Served::start(registry).await;
    let client = served.client().await;
    let (is_error, text) = client.call_text("core_whoami", json!({})).await;
    assert!(!is_error);
    let body: serde_json::Value = serde_json::from_str(&text)?;
    let session = body["session"].as_str().unwrap();
    // A streamable HTTP session has an id of its own; only requests without one are
    // `default-user`.
    assert!(!session.is_empty());
    assert_ne!(session, "default-user");
    Ok(())
}

/// One raw HTTP/1.1 request; returns the status line and the body.
async fn raw(served: &Served, request: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(served.addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

fn post_initialize(host: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_ok_and_the_host_guard_refuses_foreign_hosts() -> TestResult {
    let served = Served::start(Registry::new()).await;

    let health = "GET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n";
    let (status, body) = raw(&served, health).await;
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, r#"{"status":"ok"}"#);

    let (status, body) = raw(&served, &post_initialize("evil.example:8090")).await;
    assert!(status.contains(" 403 "), "{status}");
    assert_eq!(
        body,
        r#"Forbidden: invalid Host header "evil.example:8090""#
    );

    let sse = "GET /sse HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n";
    let (status, _) = raw(&served, sse).await;
    assert!(status.contains(" 403 "), "{status}");

    let (status, body) = raw(
        &served,
        &post_initialize(&format!("localhost:{}", served.addr.port())),
    )
    .await;
    assert!(status.contains(" 200 "), "{status} {body}");
    assert!(body.contains("muster-aggregator"), "{body}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_exact_mcp_paths_reach_the_endpoints_and_the_rest_reach_the_router() -> TestResult
{
    let served = Served::start(Registry::new()).await;
    let host = format!("localhost:{}", served.addr.port());
    for path in ["/mcp/", "/MCP", "/mcp/x", "/", "/sse/", "/messages"] {
        let probe = post_initialize(&host).replacen("POST /mcp ", &format!("POST {path} "), 1);
        let (status, body) = raw(&served, &probe).await;
        assert!(status.contains(" 404 "), "{path}: {status}");
        assert_eq!(body, "404 page not found", "{path}");
    }
    let query = post_initialize(&host).replacen("POST /mcp ", "POST /mcp?probe=1 ", 1);
    let (status, body) = raw(&served, &query).await;
    assert!(status.contains(" 200 "), "{status} {body}");
    assert!(body.contains("muster-aggregator"), "{body}");
    let health = format!("GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let (status, body) = raw(&served, &health).await;
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, r#"{"status":"ok"}"#);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_changes_notify_sessions_and_list_tools_follows() -> TestResult {
    let registry = Registry::new();
    let served = Served::start(registry.clone()).await;
    let mut client = served.client().await;
    let before = json_text(&client.meta("list_tools", json!({})).await);
    assert_eq!(before["tools"], json!([]));

    registry.upsert_backend(
        "late",
        Default::default(),
        Fixed::new("late", vec![tool("hello", "Says hello", json!({}))]),
    );
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.list_changed.recv(),
    )
    .await
    .expect("tools/list_changed in time")
    .expect("client alive");
    let after = json_text(&client.meta("list_tools", json!({})).await);
    assert_eq!(
        after["tools"],
        json!([{"name": "x_late_hello", "description": "Says hello"}])
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_2026_clients_are_served_as_default_user() -> TestResult {
    use rmcp::model::{CallToolRequestParams, ProtocolVersion};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::StreamableHttpClientTransport;

    let registry = Registry::new();
    registry.set_core(Fixed::new(
        "core",
        vec![tool("core_whoami", "Session", json!({}))],
    ));
    let served = Served::start(registry).await;
    let client = rmcp::model::ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(served.url()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await?;
    let tools = client.list_all_tools().await?;
    assert_eq!(tools.len(), META_TOOL_NAMES.len());
    let params = CallToolRequestParams::new("call_tool")
        .with_arguments(crate::support::object(json!({"name": "core_whoami"})));
    let result = client.call_tool(params).await?;
    let envelope: serde_json::Value = serde_json::from_str(crate::support::text(&result))?;
    let body: serde_json::Value =
        serde_json::from_str(envelope["content"][0]["text"].as_str().unwrap())?;
    assert_eq!(body["session"], "default-user");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_answers_no_content() -> TestResult {
    let served = Served::start(Registry::new()).await;
    let host = format!("localhost:{}", served.addr.port());
    let mut stream = tokio::net::TcpStream::connect(served.addr).await?;
    stream.write_all(post_initialize(&host).as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let session = response
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id");
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {host}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"
    );
    let (status, _) = raw(&served, &delete).await;
    assert!(status.contains(" 204 "), "{status}");
    Ok(())
}
