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
    let mut client = SseClient::open(&served).await?;
    assert!(
        client
            .endpoint
            .starts_with(&format!("{base}/message?sessionId=")),
        "{}",
        client.endpoint
    );

    client
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                       "clientInfo": {"name": "muster", "version": "1.0.0"}}}))
        .await?;
    let initialized = client.next().await;
    assert_eq!(initialized["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(
        initialized["result"]["serverInfo"]["name"],
        "muster-aggregator"
    );

    client
        .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    client
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_tools", "arguments": {}}}))
        .await?;
    let answer = client.next().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "{\n  \"tools\": []\n}"
    );

    // Unknown and missing sessions.
    let http = reqwest::Client::new();
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

/// A legacy SSE client over raw HTTP: the stream and the endpoint it named.
struct SseClient {
    http: reqwest::Client,
    endpoint: String,
    session: String,
    events: std::pin::Pin<Box<dyn futures::Stream<Item = Value> + Send>>,
}

impl SseClient {
    /// Opens a session of `served` and completes its handshake; the client declares
    /// `capabilities`.
    async fn connect(
        served: &Served,
        capabilities: Value,
    ) -> Result<Self, Box<dyn std::error::Error>> {
        let mut client = Self::open(served).await?;
        client
            .post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2024-11-05", "capabilities": capabilities,
                           "clientInfo": {"name": "sse-test", "version": "1"}}}))
            .await?;
        assert_eq!(client.next().await["id"], 0);
        client
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        // A request after the handshake's end: once it is answered the session is ready.
        client
            .post(json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"}))
            .await?;
        assert_eq!(client.next().await["id"], "ping");
        Ok(client)
    }

    /// Opens a session of `served`: its stream, whose first event names the endpoint.
    async fn open(served: &Served) -> Result<Self, Box<dyn std::error::Error>> {
        let base = format!("http://{}", served.addr);
        let http = reqwest::Client::new();
        let response = http
            .get(format!("{base}/sse"))
            .header("accept", "text/event-stream")
            .send()
            .await?
            .error_for_status()?;
        let mut stream = SseStream::from_bytes_stream(response.bytes_stream());
        let first = stream.next().await.expect("an event")?;
        assert_eq!(first.event.as_deref(), Some("endpoint"));
        let path = first.data.unwrap_or_default();
        let session = path
            .split_once("sessionId=")
            .map(|(_, id)| id.to_owned())
            .expect("a session id");
        let events = stream.filter_map(|event| async move {
            let event = event.ok()?;
            (event.event.as_deref() == Some("message"))
                .then(|| serde_json::from_str(&event.data.unwrap_or_default()).ok())
                .flatten()
        });
        Ok(Self {
            http,
            endpoint: format!("{base}{path}"),
            session,
            events: Box::pin(events),
        })
    }

    async fn post(&self, body: Value) -> Result<(), Box<dyn std::error::Error>> {
        let status = self
            .http
            .post(&self.endpoint)
            .json(&body)
            .send()
            .await?
            .status();
        assert_eq!(status, 202, "{body}");
        Ok(())
    }

    /// The next message on the stream.
    async fn next(&mut self) -> Value {
        tokio::time::timeout(Duration::from_secs(10), self.events.next())
            .await
            .expect("a message in time")
            .expect("stream open")
    }
}

fn call(id: Value, tool: &str, meta: Option<Value>) -> Value {
    let mut params =
        json!({"name": "call_tool", "arguments": {"name": tool, "arguments": {"n": 1}}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_tool_calls_answer_the_same_on_the_lean_path_and_through_the_worker() -> TestResult {
    let registry = crate::support::registry_with_upstream().await;
    registry.upsert_backend(
        "fixed",
        Default::default(),
        crate::support::Fixed::new(
            "fixed",
            vec![crate::support::tool("hello", "Hi", json!({}))],
        ),
    );
    let served = Served::start(registry).await;
    let mut client = SseClient::connect(&served, json!({})).await?;
    // A client that can be asked things keeps its calls on the session's worker.
    let mut asking = SseClient::connect(&served, json!({"sampling": {}})).await?;

    for tool in ["x_fixed_hello", "x_upstream_fail", "x_nope"] {
        asking.post(call(json!("worker"), tool, None)).await?;
        let worker = asking.next().await;
        client.post(call(json!(7), tool, None)).await?;
        let lean = client.next().await;
        assert_eq!(worker["id"], "worker", "{worker}");
        assert_eq!(lean["id"], 7, "{lean}");
        assert_eq!(lean["jsonrpc"], "2.0");
        // The fixed tool names the session it was called in: each client has its own.
        let worker_result = worker["result"]
            .to_string()
            .replace(&asking.session, &client.session);
        assert_eq!(lean["result"].to_string(), worker_result, "{tool}");
    }
    // The call's session is the SSE session, named as the worker names it.
    client.post(call(json!(8), "x_fixed_hello", None)).await?;
    let answer = client.next().await;
    let envelope: Value = serde_json::from_str(
        answer["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )?;
    let body: Value =
        serde_json::from_str(envelope["content"][0]["text"].as_str().expect("inner text"))?;
    assert_eq!(body["session"], format!("sse-{}", client.session));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_a_lean_call_precedes_its_reply_as_through_the_worker() -> TestResult {
    let served = Served::start(crate::support::registry_with_upstream().await).await;
    let mut lean = SseClient::connect(&served, json!({})).await?;
    let mut worker = SseClient::connect(&served, json!({"sampling": {}})).await?;
    let slow = |id: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "call_tool", "_meta": {"progressToken": "p"},
            "arguments": {"name": "x_upstream_slow", "arguments": {"steps": 3}}}})
    };
    let mut answers = Vec::new();
    for (client, id) in [(&mut lean, json!(9)), (&mut worker, json!("w"))] {
        client.post(slow(id.clone())).await?;
        let mut messages = Vec::new();
        loop {
            let message = client.next().await;
            let done = message["id"] == id;
            messages.push(message);
            if done {
                break;
            }
        }
        answers.push(messages);
    }
    let (lean, worker) = (&answers[0], &answers[1]);
    let progress = |messages: &[Value]| -> Vec<Value> {
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"].clone())
            .collect()
    };
    assert_eq!(progress(lean).len(), 3, "{lean:?}");
    assert_eq!(progress(lean), progress(worker));
    assert_eq!(progress(lean)[0]["progressToken"], "p");
    assert_eq!(
        lean.len(),
        4,
        "three progress notifications, then the reply: {lean:?}"
    );
    let (lean_reply, worker_reply) = (&lean[3], &worker[worker.len() - 1]);
    assert_eq!(lean_reply["result"], worker_reply["result"]);
    assert!(
        lean_reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("counted to 3")),
        "{lean_reply}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_sse_calls_end_on_cancelled_and_with_their_session() -> TestResult {
    use std::sync::atomic::Ordering;

    let registry = Registry::new();
    let waiting = crate::support::Waiting::new();
    let cancelled = waiting.cancelled.clone();
    registry.upsert_backend("waiting", Default::default(), waiting);
    let served = Served::start(registry).await;
    let mut client = SseClient::connect(&served, json!({})).await?;

    client.post(call(json!(41), "x_waiting_wait", None)).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    client
        .post(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 41, "reason": "test"}}),
        )
        .await?;
    let answer = client.next().await;
    assert_eq!(answer["id"], 41, "{answer}");
    assert_eq!(answer["error"]["message"], "request cancelled", "{answer}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while cancelled.load(Ordering::SeqCst) < 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the backend never saw it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A client that leaves mid-call (its stream closed) cancels the call too.
    client.post(call(json!(42), "x_waiting_wait", None)).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(client);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while cancelled.load(Ordering::SeqCst) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call outlived its session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
