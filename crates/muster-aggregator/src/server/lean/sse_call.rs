//! The lean path of a legacy SSE session (`POST /message`): a plain `tools/call` of a
//! meta-tool, without a progress token, in a session whose handshake is over and whose client
//! cannot be asked anything (no sampling, elicitation or roots), is run as the lean path runs
//! it on `/mcp` — the same call, budgets, envelope, metrics and spans — and its reply is the
//! JSON-RPC message for the session's stream, instead of a trip through the session's rmcp
//! worker. Everything else goes to the worker as before. `notifications/cancelled` naming
//! such a call cancels it (and still reaches the worker, which ignores the id).

use axum::body::Bytes;
use axum::http::request::Parts;
use muster_core::tool::SessionNotifier;
use serde_json::value::RawValue;

use super::{CallParams, CancelledParams, Envelope, Identity, LeanCall, LeanState, is_request_id};
use crate::meta_tools;

/// The largest reply collected for the stream; a meta-tool's answer is bounded far below.
const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// A meta-tool call posted to a legacy SSE session, to run on the lean path.
pub(in crate::server) struct SseCall(LeanCall);

impl SseCall {
    /// The call `body` asks for, when the lean path answers it; `None` for anything else.
    /// `parts` are those of the `POST` (the caller's identity, the trace context), and the
    /// call's notifications go to `notifier`.
    pub(in crate::server) fn parse(
        body: &[u8],
        parts: &Parts,
        notifier: SessionNotifier,
    ) -> Option<Self> {
        let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
        if envelope.jsonrpc.as_deref() != Some("2.0")
            || envelope.method.as_deref() != Some("tools/call")
        {
            return None;
        }
        let id = envelope.id.filter(|id| is_request_id(id))?;
        let params: CallParams<'_> = serde_json::from_str(envelope.params?.get()).ok()?;
        // Progress goes to the stream between the call's start and its reply: rmcp's job.
        if !meta_tools::is_meta_tool(&params.name)
            || params.meta.is_some_and(|m| m.progress_token.is_some())
        {
            return None;
        }
        Some(Self(LeanCall {
            id: id.to_owned(),
            name: params.name.into_owned(),
            arguments: params.arguments,
            progress_token: None,
            notifier,
            identity: Identity::of(&parts.extensions),
            request_meta: super::trace_context_of(&parts.headers),
        }))
    }

    /// Runs the call as one of session `session` (its `SessionId`, as the rmcp path names
    /// it); the JSON-RPC message answering it, `None` if it cannot be read back.
    pub(in crate::server) async fn reply(self, state: &LeanState, session: &str) -> Option<String> {
        let response = self.0.run(state, Some(session)).await;
        let body: Bytes = axum::body::to_bytes(response.into_body(), MAX_REPLY_BYTES)
            .await
            .ok()?;
        String::from_utf8(body.into()).ok()
    }
}

/// Cancels the lean call of session `session` that `body`, a `notifications/cancelled`,
/// names; anything else is left alone.
pub(in crate::server) fn cancel(state: &LeanState, session: &str, body: &[u8]) {
    let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(body) else {
        return;
    };
    if envelope.method.as_deref() != Some("notifications/cancelled") {
        return;
    }
    let Some(params) = envelope.params.map(RawValue::get) else {
        return;
    };
    if let Ok(CancelledParams {
        request_id: Some(id),
    }) = serde_json::from_str(params)
    {
        state.inflight.cancel(session, id.get().trim());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> Parts {
        axum::http::Request::builder()
            .body(())
            .expect("a request")
            .into_parts()
            .0
    }

    fn parse(body: &str) -> Option<SseCall> {
        SseCall::parse(
            body.as_bytes(),
            &parts(),
            SessionNotifier::new(|_, _| {}, || true),
        )
    }

    #[test]
    fn only_plain_meta_tool_calls_without_progress_take_the_lean_path() {
        let lean = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_a_b"}}}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"list_tools"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_tools","_meta":{}}}"#,
        ];
        for body in lean {
            assert!(parse(body).is_some(), "{body}");
        }
        let worker = [
            // Progress between the start and the reply is rmcp's to stream.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tools","_meta":{"progressToken":"t"}}}"#,
            // Not a meta-tool, another method, a notification, a batch, not JSON-RPC 2.0.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x_a_b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"list_tools"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tools"}}]"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"list_tools"}}"#,
            // Parameters the lean path does not know, a null id.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tools","task":{}}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"list_tools"}}"#,
            "not json",
        ];
        for body in worker {
            assert!(parse(body).is_none(), "{body}");
        }
    }
}
