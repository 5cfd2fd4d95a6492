//! One tool call through `Backend::service()` against an in-process rmcp server over
//! `tokio::io::duplex`, next to the same call with a bare rmcp client.
//!
//! Run: `cargo bench -p muster-aggregator --bench backend_call`. Prints p50, p90 and mean per
//! call for both paths and their ratio.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use muster_aggregator::backend::{Backend, BackendOptions, Connector};
use muster_core::resource::mcp_server::McpServerSpec;
use muster_core::tool::{ToolCall, ToolProvider};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use tokio::io::DuplexStream;
use tokio::time::Instant;
use tower::{Service, ServiceExt as _};

const WARMUP: usize = 200;
const CALLS: usize = 5000;

#[derive(Debug, Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema =
            serde_json::json!({"type": "object", "properties": {"message": {"type": "string"}}});
        let schema = schema.as_object().cloned().unwrap_or_default();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Echoes the message",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(|m| m.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
    }
}

/// Serves `Echo` on the far end of a fresh duplex pair.
fn in_process_server() -> DuplexStream {
    let (client, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = Echo.serve(server).await {
            let _ = running.waiting().await;
        }
    });
    client
}

#[derive(Debug)]
struct InProcess;

#[async_trait]
impl Connector for InProcess {
    async fn connect(&self, _name: &str) -> std::io::Result<DuplexStream> {
        Ok(in_process_server())
    }
}

fn arguments() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({"message": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

struct Stats {
    p50: Duration,
    p90: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let total: Duration = samples.iter().sum();
    Stats {
        p50: samples[samples.len() / 2],
        p90: samples[samples.len() * 9 / 10],
        mean: total / u32::try_from(samples.len()).unwrap_or(u32::MAX),
    }
}

async fn bare_client() -> Vec<Duration> {
    let client = ().serve(in_process_server()).await.expect("client");
    let mut samples = Vec::with_capacity(CALLS);
    for i in 0..WARMUP + CALLS {
        let started = Instant::now();
        let params = CallToolRequestParams::new("echo").with_arguments(arguments());
        client.call_tool(params).await.expect("call");
        if i >= WARMUP {
            samples.push(started.elapsed());
        }
    }
    let _ = client.cancel().await;
    samples
}

async fn through_backend() -> Vec<Duration> {
    let options = BackendOptions::default()
        .with_health_interval(None)
        .with_connector(Arc::new(InProcess));
    let spec = McpServerSpec::stdio("in-process", Vec::new());
    let backend = Backend::new("bench", spec, options);
    backend.start().await.expect("start");
    let mut service = backend.service();
    let mut samples = Vec::with_capacity(CALLS);
    for i in 0..WARMUP + CALLS {
        let started = Instant::now();
        let call = ToolCall::new("echo", Some(arguments()));
        service
            .ready()
            .await
            .expect("ready")
            .call(call)
            .await
            .expect("call");
        if i >= WARMUP {
            samples.push(started.elapsed());
        }
    }
    backend.stop().await;
    samples
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let bare = stats(runtime.block_on(bare_client()));
    let backend = stats(runtime.block_on(through_backend()));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!("{CALLS} sequential echo calls over tokio::io::duplex");
    println!(
        "bare rmcp client : p50 {:>9.1?}  p90 {:>9.1?}  mean {:>9.1?}",
        bare.p50, bare.p90, bare.mean
    );
    println!(
        "Backend::service : p50 {:>9.1?}  p90 {:>9.1?}  mean {:>9.1?}",
        backend.p50, backend.p90, backend.mean
    );
    println!(
        "ratio (backend / bare): p50 {:.2}  mean {:.2}",
        ratio(backend.p50, bare.p50),
        ratio(backend.mean, bare.mean)
    );
}
