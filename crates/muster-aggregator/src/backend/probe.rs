//! Which lifecycles a server speaks, asked with one `server/discover`.
//!
//! Over a byte stream (stdio, a [`Connector`]) the answer is awaited however long the server
//! takes to start. rmcp's own probe falls back to `initialize` after 10 s of silence. A
//! process that is still loading (an interpreter importing its SDK on a busy host) is silent
//! too; the fallback then sends `initialize` behind the unanswered `server/discover`, the
//! server answers the discover first, and the start fails (`conflict initialized response
//! id`), or a server serving both protocols refuses `initialize` on a connection whose first
//! request chose 2026-07-28. Here the start budget (`spec.timeout`) alone bounds the wait.
//!
//! Over streamable HTTP, each request stands alone: a server that answers the discover and
//! lists a version of the `initialize` handshake can be given the handshake next.
//!
//! [`Connector`]: super::connector::Connector

use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams,
    ErrorCode, JsonRpcMessage, ProtocolVersion, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, RoleClient};
use rmcp::transport::Transport;

/// The id of the probe, distinct from the numeric ids of the session that follows.
const PROBE_ID: &str = "muster-discover-probe";

/// The versions asked for in `server/discover`.
pub(crate) fn preferred_versions() -> Vec<ProtocolVersion> {
    vec![ProtocolVersion::V_2026_07_28]
}

/// What a server's answer to `server/discover` says about the lifecycles it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discovered {
    /// It has `server/discover`: it answered it, or refused it the way only such a server
    /// does (so that rmcp's discover reports why). `offers_session` when its answer also lists
    /// a version of the `initialize` handshake.
    Modern {
        /// Whether the listed versions include one with the `initialize` handshake.
        offers_session: bool,
    },
    /// It answered with the error of a server without `server/discover`.
    Legacy,
}

impl Discovered {
    /// The lifecycle to run with a server that answered so, keeping a session where the
    /// server offers one when `prefer_session`.
    pub(crate) fn lifecycle(self, prefer_session: bool) -> ClientLifecycleMode {
        match self {
            Discovered::Modern { offers_session } if !(prefer_session && offers_session) => {
                ClientLifecycleMode::Discover {
                    preferred_versions: preferred_versions(),
                }
            }
            Discovered::Modern { .. } | Discovered::Legacy => ClientLifecycleMode::Initialize,
        }
    }
}

/// Asks the server at the other end of `transport` for `server/discover` and answers what
/// its answer says: [`Discovered::Modern`] when it speaks 2026-07-28 (or refuses the request
/// the way only such a server does), [`Discovered::Legacy`] when the answer is the error of a
/// server without `server/discover`.
pub(crate) async fn probe<T>(
    transport: &mut T,
    info: &ClientConfig,
) -> Result<Discovered, ClientInitializeError>
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
    loop {
        let Some(message) = transport.receive().await else {
            return Err(ClientInitializeError::ConnectionClosed(
                "discover probe response".into(),
            ));
        };
        match message {
            JsonRpcMessage::Response(response) if response.id == id => {
                return Ok(Discovered::Modern {
                    offers_session: offers_session(&response.result),
                });
            }
            JsonRpcMessage::Error(error) if error.id.as_ref().is_none_or(|got| *got == id) => {
                return Ok(if speaks_discover(error.error.code) {
                    Discovered::Modern {
                        offers_session: false,
                    }
                } else {
                    Discovered::Legacy
                });
            }
            // Log lines and pings before the lifecycle has started are not answers.
            _ => {}
        }
    }
}

/// Whether a `server/discover` result lists a version of the `initialize` handshake.
fn offers_session(result: &ServerResult) -> bool {
    match result {
        ServerResult::DiscoverResult(discovered) => discovered
            .supported_versions
            .iter()
            .any(ProtocolVersion::has_initialize),
        _ => false,
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

    fn discovered(versions: &[ProtocolVersion]) -> ServerResult {
        serde_json::from_value(serde_json::json!({
            "resultType": "complete",
            "supportedVersions": versions,
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "private",
        }))
        .unwrap()
    }

    #[test]
    fn a_listed_handshake_version_offers_a_session() {
        let both = discovered(&[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2026_07_28]);
        assert!(matches!(both, ServerResult::DiscoverResult(_)), "{both:?}");
        assert!(offers_session(&both));
        assert!(!offers_session(&discovered(&[
            ProtocolVersion::V_2026_07_28
        ])));
    }

    #[test]
    fn a_session_is_kept_only_where_preferred_and_offered() {
        let both = Discovered::Modern {
            offers_session: true,
        };
        let modern_only = Discovered::Modern {
            offers_session: false,
        };
        let is_initialize = |mode| matches!(mode, ClientLifecycleMode::Initialize);
        assert!(is_initialize(both.lifecycle(true)));
        assert!(!is_initialize(both.lifecycle(false)));
        assert!(!is_initialize(modern_only.lifecycle(true)));
        assert!(is_initialize(Discovered::Legacy.lifecycle(false)));
    }
}
