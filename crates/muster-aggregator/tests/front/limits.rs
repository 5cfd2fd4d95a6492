//! Bounded sessions and connections, and the lean `tools/call` path, over raw HTTP: the
//! session cap, idle expiry, parking and restoring, deleting, the header-read and
//! idle-connection timeouts, the connection cap; lean replies byte-compatible with the
//! full rmcp path, progress streamed, cancellation honoured.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use muster_aggregator::registry::{BackendNaming, Registry};
use muster_aggregator::server::{
    Aggregator, AggregatorBuilder, ConnectionLimits, SessionFootprint, SessionLimits,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::support::{Fixed, TestResult, Waiting, registry_with_upstream, tool};

/// An aggregator served on 127.0.0.1:0, stopped on drop.
struct Raw {
    addr: std::net::SocketAddr,
    aggregator: Aggregator,
    http: reqwest::Client,
    shutdown: CancellationToken,
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Raw {
    async fn start(builder: AggregatorBuilder) -> Self {
        let aggregator = builder.build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let served = aggregator.clone();
        tokio::spawn(async move {
            let _ = served
                .serve_tcp(listener, async move { stop.cancelled().await })
                .await;
        });
        Self {
            addr,
            aggregator,
            http: reqwest::Client::new(),
            shutdown,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    async fn post(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        self.post_with(session, &[], body).await
    }

    /// Posts `body` in `session` with the extra `headers`.
    async fn post_with(
        &self,
        session: Option<&str>,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(self.url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("request sent")
    }

    /// Posts the JSON text `body` in `session`.
    async fn post_text(&self, session: &str, body: String) -> reqwest::Response {
        self.http
            .post(self.url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", session)
            .body(body)
            .send()
            .await
            .expect("request sent")
    }

    /// Initializes a session; returns its id.
    async fn initialize(&self) -> Result<String, reqwest::Response> {
        self.initialize_with(&[]).await
    }

    /// Initializes a session, sending `headers` with the `initialize`; returns its id. A
    /// transport header (as rmcp's client sends) leaves the handshake to the session's
    /// worker instead of the front door.
    async fn initialize_with(&self, headers: &[(&str, &str)]) -> Result<String, reqwest::Response> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "1"}}});
        let response = self.post_with(None, headers, &init).await;
        if !response.status().is_success() {
            return Err(response);
        }
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .expect("ascii")
            .to_owned();
        let _ = response.bytes().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(Some(&id), &initialized).await;
        assert!(response.status().is_success(), "{}", response.status());
        Ok(id)
    }

    /// Initializes a session and waits until its meta-tool calls take the lean path: that
    /// needs the session's `notifications/initialized` handled, which rmcp does on a task of
    /// its own after answering the POST.
    async fn lean_session(&self) -> String {
        let session = self.initialize().await.expect("session");
        let probe = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "list_tools", "arguments": {}}});
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let (kind, _) = reply(self.post(Some(&session), &probe).await).await;
            if kind == "application/json" {
                return session;
            }
            assert!(tokio::time::Instant::now() < deadline, "never lean");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Initializes a session (which keeps an outbox for its stream) and starts its worker
    /// with a request only rmcp answers: rmcp replies once the worker is running.
    async fn live_session(&self) -> String {
        let session = self.initialize().await.expect("session");
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"});
        let (_, listed) = reply(self.post(Some(&session), &list).await).await;
        assert!(listed["result"]["prompts"].is_array(), "{listed}");
        session
    }

    /// Opens the `GET` stream of `session`; checks it is one.
    async fn open_stream(&self, session: &str) -> reqwest::Response {
        let stream = self
            .http
            .get(self.url())
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .send()
            .await
            .expect("stream requested");
        assert_eq!(stream.status(), reqwest::StatusCode::OK);
        let kind = stream.headers()["content-type"].to_str().unwrap_or("");
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        stream
    }

    async fn delete(&self, session: &str) -> reqwest::StatusCode {
        self.http
            .delete(self.url())
            .header("mcp-session-id", session)
            .send()
            .await
            .expect("delete sent")
            .status()
    }
}

/// The JSON-RPC message with `"id"` in a reply, JSON or SSE; with its content type.
async fn reply(response: reqwest::Response) -> (String, Value) {
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response.text().await.expect("body");
    if kind.starts_with("application/json") {
        return (kind, serde_json::from_str(&body).expect("JSON reply"));
    }
    let message = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or(Value::Null);
    (kind, message)
}

/// What a stream sent until it sent `text` (within 10 s).
async fn read_until(
    body: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    text: &str,
) -> String {
    use futures::StreamExt;
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !seen.contains(text) {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| panic!("no {text} in time: {seen}"))
            .expect("stream open")
            .expect("stream read");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    seen
}

/// Every SSE `data:` message of a reply.
async fn events(response: reqwest::Response) -> Vec<Value> {
    let body = response.text().await.expect("body");
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .collect()
}

fn echo_call(id: u64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "call_tool",
        "arguments": {"name": "x_upstream_echo", "arguments": {"message": message}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cap_refuses_initialize_until_a_session_closes() -> TestResult {
    const CAP: usize = 64;
    let limits = SessionLimits {
        max_sessions: CAP,
        ..SessionLimits::default()
    };
    let raw = Raw::start(Aggregator::builder(Registry::new()).session_limits(limits)).await;
    let mut opened = Vec::new();
    for _ in 0..CAP {
        opened.push(raw.initialize().await.expect("a session under the cap"));
    }
    let first = opened[0].clone();
    let refused = raw.initialize().await.expect_err("over the cap");
    assert_eq!(refused.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
    let (_, message) = reply(refused).await;
    let text = message["error"]["message"].as_str().unwrap_or("");
    assert!(text.contains("too many sessions"), "{message}");
    assert!(text.contains("aggregator.limits.maxSessions"), "{message}");
    assert_eq!(raw.aggregator.sessions().len(), CAP);

    assert!(raw.delete(&first).await.is_success());
    assert_eq!(raw.aggregator.sessions().len(), CAP - 1);
    raw.initialize().await.expect("a slot is free again");
    raw.initialize().await.expect_err("full again");
    Ok(())
}

/// Polls `condition` every 20 ms for up to 10 s.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_are_parked_then_restored_then_expired() -> TestResult {
    let limits = SessionLimits {
        park_after: Duration::from_millis(300),
        idle_timeout: Duration::from_secs(3),
        ..SessionLimits::default()
    };
    let raw =
        Raw::start(Aggregator::builder(registry_with_upstream().await).session_limits(limits))
            .await;
    let session = raw.initialize().await.expect("session");
    let sessions = raw.aggregator.sessions();
    assert_eq!(sessions.len(), 1);
    eventually("parked", || sessions.live() == 0).await;
    assert_eq!(sessions.len(), 1, "a parked session still exists");

    // A request the rmcp path serves restores the worker; the client notices nothing.
    let list = json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/list"});
    let restored = raw.post(Some(&session), &list).await;
    let status = restored.status();
    let body = restored.text().await?;
    assert!(status.is_success(), "{status}: {body}");
    let listed = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or(Value::Null);
    assert!(listed["result"]["prompts"].is_array(), "{listed}");
    assert_eq!(sessions.live(), 1, "restored");
    // The lean path serves a parked session without restoring it.
    eventually("parked again", || sessions.live() == 0).await;
    let (_, called) = reply(raw.post(Some(&session), &echo_call(6, "back")).await).await;
    assert!(called.to_string().contains("Echo: back"), "{called}");
    assert_eq!(sessions.live(), 0, "still parked");

    // Without traffic past the idle timeout the session is gone.
    eventually("expired", || sessions.is_empty()).await;
    let gone = raw.post(Some(&session), &list).await;
    assert_eq!(gone.status(), reqwest::StatusCode::NOT_FOUND);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_and_expired_sessions_leave_nothing_behind() -> TestResult {
    let limits = SessionLimits {
        idle_timeout: Duration::from_secs(5),
        park_after: Duration::from_millis(200),
        ..SessionLimits::default()
    };
    let raw = Raw::start(Aggregator::builder(Registry::new()).session_limits(limits)).await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(raw.initialize().await.expect("session"));
    }
    let sessions = raw.aggregator.sessions();
    assert_eq!(sessions.len(), 20);
    for id in &ids[..10] {
        assert!(raw.delete(id).await.is_success());
    }
    assert_eq!(sessions.len(), 10);
    eventually("all expired", || sessions.is_empty()).await;
    assert_eq!(sessions.live(), 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_leaves_no_entry_in_any_per_session_structure() -> TestResult {
    // No sweep runs while the test does its work (the reaper's first one runs at start,
    // the next 10 s later): whatever is gone after the DELETEs went with them.
    let limits = SessionLimits {
        park_after: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(600),
        ..SessionLimits::default()
    };
    let raw =
        Raw::start(Aggregator::builder(registry_with_upstream().await).session_limits(limits))
            .await;
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(raw.live_session().await);
    }
    let sessions = raw.aggregator.sessions();
    let open = sessions.footprint().await;
    assert_eq!((open.sessions, open.workers, open.peers), (10, 10, 10));
    for id in &ids {
        assert!(raw.delete(id).await.is_success());
    }
    let closed = sessions.footprint().await;
    assert_eq!(
        (closed.sessions, closed.workers, closed.peers),
        (0, 0, 0),
        "{closed:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_then_expired_sessions_leave_no_entry_and_no_room_behind() -> TestResult {
    let limits = SessionLimits {
        park_after: Duration::from_millis(200),
        idle_timeout: Duration::from_secs(2),
        ..SessionLimits::default()
    };
    let raw =
        Raw::start(Aggregator::builder(registry_with_upstream().await).session_limits(limits))
            .await;
    for _ in 0..10 {
        raw.lean_session().await;
    }
    let sessions = raw.aggregator.sessions();
    // Once quiet for the park period, a session keeps its table entry and nothing else (not
    // even the outbox its stream would have found notifications kept in).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let parked = sessions.footprint().await;
        if (parked.sessions, parked.workers, parked.peers) == (10, 0, 0) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not parked and quiet: {parked:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = sessions.footprint().await;
        if left == SessionFootprint::default() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "left behind after expiry: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_replies_match_the_full_path_byte_for_byte() -> TestResult {
    let raw = Raw::start(Aggregator::builder(registry_with_upstream().await)).await;
    let session = raw.lean_session().await;
    let calls = [
        json!({"name": "x_upstream_echo", "arguments": {"message": "hi"}}),
        json!({"name": "x_upstream_add", "arguments": {"a": 1, "b": 2}}),
        json!({"name": "x_upstream_fail", "arguments": {}}),
        json!({"name": "x_upstream_nope"}),
        json!({"arguments": {}}),
    ];
    for (n, arguments) in calls.iter().enumerate() {
        let id = n as u64 + 10;
        let lean = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "call_tool", "arguments": arguments}});
        // Another `_meta` key sends the same call the full way (SSE).
        let full = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "call_tool", "arguments": arguments,
                                     "_meta": {"example.com/tag": "full"}}});
        let (lean_kind, lean_reply) = reply(raw.post(Some(&session), &lean).await).await;
        let (full_kind, full_reply) = reply(raw.post(Some(&session), &full).await).await;
        assert_eq!(lean_kind, "application/json", "{arguments}");
        assert!(full_kind.starts_with("text/event-stream"), "{full_kind}");
        assert_eq!(
            lean_reply.to_string(),
            full_reply.to_string(),
            "{arguments}"
        );
    }
    // Other meta-tools take the lean path too.
    let list = json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
                      "params": {"name": "list_tools", "arguments": {}}});
    let (kind, listed) = reply(raw.post(Some(&session), &list).await).await;
    assert_eq!(kind, "application/json");
    assert!(listed.to_string().contains("x_upstream_echo"), "{listed}");
    // A tool that is not a meta-tool gets rmcp's answer.
    let unknown = json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call",
                         "params": {"name": "x_upstream_echo", "arguments": {}}});
    let (_, refused) = reply(raw.post(Some(&session), &unknown).await).await;
    assert!(refused.get("error").is_some(), "{refused}");
    // Without a session there is no lean path either.
    let sessionless = raw.post(None, &echo_call(22, "x")).await;
    assert!(!sessionless.status().is_success() || reply(sessionless).await.0 != "application/json");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_calls_stream_progress_then_the_result() -> TestResult {
    let raw = Raw::start(Aggregator::builder(registry_with_upstream().await)).await;
    let session = raw.lean_session().await;
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"name": "x_upstream_slow", "arguments": {"steps": 3}},
        "_meta": {"progressToken": "p-1"}}});
    let response = raw.post(Some(&session), &call).await;
    let kind = response.headers()["content-type"].to_str()?.to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let messages = events(response).await;
    let progress: Vec<f64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p-1");
            m["params"]["progress"].as_f64().unwrap_or(-1.0)
        })
        .collect();
    // The test's upstream provider (an rmcp client) hands each progress notification to a
    // task of its own, so a report may come after the result and miss the stream; muster's
    // own backends deliver them in order. What arrived is in order and before the result.
    assert!(!progress.is_empty(), "{messages:?}");
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert!(
        progress.iter().all(|p| [1.0, 2.0, 3.0].contains(p)),
        "{progress:?}"
    );
    let last = messages.last().expect("a result");
    assert_eq!(last["id"], 3);
    assert!(last.to_string().contains("counted to 3"), "{last}");
    // With a token but no progress reported, the reply is plain JSON.
    let quiet = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"name": "x_upstream_echo", "arguments": {"message": "q"}},
        "_meta": {"progressToken": 9}}});
    let (kind, quiet) = reply(raw.post(Some(&session), &quiet).await).await;
    assert_eq!(kind, "application/json");
    assert!(quiet.to_string().contains("Echo: q"), "{quiet}");
    Ok(())
}

/// Reads until the peer closes; `true` when it did within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

fn connection_limits(max: usize, header: u64, idle: u64) -> ConnectionLimits {
    ConnectionLimits {
        max_connections: max,
        header_read_timeout: Duration::from_millis(header),
        idle_timeout: Duration::from_millis(idle),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_request_head_is_cut_off() -> TestResult {
    let builder =
        Aggregator::builder(Registry::new()).connection_limits(connection_limits(16, 300, 60_000));
    let raw = Raw::start(builder).await;
    let mut slow = TcpStream::connect(raw.addr).await?;
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        .await?;
    // A byte now and then does not extend the deadline.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = slow.write_all(b"X").await;
    }
    assert!(closed_within(&mut slow, Duration::from_secs(3)).await);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_busy_ones_are_not() -> TestResult {
    let builder =
        Aggregator::builder(Registry::new()).connection_limits(connection_limits(16, 5_000, 400));
    let raw = Raw::start(builder).await;
    // Silent from the start.
    let mut silent = TcpStream::connect(raw.addr).await?;
    assert!(closed_within(&mut silent, Duration::from_secs(3)).await);
    // Idle after a complete request on a kept-alive connection.
    let mut kept = TcpStream::connect(raw.addr).await?;
    kept.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut buf = [0u8; 512];
    let n = kept.read(&mut buf).await?;
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    assert!(closed_within(&mut kept, Duration::from_secs(3)).await);
    // A legacy SSE stream open for longer than the idle timeout stays open.
    let mut stream = TcpStream::connect(raw.addr).await?;
    stream
        .write_all(b"GET /sse HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n")
        .await?;
    assert!(!closed_within(&mut stream, Duration::from_millis(1200)).await);
    Ok(())
}

/// The head of the response `stream` receives next (up to the blank line), lowercase.
async fn response_head(stream: &mut TcpStream) -> Result<String, Box<dyn std::error::Error>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).to_lowercase())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_before_the_body_arrived_says_the_connection_closes() -> TestResult {
    let raw = Raw::start(Aggregator::builder(Registry::new())).await;
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let body = body.as_bytes();
    let head = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    };
    // The Host check refuses the request on its head; the body is still on its way.
    let mut refused = TcpStream::connect(raw.addr).await?;
    refused.write_all(head("evil.example").as_bytes()).await?;
    let answer = response_head(&mut refused).await?;
    assert!(answer.starts_with("http/1.1 403"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    let _ = refused.write_all(body).await;
    assert!(closed_within(&mut refused, Duration::from_secs(3)).await);
    // A request whose body was read keeps its connection for the next one.
    let mut kept = TcpStream::connect(raw.addr).await?;
    for _ in 0..2 {
        kept.write_all(head("localhost").as_bytes()).await?;
        kept.write_all(body).await?;
        let answer = response_head(&mut kept).await?;
        assert!(!answer.contains("connection: close"), "{answer}");
        let length: usize = answer
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let mut rest = vec![0u8; length];
        kept.read_exact(&mut rest).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_wait_for_a_free_slot() -> TestResult {
    let builder =
        Aggregator::builder(Registry::new()).connection_limits(connection_limits(2, 5_000, 60_000));
    let raw = Raw::start(builder).await;
    let first = TcpStream::connect(raw.addr).await?;
    let _second = TcpStream::connect(raw.addr).await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let health = format!("http://{}/health", raw.addr);
    let waiting =
        tokio::time::timeout(Duration::from_millis(500), raw.http.get(&health).send()).await;
    assert!(waiting.is_err(), "a third connection was served");
    drop(first);
    let served = tokio::time::timeout(Duration::from_secs(5), raw.http.get(&health).send())
        .await
        .expect("served once a slot is free")?;
    assert!(served.status().is_success());
    Ok(())
}

fn wait_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"name": "x_waiting_wait", "arguments": {}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_calls_end_on_cancelled_and_on_hang_up() -> TestResult {
    let registry = Registry::new();
    let waiting = Waiting::new();
    let cancelled = waiting.cancelled.clone();
    registry.upsert_backend("waiting", BackendNaming::default(), waiting);
    let raw = Raw::start(Aggregator::builder(registry)).await;
    let session = raw.lean_session().await;

    // notifications/cancelled naming the call ends it with the rmcp path's error.
    let call = {
        let http = raw.http.clone();
        let url = raw.url();
        let session = session.clone();
        tokio::spawn(async move {
            http.post(url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-session-id", session)
                .body(wait_call(41).to_string())
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 41, "reason": "test"}});
    assert!(
        raw.post(Some(&session), &cancel)
            .await
            .status()
            .is_success()
    );
    let response = tokio::time::timeout(Duration::from_secs(10), call).await???;
    let (kind, answer) = reply(response).await;
    assert_eq!(kind, "application/json");
    assert_eq!(answer["id"], 41, "{answer}");
    assert_eq!(answer["error"]["message"], "request cancelled", "{answer}");
    eventually("the backend saw the cancellation", || {
        cancelled.load(Ordering::SeqCst) == 1
    })
    .await;

    // A client that hangs up mid-call cancels it too.
    let mut socket = TcpStream::connect(raw.addr).await?;
    let body = wait_call(42).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(socket);
    eventually("the hang-up cancelled the call", || {
        cancelled.load(Ordering::SeqCst) == 2
    })
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_runs_no_worker_until_a_request_needs_one() -> TestResult {
    let raw = Raw::start(Aggregator::builder(registry_with_upstream().await)).await;
    let sessions = raw.aggregator.sessions();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "limits-test", "version": "1"}}});

    // The front door answers a plain handshake itself: one JSON reply, no worker.
    let response = raw.post(None, &init).await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let session = response.headers()["mcp-session-id"].to_str()?.to_owned();
    let (kind, lean_init) = reply(response).await;
    assert_eq!(kind, "application/json");
    // The session has an entry and an outbox for its stream, no worker.
    let footprint = sessions.footprint().await;
    assert_eq!(
        (footprint.sessions, footprint.workers, footprint.peers),
        (1, 0, 1)
    );

    // rmcp answers the same handshake (a version header sends it there) with the same result.
    let full = raw
        .http
        .post(raw.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-06-18")
        .body(init.to_string())
        .send()
        .await?;
    let full_session = full.headers()["mcp-session-id"].to_str()?.to_owned();
    let (full_kind, full_init) = reply(full).await;
    assert!(full_kind.starts_with("text/event-stream"), "{full_kind}");
    assert_eq!(lean_init.to_string(), full_init.to_string());
    assert!(raw.delete(&full_session).await.is_success());

    // The end of the handshake and meta-tool calls need no worker either.
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = raw.post(Some(&session), &initialized).await;
    assert_eq!(done.status(), reqwest::StatusCode::ACCEPTED);
    let (kind, called) = reply(raw.post(Some(&session), &echo_call(1, "hi")).await).await;
    assert_eq!(kind, "application/json");
    assert!(called.to_string().contains("Echo: hi"), "{called}");
    assert_eq!(sessions.footprint().await.workers, 0);
    assert_eq!(sessions.live(), 0);

    // So do `tools/list` (the meta-tools) and `ping`, with the replies rmcp would send
    // (`_meta` in the params sends a request to rmcp).
    let mut lean_replies = Vec::new();
    for method in ["tools/list", "ping"] {
        let lean = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {}});
        let (kind, lean_reply) = reply(raw.post(Some(&session), &lean).await).await;
        assert_eq!(kind, "application/json", "{method}");
        lean_replies.push(lean_reply);
    }
    assert_eq!(sessions.footprint().await.workers, 0);
    for (method, lean_reply) in ["tools/list", "ping"].into_iter().zip(lean_replies) {
        let full = json!({"jsonrpc": "2.0", "id": 2, "method": method,
                          "params": {"_meta": {"example.com/tag": "full"}}});
        let (full_kind, full_reply) = reply(raw.post(Some(&session), &full).await).await;
        assert!(
            full_kind.starts_with("text/event-stream"),
            "{method}: {full_kind}"
        );
        assert_eq!(lean_reply, full_reply, "{method}");
        assert!(lean_reply.get("result").is_some(), "{method}: {lean_reply}");
    }
    // The full path started the worker, transparently to the client.
    assert_eq!(sessions.footprint().await.workers, 1);

    // So does the stream of a session whose client can be asked things (sampling here):
    // rmcp relays those requests on it.
    let asks = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "limits-test", "version": "1"}}});
    let response = raw.post(None, &asks).await;
    let other = response.headers()["mcp-session-id"].to_str()?.to_owned();
    let _ = response.bytes().await;
    let _stream = raw.open_stream(&other).await;
    assert_eq!(sessions.footprint().await.workers, 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_of_a_session_needs_no_worker_and_carries_its_notifications() -> TestResult {
    use futures::StreamExt;

    let raw = Raw::start(Aggregator::builder(Registry::new())).await;
    let sessions = raw.aggregator.sessions();
    let session = raw.initialize().await.expect("session");
    let stream = raw.open_stream(&session).await;
    let footprint = sessions.footprint().await;
    assert_eq!(
        (footprint.workers, footprint.peers),
        (0, 1),
        "{footprint:?}"
    );

    // A second stream of the session only keeps its connection alive.
    let _second = raw.open_stream(&session).await;

    // A catalog change reaches the session on its stream.
    raw.aggregator.registry().upsert_backend(
        "late",
        Default::default(),
        crate::support::Fixed::new("late", vec![tool("hello", "Says hello", json!({}))]),
    );
    let mut body = stream.bytes_stream();
    let seen = read_until(&mut body, "notifications/tools/list_changed").await;
    assert!(
        seen.contains(r#"data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#),
        "{seen}"
    );
    assert_eq!(sessions.footprint().await.workers, 0);

    // The session is not parked or expired while its stream is open, and deleting it
    // ends the stream.
    assert!(raw.delete(&session).await.is_success());
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(end.is_ok(), "the stream outlived its session");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_wait_for_the_restored_worker() -> TestResult {
    let raw = Arc::new(Raw::start(Aggregator::builder(registry_with_upstream().await)).await);
    for round in 0..20 {
        let session = raw.initialize().await.expect("session");
        // The first requests only rmcp answers arrive together and start the worker.
        let requests = (0..6).map(|n| {
            let raw = raw.clone();
            let session = session.clone();
            tokio::spawn(async move {
                let list = json!({"jsonrpc": "2.0", "id": n, "method": "prompts/list"});
                let response = raw.post(Some(&session), &list).await;
                let status = response.status();
                let (_, listed) = reply(response).await;
                (status, listed)
            })
        });
        for request in futures::future::join_all(requests).await {
            let (status, listed) = request?;
            assert!(status.is_success(), "round {round}: {status} {listed}");
            assert!(
                listed["result"]["prompts"].is_array(),
                "round {round}: {listed}"
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_before_the_first_stream_are_kept_for_it() -> TestResult {
    let raw = Raw::start(Aggregator::builder(Registry::new())).await;
    let session = raw.initialize().await.expect("session");
    a_change_before_the_stream_reaches_it(&raw, &session).await;
    Ok(())
}

/// Changes the catalog between the handshake of `session` and its client's `GET`, then
/// checks that the stream carries the change's `tools/list_changed`.
async fn a_change_before_the_stream_reaches_it(raw: &Raw, session: &str) {
    raw.aggregator.registry().upsert_backend(
        "early",
        Default::default(),
        crate::support::Fixed::new("early", vec![tool("hello", "Says hello", json!({}))]),
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stream = raw.open_stream(session).await;
    let mut body = stream.bytes_stream();
    read_until(&mut body, "notifications/tools/list_changed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_before_the_first_stream_are_kept_when_the_worker_did_the_handshake()
-> TestResult {
    let raw = Raw::start(Aggregator::builder(Registry::new())).await;
    let session = raw
        .initialize_with(&[("mcp-protocol-version", "2025-06-18")])
        .await
        .expect("session");
    // The worker answers a request only rmcp answers once it has the handshake's end.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"});
    let (_, listed) = reply(raw.post(Some(&session), &list).await).await;
    assert!(listed["result"]["prompts"].is_array(), "{listed}");
    // The front door serves the `GET` stream of this session all the same.
    a_change_before_the_stream_reaches_it(&raw, &session).await;
    Ok(())
}

/// `call_tool`'s arguments reach the tool's provider as the client wrote them, on the lean
/// path: key order, number spelling, escapes and integers beyond 64 bits kept.
#[tokio::test]
async fn call_tool_arguments_reach_the_provider_as_written() -> TestResult {
    let registry = Registry::new();
    let tools = vec![tool("echo", "Echoes.", json!({}))];
    registry.upsert_backend(
        "fixed",
        BackendNaming::default(),
        Fixed::reporting_text("fixed", tools),
    );
    let raw = Raw::start(Aggregator::builder(registry)).await;
    let session = raw.lean_session().await;
    let written = r#"{"b":12345678901234567890123,"a":1.0,"c":"\u00e9"}"#;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"call_tool","arguments":{{"name":"x_fixed_echo","arguments":{written}}}}}}}"#
    );
    let (kind, reply) = reply(raw.post_text(&session, body).await).await;
    assert_eq!(kind, "application/json", "{reply}");
    let envelope: Value = serde_json::from_str(
        reply["result"]["content"][0]["text"]
            .as_str()
            .ok_or("no envelope")?,
    )?;
    let seen: Value =
        serde_json::from_str(envelope["content"][0]["text"].as_str().ok_or("no text")?)?;
    assert_eq!(seen["argumentsText"], written, "{seen}");
    assert_eq!(seen["arguments"]["c"], "\u{e9}", "{seen}");
    Ok(())
}
