//! The lean path of `tools/call`: a meta-tool call in an initialized 2025-x session, or a
//! stateless 2026-07-28 one, is answered straight from the HTTP handler with one
//! `application/json` reply, instead of going through a session's worker (or rmcp's one-shot
//! service), a request-wise SSE stream and its framing.
//!
//! Only the plain case takes this path: a single JSON-RPC request `tools/call` naming a
//! meta-tool, on `/mcp`, either in a session that completed `initialize` and whose client
//! declared no sampling, elicitation or roots capability (requests a backend sends to the
//! caller are relayed by the rmcp path), with nothing in `_meta` but perhaps a progress token
//! and no other parameter, with a pre-2026 (or no) `MCP-Protocol-Version`; or without a
//! session, at 2026-07-28, with headers and per-request `_meta` that agree with the body and
//! no declared capability (see the `stateless` module). Everything else — other methods,
//! batches, malformed input, stateless requests rmcp has to validate — reaches rmcp
//! unchanged, byte for byte. The Host check and every other layer in front of the MCP
//! endpoint still run first. The call itself is the same
//! [`MetaTools::call`](crate::meta_tools::MetaTools::call) the rmcp handler makes, with the
//! same routing, budgets, result envelope, metrics and spans (the HTTP `traceparent` and
//! `tracestate` headers are the caller's trace context); `notifications/cancelled` naming a
//! lean session call cancels it, and a client that hangs up cancels it too (the backend is
//! told either way).
//!
//! The same layer refuses an `initialize` with `503` once the session cap is reached, and
//! answers a plain one itself: the new session starts without a worker (see `handshake`),
//! and a meta-tool call of a session without a worker (new, or parked) is answered here
//! without starting one.

use std::borrow::Cow;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use muster_core::tool::{
    CallContext, CallerIdentity, ProgressSink, ProgressUpdate, SessionId, SessionNotifier,
};
use rmcp::model::{JsonObject, ProgressNotificationParam, ProgressToken, ResultType};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceExt};

use self::call_request::CallRequest;
use self::handshake::Handshake;
use self::request_headers::RequestHeaders;
use self::stateless::StatelessCallParams;
use super::room::SessionMap;
use super::sessions::SessionTable;
use super::{Aggregator, MCP_PATH};
use crate::meta_tools::{self, Answer, Arguments};
use crate::wake_gate::WakeGated;

mod call_request;
mod fixed;
mod handshake;
mod pieces;
mod request_headers;
pub(super) mod sse_call;
mod stateless;
mod stream;
mod text_result;

/// The largest body the MCP endpoint reads (rmcp's limit).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// The header with which a client resumes a stream.
const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// Protocol versions whose requests are plain JSON-RPC in a session.
const SESSION_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// JSON-RPC code of a cancelled request (as the rmcp handler answers it).
const INTERNAL_ERROR: i32 = -32603;
/// JSON-RPC code of an unknown tool.
const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC code muster answers a refused `initialize` with.
const SERVER_BUSY: i32 = -32000;

/// What the lean layer needs.
#[derive(Debug, Clone)]
pub(super) struct LeanState {
    aggregator: Aggregator,
    sessions: Arc<SessionTable>,
    inflight: Arc<Inflight>,
}

impl LeanState {
    pub(super) fn new(aggregator: Aggregator, sessions: Arc<SessionTable>) -> Self {
        Self {
            aggregator,
            sessions,
            inflight: Arc::default(),
        }
    }
}

/// A call in flight: its session and its JSON-RPC id (as written by the client).
type CallKey = (SessionId, Arc<str>);

/// Lean calls in flight, for `notifications/cancelled`.
#[derive(Debug, Default)]
struct Inflight(Mutex<SessionMap<CallKey, CancellationToken>>);

impl Inflight {
    fn lock(&self) -> MutexGuard<'_, SessionMap<CallKey, CancellationToken>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call until the returned guard is dropped.
    fn register(
        self: &Arc<Self>,
        session: &SessionId,
        id: &str,
        token: CancellationToken,
    ) -> InflightGuard {
        // Shared, so that the map's key and the guard's cost one allocation.
        let key = (session.clone(), Arc::from(id));
        self.lock().insert(key.clone(), token);
        InflightGuard {
            inflight: self.clone(),
            key,
        }
    }

    fn cancel(&self, session: &str, id: &str) {
        let key = (SessionId::new(session), Arc::from(id));
        if let Some(token) = self.lock().remove(&key) {
            token.cancel();
        }
    }
}

/// Removes a call from [`Inflight`] however it ends.
struct InflightGuard {
    inflight: Arc<Inflight>,
    key: CallKey,
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        self.inflight.lock().remove(&self.key);
    }
}

/// The JSON-RPC envelope, borrowed from the body.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// `params` of `notifications/cancelled`.
#[derive(Deserialize)]
struct CancelledParams<'a> {
    #[serde(rename = "requestId", borrow)]
    request_id: Option<&'a RawValue>,
}

/// Answers `request` on the lean path, or hands it to `inner`.
pub(super) async fn answer_or_forward<S>(state: &LeanState, request: Request, inner: S) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    if request.method() == Method::GET
        && request.uri().path() == MCP_PATH
        && let Some(session) = stream_session(state, request.headers())
    {
        let shutdown = state.aggregator.inner.shutdown.clone();
        return stream::open(&state.aggregator.inner.peers, session, shutdown);
    }
    if request.method() != Method::POST || request.uri().path() != MCP_PATH {
        return forward(inner, request).await;
    }
    let (parts, body) = request.into_parts();
    let found = RequestHeaders::of(&parts.headers);
    let Some(length) = found
        .content_length()
        .filter(|n| *n <= MAX_BODY_BYTES && found.accepts_json_and_sse() && found.is_json())
    else {
        return forward(inner, Request::from_parts(parts, body)).await;
    };
    let bytes = match body_bytes(body, length).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, format!("Bad Request: {e}")).into_response();
        }
    };
    // The front door's authentication, when configured, has named the session and the caller.
    let identity = Identity::of(&parts.extensions);
    let request = LeanRequest {
        headers: &parts.headers,
        session: found.session(),
        plain_version: found.version_is_absent_or_in(&SESSION_VERSIONS),
    };
    if let Some(response) = answer(state, &request, identity, &bytes).await {
        return response;
    }
    forward(inner, Request::from_parts(parts, Body::from(bytes))).await
}

/// The body of a request that announced `length` bytes: its one piece as it came (hyper
/// hands a small body over in one), or its pieces joined; an error past `length` bytes.
async fn body_bytes(mut body: Body, length: usize) -> Result<Bytes, axum::Error> {
    let mut first: Option<Bytes> = None;
    let mut joined: Option<Vec<u8>> = None;
    let mut read = 0usize;
    while let Some(frame) =
        std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx)).await
    {
        // Trailers carry no bytes of the body.
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        read += data.len();
        if read > length {
            return Err(axum::Error::new("length limit exceeded"));
        }
        match (&mut joined, first.take()) {
            (Some(joined), _) => joined.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (None, Some(before)) => {
                let mut both = Vec::with_capacity(length);
                both.extend_from_slice(&before);
                both.extend_from_slice(&data);
                joined = Some(both);
            }
        }
    }
    Ok(joined.map_or_else(|| first.unwrap_or_default(), Bytes::from))
}

/// The session of a `GET` the front door serves itself: one that asks for the session's
/// stream (not to resume one) with a session-era (or no) protocol version, in a session
/// whose client cannot be asked anything.
fn stream_session<'h>(state: &LeanState, headers: &'h HeaderMap) -> Option<&'h str> {
    let found = RequestHeaders::of(headers);
    let session = found.session()?;
    (found.accepts_sse()
        && !headers.contains_key(LAST_EVENT_ID_HEADER)
        && found.version_is_absent_or_in(&SESSION_VERSIONS)
        && state.sessions.is_lean(session))
    .then_some(session)
}

/// Hands `request` to rmcp's side, with the trace context of the HTTP span (when spans are
/// recorded) in its headers in place of the caller's: the session's worker, which runs the
/// call outside the span, continues the trace from there.
async fn forward<S>(inner: S, request: Request) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let Ok(response) = inner.oneshot(super::trace::continue_trace(request)).await;
    response
}

/// Who a call belongs to, as the front door's authentication established it.
struct Identity {
    /// The session of the signed-in principal; without authentication, the transport's.
    session: Option<SessionId>,
    /// The signed-in caller.
    caller: Option<Arc<CallerIdentity>>,
}

impl Identity {
    /// The identity the front door's authentication, when configured, put in the
    /// extensions of a request.
    fn of(extensions: &http::Extensions) -> Self {
        Self {
            session: extensions.get::<SessionId>().cloned(),
            caller: extensions.get::<Arc<CallerIdentity>>().cloned(),
        }
    }
}

/// What the lean path knows of a `POST` besides its body.
struct LeanRequest<'a> {
    headers: &'a HeaderMap,
    /// `Mcp-Session-Id`.
    session: Option<&'a str>,
    /// Whether `MCP-Protocol-Version` is absent or a session-era version.
    plain_version: bool,
}

/// The lean answer to `body`, or `None` to let rmcp answer it.
async fn answer(
    state: &LeanState,
    request: &LeanRequest<'_>,
    identity: Identity,
    body: &Bytes,
) -> Option<Response> {
    let (headers, session) = (request.headers, request.session);
    if let Some(session) = session
        && let Some(call) = CallRequest::read(body)
    {
        return session_call(state, request, session, identity, call).await;
    }
    let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
    if envelope.jsonrpc.as_deref() != Some("2.0") {
        return None;
    }
    let method = envelope.method.as_deref()?;
    match (method, session) {
        ("initialize", None) if state.sessions.is_full() => {
            Some(session_cap_reached(&state.sessions, envelope.id))
        }
        ("initialize", None) => {
            // A client that can be asked things during calls needs the worker for them:
            // rmcp's handshake starts it right away.
            let handshake = Handshake::parse(headers, body).filter(|h| !h.answers_requests())?;
            let reply = handshake.reply_body(&state.aggregator)?;
            match state.sessions.open_parked(handshake.params()) {
                Ok(session) => {
                    // Notifications sent before the client's `GET` are kept for it.
                    state.aggregator.inner.peers.expect_stream(&session);
                    Some(Handshake::reply(reply, &session))
                }
                Err(_) => Some(session_cap_reached(&state.sessions, envelope.id)),
            }
        }
        // The handshake's end, in a session whose worker has not started: nothing to do.
        ("notifications/initialized", Some(session))
            if envelope.id.is_none()
                && request.plain_version
                && state.sessions.is_parked(session) =>
        {
            Some(StatusCode::ACCEPTED.into_response())
        }
        ("notifications/cancelled", Some(session)) => {
            let params: CancelledParams<'_> = serde_json::from_str(envelope.params?.get()).ok()?;
            state
                .inflight
                .cancel(session, params.request_id?.get().trim());
            None
        }
        // What the front door answers the same way for every session needs no worker.
        ("tools/list" | "ping", Some(session)) => {
            let id = envelope.id.filter(|id| is_request_id(id))?;
            if !request.plain_version
                || !state.sessions.is_lean(session)
                || !fixed::plain_params(envelope.params)
            {
                return None;
            }
            Some(json_response(StatusCode::OK, fixed::reply(method, id)?))
        }
        ("tools/call", Some(session)) => {
            let call = CallRequest::from_params(envelope.id, envelope.params?)?;
            session_call(state, request, session, identity, call).await
        }
        ("tools/call", None) => {
            let id = envelope.id.filter(|id| is_request_id(id))?;
            let params: StatelessCallParams<'_> =
                serde_json::from_str(envelope.params?.get()).ok()?;
            let name = meta_tools::meta_tool_name(&params.name)?;
            if !params.agrees_with(headers) {
                return None;
            }
            let arguments = Arguments::read(name, params.arguments.map(RawValue::get))?;
            let call = LeanCall {
                id: id.to_owned(),
                name,
                arguments,
                progress_token: None,
                // A stateless request has no stream after its reply: what the call would
                // notify later has nowhere to go, as on rmcp's stateless path.
                notifier: SessionNotifier::new(|_, _| {}, || true),
                identity,
                request_meta: trace_context_of(headers),
            };
            Some(call.run(state, None).await)
        }
        _ => None,
    }
}

/// The lean answer to `call`, a `tools/call` request of `session`, or `None` to let rmcp
/// answer it.
async fn session_call(
    state: &LeanState,
    request: &LeanRequest<'_>,
    session: &str,
    identity: Identity,
    call: CallRequest<'_>,
) -> Option<Response> {
    if !request.plain_version {
        return None;
    }
    // Notifications of the call (followed events) go to the session's stream as of when
    // each is sent, for as long as the session lasts.
    let (notifier, session) = state.sessions.lean_notifier(session)?;
    let call = LeanCall::of(call, notifier, identity, request.headers)?;
    Some(call.run(state, Some(session)).await)
}

/// The trace context a lean call hands on. The call runs inside the HTTP request's span,
/// so while spans are recorded its spans are that span's children without anything in
/// `_meta`; otherwise the caller's trace context in the HTTP headers goes to the server.
fn trace_context_of(headers: &HeaderMap) -> Option<JsonObject> {
    if tracing::Span::current().is_disabled() {
        crate::observe::with_header_trace_context(None, Some(headers))
    } else {
        None
    }
}

/// One meta-tool call on the lean path.
struct LeanCall {
    id: Box<RawValue>,
    name: &'static str,
    arguments: Arguments,
    progress_token: Option<ProgressToken>,
    notifier: SessionNotifier,
    identity: Identity,
    request_meta: Option<JsonObject>,
}

/// What a lean call answers with.
#[expect(
    clippy::large_enum_variant,
    reason = "returned once per call and taken apart at once; boxing would allocate per call"
)]
enum LeanAnswer {
    /// One reply: the call finished without reporting progress, or was cancelled.
    Reply(Reply),
    /// JSON-RPC messages as they come: the progress notifications, then the result.
    Messages(mpsc::Receiver<String>),
}

/// The one reply of a lean call, before its transport frames it.
struct Reply {
    id: Box<RawValue>,
    end: End,
}

/// How a lean call with one reply ended.
#[expect(
    clippy::large_enum_variant,
    reason = "held once per call until its reply is written; boxing would allocate per call"
)]
enum End {
    /// With the answer of the meta-tool `name` (`None`: no such meta-tool).
    Finished {
        name: &'static str,
        answer: Option<Answer>,
        stateless: bool,
    },
    /// Cancelled by the client or by muster's shutdown.
    Cancelled,
}

impl Reply {
    /// The reply as the response to the `POST` that made the call.
    fn into_response(self) -> Response {
        match self.end {
            End::Finished {
                name,
                answer,
                stateless,
            } => finished(&self.id, name, answer, stateless),
            End::Cancelled => json_response(StatusCode::OK, cancelled_message(&self.id)),
        }
    }

    /// The reply as one JSON-RPC message, for a stream of messages.
    fn into_message(self) -> String {
        match self.end {
            End::Finished {
                name,
                answer,
                stateless,
            } => result_message(&self.id, name, answer, stateless),
            End::Cancelled => cancelled_message(&self.id),
        }
    }
}

impl LeanCall {
    /// The lean call of `call`, made with `headers` by `identity`, its notifications going
    /// to `notifier`; `None` unless it is a request (not a notification) of a meta-tool.
    fn of(
        call: CallRequest<'_>,
        notifier: SessionNotifier,
        identity: Identity,
        headers: &HeaderMap,
    ) -> Option<Self> {
        let id = call.id.filter(|id| is_request_id(id))?;
        let name = meta_tools::meta_tool_name(&call.name)?;
        Some(Self {
            id: id.to_owned(),
            name,
            arguments: call.arguments,
            progress_token: call.progress_token,
            notifier,
            identity,
            request_meta: trace_context_of(headers),
        })
    }

    /// Runs the call in `session` (`None`: a stateless request): a JSON reply when it
    /// finishes without reporting progress, else an SSE stream carrying the progress
    /// notifications and then the result.
    async fn run(self, state: &LeanState, session: Option<SessionId>) -> Response {
        match self.answer(state, session).await {
            LeanAnswer::Reply(reply) => reply.into_response(),
            LeanAnswer::Messages(messages) => sse_response(messages),
        }
    }

    /// Runs the call in `session` (`None`: a stateless request), as [`run`](Self::run)
    /// does, and answers with the messages themselves instead of their HTTP framing.
    async fn answer(self, state: &LeanState, session: Option<SessionId>) -> LeanAnswer {
        let Self {
            id,
            name,
            arguments,
            progress_token,
            notifier,
            identity,
            request_meta,
        } = self;
        // Only a 2026-07-28 request comes without a session; its result carries `resultType`.
        let stateless = session.is_none();
        let cancellation = state.aggregator.inner.shutdown.child_token();
        // A client that hangs up before the answer cancels the call.
        let cancel_on_drop = cancellation.clone().drop_guard();
        let registration = session.as_ref().map(|session| {
            state
                .inflight
                .register(session, id.get().trim(), cancellation.clone())
        });
        // Only a call with a progress token can report progress.
        let (progress_tx, mut progress) = match progress_token {
            Some(_) => {
                let (tx, rx) = mpsc::unbounded_channel::<ProgressUpdate>();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        // Every field named: a default context would allocate what is thrown away.
        let context = CallContext {
            session: identity.session.or(session).unwrap_or_default(),
            caller: identity.caller,
            progress: progress_tx.map(|tx| {
                ProgressSink::new(move |update| {
                    let _ = tx.send(update);
                })
            }),
            notifier: Some(notifier),
            cancellation: cancellation.clone(),
            workflow_depth: 0,
            tree: None,
            caller_requests: None,
            request_meta,
        };
        state.aggregator.before_call(&context).await;
        // The aggregator is one `Arc`; the meta-tools themselves hold boxed services that
        // would be cloned (allocated) for every call.
        let aggregator = state.aggregator.clone();
        let call = async move {
            aggregator
                .meta_tools()
                .answer(name, arguments, context)
                .await
        };
        let mut call = Box::pin(call);
        // A cancelled call answers as cancelled even when the tool returns at once.
        let first = tokio::select! {
            biased;
            () = WakeGated::new(cancellation.cancelled()) => {
                return LeanAnswer::Reply(Reply { id, end: End::Cancelled });
            }
            Some(update) = next_update(&mut progress) => update,
            result = &mut call => {
                cancel_on_drop.disarm();
                // Progress the call reported while it finished still precedes the result.
                let queued: Vec<ProgressUpdate> =
                    std::iter::from_fn(|| progress.as_mut()?.try_recv().ok()).collect();
                return match &progress_token {
                    Some(token) if !queued.is_empty() => LeanAnswer::Messages(
                        finished_after_progress(&id, name, token, queued, result),
                    ),
                    _ => LeanAnswer::Reply(Reply {
                        id,
                        end: End::Finished { name, answer: result, stateless },
                    }),
                };
            }
        };
        // The tool reports progress: stream it, then the result.
        let (Some(token), Some(mut progress)) = (progress_token, progress) else {
            return LeanAnswer::Reply(Reply {
                id,
                end: End::Cancelled,
            });
        };
        let (events, messages) = mpsc::channel::<String>(16);
        let unsampled = crate::observe::in_unsampled_call();
        let stream = async move {
            let _registration = registration;
            let cancel_on_drop = cancel_on_drop;
            let send = |message: String| {
                let events = events.clone();
                async move { events.send(message).await.is_ok() }
            };
            if !send(progress_message(&token, first)).await {
                return;
            }
            let last = loop {
                tokio::select! {
                    biased;
                    () = cancellation.cancelled() => break cancelled_message(&id),
                    result = &mut call => break result_message(&id, name, result, false),
                    () = events.closed() => return,
                    Some(update) = progress.recv() => {
                        if !send(progress_message(&token, update)).await {
                            return;
                        }
                    }
                }
            };
            // Progress reported before the result still precedes it.
            while let Ok(update) = progress.try_recv() {
                if !send(progress_message(&token, update)).await {
                    return;
                }
            }
            let _ = send(last).await;
            cancel_on_drop.disarm();
        };
        // The rest of an unsampled call makes no spans either.
        if unsampled {
            tokio::spawn(crate::observe::Unsampled::new(stream));
        } else {
            tokio::spawn(stream);
        }
        LeanAnswer::Messages(messages)
    }
}

/// The next progress update of a call; never, for a call without a progress token.
async fn next_update(
    progress: &mut Option<mpsc::UnboundedReceiver<ProgressUpdate>>,
) -> Option<ProgressUpdate> {
    match progress {
        Some(updates) => updates.recv().await,
        None => std::future::pending().await,
    }
}

/// The messages of a call that finished with progress still to deliver: the progress
/// notifications, then the result.
fn finished_after_progress(
    id: &RawValue,
    name: &str,
    token: &ProgressToken,
    updates: Vec<ProgressUpdate>,
    result: Option<Answer>,
) -> mpsc::Receiver<String> {
    let (messages, queued) = mpsc::channel::<String>(updates.len() + 1);
    for update in updates {
        let _ = messages.try_send(progress_message(token, update));
    }
    let _ = messages.try_send(result_message(id, name, result, false));
    queued
}

fn finished(id: &RawValue, name: &str, result: Option<Answer>, stateless: bool) -> Response {
    let Some(Answer::Encoded(json)) = result else {
        return json_response(StatusCode::OK, result_message(id, name, result, stateless));
    };
    // The shared encoding goes out as it is, between the message's head and its end.
    let (opening, skip) = encoded_opening(&json, stateless);
    let head = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{opening}"#, id.get());
    let body = pieces::Pieces::new([
        Bytes::from(head),
        pieces::shared_bytes(json).slice(skip..),
        Bytes::from_static(b"}"),
    ]);
    let mut response = Response::new(Body::new(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// How a result encoded without `resultType` opens in a reply: what comes first, and how
/// many of its bytes that replaces (a `stateless` reply adds `resultType` first).
fn encoded_opening(json: &str, stateless: bool) -> (&'static str, usize) {
    if stateless && json.starts_with('{') {
        (r#"{"resultType":"complete","#, 1)
    } else {
        ("", 0)
    }
}

/// The error message answering the call `id` that was cancelled.
fn cancelled_message(id: &RawValue) -> String {
    error_message(id, INTERNAL_ERROR, "request cancelled")
}

/// The JSON-RPC message answering `id` with `answer` (`None`: tool `name` is unknown),
/// worded as the rmcp handler words it; a `stateless` (2026-07-28) one says
/// `"resultType":"complete"`.
fn result_message(id: &RawValue, name: &str, answer: Option<Answer>, stateless: bool) -> String {
    let (written, shared): (String, Arc<str>);
    // The result's JSON object, split where a stateless reply adds `resultType`.
    let (opening, rest) = match answer {
        None => {
            return error_message(
                id,
                INVALID_PARAMS,
                &format!("tool '{name}' not found: tool not found"),
            );
        }
        // `call_tool`'s envelope of text blocks (most results) is written by hand, with the
        // bytes of its result.
        Some(Answer::Envelope(inner)) if text_result::is_text_only(&inner) => {
            let mut body = message_head(id, text_result::envelope_length_hint(&inner));
            text_result::write_envelope(&inner, stateless, &mut body);
            body.push('}');
            return body;
        }
        Some(Answer::Envelope(inner)) => {
            return result_message(
                id,
                name,
                Some(Answer::Result(meta_tools::enveloped(&inner))),
                stateless,
            );
        }
        // Text blocks alone (most results) are written by hand, with the same bytes.
        Some(Answer::Result(result)) if text_result::is_text_only(&result) => {
            let mut body = message_head(id, text_result::length_hint(&result));
            text_result::write_text_only(&result, stateless, &mut body);
            body.push('}');
            return body;
        }
        Some(Answer::Result(mut result)) => {
            // `resultType` exists from 2026-07-28 on; session-era replies go without it, as
            // rmcp writes them.
            result.result_type = stateless.then_some(ResultType::COMPLETE);
            match serde_json::to_string(&result) {
                Ok(json) => written = json,
                Err(e) => {
                    return error_message(
                        id,
                        INTERNAL_ERROR,
                        &format!("cannot serialize the result: {e}"),
                    );
                }
            }
            ("", written.as_str())
        }
        Some(Answer::Encoded(json)) => {
            shared = json;
            let (opening, skip) = encoded_opening(&shared, stateless);
            (opening, &shared[skip..])
        }
    };
    let mut body = message_head(id, opening.len() + rest.len());
    body.push_str(opening);
    body.push_str(rest);
    body.push('}');
    body
}

/// The start of the JSON-RPC message answering `id`, up to its `result`'s value, with room
/// for `result_len` more bytes.
fn message_head(id: &RawValue, result_len: usize) -> String {
    let mut body = String::with_capacity(result_len + id.get().len() + 40);
    body.push_str(r#"{"jsonrpc":"2.0","id":"#);
    body.push_str(id.get());
    body.push_str(r#","result":"#);
    body
}

/// `notifications/progress` for `token`.
fn progress_message(token: &ProgressToken, update: ProgressUpdate) -> String {
    let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
    if let Some(total) = update.total {
        param = param.with_total(total);
    }
    if let Some(message) = update.message {
        param = param.with_message(message);
    }
    let params = serde_json::to_string(&param).unwrap_or_else(|_| "{}".to_owned());
    format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{params}}}"#)
}

fn sse_event(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// An SSE response carrying `messages`, one event each.
fn sse_response(messages: mpsc::Receiver<String>) -> Response {
    let stream = tokio_stream::wrappers::ReceiverStream::new(messages)
        .map(|message| Ok::<_, Infallible>(sse_event(&message)));
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn error_message(id: &RawValue, code: i32, message: &str) -> String {
    let error = serde_json::json!({ "code": code, "message": message });
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.get())
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `503` with a JSON-RPC error for an `initialize` over the session cap.
fn session_cap_reached(sessions: &SessionTable, id: Option<&RawValue>) -> Response {
    let message = super::sessions::SessionTableError::Full {
        max: sessions.max_sessions(),
    }
    .to_string();
    tracing::warn!(
        max = sessions.max_sessions(),
        "refused a session: the cap is reached"
    );
    let null = RawValue::from_string("null".to_owned()).ok();
    match id.or(null.as_deref()) {
        Some(id) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            error_message(id, SERVER_BUSY, &message),
        ),
        None => (StatusCode::SERVICE_UNAVAILABLE, message).into_response(),
    }
}

/// A JSON-RPC request id: a number or a string.
fn is_request_id(id: &RawValue) -> bool {
    let text = id.get().trim_start();
    text.starts_with('"') || text.starts_with('-') || text.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_in_pieces_is_joined_and_bounded() {
        let pieces = || {
            let pieces = ["{\"a\":", "1", "}"].map(|s| Ok::<_, std::io::Error>(Bytes::from(s)));
            Body::from_stream(futures::stream::iter(pieces))
        };
        assert_eq!(body_bytes(pieces(), 7).await.unwrap(), "{\"a\":1}");
        let over = body_bytes(pieces(), 6).await.unwrap_err();
        assert_eq!(over.to_string(), "length limit exceeded");
        assert_eq!(body_bytes(Body::from("x"), 1).await.unwrap(), "x");
        assert_eq!(body_bytes(Body::empty(), 0).await.unwrap(), "");
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).expect("valid JSON")
    }

    #[test]
    fn request_ids() {
        for (id, ok) in [
            ("1", true),
            ("\"a\"", true),
            ("-3", true),
            ("null", false),
            ("{}", false),
        ] {
            assert_eq!(is_request_id(&raw(id)), ok, "{id}");
        }
    }

    #[test]
    fn responses_are_json_rpc() {
        let result =
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text("hi")]);
        let message = result_message(
            &raw("7"),
            "list_tools",
            Some(Answer::Result(result.clone())),
            false,
        );
        assert_eq!(
            message,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#
        );
        let stateless = result_message(
            &raw("7"),
            "list_tools",
            Some(Answer::Result(result.clone())),
            true,
        );
        assert_eq!(
            stateless,
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}],"isError":false}}"#
        );
        // A result encoded once reads the same, `resultType` included where it belongs.
        let mut bare = result.clone();
        bare.result_type = None;
        let encoded: Arc<str> = serde_json::to_string(&bare).unwrap().into();
        for stateless_reply in [false, true] {
            assert_eq!(
                result_message(
                    &raw("7"),
                    "list_tools",
                    Some(Answer::Encoded(encoded.clone())),
                    stateless_reply
                ),
                result_message(
                    &raw("7"),
                    "list_tools",
                    Some(Answer::Result(result.clone())),
                    stateless_reply
                )
            );
        }
        for stateless_reply in [false, true] {
            let response = finished(
                &raw("7"),
                "list_tools",
                Some(Answer::Encoded(encoded.clone())),
                stateless_reply,
            );
            assert_eq!(
                response.headers()[header::CONTENT_TYPE],
                HeaderValue::from_static("application/json")
            );
            let body =
                futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
                    .unwrap();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                result_message(
                    &raw("7"),
                    "list_tools",
                    Some(Answer::Result(result.clone())),
                    stateless_reply
                )
            );
        }
        let response = finished(&raw("7"), "nope", None, false);
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            HeaderValue::from_static("application/json")
        );
        let update = ProgressUpdate {
            progress: 1.0,
            total: Some(2.0),
            message: None,
        };
        assert_eq!(
            progress_message(
                &ProgressToken(rmcp::model::NumberOrString::Number(3)),
                update
            ),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1.0,"total":2.0}}"#
        );
    }
}
