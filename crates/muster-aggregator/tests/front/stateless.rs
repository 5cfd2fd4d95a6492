//! Stateless 2026-07-28 `tools/call` requests for meta-tools: a plain one is answered on the
//! lean path (one `application/json` reply), and says exactly what rmcp's stateless service
//! says to the same request; anything the lean path does not vouch for reaches rmcp.

use serde_json::{Value, json};

use crate::support::{Served, TestResult, registry_with_upstream};

const MODERN: &str = "2026-07-28";

/// The per-request `_meta` of a stateless call, plus `extra`.
fn meta(extra: &[(&str, Value)]) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (key, value) in extra {
        meta[*key] = value.clone();
    }
    meta
}

/// Posts one stateless `tools/call`; returns the reply's content type and its JSON-RPC
/// message (from the body, or from the SSE event carrying it).
async fn call(
    served: &Served,
    name: &str,
    name_header: &str,
    arguments: Value,
    meta: Value,
) -> Result<(u16, String, Value), Box<dyn std::error::Error>> {
    let body = json!({
        "jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    });
    let response = reqwest::Client::new()
        .post(served.url())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name_header)
        .json(&body)
        .send()
        .await?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await?;
    let message = if content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_default()
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Ok((status, content_type, message))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_stateless_calls_are_lean_and_answer_as_rmcp_does() -> TestResult {
    let served = Served::start(registry_with_upstream().await).await;
    let cases = [
        ("list_tools", json!({})),
        ("describe_tool", json!({"name": "x_upstream_echo"})),
        ("filter_tools", json!({"query": "echo message"})),
        (
            "call_tool",
            json!({"name": "x_upstream_echo", "arguments": {"message": "hi"}}),
        ),
        (
            "call_tool",
            json!({"name": "x_upstream_add", "arguments": {"a": 2, "b": 3}}),
        ),
        (
            "call_tool",
            json!({"name": "x_upstream_fail", "arguments": {}}),
        ),
        ("call_tool", json!({"name": "x_nope", "arguments": {}})),
    ];
    for (name, arguments) in cases {
        let (status, lean_type, lean) =
            call(&served, name, name, arguments.clone(), meta(&[])).await?;
        assert_eq!(status, 200, "{name} {arguments}: {lean}");
        assert_eq!(
            lean_type, "application/json",
            "{name} {arguments}: the lean path answers"
        );
        // A trace context in `_meta` is not plain: rmcp answers the same call.
        let traced = meta(&[(
            "traceparent",
            json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
        )]);
        let (_, rmcp_type, rmcp) = call(&served, name, name, arguments.clone(), traced).await?;
        assert!(
            rmcp_type.starts_with("text/event-stream"),
            "{name}: rmcp answers"
        );
        assert_eq!(lean, rmcp, "{name} {arguments}");
        assert_eq!(lean["result"]["resultType"], "complete", "{lean}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_calls_the_lean_path_does_not_vouch_for_reach_rmcp() -> TestResult {
    let served = Served::start(registry_with_upstream().await).await;
    // An unknown tool is not a meta-tool: rmcp's error.
    let (_, content_type, reply) = call(&served, "nope", "nope", json!({}), meta(&[])).await?;
    assert!(content_type.starts_with("text/event-stream"), "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // A name header that disagrees with the body: rmcp refuses the request.
    let (status, content_type, reply) =
        call(&served, "list_tools", "describe_tool", json!({}), meta(&[])).await?;
    assert!(
        status != 200 || reply.get("error").is_some(),
        "{status} {content_type} {reply}"
    );
    // Declared capabilities: rmcp serves the call.
    let capable = meta(&[(
        "io.modelcontextprotocol/clientCapabilities",
        json!({"roots": {}}),
    )]);
    let (status, content_type, reply) =
        call(&served, "list_tools", "list_tools", json!({}), capable).await?;
    assert_eq!(status, 200, "{reply}");
    assert!(content_type.starts_with("text/event-stream"), "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    Ok(())
}
