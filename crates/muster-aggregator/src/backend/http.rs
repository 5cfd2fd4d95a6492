//! Streamable HTTP servers, through rmcp's client transport on a reqwest client of our own
//! (TCP_NODELAY, connect timeout).

use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

use muster_core::resource::mcp_server::RemoteTransport;
use muster_core::secret::Redactor;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio_util::sync::CancellationToken;

use super::client_credentials::check_client_credentials;
use super::failure::{Failure, FailureKind};
use super::handler::UpstreamHandler;
use super::handshake::{init_failure, negotiated_protocol, serve_http};
use super::headers::resolve_headers;
use super::lean_call::LeanHop;
use super::options::BackendOptions;
use super::session_tap::{SessionSlot, SessionTap};

/// A running client and the lean hop beside it.
pub(crate) type Running = (
    RunningService<RoleClient, UpstreamHandler>,
    Option<Arc<LeanHop>>,
);

/// The HTTP client of remote backends: no Nagle delay, connects bounded by `timeout`,
/// trusting the extra CA certificates of `options`.
pub(crate) fn http_client(
    timeout: Duration,
    options: &BackendOptions,
) -> Result<reqwest::Client, Failure> {
    options
        .extra_roots
        .apply(reqwest::Client::builder())
        .tcp_nodelay(true)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| Failure::new(FailureKind::Permanent, format!("building HTTP client: {e}")))
}

/// Connects and initializes a streamable-HTTP server; the lean hop of `tools/call` shares
/// the client's HTTP connection pool and learns the session from its requests.
pub(crate) fn open<'a>(
    remote: &'a RemoteTransport,
    timeout: Duration,
    options: &'a BackendOptions,
    redactor: &'a Redactor,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> BoxFuture<'a, Result<Running, Failure>> {
    Box::pin(open_inner(remote, timeout, options, redactor, handler, ct))
}

async fn open_inner(
    remote: &RemoteTransport,
    timeout: Duration,
    options: &BackendOptions,
    redactor: &Redactor,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> Result<Running, Failure> {
    let headers = resolve_headers(remote, options, redactor).await?;
    check_client_credentials(remote, options, redactor).await?;
    let config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(headers)
        .max_sse_event_size(options.max_result_bytes)
        .max_json_response_size(options.max_result_bytes);
    let http = http_client(timeout, options)?;
    let slot = SessionSlot::default();
    let relist = handler.relist.clone();
    let lean_http = http.clone();
    let transport = StreamableHttpClientTransport::with_client(
        SessionTap::new(http, options.bearer.clone(), slot.clone()),
        config,
    );
    let running = serve_http(handler, transport, options, ct)
        .await
        .map_err(|e| init_failure(&e))?;
    let protocol = negotiated_protocol(&running);
    let lean = options
        .lean_calls
        .then(|| {
            LeanHop::new(
                lean_http,
                remote.url.as_str(),
                timeout,
                options.bearer.clone(),
                slot,
                options.max_result_bytes,
                relist,
                protocol.as_ref(),
            )
        })
        .flatten()
        .map(Arc::new);
    Ok((running, lean))
}
