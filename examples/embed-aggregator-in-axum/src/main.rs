//! Mounts muster's MCP aggregator under `/mcp-gateway` of an existing axum application, with
//! one in-process tool provider behind it; the application keeps its own routes.
//!
//! Run with: `cargo run -p example-embed-aggregator-in-axum`
//!
//! Then `curl http://127.0.0.1:3000/hello`, and point an MCP client at
//! `http://127.0.0.1:3000/mcp-gateway/mcp`: `tools/list` shows the meta-tools, and
//! `call_tool {"name": "x_hello_greet", "arguments": {"name": "Ada"}}` reaches the provider.

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use muster_aggregator::registry::{BackendNaming, Registry};
use muster_aggregator::server::{self, Aggregator};
use muster_core::tool::{Catalog, Revision, ToolCall, ToolError, ToolProvider, ToolService};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::Value;
use tokio::sync::watch;

/// A provider with one fixed tool, `greet`.
#[derive(Debug)]
struct Greeter {
    catalog: Arc<Catalog>,
    revisions: watch::Sender<Revision>,
}

impl Greeter {
    fn new() -> Self {
        let greet = Tool::new(
            "greet",
            "Greets someone by name",
            rmcp::object!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Who to greet"}},
                "required": ["name"],
            }),
        );
        Self {
            catalog: Arc::new(Catalog {
                tools: vec![greet],
                ..Catalog::default()
            }),
            revisions: watch::channel(Revision::default()).0,
        }
    }
}

async fn greet(call: ToolCall) -> Result<CallToolResult, ToolError> {
    let args = call.arguments_or_empty()?;
    let name = args.get("name").and_then(Value::as_str).unwrap_or("world");
    Ok(CallToolResult::success(vec![ContentBlock::text(format!(
        "Hello, {name}!"
    ))]))
}

impl ToolProvider for Greeter {
    fn name(&self) -> &str {
        "hello"
    }

    fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog)
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.revisions.subscribe()
    }

    fn service(&self) -> ToolService {
        ToolService::new(tower::service_fn(greet))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // The provider's tools are exposed as `x_hello_<tool>`.
    let registry = Registry::new();
    registry.upsert_backend("hello", BackendNaming::default(), Arc::new(Greeter::new()));
    let aggregator = Aggregator::builder(registry).build();

    let app = Router::new()
        .route("/hello", get(|| async { "Hello from my own route\n" }))
        .nest("/mcp-gateway", aggregator.router());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("serving on http://127.0.0.1:3000 (MCP at /mcp-gateway/mcp); Ctrl-C stops");
    // Cancelling the aggregator's token ends open MCP streams, so the graceful shutdown
    // does not wait for clients that hold them.
    let token = aggregator.cancellation_token();
    server::serve(listener, app, async move {
        let _ = tokio::signal::ctrl_c().await;
        token.cancel();
    })
    .await
}
