//! Backends: the connection to one MCP server (stdio child, streamable HTTP, legacy SSE), its
//! lifecycle with backoff, health probes, and the [`ToolProvider`] over the server's own tool,
//! prompt and resource names (prefixing happens elsewhere).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use muster_aggregator::backend::{Backend, BackendOptions};
//! use muster_core::resource::mcp_server::McpServerSpec;
//! use muster_core::tool::{ToolCall, ToolProvider};
//! use tower::ServiceExt;
//!
//! let spec = McpServerSpec::stdio("mcp-server-everything", ["stdio".to_owned()]);
//! let backend = Backend::new("everything", spec, BackendOptions::from_env()?);
//! backend.start().await?;
//! println!("{} tools", backend.catalog().tools.len());
//! let args = serde_json::json!({"message": "hi"}).as_object().cloned();
//! let result = backend.service().oneshot(ToolCall::new("echo", args)).await?;
//! println!("{:?}", result.content);
//! backend.stop().await;
//! # Ok(()) }
//! ```
//!
//! Every handle is a cheap clone of one backend. Reads ([`Backend::snapshot`],
//! [`Backend::catalog`](ToolProvider::catalog), [`Backend::status`]) never wait for I/O, so a
//! dead or slow server blocks neither other backends nor catalog readers. Dropping the last
//! handle closes the connection and kills the server's process.

mod backoff;
#[cfg(feature = "http-client")]
mod bearer;
mod call;
mod caller;
mod cancel_guard;
mod catalog;
#[cfg(feature = "http-client")]
pub(crate) mod client_credentials;
mod connect;
mod connector;
mod error;
pub(crate) mod failure;
mod handler;
mod handshake;
mod headers;
pub(crate) mod health;
#[cfg(feature = "http-client")]
mod http;
#[cfg(feature = "http-client")]
mod http1_pool;
mod inner;
#[cfg(feature = "http-client")]
mod lean_call;
mod lean_http;
mod lifecycle;
#[cfg(feature = "stdio")]
mod line_limit;
mod options;
#[cfg(feature = "http-client")]
mod post_headers;
mod probe;
pub(crate) mod progress;
#[cfg(feature = "stdio")]
mod reaper;
mod secrets;
#[cfg(feature = "http-client")]
mod session_tap;
#[cfg(feature = "http-client")]
mod sse;
#[cfg(feature = "http-client")]
mod sse_reply;
#[cfg(feature = "http-client")]
mod sse_routes;
mod state;
mod status;
mod stderr_tail;
#[cfg(feature = "stdio")]
mod stdio;
pub(crate) mod tap;
mod tool_result;
mod transition;

use std::sync::Arc;

use futures::future::BoxFuture;
use muster_core::resource::mcp_server::{McpServerSpec, McpServerStatus};
use muster_core::tool::{Catalog, Revision, ToolError, ToolProvider, ToolService};
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, JsonObject, ReadResourceRequestParams,
    ReadResourceResult,
};
use tokio::sync::watch;
use tower::util::BoxCloneSyncService;

pub use backoff::{Backoff, DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF};
#[cfg(feature = "http-client")]
pub use bearer::BearerSource;
pub use connector::Connector;
pub use error::BackendError;
pub use handler::CLIENT_NAME;
pub use headers::NO_SECRET_READER;
pub use options::{
    BackendOptions, DEFAULT_MAX_RESULT_BYTES, ENV_INITIAL_BACKOFF, ENV_LEAN_CALLS, ENV_MAX_BACKOFF,
    ENV_PROTOCOL, ENV_RETRY_INTERVAL, OptionsError, ProtocolMode,
};
#[cfg(feature = "stdio")]
pub use reaper::{MARKER_ENV, ProcessRegistry};
pub use secrets::{MemorySecrets, SecretError, SecretResolver};
pub use state::{BackendSnapshot, ServiceState};
pub use status::{READY_CONDITION, compute_status, crd_state, ready_condition, rfc3339};

use crate::layers::ProgressTimeoutLayer;
use inner::Inner;

/// The connection to one MCP server and its lifecycle. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Backend {
    inner: Arc<Inner>,
}

impl Backend {
    /// A backend for the MCPServer `name`; nothing is started.
    pub fn new(name: impl Into<String>, spec: McpServerSpec, options: BackendOptions) -> Self {
        Self {
            inner: Arc::new(Inner::new(name.into(), spec, options)),
        }
    }

    /// Connects (spawns the process for stdio), initializes and lists tools, prompts and
    /// resources, all within `spec.timeout`.
    ///
    /// A 401 leaves the backend `auth_required` and answers [`BackendError::AuthRequired`].
    /// A transient failure of a remote server schedules a retry after the backoff; stdio
    /// failures are not retried.
    pub async fn start(&self) -> Result<(), BackendError> {
        let _op = self.inner.ops.lock().await;
        self.inner.start_locked().await
    }

    /// Closes the connection (killing and reaping a stdio process), cancels a connection
    /// attempt in flight and any scheduled retry.
    pub async fn stop(&self) {
        self.inner.interrupt();
        let _op = self.inner.ops.lock().await;
        self.inner.stop_locked().await;
    }

    /// Stops, waits `restart_delay` (200 ms), counts the restart and starts again.
    pub async fn restart(&self) -> Result<(), BackendError> {
        self.inner.interrupt();
        let _op = self.inner.ops.lock().await;
        self.inner.stop_locked().await;
        tokio::time::sleep(self.inner.options.restart_delay).await;
        self.inner.update(|s| {
            s.snapshot.restart_count = s.snapshot.restart_count.saturating_add(1);
        });
        self.inner.start_locked().await
    }

    /// The service data as of now.
    pub fn snapshot(&self) -> BackendSnapshot {
        self.inner.lock().snapshot.clone()
    }

    /// The MCPServer `status` as of now.
    pub fn status(&self) -> McpServerStatus {
        compute_status(&self.snapshot())
    }

    /// Changes whenever the state, the service data or the catalog changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The spec the backend was made from.
    pub fn spec(&self) -> &McpServerSpec {
        &self.inner.spec
    }

    /// The server's secret values: its `env` and `headers` values, the user, password and
    /// query of its URL, and header values read from Secrets once it connected. Every text
    /// the backend hands out (errors, `lastError`) is redacted with it already; use it for
    /// any other text about the server.
    pub fn redactor(&self) -> &muster_core::secret::Redactor {
        &self.inner.redactor
    }

    /// The options the backend was made with.
    pub fn options(&self) -> &BackendOptions {
        &self.inner.options
    }

    /// Reads a resource of the server, within `spec.timeout`.
    pub async fn read_resource(
        &self,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResult, ToolError> {
        let (conn, provider) = call::live_connection(&Arc::downgrade(&self.inner))?;
        let request = conn
            .peer
            .read_resource(ReadResourceRequestParams::new(uri.into()));
        match tokio::time::timeout(self.inner.spec.timeout(), request).await {
            Ok(result) => {
                result.map_err(|e| call::tool_error(&provider, e).redacted(&self.inner.redactor))
            }
            Err(_) => Err(ToolError::Timeout {
                after: self.inner.spec.timeout(),
            }),
        }
    }

    /// Gets a prompt of the server with `arguments`, within `spec.timeout`.
    pub async fn get_prompt(
        &self,
        name: impl Into<String>,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ToolError> {
        let (conn, provider) = call::live_connection(&Arc::downgrade(&self.inner))?;
        let mut params = GetPromptRequestParams::new(name.into());
        params.arguments = arguments;
        let request = conn.peer.get_prompt(params);
        match tokio::time::timeout(self.inner.spec.timeout(), request).await {
            Ok(result) => {
                result.map_err(|e| call::tool_error(&provider, e).redacted(&self.inner.redactor))
            }
            Err(_) => Err(ToolError::Timeout {
                after: self.inner.spec.timeout(),
            }),
        }
    }
}

impl ToolProvider for Backend {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.inner.lock().catalog.clone()
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.inner.revisions.subscribe()
    }

    fn service(&self) -> ToolService {
        let spec = &self.inner.spec;
        let budget = ProgressTimeoutLayer::new(spec.timeout(), spec.progress_max_duration());
        let upstream = call::UpstreamCall {
            inner: Arc::downgrade(&self.inner),
            redactor: self.inner.redactor.clone(),
        };
        BoxCloneSyncService::new(tower::Layer::layer(&budget, upstream))
    }

    fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> BoxFuture<'static, Result<GetPromptResult, ToolError>> {
        let backend = self.clone();
        let name = name.to_owned();
        Box::pin(async move { Backend::get_prompt(&backend, name, arguments).await })
    }

    fn read_resource(
        &self,
        uri: &str,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ToolError>> {
        let backend = self.clone();
        let uri = uri.to_owned();
        Box::pin(async move { Backend::read_resource(&backend, uri).await })
    }
}
