//! One legacy SSE session of the load generator: its event stream, read by a task of its own
//! that hands each response to the call waiting for that id, and the `POST`s of its calls on
//! a shared pool of keep-alive HTTP/1 connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::reply::{check_call_result, clip, response_id};
use super::sse_scan::SseScan;

/// The HTTP client every session of a run shares: plain HTTP/1, keep-alive, no Nagle delay.
pub(super) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The client with the connection settings of the harness's `mcp-load`.
pub(super) fn http_client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_keepalive(Some(Duration::from_secs(30)));
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(usize::MAX)
        .build(connector)
}

/// What every session of a run is opened with.
#[derive(Debug, Clone)]
pub(super) struct Connection {
    /// The pooled client.
    pub(super) client: HttpClient,
    /// The event stream's URL.
    pub(super) url: Uri,
    /// Extra headers sent with every request.
    pub(super) headers: Arc<[(HeaderName, HeaderValue)]>,
    /// The protocol version `initialize` asks for.
    pub(super) protocol_version: String,
    /// Limit of session setup steps and of each call.
    pub(super) timeout: Duration,
}

/// A JSON-RPC response as it came off the stream, and when.
#[derive(Debug)]
struct Arrived {
    message: Value,
    at: Instant,
}

/// The calls of a session waiting for their responses, until its stream ends.
#[derive(Debug)]
enum Waiting {
    Open(HashMap<u64, oneshot::Sender<Arrived>>),
    /// The stream ended; why.
    Closed(String),
}

/// The waiting calls, shared by the callers and the stream's reader.
#[derive(Debug)]
struct Pending(Mutex<Waiting>);

impl Pending {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // Every change to the map is a single insert or remove: consistent whatever panicked.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the response with this id.
    fn register(&self, id: u64) -> Result<oneshot::Receiver<Arrived>, String> {
        match &mut *self.lock() {
            Waiting::Open(map) => {
                let (tx, rx) = oneshot::channel();
                map.insert(id, tx);
                Ok(rx)
            }
            Waiting::Closed(why) => Err(why.clone()),
        }
    }

    /// Gives up waiting for this id.
    fn forget(&self, id: u64) {
        if let Waiting::Open(map) = &mut *self.lock() {
            map.remove(&id);
        }
    }

    /// Hands a response to the call waiting for its id (if any still is).
    fn deliver(&self, id: u64, arrived: Arrived) {
        let waiter = match &mut *self.lock() {
            Waiting::Open(map) => map.remove(&id),
            Waiting::Closed(_) => None,
        };
        if let Some(waiter) = waiter {
            let _ = waiter.send(arrived);
        }
    }

    /// The stream ended: every waiting call fails with `why`, and so does every later one.
    fn close(&self, why: String) {
        *self.lock() = Waiting::Closed(why);
    }

    /// Why the stream ended (for a call whose waiter was dropped by [`Pending::close`]).
    fn closed_reason(&self) -> String {
        match &*self.lock() {
            Waiting::Closed(why) => why.clone(),
            Waiting::Open(_) => "the response was dropped".to_owned(),
        }
    }
}

/// An open session: the reader of its stream and the endpoint its messages are posted to.
#[derive(Debug)]
pub(super) struct SseSession {
    conn: Connection,
    endpoint: Uri,
    pending: Arc<Pending>,
    reader: JoinHandle<()>,
    /// The protocol version the server answered to `initialize`.
    pub(super) protocol_version: String,
}

impl Drop for SseSession {
    fn drop(&mut self) {
        // Dropping the stream's body closes its connection, and with it the session.
        self.reader.abort();
    }
}

impl SseSession {
    /// Opens the event stream, reads the endpoint event, then `initialize` and
    /// `notifications/initialized`.
    ///
    /// # Errors
    ///
    /// Which step failed and why.
    pub(super) async fn open(conn: &Connection, client_name: &str) -> Result<Self, String> {
        let (body, scan, endpoint) = tokio::time::timeout(conn.timeout, open_stream(conn))
            .await
            .map_err(|_| "opening the SSE stream timed out".to_owned())??;
        let pending = Arc::new(Pending(Mutex::new(Waiting::Open(HashMap::new()))));
        let reader = tokio::spawn(read_stream(body, scan, Arc::clone(&pending)));
        let mut session = Self {
            conn: conn.clone(),
            endpoint,
            pending,
            reader,
            protocol_version: conn.protocol_version.clone(),
        };
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": conn.protocol_version,
                "capabilities": {},
                "clientInfo": {"name": client_name, "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let reply = session
            .request(0, Bytes::from(init.to_string()))
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        if let Some(e) = reply.message.get("error") {
            return Err(format!("initialize failed: {e}"));
        }
        if let Some(v) = reply
            .message
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            v.clone_into(&mut session.protocol_version);
        }
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        tokio::time::timeout(
            conn.timeout,
            session.post(Bytes::from_static(note.as_bytes())),
        )
        .await
        .map_err(|_| "notifications/initialized timed out".to_owned())?
        .map_err(|e| format!("notifications/initialized: {e}"))?;
        Ok(session)
    }

    /// One measured `tools/call`: its latency, from sending the `POST` to parsing the
    /// response off the stream.
    ///
    /// # Errors
    ///
    /// Why the call failed: HTTP, the stream, a timeout, or the checks of
    /// [`check_call_result`].
    pub(super) async fn call(
        &self,
        id: u64,
        body: Bytes,
        expect: Option<&str>,
    ) -> Result<Duration, String> {
        let rx = self.pending.register(id)?;
        let t0 = Instant::now();
        let arrived = tokio::time::timeout(self.conn.timeout, self.exchange(body, rx))
            .await
            .map_err(|_| format!("timed out after {:?}", self.conn.timeout))
            .and_then(|r| r);
        let arrived = arrived.inspect_err(|_| self.pending.forget(id))?;
        check_call_result(&arrived.message, expect)?;
        Ok(arrived.at.saturating_duration_since(t0))
    }

    /// The tool names of `tools/list`.
    ///
    /// # Errors
    ///
    /// When the request fails or answers an error.
    pub(super) async fn list_tools(&self) -> Result<Vec<String>, String> {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
        let reply = self
            .request(1, Bytes::from_static(body.as_bytes()))
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        if let Some(e) = reply.message.get("error") {
            return Err(format!("tools/list failed: {e}"));
        }
        Ok(reply
            .message
            .pointer("/result/tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// A request outside the measured calls, within the timeout.
    async fn request(&self, id: u64, body: Bytes) -> Result<Arrived, String> {
        let rx = self.pending.register(id)?;
        tokio::time::timeout(self.conn.timeout, self.exchange(body, rx))
            .await
            .map_err(|_| "timed out".to_owned())
            .and_then(|r| r)
            .inspect_err(|_| self.pending.forget(id))
    }

    /// Posts a request, then waits for its response on the stream.
    async fn exchange(
        &self,
        body: Bytes,
        rx: oneshot::Receiver<Arrived>,
    ) -> Result<Arrived, String> {
        self.post(body).await?;
        rx.await.map_err(|_| self.pending.closed_reason())
    }

    /// Posts one message to the session's endpoint; any 2xx is taken.
    async fn post(&self, body: Bytes) -> Result<(), String> {
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json");
        for (k, v) in self.conn.headers.iter() {
            req = req.header(k, v);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| format!("building request: {e}"))?;
        let resp = self
            .conn
            .client
            .request(req)
            .await
            .map_err(|e| format!("HTTP request failed: {}", error_chain(&e)))?;
        let status = resp.status();
        // Read the body to its end so the connection goes back to the pool.
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the POST answer: {e}"))?
            .to_bytes();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!(
                "HTTP {}: {}",
                status.as_u16(),
                clip(String::from_utf8_lossy(&body).trim(), 400)
            ))
        }
    }
}

/// `GET`s the event stream and reads up to its endpoint event: the stream's body, what was
/// read past the event, and the endpoint resolved against the stream's URL.
async fn open_stream(conn: &Connection) -> Result<(Incoming, SseScan, Uri), String> {
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(conn.url.clone())
        .header(ACCEPT, "text/event-stream");
    for (k, v) in conn.headers.iter() {
        req = req.header(k, v);
    }
    let req = req
        .body(Full::new(Bytes::new()))
        .map_err(|e| format!("building request: {e}"))?;
    let resp = conn
        .client
        .request(req)
        .await
        .map_err(|e| format!("GET {}: {}", conn.url, error_chain(&e)))?;
    let status = resp.status();
    let ctype = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = resp.into_body();
    if !status.is_success() {
        return Err(format!("GET {}: HTTP {}", conn.url, status.as_u16()));
    }
    if !ctype.starts_with("text/event-stream") {
        return Err(format!(
            "GET {}: content-type {ctype:?}, not text/event-stream",
            conn.url
        ));
    }
    let mut scan = SseScan::default();
    loop {
        while let Some(event) = scan.next_event() {
            if event.event.as_deref() == Some("endpoint") {
                let endpoint = resolve(&conn.url, event.data.trim())?;
                return Ok((body, scan, endpoint));
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    scan.push(&data);
                }
            }
            Some(Err(e)) => return Err(format!("reading the SSE stream: {e}")),
            None => return Err("the SSE stream ended before its endpoint event".to_owned()),
        }
    }
}

/// The endpoint event's URL (absolute, or relative to the stream's) as a plain HTTP URI.
fn resolve(stream: &Uri, endpoint: &str) -> Result<Uri, String> {
    let base =
        url::Url::parse(&stream.to_string()).map_err(|e| format!("stream URL {stream}: {e}"))?;
    let joined = base
        .join(endpoint)
        .map_err(|e| format!("endpoint {endpoint:?}: {e}"))?;
    if joined.scheme() != "http" {
        return Err(format!("endpoint {joined} is not plain http"));
    }
    joined
        .as_str()
        .parse()
        .map_err(|e| format!("endpoint {joined}: {e}"))
}

/// Reads the stream until it ends, handing each response to its waiting call.
async fn read_stream(mut body: Incoming, mut scan: SseScan, pending: Arc<Pending>) {
    let why = 'read: loop {
        while let Some(event) = scan.next_event() {
            let is_message = event.event.as_deref().is_none_or(|e| e == "message");
            if !is_message || event.data.trim().is_empty() {
                continue; // keep-alive comments and other events
            }
            match serde_json::from_str::<Value>(&event.data) {
                Ok(message) => dispatch(message, &pending),
                Err(e) => {
                    break 'read format!("SSE event is not JSON ({e}): {}", clip(&event.data, 160));
                }
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    scan.push(&data);
                }
            }
            Some(Err(e)) => break format!("reading the SSE stream: {e}"),
            None => break "the SSE stream ended without the JSON-RPC response".to_owned(),
        }
    };
    pending.close(why);
}

/// Hands a message (or each of a batch) to the call waiting for it.
fn dispatch(message: Value, pending: &Pending) {
    let at = Instant::now();
    match message {
        Value::Array(batch) => {
            for message in batch {
                if let Some(id) = response_id(&message) {
                    pending.deliver(id, Arrived { message, at });
                }
            }
        }
        message => {
            if let Some(id) = response_id(&message) {
                pending.deliver(id, Arrived { message, at });
            }
        }
    }
}

/// An error with its sources, `: `-separated.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let stream: Uri = "http://127.0.0.1:9/sse".parse().unwrap();
        assert_eq!(
            resolve(&stream, "/messages?sessionId=ab").unwrap(),
            "http://127.0.0.1:9/messages?sessionId=ab"
        );
        assert_eq!(
            resolve(&stream, "http://localhost:8/m/?session_id=1").unwrap(),
            "http://localhost:8/m/?session_id=1"
        );
        assert!(resolve(&stream, "https://x/m").is_err());
    }

    #[test]
    fn a_closed_stream_fails_waiting_and_later_calls() {
        let pending = Pending(Mutex::new(Waiting::Open(HashMap::new())));
        let mut rx = pending.register(4).unwrap();
        pending.deliver(
            4,
            Arrived {
                message: Value::Null,
                at: Instant::now(),
            },
        );
        assert!(rx.try_recv().is_ok());
        let mut rx = pending.register(5).unwrap();
        pending.close("gone".to_owned());
        assert!(rx.try_recv().is_err());
        assert_eq!(pending.closed_reason(), "gone");
        assert_eq!(pending.register(6).unwrap_err(), "gone");
    }
}
