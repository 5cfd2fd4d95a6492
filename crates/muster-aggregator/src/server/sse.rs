//! The legacy HTTP+SSE transport (protocol 2024-11-05): `GET /sse` opens a stream whose
//! first event names the endpoint (`/message?sessionId=<id>`); the client POSTs its
//! messages there and reads every answer from the stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use super::Aggregator;

/// Largest message body accepted on `POST /message`.
const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Messages buffered per direction and session.
const CHANNEL_CAPACITY: usize = 64;

/// The open SSE sessions: session id → the sender feeding that session's server.
#[derive(Debug, Clone)]
pub(super) struct SseState {
    aggregator: Aggregator,
    sessions: Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>,
}

impl SseState {
    pub(super) fn new(aggregator: Aggregator) -> Self {
        Self {
            aggregator,
            sessions: Arc::default(),
        }
    }

    fn sender(&self, id: &str) -> Option<mpsc::Sender<ClientJsonRpcMessage>> {
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
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id.clone(), to_server);

    // Ends the session when the client goes away (the stream is dropped) or on shutdown.
    let session = state.aggregator.inner.shutdown.child_token();
    let transport = SseTransport { inbound, outbound };
    let aggregator = state.aggregator.clone();
    let sessions = Arc::clone(&state.sessions);
    let session_id = id.clone();
    let service_token = session.clone();
    tokio::spawn(async move {
        match aggregator.serve_with_ct(transport, service_token).await {
            Ok(running) => {
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
    Sse::new(events(&id, from_server, session))
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response()
}

/// The endpoint event, then every server message, until the session ends.
fn events(
    id: &str,
    from_server: mpsc::Receiver<ServerJsonRpcMessage>,
    session: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    let guard = session.clone().drop_guard();
    let messages = ReceiverStream::new(from_server).filter_map(|message| async move {
        match serde_json::to_string(&message) {
            Ok(data) => Some(Event::default().event("message").data(data)),
            Err(e) => {
                tracing::warn!(error = %e, "could not encode a server message");
                None
            }
        }
    });
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
    let Some(sender) = state.sender(&id) else {
        return (StatusCode::NOT_FOUND, "Invalid session ID").into_response();
    };
    let body = match to_bytes(body, MAX_MESSAGE_BYTES).await {
        Ok(body) => body,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("Invalid body: {e}")).into_response(),
    };
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
    if sender.send(message).await.is_err() {
        return (StatusCode::NOT_FOUND, "Invalid session ID").into_response();
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
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
