//! A small blocking MCP client over streamable HTTP: enough JSON-RPC to initialize a
//! session, list tools and call them, directly or through muster's `call_tool`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use reqwest::blocking::{Client, Response};
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

/// The protocol version the client initializes with.
pub const HANDSHAKE_PROTOCOL_VERSION: &str = "2025-06-18";

/// The eleven meta-tools muster's `tools/list` returns, in its fixed order.
pub const META_TOOLS: [&str; 11] = [
    "list_tools",
    "describe_tool",
    "list_core_tools",
    "filter_tools",
    "call_tool",
    "list_resources",
    "describe_resource",
    "get_resource",
    "list_prompts",
    "describe_prompt",
    "get_prompt",
];

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// An initialized MCP session with one server.
#[derive(Debug)]
pub struct McpClient {
    http: Client,
    url: String,
    session: Option<String>,
    next_id: AtomicU64,
    /// Sent with every request (e.g. `Host`, `Origin`).
    extra_headers: Vec<(String, String)>,
}

impl McpClient {
    /// Connects to the streamable HTTP endpoint `url`: `initialize`, then
    /// `notifications/initialized`.
    ///
    /// # Errors
    ///
    /// When the server is unreachable or refuses the handshake.
    pub fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with_headers(url, &[])
    }

    /// Like [`connect`](Self::connect), sending `headers` (e.g. `Host`, `Origin`) with every
    /// request of the session.
    ///
    /// # Errors
    ///
    /// When the server is unreachable or refuses the handshake.
    pub fn connect_with_headers(url: &str, headers: &[(&str, &str)]) -> anyhow::Result<Self> {
        let http = Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .context("cannot build the HTTP client")?;
        let mut client = Self {
            http,
            url: url.to_owned(),
            session: None,
            next_id: AtomicU64::new(1),
            extra_headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        };
        let body = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "muster-tests", "version": "0"},
            },
        });
        let response = client.post(&body)?;
        client.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let init = reply(response, 0)?;
        if init.get("protocolVersion").is_none() {
            bail!("initialize answered without a protocol version: {init}");
        }
        client.notify("notifications/initialized")?;
        Ok(client)
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Sends the request `method` and returns its JSON-RPC result.
    ///
    /// # Errors
    ///
    /// On transport failures and JSON-RPC errors.
    pub fn request(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        reply(self.post(&body)?, id).with_context(|| format!("{method} failed"))
    }

    /// Sends the request `method` with `_meta` (e.g. a `progressToken`) and returns every
    /// message of the reply in the order it arrived: the notifications the server streamed
    /// for the request, then the response itself (which this checks is there and no error).
    ///
    /// # Errors
    ///
    /// On transport failures, JSON-RPC errors and a reply without the response.
    pub fn request_with_meta(
        &self,
        method: &str,
        mut params: Value,
        meta: Value,
    ) -> anyhow::Result<Vec<Value>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(object) = params.as_object_mut() {
            object.insert("_meta".to_owned(), meta);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&body)?;
        let status = response.status();
        let is_sse = is_event_stream(&response);
        let text = response.text().context("cannot read the response")?;
        if !status.is_success() {
            bail!("HTTP {status}: {text}");
        }
        jsonrpc_result(&text, is_sse, id).with_context(|| format!("{method} failed"))?;
        Ok(if is_sse {
            sse_data(&text)
                .iter()
                .filter_map(|d| serde_json::from_str(d).ok())
                .collect()
        } else {
            vec![serde_json::from_str(&text).context("not JSON")?]
        })
    }

    /// Opens the session's standalone stream (`GET` on the endpoint) and hands every message
    /// the server sends on it (e.g. `notifications/tools/list_changed`) to the returned
    /// channel, from a thread that ends when the stream or the receiver closes.
    ///
    /// # Errors
    ///
    /// When the server refuses the stream.
    pub fn listen(&self) -> anyhow::Result<std::sync::mpsc::Receiver<Value>> {
        let http = Client::builder()
            .timeout(None)
            .build()
            .context("cannot build the HTTP client")?;
        let mut request = http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", HANDSHAKE_PROTOCOL_VERSION);
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let response = request
            .send()
            .with_context(|| format!("GET {} failed", self.url))?;
        if !response.status().is_success() || !is_event_stream(&response) {
            bail!("GET {} answered {}", self.url, response.status());
        }
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut data: Vec<String> = Vec::new();
            for line in std::io::BufRead::lines(std::io::BufReader::new(response)) {
                let Ok(line) = line else { return };
                let line = line.trim_end_matches('\r');
                if line.is_empty() {
                    if !data.is_empty() {
                        let message = data.join("\n");
                        data.clear();
                        if let Ok(value) = serde_json::from_str(&message)
                            && sender.send(value).is_err()
                        {
                            return;
                        }
                    }
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
                }
            }
        });
        Ok(receiver)
    }

    /// The names of every tool in `tools/list`, all pages.
    ///
    /// # Errors
    ///
    /// When a request fails.
    pub fn list_tools(&self) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let page = self.request("tools/list", params)?;
            names.extend(
                page["tools"]
                    .as_array()
                    .context("tools/list without tools")?
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned)),
            );
            match page["nextCursor"].as_str() {
                Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
                _ => return Ok(names),
            }
        }
    }

    /// Calls the tool `name` directly with `tools/call` and returns the raw
    /// `CallToolResult`.
    ///
    /// # Errors
    ///
    /// When the request fails.
    pub fn call_tool(&self, name: &str, arguments: Value) -> anyhow::Result<Value> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Calls the tool `name` through muster's `call_tool` meta-tool and unwraps the envelope.
    ///
    /// # Errors
    ///
    /// When the request fails or the result carries no envelope. A failing tool is not an
    /// error: see [`Envelope::is_error`].
    pub fn call(&self, name: &str, arguments: Value) -> anyhow::Result<Envelope> {
        let result = self.call_tool("call_tool", json!({"name": name, "arguments": arguments}))?;
        Envelope::from_call_tool_result(&result)
    }

    /// Like [`call`](Self::call), for a call that must succeed: its inner text.
    ///
    /// # Errors
    ///
    /// When the request fails or the tool answers an error (the error carries the envelope).
    pub fn call_ok(&self, name: &str, arguments: Value) -> anyhow::Result<String> {
        let envelope = self.call(name, arguments)?;
        if envelope.is_error {
            bail!("{name} failed: {}", envelope.raw);
        }
        Ok(envelope.text().to_owned())
    }

    /// Like [`call_ok`](Self::call_ok), parsing the inner text as JSON (core tools answer
    /// JSON text).
    ///
    /// # Errors
    ///
    /// As [`call_ok`](Self::call_ok), and when the text is not JSON.
    pub fn call_ok_json(&self, name: &str, arguments: Value) -> anyhow::Result<Value> {
        let text = self.call_ok(name, arguments)?;
        serde_json::from_str(&text).with_context(|| format!("{name} answered no JSON: {text}"))
    }

    /// Like [`call`](Self::call), for a call that must fail: its inner error text.
    ///
    /// # Errors
    ///
    /// When the request fails or the tool succeeds (the error carries the envelope).
    pub fn call_err(&self, name: &str, arguments: Value) -> anyhow::Result<String> {
        let envelope = self.call(name, arguments)?;
        if !envelope.is_error {
            bail!("{name} should have failed: {}", envelope.raw);
        }
        Ok(envelope.text().to_owned())
    }

    /// Waits up to `timeout` until [`reachable_tools`](Self::reachable_tools) has every tool
    /// of `present` and none of `absent`, and returns it.
    ///
    /// # Errors
    ///
    /// When it does not within `timeout`; the error shows the last listing.
    pub fn wait_for_tools(
        &self,
        present: &[&str],
        absent: &[&str],
        timeout: Duration,
    ) -> anyhow::Result<Vec<String>> {
        let mut last = Vec::new();
        crate::eventually("list_tools", timeout, || {
            last = self.reachable_tools().unwrap_or_default();
            let has = |name: &&str| last.iter().any(|t| t == name);
            (present.iter().all(has) && !absent.iter().any(has)).then(|| last.clone())
        })
        .with_context(|| format!("wanted {present:?} and not {absent:?}; list_tools has {last:?}"))
    }

    /// The names `list_tools` (the meta-tool) reports: every tool reachable through
    /// `call_tool`.
    ///
    /// # Errors
    ///
    /// When the call fails or answers an unexpected shape.
    pub fn reachable_tools(&self) -> anyhow::Result<Vec<String>> {
        let result = self.call_tool("list_tools", json!({}))?;
        let text = first_text(&result).context("list_tools answered no text")?;
        let listing: Value = serde_json::from_str(text).context("list_tools answered no JSON")?;
        Ok(listing["tools"]
            .as_array()
            .context("list_tools answered no tools")?
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect())
    }

    fn notify(&self, method: &str) -> anyhow::Result<()> {
        let response = self.post(&json!({"jsonrpc": "2.0", "method": method}))?;
        if !response.status().is_success() {
            bail!("{method} answered {}", response.status());
        }
        Ok(())
    }

    fn post(&self, body: &Value) -> anyhow::Result<Response> {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        for (name, value) in &self.extra_headers {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", HANDSHAKE_PROTOCOL_VERSION);
        }
        request
            .send()
            .with_context(|| format!("POST {} failed", self.url))
    }
}

/// The JSON-RPC result for request `id` in `response`, a JSON body or an SSE stream.
fn reply(response: Response, id: u64) -> anyhow::Result<Value> {
    let status = response.status();
    let is_sse = is_event_stream(&response);
    let body = response.text().context("cannot read the response")?;
    if !status.is_success() {
        bail!("HTTP {status}: {body}");
    }
    jsonrpc_result(&body, is_sse, id)
}

/// Whether `response` is an SSE stream.
fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The JSON-RPC result for request `id` in a response `body`: one JSON message, or an SSE
/// stream (`is_sse`) whose events carry messages. A JSON-RPC error is an `Err`.
pub fn jsonrpc_result(body: &str, is_sse: bool, id: u64) -> anyhow::Result<Value> {
    let messages: Vec<Value> = if is_sse {
        sse_data(body)
            .iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    } else {
        vec![serde_json::from_str(body).with_context(|| format!("not JSON: {body}"))?]
    };
    let message = messages
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .with_context(|| format!("no response to request {id} in: {body}"))?;
    if let Some(error) = message.get("error") {
        return Err(anyhow!("JSON-RPC error: {error}"));
    }
    message
        .get("result")
        .cloned()
        .with_context(|| format!("response without result: {message}"))
}

/// The `data` of every event in an SSE body.
fn sse_data(body: &str) -> Vec<String> {
    let body = body.replace("\r\n", "\n");
    body.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .collect()
}

fn first_text(result: &Value) -> Option<&str> {
    result["content"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "text")?["text"]
        .as_str()
}

/// The inner result of a `call_tool` call: muster returns it as a JSON envelope
/// `{"isError": bool, "content": [...], "structuredContent"?: ...}` in the outer result's
/// only text content.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Whether the inner tool failed.
    pub is_error: bool,
    /// The inner content items.
    pub content: Vec<Value>,
    /// The whole envelope.
    pub raw: Value,
}

impl Envelope {
    /// Unwraps the envelope of a `CallToolResult` (JSON) from `call_tool`.
    ///
    /// # Errors
    ///
    /// When the result holds no envelope.
    pub fn from_call_tool_result(result: &Value) -> anyhow::Result<Self> {
        let text = first_text(result).with_context(|| format!("no text content: {result}"))?;
        Self::parse(text)
    }

    /// Parses an envelope's JSON text.
    ///
    /// # Errors
    ///
    /// When `text` is not an envelope.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let raw: Value =
            serde_json::from_str(text).with_context(|| format!("envelope is not JSON: {text}"))?;
        let is_error = raw["isError"]
            .as_bool()
            .with_context(|| format!("envelope without isError: {text}"))?;
        let content = raw["content"].as_array().cloned().unwrap_or_default();
        Ok(Self {
            is_error,
            content,
            raw,
        })
    }

    /// The first inner text, or `""`.
    pub fn text(&self) -> &str {
        self.content
            .iter()
            .find(|c| c["type"] == "text")
            .and_then(|c| c["text"].as_str())
            .unwrap_or("")
    }

    /// The first inner text parsed as JSON (core tools answer JSON text).
    ///
    /// # Errors
    ///
    /// When it is not JSON.
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_str(self.text())
            .with_context(|| format!("inner text is not JSON: {}", self.text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_split_and_joined() {
        let body = "event: message\r\ndata: {\"a\":1}\r\n\r\n: ping\n\nid: 3\ndata: x\ndata:y\n\n";
        assert_eq!(
            sse_data(body),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
    }

    #[test]
    fn envelopes_unwrap() {
        let outer = json!({"content": [{"type": "text", "text": "{\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"Echo: hi\"}]}"}]});
        let envelope = Envelope::from_call_tool_result(&outer).expect("an envelope");
        assert!(!envelope.is_error);
        assert_eq!(envelope.text(), "Echo: hi");
    }
}
