//! A client of a muster server: rmcp's streamable-HTTP client, as the backends use it, with
//! the server's notifications and progress in order, and errors that say what to do.
//!
//! [`MusterClient::connect`] opens a session (protocol 2025-06-18 unless
//! [`ClientOptions::protocol`] says otherwise); [`MusterClient::call`] calls one tool of the
//! endpoint (a meta-tool such as `list_tools` or `call_tool`) and reports its progress to a
//! callback; [`MusterClient::notifications`] streams everything else the server sends the
//! session (`notifications/muster/event`, `list_changed`, log messages). The `muster` CLI
//! and `muster agent --repl` are built on it.
//!
//! ```no_run
//! # async fn run() -> Result<(), muster_aggregator::client::ClientError> {
//! use muster_aggregator::client::MusterClient;
//! let client = MusterClient::connect("http://localhost:8090/mcp").await?;
//! let tools = client.call("list_tools", serde_json::json!({}), |_| {}).await?;
//! println!("{tools}");
//! client.close().await;
//! # Ok(())
//! # }
//! ```

mod error;
pub mod signin;
mod sink;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use http::{HeaderName, HeaderValue};
use muster_core::tool::ProgressSink;
use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProtocolVersion, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, PeerRequestOptions, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use self::error::ClientError;
use self::sink::{NotificationSink, SinkHandle};
use crate::backend::progress::ProgressRouter;
use crate::backend::tap::ProgressTap;

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long closing the session may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How a [`MusterClient`] connects.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Headers sent with every request (for example `Authorization`).
    pub headers: HashMap<HeaderName, HeaderValue>,
    /// The protocol version asked for in `initialize`.
    pub protocol: ProtocolVersion,
    /// The `clientInfo.name` sent in `initialize`.
    pub name: String,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            headers: HashMap::new(),
            protocol: ProtocolVersion::V_2025_06_18,
            name: crate::backend::CLIENT_NAME.to_owned(),
        }
    }
}

/// Who the client says it is; every server request but `ping` is refused.
#[derive(Debug, Clone)]
struct Identity(ClientConfig);

impl ClientHandler for Identity {
    fn get_info(&self) -> ClientConfig {
        self.0.clone()
    }
}

/// The messages the server sends a session outside the answers to its requests, as JSON
/// (`{"jsonrpc": "2.0", "method": …, "params": …}`), in the order they arrived. Ends when
/// the session closes.
pub type Notifications = Pin<Box<dyn Stream<Item = Value> + Send>>;

/// One MCP session with a muster server; see the [module docs](self).
#[derive(Debug)]
pub struct MusterClient {
    endpoint: String,
    running: RunningService<RoleClient, Identity>,
    progress: ProgressRouter,
    notifications: SinkHandle,
}

impl MusterClient {
    /// Opens a session with the server at `endpoint`, such as `http://localhost:8090/mcp`.
    ///
    /// # Errors
    ///
    /// When the endpoint is not an `http(s)` URL, cannot be reached, or refuses the session.
    pub async fn connect(endpoint: &str) -> Result<Self, ClientError> {
        Self::connect_with(endpoint, ClientOptions::default()).await
    }

    /// Opens a session with the server at `endpoint`, as `options` say.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn connect_with(endpoint: &str, options: ClientOptions) -> Result<Self, ClientError> {
        check_endpoint(endpoint)?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ClientError::Failed {
                endpoint: endpoint.to_owned(),
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        let config =
            StreamableHttpClientTransportConfig::with_uri(endpoint).custom_headers(options.headers);
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let progress = ProgressRouter::default();
        let notifications = NotificationSink::default();
        let handle = notifications.handle();
        let sink = notifications;
        let transport = ProgressTap::new(transport, progress.clone())
            .with_others(Arc::new(move |message| sink.deliver(message)));
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(options.name, env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = options.protocol;
        let running = serve_client_with_lifecycle_and_ct(
            Identity(info),
            transport,
            ClientLifecycleMode::Initialize,
            CancellationToken::new(),
        )
        .await
        .map_err(|e| ClientError::of_initialize(endpoint, &e))?;
        Ok(Self {
            endpoint: endpoint.to_owned(),
            running,
            progress,
            notifications: handle,
        })
    }

    /// The endpoint of the session.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// What the server said of itself in `initialize` (`serverInfo`, `capabilities`,
    /// `protocolVersion`, `instructions`), as JSON.
    pub fn server_info(&self) -> Value {
        self.running
            .peer_info()
            .and_then(|info| serde_json::to_value(info.as_ref()).ok())
            .unwrap_or(Value::Null)
    }

    /// Calls the endpoint's tool `name` with `arguments` (a JSON object, or null for none)
    /// and returns the `tools/call` result as JSON. `on_progress` sees the `params` of each
    /// `notifications/progress` of the call, in order, before the result.
    ///
    /// # Errors
    ///
    /// When the request cannot be sent, the server answers with a JSON-RPC error, or the
    /// connection ends first. A tool that fails answers a result with `isError: true`.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        mut on_progress: impl FnMut(&Value),
    ) -> Result<Value, ClientError> {
        const METHOD: &str = "tools/call";
        let mut params = CallToolRequestParams::new(name.to_owned());
        match arguments {
            Value::Object(arguments) => params = params.with_arguments(arguments),
            Value::Null => {}
            other => {
                return Err(ClientError::Refused {
                    method: METHOD.to_owned(),
                    message: format!("tool arguments must be a JSON object, not {other}"),
                });
            }
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .running
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| ClientError::of_request(&self.endpoint, METHOD, e))?;
        let (sender, mut reports) = mpsc::unbounded_channel();
        let registration = self.progress.register(
            handle.progress_token.clone(),
            ProgressSink::new(move |update| {
                let _ = sender.send(json!({
                    "progress": update.progress,
                    "total": update.total,
                    "message": update.message,
                }));
            }),
        );
        let response = handle.await_response();
        tokio::pin!(response);
        let response = loop {
            tokio::select! {
                biased;
                Some(report) = reports.recv() => on_progress(&report),
                response = &mut response => break response,
            }
        };
        drop(registration);
        // Progress read before the answer is queued already: show it before the result.
        while let Ok(report) = reports.try_recv() {
            on_progress(&report);
        }
        match response.map_err(|e| ClientError::of_request(&self.endpoint, METHOD, e))? {
            ServerResult::CallToolResult(result) => {
                serde_json::to_value(result).map_err(|e| ClientError::Failed {
                    endpoint: self.endpoint.clone(),
                    reason: format!("cannot read the answer to {METHOD}: {e}"),
                })
            }
            ServerResult::EmptyResult(_) => Ok(json!({"content": []})),
            _ => Err(ClientError::Failed {
                endpoint: self.endpoint.clone(),
                reason: format!("the server answered {METHOD} with something else"),
            }),
        }
    }

    /// The server's notifications to this session from now on; see [`Notifications`]. A
    /// second call takes over the stream from the first.
    pub fn notifications(&self) -> Notifications {
        let (sender, receiver) = mpsc::unbounded_channel();
        if !self.notifications.attach(sender) {
            return Box::pin(futures::stream::empty());
        }
        Box::pin(futures::stream::unfold(receiver, |mut receiver| async {
            receiver.recv().await.map(|message| (message, receiver))
        }))
    }

    /// Ends the session (best effort, bounded).
    pub async fn close(self) {
        let mut running = self.running;
        match running.close_with_timeout(CLOSE_TIMEOUT).await {
            Ok(Some(_)) => {}
            Ok(None) => tracing::debug!("closing the session timed out"),
            Err(e) => tracing::debug!(error = %e, "closing the session failed"),
        }
    }
}

/// Refuses an endpoint that is not an absolute `http(s)` URL.
///
/// # Errors
///
/// [`ClientError::Endpoint`], saying why.
pub fn check_endpoint(endpoint: &str) -> Result<(), ClientError> {
    parse_endpoint(endpoint).map(drop)
}

/// The endpoint as a URL, when it is an absolute `http(s)` one.
pub(crate) fn parse_endpoint(endpoint: &str) -> Result<reqwest::Url, ClientError> {
    let refuse = |reason: String| ClientError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let url = reqwest::Url::parse(endpoint).map_err(|e| refuse(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse("the scheme must be http or https".to_owned()));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_endpoints_that_are_not_http() {
        assert!(check_endpoint("http://localhost:8090/mcp").is_ok());
        assert!(matches!(
            check_endpoint("ftp://localhost/mcp"),
            Err(ClientError::Endpoint { .. })
        ));
        assert!(check_endpoint("localhost:8090").is_err());
    }
}
