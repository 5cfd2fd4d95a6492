//! The legacy HTTP+SSE transport (protocol 2024-11-05): `GET /sse` opens a stream whose
//! first event names the endpoint (`/message?sessionId=<id>`); the client POSTs its
//! messages there and reads every answer from the stream.
//!
//! Each session is served by an rmcp worker. Once its handshake is over, a plain meta-tool
//! call of a client that cannot be asked anything takes the lean path instead (see
//! `lean::sse_call`): it runs on a task of its own and its progress and reply join the stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use muster_core::tool::SessionNotifier;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Aggregator;
use super::lean::LeanState;
use super::lean::sse_call::{self, SseCall, SseMessage};
use super::notify::{self, SessionPeer};

/// Largest message body accepted on `POST /message`.
const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Messages buffered per direction and session.
const CHANNEL_CAPACITY: usize = 64;
/// Lean calls one session may have running; more wait in the worker's queue.
const LEAN_CALLS_PER_SESSION: usize = 64;

/// The open SSE sessions, by session id.
#[derive(Debug, Clone)]
pub(super) struct SseState {
    aggregator: Aggregator,
    lean: LeanState,
    sessions: Arc<Mutex<HashMap<String, SseSession>>>,
}

/// One open SSE session.
#[derive(Debug, Clone)]
struct SseSession {
    /// What feeds the session's rmcp worker.
    to_server: mpsc::Sender<ClientJsonRpcMessage>,
    /// The messages of the session's lean calls (progress, replies), for its stream.
    lean_replies: mpsc::Sender<String>,
    /// Where the session's lean calls send their notifications: set once the handshake is
    /// over, for a client that cannot be asked anything.
    lean_notifier: Arc<OnceLock<SessionNotifier>>,
    /// One permit per lean call running ([`LEAN_CALLS_PER_SESSION`]).
    lean_slots: Arc<Semaphore>,
    /// Cancelled when the session ends.
    ended: CancellationToken,
}

impl SseState {
    pub(super) fn new(aggregator: Aggregator, lean: LeanState) -> Self {
        Self {
            aggregator,
            lean,
            sessions: Arc::default(),
        }
    }

    fn session(&self, id: &str) -> Option<SseSession> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }
}

/// The server side of one SSE session, as an rmcp transport.
struct SseTransport {
    inbound: mpsc::Receiver<ClientJsonRpcMessage>,
    outbound: mpsc::Sender<ServerJsonRpcMessage>,
}

impl Transport<RoleServer> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outbound = self.outbound.clone();
        async move {
            outbound.send(item).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "SSE stream closed")
            })
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.inbound.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbound.close();
        Ok(())
    }
}

/// `GET /sse`: starts a session and streams its messages.
pub(super) async fn connect(State(state): State<SseState>) -> Response {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, inbound) = mpsc::channel(CHANNEL_CAPACITY);
    let (outbound, from_server) = mpsc::channel(CHANNEL_CAPACITY);
    let (lean_replies, from_lean) = mpsc::channel(CHANNEL_CAPACITY);
    // Ends the session when the client goes away (the stream is dropped) or on shutdown.
    let session = state.aggregator.inner.shutdown.child_token();
    let lean_notifier = Arc::new(OnceLock::new());
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(
            id.clone(),
            SseSession {
                to_server,
                lean_replies,
                lean_notifier: Arc::clone(&lean_notifier),
                lean_slots: Arc::new(Semaphore::new(LEAN_CALLS_PER_SESSION)),
                ended: session.clone(),
            },
        );

    let transport = SseTransport { inbound, outbound };
    let aggregator = state.aggregator.clone();
    let sessions = Arc::clone(&state.sessions);
    let session_id = id.clone();
    let service_token = session.clone();
    tokio::spawn(async move {
        match aggregator.serve_with_ct(transport, service_token).await {
            Ok(running) => {
                // The handshake is over: a client that cannot be asked anything may have its
                // meta-tool calls answered on the lean path from now on.
                let peer = running.peer();
                if peer
                    .peer_info()
                    .is_some_and(|info| !super::sessions::answers_requests(&info))
                {
                    let peer = SessionPeer::Worker(peer.clone());
                    let _ = lean_notifier.set(notify::session_notifier(peer));
                }
                if let Err(e) = running.waiting().await {
                    tracing::debug!(error = %e, "SSE session ended abnormally");
                }
            }
            Err(e) => tracing::debug!(error = %e, "SSE session did not initialize"),
        }
        sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&session_id);
    });

    let keep_alive = state.aggregator.inner.sse_keep_alive;
    Sse::new(events(&id, from_server, from_lean, session))
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response()
}

/// The endpoint event, then every server message, until the session ends.
fn events(
    id: &str,
    from_server: mpsc::Receiver<ServerJsonRpcMessage>,
    from_lean: mpsc::Receiver<String>,
    session: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    let guard = session.clone().drop_guard();
    let messages = ReceiverStream::new(from_server).filter_map(|message| async move {
        match serde_json::to_string(&message) {
            Ok(data) => Some(data),
            Err(e) => {
                tracing::warn!(error = %e, "could not encode a server message");
                None
            }
        }
    });
    let messages = stream::select(messages, ReceiverStream::new(from_lean))
        .map(|data| Event::default().event("message").data(data));
    stream::once(async move { endpoint })
        .chain(messages)
        .take_until(session.cancelled_owned())
        .map(move |event| {
            // Holding the guard here ties the session to the stream's lifetime.
            let _ = &guard;
            Ok(event)
        })
}

/// `POST /message?sessionId=<id>`: hands one client message to its session.
pub(super) async fn message(State(state): State<SseState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Some(id) = session_id(parts.uri.query()) else {
        return (StatusCode::BAD_REQUEST, "Missing sessionId").into_response();
    };
    let Some(session) = state.session(&id) else {
        return (StatusCode::NOT_FOUND, "Invalid session ID").into_response();
    };
    let body = match to_bytes(body, MAX_MESSAGE_BYTES).await {
        Ok(body) => body,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("Invalid body: {e}")).into_response(),
    };
    if let Some(notifier) = session.lean_notifier.get() {
        // The session as the rmcp path names it in a call's context.
        let call_session = format!("sse-{id}");
        match SseMessage::read(&body, &parts, notifier) {
            SseMessage::Call(call) => {
                // A session with as many lean calls running as it may have queues the next
                // for its worker, whose queue is bounded too.
                if let Ok(slot) = Arc::clone(&session.lean_slots).try_acquire_owned() {
                    run_lean(state.lean.clone(), session, call_session, call, slot);
                    return (StatusCode::ACCEPTED, "Accepted").into_response();
                }
            }
            // The worker sees the cancellation too, and ignores an id it does not know.
            SseMessage::Cancelled(request) => {
                sse_call::cancel(&state.lean, &call_session, &request);
            }
            SseMessage::Other => {}
        }
    }
    let mut message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, format!("Invalid message: {e}")).into_response();
        }
    };
    // Handlers read the HTTP request (headers) from the message's extensions.
    match &mut message {
        ClientJsonRpcMessage::Request(request) => {
            request.request.extensions_mut().insert(parts);
        }
        ClientJsonRpcMessage::Notification(notification) => {
            notification.notification.extensions_mut().insert(parts);
        }
        _ => {}
    }
    if session.to_server.send(message).await.is_err() {
        return (StatusCode::NOT_FOUND, "Invalid session ID").into_response();
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}

/// Runs `call` of `session` (named `call_session` in the call's context) on a task of its
/// own, in the span of the `POST` that brought it, and puts what it answers (progress, then
/// its reply) on the session's stream; the call is cancelled if the session ends first.
/// `slot` is held until then.
fn run_lean(
    state: LeanState,
    session: SseSession,
    call_session: String,
    call: SseCall,
    slot: OwnedSemaphorePermit,
) {
    let task = async move {
        let _slot = slot;
        tokio::select! {
            () = call.deliver(&state, &call_session, &session.lean_replies) => {}
            () = session.ended.cancelled() => {}
        }
    };
    tokio::spawn(task.instrument(tracing::Span::current()));
}

/// The `sessionId` query parameter.
fn session_id(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == "sessionId")
        .map(|(_, value)| value.to_owned())
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::session_id;

    #[test]
    fn session_ids_from_queries() {
        let table = [
            (Some("sessionId=abc"), Some("abc")),
            (Some("x=1&sessionId=abc"), Some("abc")),
            (Some("sessionId="), None),
            (Some("session_id=abc"), None),
            (None, None),
        ];
        for (query, expected) in table {
            assert_eq!(session_id(query).as_deref(), expected, "{query:?}");
        }
    }
}
