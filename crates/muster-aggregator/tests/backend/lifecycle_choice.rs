//! Which lifecycle muster asks a streamable-HTTP server for: in the default mode a session
//! where the server lists a version of the `initialize` handshake beside 2026-07-28, and
//! 2026-07-28 where it lists nothing else; `discover` asks for 2026-07-28 wherever the server
//! has it. The servers are rmcp's, served in this process.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use muster_aggregator::backend::{Backend, ProtocolMode};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use super::support::*;

/// A server with one tool, `echo`, that speaks `versions` and counts its `initialize`
/// handshakes.
#[derive(Clone)]
struct Echo {
    versions: &'static [ProtocolVersion],
    handshakes: Arc<AtomicUsize>,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(self.versions)
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, rmcp::ErrorData> {
        self.handshakes.fetch_add(1, Ordering::SeqCst);
        if context.peer.peer_info().is_none() {
            context.peer.set_peer_info(request);
        }
        Ok(self.get_info())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}});
        let schema = serde_json::from_value(schema).unwrap();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Answers its message.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let message = request
            .arguments
            .and_then(|a| a.get("message").and_then(|m| m.as_str()).map(str::to_owned))
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
    }
}

/// Serves an [`Echo`] of `versions` at `http://127.0.0.1:PORT/mcp`, with sessions for the
/// handshake's versions; answers its URL and handshake count.
async fn serve_echo(versions: &'static [ProtocolVersion]) -> (String, Arc<AtomicUsize>) {
    let handshakes = Arc::new(AtomicUsize::new(0));
    let echo = Echo {
        versions,
        handshakes: handshakes.clone(),
    };
    let service = StreamableHttpService::new(
        move || Ok(echo.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let router = axum::Router::new().nest_service("/mcp", service);
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, handshakes)
}

/// Starts a backend of the server at `url` in `mode`, calls `echo` on it and answers the
/// protocol version it runs.
async fn era_of(url: &str, mode: ProtocolMode) -> String {
    let backend = Backend::new(
        "echo",
        http_spec(url.to_owned()),
        options().with_protocol(mode),
    );
    backend.start().await.unwrap();
    assert_eq!(
        text_of(&backend, call("echo", json!({"message": "hi"}))).await,
        "hi"
    );
    let era = backend.snapshot().protocol_version.unwrap_or_default();
    backend.stop().await;
    era
}

const BOTH: &[ProtocolVersion] = &[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2026_07_28];
const MODERN_ONLY: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_offers_a_session_gets_one() {
    let (url, handshakes) = serve_echo(BOTH).await;
    assert_eq!(era_of(&url, ProtocolMode::Auto).await, "2025-06-18");
    assert_eq!(handshakes.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_2026_07_28_alone_gets_it() {
    let (url, handshakes) = serve_echo(MODERN_ONLY).await;
    assert_eq!(era_of(&url, ProtocolMode::Auto).await, "2026-07-28");
    assert_eq!(handshakes.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_asks_for_2026_07_28_where_the_server_has_it() {
    let (url, handshakes) = serve_echo(BOTH).await;
    assert_eq!(era_of(&url, ProtocolMode::Discover).await, "2026-07-28");
    assert_eq!(handshakes.load(Ordering::SeqCst), 0);
}
