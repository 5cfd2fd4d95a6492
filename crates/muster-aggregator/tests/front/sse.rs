//! The legacy HTTP+SSE transport: GET /sse names the message endpoint, POSTs are answered
//! on the stream.

use std::time::Duration;

use futures::StreamExt;
use muster_aggregator::registry::Registry;
use serde_json::{Value, json};
use sse_stream::SseStream;

use crate::support::{Served, TestResult};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_sessions_work() -> TestResult {
    let served = Served::start(Registry::new()).await;
    let base = format!("http://{}", served.addr);
    let http = reqwest::Client::new();

    let response = http
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?;
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let mut next = async || {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("an event in time")
            .expect("stream open")
            .expect("well-formed event");
        (
            event.event.unwrap_or_default(),
            event.data.unwrap_or_default(),
        )
    };

    let (kind, endpoint) = next().await;
    assert_eq!(kind, "endpoint");
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    let post = |body: Value| {
        let http = http.clone();
        let url = format!("{base}{endpoint}");
        async move { http.post(url).json(&body).send().await }
    };

    let accepted = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                   "clientInfo": {"name": "muster", "version": "1.0.0"}}}))
    .await?;
    assert_eq!(accepted.status(), 202);
    let (kind, data) = next().await;
    assert_eq!(kind, "message");
    let initialized: Value = serde_json::from_str(&data)?;
    assert_eq!(initialized["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(
        initialized["result"]["serverInfo"]["name"],
        "muster-aggregator"
    );

    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_tools", "arguments": {}}}))
    .await?;
    let (_, data) = next().await;
    let answer: Value = serde_json::from_str(&data)?;
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "{\n  \"tools\": []\n}"
    );

    // Unknown and missing sessions.
    let unknown = http
        .post(format!("{base}/message?sessionId=nope"))
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .send()
        .await?;
    assert_eq!(unknown.status(), 404);
    let missing = http
        .post(format!("{base}/message"))
        .json(&json!({}))
        .send()
        .await?;
    assert_eq!(missing.status(), 400);
    Ok(())
}
