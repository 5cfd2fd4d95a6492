//! The MCP lifecycle over a transport (`server/discover` or `initialize`), shared by every
//! transport, and what its failure means.

use rmcp::ClientHandler;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::IntoTransport;
use tokio_util::sync::CancellationToken;

use super::failure::{Failure, FailureFacts, classify, describe, facts_of};
use super::handler::UpstreamHandler;
use super::options::{BackendOptions, ProtocolMode};
use super::probe::{preferred_versions, probe};
use super::tap::ProgressTap;

/// A running, initialized client of a server.
pub(crate) type Running = RunningService<RoleClient, UpstreamHandler>;

/// The protocol version `running` negotiated with its server.
pub(crate) fn negotiated_protocol(running: &Running) -> Option<rmcp::model::ProtocolVersion> {
    running
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.clone())
}

/// The lifecycle mode of `protocol`.
pub(crate) fn lifecycle(protocol: ProtocolMode) -> ClientLifecycleMode {
    match protocol {
        ProtocolMode::Auto => ClientLifecycleMode::Auto {
            preferred_versions: preferred_versions(),
            legacy_version: None,
        },
        ProtocolMode::Initialize => ClientLifecycleMode::Initialize,
    }
}

/// Runs the MCP lifecycle over `transport`.
#[cfg_attr(not(feature = "http-client"), allow(dead_code))]
pub(crate) async fn serve<T, E, A>(
    handler: UpstreamHandler,
    transport: T,
    options: &BackendOptions,
    ct: CancellationToken,
) -> Result<Running, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let transport = ProgressTap::new(transport.into_transport(), handler.progress.clone());
    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle(options.protocol), ct).await
}

/// Runs the MCP lifecycle over the byte stream of a process or a
/// [`Connector`](super::connector::Connector): in [`ProtocolMode::Auto`], the answer to
/// `server/discover` is awaited as long as the server needs to start (the start budget
/// bounds it), instead of rmcp's fallback to `initialize` after 10 s of silence.
pub(crate) async fn serve_stream<T, E, A>(
    handler: UpstreamHandler,
    transport: T,
    options: &BackendOptions,
    ct: CancellationToken,
) -> Result<Running, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut transport = ProgressTap::new(transport.into_transport(), handler.progress.clone());
    let lifecycle = match options.protocol {
        ProtocolMode::Initialize => ClientLifecycleMode::Initialize,
        ProtocolMode::Auto => {
            let info = handler.get_info();
            tokio::select! {
                probed = probe(&mut transport, &info) => probed?,
                () = ct.cancelled() => return Err(ClientInitializeError::Cancelled),
            }
        }
    };
    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, ct).await
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
