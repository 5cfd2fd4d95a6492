//! The `GET` stream of a session whose client cannot be asked anything (no sampling,
//! elicitation or roots): served by the front door, so that a client holding it open — the
//! Python and TypeScript SDKs open it right after the handshake — needs no rmcp worker for
//! it. The session's notifications (`notifications/tools/list_changed`, a followed
//! workflow's events) are written to it as SSE events, with a keep-alive comment every
//! 15 s, as rmcp's stream does; it ends when the client leaves, the session is deleted or
//! muster shuts down.
//!
//! One stream of a session carries its notifications; a second `GET` while it is open only
//! keeps its connection alive, as rmcp's "shadow" streams do. The stream offers no
//! resumption: its events have no ids, so a client that reconnects opens a new stream (a
//! `Last-Event-ID` request is left to rmcp).

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use super::super::notify::Peers;

/// How often an idle stream sends a keep-alive comment (rmcp's default).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Opens the `GET` stream of `session`, which ends when `shutdown` is cancelled.
pub(super) fn open(peers: &Peers, session: &str, shutdown: CancellationToken) -> Response {
    let messages = match peers.open_stream(session) {
        Some(receiver) => ReceiverStream::new(receiver).left_stream(),
        None => futures::stream::pending().right_stream(),
    };
    let events = messages
        .map(|text: String| Ok::<_, Infallible>(Event::default().data(text)))
        .take_until(shutdown.cancelled_owned());
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}
