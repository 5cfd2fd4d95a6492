//! The lean path of a legacy SSE session (`POST /message`): a plain `tools/call` of a
//! meta-tool in a session whose handshake is over and whose client cannot be asked anything
//! (no sampling, elicitation or roots) is run as the lean path runs it on `/mcp` — the same
//! call, budgets, envelope, metrics, spans and progress — and what it answers (progress
//! notifications, then the reply) joins the session's stream as JSON-RPC messages, instead
//! of a trip through the session's rmcp worker. Everything else goes to the worker as
//! before. `notifications/cancelled` naming such a call cancels it (and still reaches the
//! worker, which ignores the id).

use axum::http::request::Parts;
use muster_core::tool::{SessionId, SessionNotifier};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::call_request::CallRequest;
use super::{CancelledParams, Envelope, Identity, LeanAnswer, LeanCall, LeanState};

/// A message posted to a legacy SSE session, as the lean path sees it.
#[allow(
    clippy::large_enum_variant,
    reason = "read once per POST and moved straight into the call's task"
)]
pub(in crate::server) enum SseMessage {
    /// A meta-tool call the lean path runs.
    Call(SseCall),
    /// `notifications/cancelled` naming a request (its id as the client wrote it).
    Cancelled(Box<str>),
    /// Anything else: the session's worker handles it.
    Other,
}

impl SseMessage {
    /// Reads `body`, posted with `parts` (the caller's identity, the trace context); a
    /// call's notifications go to `notifier`.
    pub(in crate::server) fn read(body: &[u8], parts: &Parts, notifier: &SessionNotifier) -> Self {
        if let Some(call) = CallRequest::read(body) {
            return SseCall::of(call, parts, notifier).map_or(Self::Other, Self::Call);
        }
        let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(body) else {
            return Self::Other;
        };
        if envelope.jsonrpc.as_deref() != Some("2.0") {
            return Self::Other;
        }
        match envelope.method.as_deref() {
            Some("tools/call") => envelope
                .params
                .and_then(|params| CallRequest::from_params(envelope.id, params))
                .and_then(|call| SseCall::of(call, parts, notifier))
                .map_or(Self::Other, Self::Call),
            Some("notifications/cancelled") => envelope
                .params
                .map(RawValue::get)
                .and_then(|params| serde_json::from_str::<CancelledParams<'_>>(params).ok())
                .and_then(|params| params.request_id)
                .map_or(Self::Other, |id| Self::Cancelled(id.get().trim().into())),
            _ => Self::Other,
        }
    }
}

/// A meta-tool call posted to a legacy SSE session, to run on the lean path.
pub(in crate::server) struct SseCall(LeanCall);

impl SseCall {
    /// The lean call of `call`, posted with `parts`, when the lean path answers it: a
    /// request of a meta-tool.
    fn of(call: CallRequest<'_>, parts: &Parts, notifier: &SessionNotifier) -> Option<Self> {
        LeanCall::of(
            call,
            notifier.clone(),
            Identity::of(&parts.extensions),
            &parts.headers,
        )
        .map(Self)
    }

    /// Runs the call as one of session `session` (its `SessionId`, as the rmcp path names
    /// it) and sends the JSON-RPC messages answering it to `stream`, in order: the progress
    /// it reports, then its reply. A stream that closed ends the call (dropping its
    /// messages cancels it).
    pub(in crate::server) async fn deliver(
        self,
        state: &LeanState,
        session: &str,
        stream: &mpsc::Sender<String>,
    ) {
        match self.0.answer(state, Some(SessionId::new(session))).await {
            LeanAnswer::Reply(reply) => {
                let _ = stream.send(reply.into_message()).await;
            }
            LeanAnswer::Messages(mut messages) => {
                while let Some(message) = messages.recv().await {
                    if stream.send(message).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// Cancels the lean call `request` of session `session`, if one is running.
pub(in crate::server) fn cancel(state: &LeanState, session: &str, request: &str) {
    state.inflight.cancel(session, request);
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
        let notifier = SessionNotifier::new(|_, _| {}, || true);
        match SseMessage::read(body.as_bytes(), &parts(), &notifier) {
            SseMessage::Call(call) => Some(call),
            SseMessage::Cancelled(_) | SseMessage::Other => None,
        }
    }

    #[test]
    fn only_plain_meta_tool_calls_take_the_lean_path() {
        let lean = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x_a_b"}}}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"list_tools"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_tools","_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tools","_meta":{"progressToken":"t"}}}"#,
        ];
        for body in lean {
            assert!(parse(body).is_some(), "{body}");
        }
        let worker = [
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

    #[test]
    fn cancellations_name_the_request_as_the_client_wrote_it() {
        let notifier = SessionNotifier::new(|_, _| {}, || true);
        let read = |body: &str| SseMessage::read(body.as_bytes(), &parts(), &notifier);
        let cancelled = read(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": "a"}}"#,
        );
        assert!(matches!(cancelled, SseMessage::Cancelled(id) if &*id == r#""a""#));
        let cancelled = read(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        );
        assert!(matches!(cancelled, SseMessage::Cancelled(id) if &*id == "7"));
        for other in [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            assert!(matches!(read(other), SseMessage::Other), "{other}");
        }
    }
}
