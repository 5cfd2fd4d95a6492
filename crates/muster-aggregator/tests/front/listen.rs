//! `subscriptions/listen` for 2026-07-28 clients: the acknowledgment first, then
//! `notifications/tools/list_changed` tagged with the subscription id when the catalog
//! changes, and nothing the client did not ask for.

use std::time::Duration;

use muster_aggregator::registry::Registry;
use serde_json::{Value, json};

use crate::support::{Fixed, Served, TestResult, tool};

const MODERN: &str = "2026-07-28";

/// Reads SSE events from `response` until `want` of them arrived or `limit` passed.
async fn events(response: &mut reqwest::Response, want: usize, limit: Duration) -> Vec<Value> {
    let mut buffer = String::new();
    let mut found = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    while found.len() < want {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            _ => break,
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data:")
                    && let Ok(message) = serde_json::from_str::<Value>(data.trim())
                {
                    found.push(message);
                }
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_reach_an_open_subscription() -> TestResult {
    let registry = Registry::new();
    let served = Served::start(registry.clone()).await;
    let body = json!({
        "jsonrpc": "2.0",
        "id": 17,
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    let mut response = reqwest::Client::new()
        .post(served.url())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await?;
    assert_eq!(response.status(), 200);

    let first = events(&mut response, 1, Duration::from_secs(10)).await;
    assert_eq!(
        first.first().map(|m| m["method"].clone()),
        Some(json!("notifications/subscriptions/acknowledged")),
        "{first:?}"
    );
    assert_eq!(
        first[0]["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{first:?}"
    );

    // A new provider changes the catalog (tools and prompts lists alike).
    // The acknowledgment can reach the client a moment before the subscription watches the
    // catalog, so the change is repeated (each time a new catalog) until one is notified.
    let mut next = Vec::new();
    for round in 0..5 {
        registry.set_core(Fixed::new(
            "extra",
            vec![tool(
                &format!("extra_tool_{round}"),
                "An extra tool",
                json!({}),
            )],
        ));
        next = events(&mut response, 1, Duration::from_secs(2)).await;
        if !next.is_empty() {
            break;
        }
    }
    let changed = next.first().cloned().unwrap_or_default();
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{next:?}"
    );
    let subscription = changed["params"]["_meta"]
        .as_object()
        .and_then(|meta| meta.iter().find(|(k, _)| k.ends_with("subscriptionId")))
        .map(|(_, v)| v.clone());
    assert_eq!(subscription, Some(json!(17)), "{changed}");
    Ok(())
}
