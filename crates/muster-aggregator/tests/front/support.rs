//! Real rmcp peers for the front-door tests: an upstream MCP server (echo, add, slow with
//! progress, fail) reached through an rmcp client and wrapped as a `ToolProvider`, fixed
//! in-process providers, the aggregator served on 127.0.0.1:0, and an rmcp client that
//! talks to it over streamable HTTP.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use muster_aggregator::registry::{BackendNaming, Registry};
use muster_aggregator::server::Aggregator;
use muster_core::tool::{
    Catalog, ProgressSink, ProgressUpdate, Revision, ToolCall, ToolError, ToolProvider, ToolService,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    ContentBlock, ErrorData, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, ServerResult, Tool,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RoleServer, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn schema(properties: Value) -> JsonObject {
    object(json!({"type": "object", "properties": properties}))
}

// === the upstream MCP server ===

/// An MCP server with `echo`, `add`, `slow` (reports progress) and `fail`.
#[derive(Debug, Clone)]
pub struct Upstream;

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "echo",
                "Echo a message back.",
                schema(json!({"message": {"type": "string"}})),
            ),
            Tool::new(
                "add",
                "Add two numbers.",
                schema(json!({"a": {"type": "number"}, "b": {"type": "number"}})),
            ),
            Tool::new(
                "slow",
                "Count to `steps`, reporting progress.",
                schema(json!({"steps": {"type": "number"}})),
            ),
            Tool::new("fail", "Always fails.", schema(json!({}))),
            Tool::new(
                "broken",
                "Answers with a protocol error.",
                schema(json!({})),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                CallToolResult::success(vec![ContentBlock::text(format!("Echo: {message}"))])
            }
            "add" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                CallToolResult::structured(json!({"sum": n("a") + n("b")}))
            }
            "slow" => {
                let steps = args.get("steps").and_then(Value::as_u64).unwrap_or(3);
                if let Some(token) = context.meta.get_progress_token() {
                    for step in 1..=steps {
                        #[allow(clippy::cast_precision_loss)]
                        let param = ProgressNotificationParam::new(token.clone(), step as f64)
                            .with_total(steps as f64)
                            .with_message(format!("step {step}"));
                        let _ = context.peer.notify_progress(param).await;
                        // The client side hands each notification to a task of its own: a
                        // pause between them keeps those tasks from overtaking each other.
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                    // A pause lets the last one reach the caller before the result does,
                    // even on a loaded machine.
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                CallToolResult::success(vec![ContentBlock::text(format!("counted to {steps}"))])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("upstream says no")]),
            "broken" => return Err(ErrorData::internal_error("kaput", None)),
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }
}

// === an rmcp client wrapped as a ToolProvider ===

type Sinks = Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>;

/// The client side of the upstream connection: relays progress to the sink of the call the
/// notification belongs to.
#[derive(Debug, Clone, Default)]
pub struct Relay {
    sinks: Sinks,
}

impl ClientHandler for Relay {
    async fn on_progress(
        &self,
        param: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let sink = self
            .sinks
            .lock()
            .unwrap()
            .get(&param.progress_token)
            .cloned();
        if let Some(sink) = sink {
            sink.report(ProgressUpdate {
                progress: param.progress,
                total: param.total,
                message: param.message,
            });
        }
    }
}

/// An upstream MCP server reached through a real rmcp client over `tokio::io::duplex`.
#[derive(Debug)]
pub struct RmcpProvider {
    name: String,
    client: Arc<RunningService<RoleClient, Relay>>,
    sinks: Sinks,
    catalog: Arc<Catalog>,
    revision: watch::Sender<Revision>,
}

impl RmcpProvider {
    /// Starts `server` in-process and connects to it.
    pub async fn connect(name: &str, server: impl ServerHandler) -> Arc<Self> {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let relay = Relay::default();
        let sinks = relay.sinks.clone();
        let client = relay.serve(client_io).await.expect("client connects");
        let tools = client.list_all_tools().await.expect("tools listed");
        Arc::new(Self {
            name: name.to_owned(),
            client: Arc::new(client),
            sinks,
            catalog: Arc::new(Catalog {
                tools,
                ..Catalog::default()
            }),
            revision: watch::channel(Revision::default()).0,
        })
    }
}

impl ToolProvider for RmcpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revision.subscribe()
    }

    fn service(&self) -> ToolService {
        let client = Arc::clone(&self.client);
        let sinks = Arc::clone(&self.sinks);
        let name = self.name.clone();
        ToolService::new(tower::service_fn(move |call: ToolCall| {
            let client = Arc::clone(&client);
            let sinks = Arc::clone(&sinks);
            let name = name.clone();
            async move {
                let mut params = CallToolRequestParams::new(call.name.to_string());
                if let Some(arguments) = call.arguments.clone() {
                    params = params.with_arguments(arguments.into_object()?);
                }
                let backend = |e: rmcp::ServiceError| ToolError::Backend {
                    provider: name.clone(),
                    retryable: false,
                    source: Box::new(e),
                };
                let handle = client
                    .peer()
                    .send_request_with_option(
                        ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                        PeerRequestOptions::no_options(),
                    )
                    .await
                    .map_err(backend)?;
                let token = handle.progress_token.clone();
                if let Some(sink) = call.context.progress.clone() {
                    sinks.lock().unwrap().insert(token.clone(), sink);
                }
                let response = handle.await_response().await;
                sinks.lock().unwrap().remove(&token);
                match response.map_err(backend)? {
                    ServerResult::CallToolResult(result) => Ok(result),
                    other => Err(ToolError::failed(format!("unexpected answer {other:?}"))),
                }
            }
        }))
    }
}

// === fixed in-process providers ===

/// A provider with fixed tools whose calls answer
/// `{"source": <provider>, "tool": <name>, "arguments": {...}, "session": <session id>}`.
#[derive(Debug)]
pub struct Fixed {
    name: String,
    catalog: Arc<Catalog>,
    revision: watch::Sender<Revision>,
    /// Whether answers also say what the front door handed on as text, in `argumentsText`.
    reports_text: bool,
}

impl Fixed {
    pub fn new(name: &str, tools: Vec<Tool>) -> Arc<Self> {
        Self::made(name, tools, false)
    }

    /// A provider as [`new`](Self::new) makes whose answers also carry `argumentsText`:
    /// the arguments' JSON text as the front door handed it on (`null`: an object).
    pub fn reporting_text(name: &str, tools: Vec<Tool>) -> Arc<Self> {
        Self::made(name, tools, true)
    }

    fn made(name: &str, tools: Vec<Tool>, reports_text: bool) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            catalog: Arc::new(Catalog {
                tools,
                ..Catalog::default()
            }),
            revision: watch::channel(Revision::default()).0,
            reports_text,
        })
    }
}

impl ToolProvider for Fixed {
    fn name(&self) -> &str {
        &self.name
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revision.subscribe()
    }

    fn service(&self) -> ToolService {
        let name = self.name.clone();
        let reports_text = self.reports_text;
        ToolService::new(tower::service_fn(move |call: ToolCall| {
            let mut body = json!({
                "source": name,
                "tool": call.name.as_str(),
                "arguments": call.arguments.clone().map_or_else(|| json!({}), |a| json!(a)),
                "session": call.context.session.as_str(),
            });
            if reports_text {
                body["argumentsText"] = json!(
                    call.arguments
                        .as_ref()
                        .and_then(|a| a.as_text())
                        .map(|t| t.get())
                );
            }
            async move {
                Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::text(
                    body.to_string(),
                )]))
            }
        }))
    }
}

/// A backend whose `wait` tool answers only once its call is cancelled, counting the calls
/// that ended.
#[derive(Debug)]
pub struct Waiting {
    catalog: Arc<Catalog>,
    revision: watch::Sender<Revision>,
    pub cancelled: Arc<AtomicUsize>,
}

impl Waiting {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            catalog: Arc::new(Catalog {
                tools: vec![tool("wait", "Waits until cancelled.", json!({}))],
                ..Catalog::default()
            }),
            revision: watch::channel(Revision::default()).0,
            cancelled: Arc::default(),
        })
    }
}

impl ToolProvider for Waiting {
    fn name(&self) -> &str {
        "waiting"
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revision.subscribe()
    }

    fn service(&self) -> ToolService {
        let cancelled = self.cancelled.clone();
        ToolService::new(tower::service_fn(move |call: ToolCall| {
            // Counts when the call ends: cancelled, or dropped with its caller.
            let ended = Ended(cancelled.clone());
            async move {
                call.context.cancellation.cancelled().await;
                drop(ended);
                Ok::<_, ToolError>(CallToolResult::success(vec![ContentBlock::text("late")]))
            }
        }))
    }
}

/// Counts one ended call when dropped.
struct Ended(Arc<AtomicUsize>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tool with `properties`.
pub fn tool(name: &str, description: &str, properties: Value) -> Tool {
    Tool::new(name.to_owned(), description.to_owned(), schema(properties))
}

// === the aggregator and a client ===

/// The aggregator, served on an ephemeral loopback port until dropped.
pub struct Served {
    pub addr: SocketAddr,
    pub registry: Registry,
    shutdown: CancellationToken,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Served {
    /// Serves a fresh aggregator over `registry`.
    pub async fn start(registry: Registry) -> Self {
        let aggregator = Aggregator::builder(registry.clone())
            .version("9.9.9")
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let _ = aggregator
                .serve_tcp(listener, async move { stop.cancelled().await })
                .await;
        });
        Self {
            addr,
            registry,
            shutdown,
        }
    }

    /// The `/mcp` URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// A connected MCP client.
    pub async fn client(&self) -> Client {
        let (tx, rx) = mpsc::unbounded_channel();
        let (changed_tx, changed_rx) = mpsc::unbounded_channel();
        let handler = TestClient {
            progress: tx,
            list_changed: changed_tx,
        };
        let transport = StreamableHttpClientTransport::from_uri(self.url());
        let running = handler.serve(transport).await.expect("client initializes");
        Client {
            running,
            progress: rx,
            list_changed: changed_rx,
        }
    }
}

/// The test's MCP client handler: records progress and list-changed notifications.
#[derive(Debug, Clone)]
pub struct TestClient {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for TestClient {
    async fn on_progress(
        &self,
        param: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(param);
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

/// A connected client plus the notifications it received.
pub struct Client {
    pub running: RunningService<RoleClient, TestClient>,
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pub list_changed: mpsc::UnboundedReceiver<()>,
}

impl Client {
    /// Calls a meta-tool directly.
    pub async fn meta(&self, name: &str, arguments: Value) -> CallToolResult {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        tokio::time::timeout(Duration::from_secs(20), self.running.call_tool(params))
            .await
            .expect("answer in time")
            .expect("a tool result")
    }

    /// Calls `name` through `call_tool` with `arguments` (`Value::Null` for none); returns
    /// the outer result and the parsed envelope.
    pub async fn call(&self, name: &str, arguments: Value) -> (CallToolResult, Value) {
        let outer = self
            .meta("call_tool", json!({"name": name, "arguments": arguments}))
            .await;
        let envelope = serde_json::from_str(text(&outer)).expect("an envelope");
        (outer, envelope)
    }

    /// Like [`call`](Self::call), returning the envelope's first text and its `isError`.
    pub async fn call_text(&self, name: &str, arguments: Value) -> (bool, String) {
        let (_, envelope) = self.call(name, arguments).await;
        let is_error = envelope["isError"].as_bool().expect("isError");
        let text = envelope["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (is_error, text)
    }
}

/// The only text content of a result.
pub fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one content item: {result:?}");
    &result.content[0].as_text().expect("text content").text
}

/// The JSON in a result's text.
pub fn json_text(result: &CallToolResult) -> Value {
    serde_json::from_str(text(result)).expect("JSON text")
}

/// A registry with the upstream rmcp server as backend `upstream`.
pub async fn registry_with_upstream() -> Registry {
    let registry = Registry::new();
    let upstream = RmcpProvider::connect("upstream", Upstream).await;
    registry.upsert_backend("upstream", BackendNaming::default(), upstream);
    registry
}
