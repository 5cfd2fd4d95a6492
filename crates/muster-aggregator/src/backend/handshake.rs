//! The MCP lifecycle over a transport (`server/discover` or `initialize`), shared by every
//! transport, and what its failure means.

use rmcp::ClientHandler;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RoleClient, RunningService,
    serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::{IntoTransport, Transport};
use tokio_util::sync::CancellationToken;

use super::failure::{Failure, FailureFacts, classify, describe, facts_of};
use super::handler::UpstreamHandler;
use super::options::{BackendOptions, ProtocolMode};
use super::probe::{preferred_versions, probe};
use super::tap::ProgressTap;

/// How long a remote server may leave `server/discover` unanswered before it gets the
/// `initialize` handshake, as rmcp's own fallback does.
#[cfg(feature = "http-client")]
const REMOTE_DISCOVER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A running, initialized client of a server.
pub(crate) type Running = RunningService<RoleClient, UpstreamHandler>;

/// The protocol version `running` negotiated with its server.
pub(crate) fn negotiated_protocol(running: &Running) -> Option<rmcp::model::ProtocolVersion> {
    running
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.clone())
}

/// The lifecycle mode of `protocol` where nothing was probed.
pub(crate) fn lifecycle(protocol: ProtocolMode) -> ClientLifecycleMode {
    match protocol {
        ProtocolMode::Auto | ProtocolMode::Discover => ClientLifecycleMode::Auto {
            preferred_versions: preferred_versions(),
            legacy_version: None,
        },
        ProtocolMode::Initialize => ClientLifecycleMode::Initialize,
    }
}

/// Runs the MCP lifecycle with a streamable-HTTP server over `transport`. In
/// [`ProtocolMode::Auto`], `server/discover` is asked first, and a server that also lists a
/// version of the `initialize` handshake gets it: muster keeps a session with it.
#[cfg(feature = "http-client")]
pub(crate) async fn serve_http<T, E, A>(
    handler: UpstreamHandler,
    transport: T,
    options: &BackendOptions,
    ct: CancellationToken,
) -> Result<Running, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    if options.protocol != ProtocolMode::Auto {
        return serve(handler, transport, options, ct).await;
    }
    let transport = ProgressTap::new(transport.into_transport(), handler.progress.clone());
    serve_after_probe(handler, transport, ct, true, Some(REMOTE_DISCOVER_WAIT)).await
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
/// [`Connector`](super::connector::Connector): unless [`ProtocolMode::Initialize`], the answer to
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
    let transport = ProgressTap::new(transport.into_transport(), handler.progress.clone());
    if options.protocol == ProtocolMode::Initialize {
        return serve_client_with_lifecycle_and_ct(
            handler,
            transport,
            ClientLifecycleMode::Initialize,
            ct,
        )
        .await;
    }
    serve_after_probe(handler, transport, ct, false, None).await
}

/// Asks the server behind `transport` for `server/discover`, then runs the lifecycle its
/// answer calls for ([`Discovered::lifecycle`](super::probe::Discovered::lifecycle) with
/// `prefer_session`). With `silent_wait`, a server that leaves the discover unanswered that
/// long gets `initialize`; without it, only `ct` ends the wait.
async fn serve_after_probe<T>(
    handler: UpstreamHandler,
    mut transport: ProgressTap<T>,
    ct: CancellationToken,
    prefer_session: bool,
    silent_wait: Option<std::time::Duration>,
) -> Result<Running, ClientInitializeError>
where
    T: Transport<RoleClient> + 'static,
{
    let info = handler.get_info();
    let answered = async {
        match silent_wait {
            Some(wait) => tokio::time::timeout(wait, probe(&mut transport, &info))
                .await
                .ok(),
            None => Some(probe(&mut transport, &info).await),
        }
    };
    let lifecycle = tokio::select! {
        answered = answered => match answered {
            Some(discovered) => discovered?.lifecycle(prefer_session),
            None => ClientLifecycleMode::Initialize,
        },
        () = ct.cancelled() => return Err(ClientInitializeError::Cancelled),
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
