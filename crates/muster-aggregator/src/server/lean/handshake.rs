//! The lean `initialize`: a plain 2025-x handshake is answered by the front door itself, and
//! the new session starts the way a parked one rests — an entry in the session table with
//! the client's `initialize` parameters, and no rmcp worker. A session whose client only
//! calls meta-tools never needs one (those calls take the lean path); the first request
//! that does (a `GET` stream, `tools/list`, `resources/read`, …) has rmcp restore the
//! worker from the table, replaying the handshake, as it does for a parked session.
//!
//! The reply is the `InitializeResult` rmcp's handshake would send — the same server
//! handler negotiates it — as one `application/json` message with the `Mcp-Session-Id`
//! header. Only the plain handshake takes this path: a single `initialize` request of a
//! version that has one, without `MCP-Protocol-Version` or any other `Mcp-*` header and
//! without `_meta`. Everything else reaches rmcp, which validates and answers it as before.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::ServerHandler;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, InitializeRequestParams, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::super::sessions::{SESSION_HEADER, answers_requests};

/// The prefix of the MCP transport headers (`Mcp-Session-Id`, `MCP-Protocol-Version`,
/// `Mcp-Method`, …): a handshake carrying any of them goes to rmcp.
const MCP_HEADER_PREFIX: &str = "mcp-";

/// What a plain handshake asked for.
pub(super) struct Handshake {
    id: rmcp::model::RequestId,
    params: InitializeRequestParams,
}

impl Handshake {
    /// The handshake in `body`, when it is a plain one.
    pub(super) fn parse(headers: &HeaderMap, body: &Bytes) -> Option<Self> {
        if headers
            .keys()
            .any(|name| name.as_str().starts_with(MCP_HEADER_PREFIX))
        {
            return None;
        }
        let ClientJsonRpcMessage::Request(request) = serde_json::from_slice(body).ok()? else {
            return None;
        };
        let ClientRequest::InitializeRequest(initialize) = request.request else {
            return None;
        };
        let params = initialize.params;
        if !params.protocol_version.has_initialize() || has_meta(body) {
            return None;
        }
        Some(Self {
            id: request.id,
            params,
        })
    }

    /// Whether the client declared a capability that lets muster ask it things during a
    /// call (sampling, elicitation, roots).
    pub(super) fn answers_requests(&self) -> bool {
        answers_requests(&self.params)
    }

    /// The client's parameters, as the session table keeps them.
    pub(super) fn params(&self) -> &InitializeRequestParams {
        &self.params
    }

    /// The body of the reply, negotiated by `handler`; `None` when the handler refuses the
    /// handshake (rmcp then answers with its error).
    pub(super) fn reply_body(&self, handler: &impl ServerHandler) -> Option<Vec<u8>> {
        let result = handler.negotiate_initialize(&self.params).ok()?;
        let message =
            ServerJsonRpcMessage::response(ServerResult::InitializeResult(result), self.id.clone());
        serde_json::to_vec(&message).ok()
    }

    /// The reply carrying `body` for the new session `session`.
    pub(super) fn reply(body: Vec<u8>, session: &str) -> Response {
        let Ok(session) = HeaderValue::from_str(session) else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let mut response = Response::new(Body::from(body));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(SESSION_HEADER, session);
        response
    }
}

/// Whether the request in `body` has `params._meta` (rmcp keeps it apart from the params).
fn has_meta(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Message {
        params: Option<Params>,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<IgnoredAny>,
    }
    serde_json::from_slice::<Message>(body)
        .map_or(true, |m| m.params.is_some_and(|p| p.meta.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(value: serde_json::Value) -> Bytes {
        Bytes::from(value.to_string())
    }

    fn init(version: &str) -> serde_json::Value {
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
    }

    #[test]
    fn a_plain_handshake_is_taken() {
        let handshake = Handshake::parse(&HeaderMap::new(), &body(init("2025-06-18")));
        let handshake = handshake.expect("plain");
        assert_eq!(handshake.params().client_info.name, "t");
        assert!(!handshake.answers_requests());
    }

    #[test]
    fn transport_headers_meta_and_other_messages_go_to_rmcp() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-06-18"),
        );
        assert!(Handshake::parse(&headers, &body(init("2025-06-18"))).is_none());
        let mut headers = HeaderMap::new();
        headers.insert("mcp-method", HeaderValue::from_static("initialize"));
        assert!(Handshake::parse(&headers, &body(init("2025-06-18"))).is_none());

        let mut with_meta = init("2025-06-18");
        with_meta["params"]["_meta"] = serde_json::json!({"k": 1});
        assert!(Handshake::parse(&HeaderMap::new(), &body(with_meta)).is_none());

        let ping = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        assert!(Handshake::parse(&HeaderMap::new(), &body(ping)).is_none());
        let broken = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"});
        assert!(Handshake::parse(&HeaderMap::new(), &body(broken)).is_none());
        assert!(Handshake::parse(&HeaderMap::new(), &Bytes::from_static(b"[1,2")).is_none());
    }

    #[test]
    fn clients_that_can_be_asked_are_told_apart() {
        for capability in ["sampling", "elicitation", "roots"] {
            let mut asks = init("2025-06-18");
            asks["params"]["capabilities"] = serde_json::json!({capability: {}});
            let handshake = Handshake::parse(&HeaderMap::new(), &body(asks)).expect("plain");
            assert!(handshake.answers_requests(), "{capability}");
        }
    }

    #[test]
    fn a_version_without_a_handshake_goes_to_rmcp() {
        assert!(Handshake::parse(&HeaderMap::new(), &body(init("2026-07-28"))).is_none());
    }
}
