//! Opening the connection to a server: the transport the spec names, or a [`Connector`]
//! given in the options; then the MCP lifecycle (`server/discover` or `initialize`).

use futures::future::BoxFuture;
use muster_core::resource::mcp_server::{McpServerSpec, Transport};
use muster_core::secret::Redactor;
use tokio_util::sync::CancellationToken;

#[cfg(doc)]
use super::connector::Connector;
use super::failure::{Failure, FailureKind};
use super::handler::UpstreamHandler;
use super::handshake::{Running, init_failure, serve_stream};
use super::options::BackendOptions;
#[cfg(feature = "stdio")]
use super::stdio::ChildProcess;

/// A live, initialized connection: the running client and, for stdio, its process.
pub(crate) struct Opened {
    pub(crate) running: Running,
    /// The lean hop of `tools/call`, for streamable-HTTP and legacy SSE servers.
    #[cfg(feature = "http-client")]
    pub(crate) lean: Option<std::sync::Arc<super::lean_call::LeanHop>>,
    #[cfg(feature = "stdio")]
    pub(crate) child: Option<ChildProcess>,
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
        let running = serve_stream(handler, stream, options, ct)
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
        Transport::Stdio(stdio) => {
            let (running, child) = super::stdio::open(stdio, options, handler, ct).await?;
            Ok(Opened {
                running,
                #[cfg(feature = "http-client")]
                lean: None,
                child: Some(child),
            })
        }
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
            let (running, lean) =
                super::sse::open(remote, spec.timeout(), options, redactor, handler, ct).await?;
            Ok(Opened {
                running,
                lean,
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
