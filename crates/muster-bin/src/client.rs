//! A small MCP client of a muster server: JSON-RPC over streamable HTTP, enough for the CLI.
//!
//! [`Client::connect`] initializes a session (protocol 2025-06-18); [`Client::call_tool`]
//! calls a tool through the `call_tool` meta-tool and unwraps its envelope; progress and
//! other notifications that arrive while a request is open reach a callback.

pub(crate) mod endpoint;
mod envelope;
mod wire;

use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

pub(crate) use self::endpoint::{Contexts, resolve_endpoint};
pub(crate) use self::envelope::ToolResult;
pub(crate) use self::wire::Messages;

/// The protocol version the CLI asks for.
const PROTOCOL_VERSION: &str = "2025-06-18";
const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// One MCP session with a muster server.
#[derive(Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    endpoint: String,
    session: Option<HeaderValue>,
    protocol: HeaderValue,
    next_id: u64,
}

impl Client {
    /// Opens a session with the server at `endpoint`.
    pub(crate) async fn connect(endpoint: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .build()
            .context("cannot build the HTTP client")?;
        let mut client = Self {
            http,
            endpoint: endpoint.to_owned(),
            session: None,
            protocol: HeaderValue::from_static(PROTOCOL_VERSION),
            next_id: 1,
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "muster", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = client.request("initialize", params, |_| {}).await?;
        if let Some(version) = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            client.protocol = version;
        }
        client
            .notify("notifications/initialized", json!({}))
            .await?;
        Ok(client)
    }

    /// Calls `name` through `call_tool`. `on_progress` sees each progress notification
    /// (`params` of `notifications/progress`).
    pub(crate) async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        on_progress: impl FnMut(&Value),
    ) -> anyhow::Result<ToolResult> {
        let params = json!({
            "name": "call_tool",
            "arguments": {"name": name, "arguments": arguments},
            "_meta": {"progressToken": self.next_id},
        });
        let mut on_progress = on_progress;
        let result = self
            .request("tools/call", params, |message| {
                if message.get("method").and_then(Value::as_str) == Some("notifications/progress")
                    && let Some(params) = message.get("params")
                {
                    on_progress(params);
                }
            })
            .await?;
        ToolResult::from_call_tool(&result)
    }

    /// Calls a meta-tool (such as `list_tools`) directly, not through `call_tool`.
    pub(crate) async fn call_meta(
        &mut self,
        name: &str,
        arguments: Value,
    ) -> anyhow::Result<ToolResult> {
        let params = json!({"name": name, "arguments": arguments});
        let result = self.request("tools/call", params, |_| {}).await?;
        Ok(ToolResult::from_result(&result))
    }

    /// Opens the session's event stream, where the server sends notifications that belong to
    /// no request.
    pub(crate) async fn notifications(&self) -> anyhow::Result<Messages> {
        let mut request = self
            .http
            .get(&self.endpoint)
            .header(ACCEPT, "text/event-stream")
            .header(PROTOCOL_HEADER, self.protocol.clone());
        if let Some(session) = self.session.clone() {
            request = request.header(SESSION_HEADER, session);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        if !response.status().is_success() {
            bail!(
                "muster at {} refused the event stream: HTTP {}",
                self.endpoint,
                response.status()
            );
        }
        Ok(wire::messages(response))
    }

    /// Ends the session (best effort).
    pub(crate) async fn close(self) {
        if let Some(session) = self.session {
            let request = self
                .http
                .delete(&self.endpoint)
                .header(SESSION_HEADER, session)
                .timeout(Duration::from_secs(2));
            if let Err(e) = request.send().await {
                tracing::debug!(error = %e, "closing the session failed");
            }
        }
    }

    /// Sends a request and returns its `result`; `on_message` sees every other message that
    /// arrives with the answer.
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        mut on_message: impl FnMut(&Value),
    ) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&message).await?;
        if method == "initialize" {
            self.session = response.headers().get(SESSION_HEADER).cloned();
        }
        let mut messages = wire::messages(response);
        while let Some(message) = futures::StreamExt::next(&mut messages).await {
            let message = message?;
            if message.get("method").is_none() && message.get("id") == Some(&json!(id)) {
                if let Some(error) = message.get("error") {
                    let text = error
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| error.to_string(), str::to_owned);
                    bail!("muster refused {method}: {text}");
                }
                return Ok(message.get("result").cloned().unwrap_or(Value::Null));
            }
            on_message(&message);
        }
        Err(anyhow!(
            "the connection to muster at {} ended before it answered {method}",
            self.endpoint
        ))
    }

    /// Sends a notification.
    async fn notify(&self, method: &str, params: Value) -> anyhow::Result<()> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.post(&message).await.map(drop)
    }

    /// POSTs one message; any status but success is an error.
    async fn post(&self, message: &Value) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .json(message);
        if let Some(session) = self.session.clone() {
            request = request
                .header(SESSION_HEADER, session)
                .header(PROTOCOL_HEADER, self.protocol.clone());
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        match status {
            StatusCode::UNAUTHORIZED => bail!(
                "muster at {} requires authentication (HTTP 401): {}",
                self.endpoint,
                body.trim()
            ),
            StatusCode::NOT_FOUND if self.session.is_none() => bail!(
                "no MCP endpoint at {} (HTTP 404): check --endpoint or the context",
                self.endpoint
            ),
            _ => bail!(
                "muster at {} answered HTTP {status}: {}",
                self.endpoint,
                body.trim()
            ),
        }
    }

    fn unreachable(&self, e: &reqwest::Error) -> anyhow::Error {
        tracing::debug!(error = %e, "request failed");
        if e.is_connect() || e.is_timeout() {
            anyhow!(
                "cannot reach muster at {}: is `muster serve` running?",
                self.endpoint
            )
        } else {
            anyhow!("talking to muster at {} failed: {e}", self.endpoint)
        }
    }
}
