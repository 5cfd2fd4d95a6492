//! Opening the connection to a server: the transport the spec names, or a [`Connector`]
//! given in the options; then the MCP lifecycle (`server/discover` or `initialize`).

use std::fmt;

use async_trait::async_trait;
use futures::future::BoxFuture;
use muster_core::resource::mcp_server::{McpServerSpec, Transport};
use muster_core::secret::Redactor;
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::IntoTransport;
use tokio::io::DuplexStream;
use tokio_util::sync::CancellationToken;

use super::failure::{Failure, FailureFacts, FailureKind, classify, describe, facts_of};
use super::handler::UpstreamHandler;
use super::options::{BackendOptions, ProtocolMode};
#[cfg(feature = "stdio")]
use super::stdio::ChildProcess;
use super::tap::ProgressTap;

/// Opens a byte stream to a server in place of the transport of its spec: in-process
/// servers, tests, benchmarks. The stream carries newline-delimited JSON-RPC, as a stdio
/// server speaks it; the server side is the other end of a `tokio::io::duplex` pair.
#[async_trait]
pub trait Connector: Send + Sync + fmt::Debug {
    /// A fresh stream to the server `name`; called on every start.
    async fn connect(&self, name: &str) -> std::io::Result<DuplexStream>;
}

/// A live, initialized connection: the running client and, for stdio, its process.
pub(crate) struct Opened {
    pub(crate) running: RunningService<RoleClient, UpstreamHandler>,
    /// The lean hop of `tools/call`, for streamable-HTTP servers.
    #[cfg(feature = "http-client")]
    pub(crate) lean: Option<std::sync::Arc<super::lean_call::LeanHop>>,
    #[cfg(feature = "stdio")]
    pub(crate) child: Option<ChildProcess>,
}

/// The lifecycle mode of `protocol`.
pub(crate) fn lifecycle(protocol: ProtocolMode) -> ClientLifecycleMode {
    match protocol {
        ProtocolMode::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
        ProtocolMode::Initialize => ClientLifecycleMode::Initialize,
    }
}

/// Runs the MCP lifecycle over `transport`.
pub(crate) async fn serve<T, E, A>(
    handler: UpstreamHandler,
    transport: T,
    options: &BackendOptions,
    ct: CancellationToken,
) -> Result<RunningService<RoleClient, UpstreamHandler>, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let transport = ProgressTap::new(transport.into_transport(), handler.progress.clone());
    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle(options.protocol), ct).await
}

/// Describes an initialize failure.
pub(crate) fn init_failure(error: &ClientInitializeError) -> Failure {
    let inner = match error {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => fallback.as_ref(),
        other => other,
    };
    let (mut facts, message) = match inner {
        ClientInitializeError::TransportError { error, context } => {
            let facts = facts_of(error);
            (facts, format!("{} ({context})", describe(error, facts)))
        }
        ClientInitializeError::ConnectionClosed(context) => (
            FailureFacts {
                network: true,
                ..FailureFacts::default()
            },
            format!(
                "the server closed the connection ({context}); check that it is an MCP server \
                 and look at its log"
            ),
        ),
        other => (facts_of(other), other.to_string()),
    };
    facts.auth_required |= inner.is_authorization_required();
    Failure::new(classify(facts), message).with_http_status(facts.http_status)
}

/// Opens and initializes the connection of `spec`.
pub(crate) fn open<'a>(
    name: &'a str,
    spec: &'a McpServerSpec,
    options: &'a BackendOptions,
    redactor: &'a Redactor,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> BoxFuture<'a, Result<Opened, Failure>> {
    Box::pin(open_inner(name, spec, options, redactor, handler, ct))
}

async fn open_inner(
    name: &str,
    spec: &McpServerSpec,
    options: &BackendOptions,
    #[cfg_attr(not(feature = "http-client"), allow(unused_variables))] redactor: &Redactor,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> Result<Opened, Failure> {
    if let Some(connector) = &options.connector {
        let stream = connector
            .connect(name)
            .await
            .map_err(|e| Failure::new(FailureKind::Transient, format!("connecting {name}: {e}")))?;
        let running = serve(handler, stream, options, ct)
            .await
            .map_err(|e| init_failure(&e))?;
        return Ok(Opened {
            running,
            #[cfg(feature = "http-client")]
            lean: None,
            #[cfg(feature = "stdio")]
            child: None,
        });
    }
    match &spec.transport {
        #[cfg(feature = "stdio")]
        Transport::Stdio(stdio) => super::stdio::open(stdio, options, handler, ct).await,
        #[cfg(feature = "http-client")]
        Transport::StreamableHttp(remote) => {
            let (running, lean) =
                super::http::open(remote, spec.timeout(), options, redactor, handler, ct).await?;
            Ok(Opened {
                running,
                lean,
                #[cfg(feature = "stdio")]
                child: None,
            })
        }
        #[cfg(feature = "http-client")]
        Transport::Sse(remote) => {
            let running =
                super::sse::open(remote, spec.timeout(), options, redactor, handler, ct).await?;
            Ok(Opened {
                running,
                lean: None,
                #[cfg(feature = "stdio")]
                child: None,
            })
        }
        #[allow(unreachable_patterns)]
        other => Err(Failure::new(
            FailureKind::Permanent,
            format!(
                "muster was built without support for {} servers",
                other.server_type()
            ),
        )),
    }
}
