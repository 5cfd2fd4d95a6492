//! Which lifecycle a server reached by a byte stream (stdio, a [`Connector`]) speaks, asked
//! with one `server/discover` whose answer is awaited however long the server takes to
//! start.
//!
//! rmcp's own probe falls back to `initialize` after 10 s of silence. A process that is
//! still loading (an interpreter importing its SDK on a busy host) is silent too; the
//! fallback then sends `initialize` behind the unanswered `server/discover`, the server
//! answers the discover first, and the start fails (`conflict initialized response id`),
//! or a server serving both protocols refuses `initialize` on a connection whose first
//! request chose 2026-07-28. Here the start budget (`spec.timeout`) alone bounds the wait.
//!
//! [`Connector`]: super::connector::Connector

use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams,
    ErrorCode, JsonRpcMessage, ProtocolVersion, RequestId, RequestMetaObject,
};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, RoleClient};
use rmcp::transport::Transport;

/// The id of the probe, distinct from the numeric ids of the session that follows.
const PROBE_ID: &str = "muster-discover-probe";

/// The versions asked for in `server/discover`.
pub(crate) fn preferred_versions() -> Vec<ProtocolVersion> {
    vec![ProtocolVersion::V_2026_07_28]
}

/// Asks the server at the other end of `transport` for `server/discover` and answers the
/// lifecycle to run: `Discover` when it speaks 2026-07-28 (or refuses the request the way
/// only such a server does, so that rmcp reports why), `Initialize` when the answer is the
/// error of a server without `server/discover`.
pub(crate) async fn probe<T>(
    transport: &mut T,
    info: &ClientConfig,
) -> Result<ClientLifecycleMode, ClientInitializeError>
where
    T: Transport<RoleClient> + 'static,
{
    let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
    discover
        .extensions
        .insert(RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            info.client_info.clone(),
            info.capabilities.clone(),
        ));
    let id = RequestId::String(PROBE_ID.into());
    transport
        .send(ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(discover),
            id.clone(),
        ))
        .await
        .map_err(|error| ClientInitializeError::transport::<T>(error, "send discover probe"))?;
    let modern = || ClientLifecycleMode::Discover {
        preferred_versions: preferred_versions(),
    };
    loop {
        let Some(message) = transport.receive().await else {
            return Err(ClientInitializeError::ConnectionClosed(
                "discover probe response".into(),
            ));
        };
        match message {
            JsonRpcMessage::Response(response) if response.id == id => return Ok(modern()),
            JsonRpcMessage::Error(error) if error.id.as_ref().is_none_or(|got| *got == id) => {
                return Ok(if speaks_discover(error.error.code) {
                    modern()
                } else {
                    ClientLifecycleMode::Initialize
                });
            }
            // Log lines and pings before the lifecycle has started are not answers.
            _ => {}
        }
    }
}

/// Whether an error answering `server/discover` comes from a server that has it: a version
/// it does not speak, or a missing capability or header (what rmcp treats as modern).
fn speaks_discover(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_not_found_means_initialize() {
        assert!(!speaks_discover(ErrorCode::METHOD_NOT_FOUND));
        assert!(!speaks_discover(ErrorCode::INVALID_PARAMS));
        assert!(speaks_discover(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION));
    }
}
