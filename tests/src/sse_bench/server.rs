//! `sse-bench serve`: a legacy HTTP+SSE MCP server on axum, with no MCP library in between.
//!
//! `GET /sse` opens a session: the stream's first event is `event: endpoint` with
//! `data: /messages?sessionId=<id>`, and every reply of the session follows as
//! `event: message` with the JSON-RPC message as data, with a keep-alive comment every
//! [`KEEP_ALIVE`]. `POST /messages?sessionId=<id>` takes one JSON-RPC message and answers
//! `202 Accepted`; its reply, if any, goes to the session's stream. The session ends, and its
//! id is forgotten, when its stream is dropped.
//!
//! Status codes of `POST /messages`: `202` accepted, `400` no `sessionId` or a body that is
//! not a JSON-RPC message, `404` no open session with that id.
//!
//! What the MCP methods answer is the `mcp` submodule's job, the tools are `tools`', and the
//! open sessions `sessions`'.

mod mcp;
mod sessions;
mod tools;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt as _;
use futures::stream::{self, Stream, StreamExt as _};
use serde::Deserialize;

use mcp::Handled;
use sessions::Sessions;

/// Path of the event stream that opens a session.
pub const SSE_PATH: &str = "/sse";

/// Path the client posts its JSON-RPC messages to (with `?sessionId=<id>`).
pub const MESSAGES_PATH: &str = "/messages";

/// Interval of the keep-alive comments on an idle event stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Replies one session may have queued for its stream; past that a `POST` waits until the
/// client reads its stream.
pub const SESSION_QUEUE: usize = 256;

/// Options of `sse-bench serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeOptions {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to listen on (0 picks a free one; the address is printed on stderr).
    #[arg(long)]
    pub port: u16,
    /// Tokio worker threads (default: the CPUs this process may run on).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// The server's routes: [`SSE_PATH`] and [`MESSAGES_PATH`], with a fresh session registry.
pub fn router() -> Router {
    Router::new()
        .route(SSE_PATH, get(open_stream))
        .route(MESSAGES_PATH, post(post_message))
        .with_state(Arc::new(Sessions::default()))
}

/// Serves [`router`] on `options.host:options.port` until SIGINT or SIGTERM.
///
/// Open event streams are not waited for: a stop ends them.
///
/// # Errors
///
/// When the address cannot be bound, signals cannot be watched or serving fails.
pub async fn serve(options: &ServeOptions) -> anyhow::Result<()> {
    let address = SocketAddr::new(options.host, options.port);
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("binding {address}"))?;
    let local = listener.local_addr().context("reading the bound address")?;
    eprintln!("sse-bench: listening on http://{local}{SSE_PATH}");
    // Without TCP_NODELAY each event written to a stream waits for the client's delayed ACK.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("watching SIGTERM")?;
    tokio::select! {
        served = axum::serve(listener, router()) => served.context("serving HTTP"),
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = terminate.recv() => Ok(()),
    }
}

/// `GET /sse`: opens a session and streams its endpoint, then its replies.
async fn open_stream(
    State(sessions): State<Arc<Sessions>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (session, replies) = sessions.open(SESSION_QUEUE);
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("{MESSAGES_PATH}?sessionId={}", session.id()));
    // The session travels with the stream, so dropping the stream closes the session.
    let messages = stream::unfold((replies, session), |(mut replies, session)| async move {
        let json = replies.recv().await?;
        let event = Event::default().event("message").data(json);
        Some((Ok(event), (replies, session)))
    });
    Sse::new(stream::iter([Ok(endpoint)]).chain(messages))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

/// The query of `POST /messages`.
#[derive(Debug, Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// `POST /messages?sessionId=<id>`: one JSON-RPC message of that session.
async fn post_message(
    State(sessions): State<Arc<Sessions>>,
    query: Result<Query<SessionQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    let Ok(Query(SessionQuery { session_id })) = query else {
        return (StatusCode::BAD_REQUEST, "sessionId query parameter missing").into_response();
    };
    let Some(stream) = sessions.sender(&session_id) else {
        return (
            StatusCode::NOT_FOUND,
            format!("no open session {session_id}"),
        )
            .into_response();
    };
    let handled = match serde_json::from_slice(&body) {
        Ok(message) => mcp::handle(message),
        Err(e) => Err(format!("body is not a JSON-RPC message: {e}")),
    };
    match handled {
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
        Ok(Handled::Nothing) => {}
        Ok(Handled::Reply(json)) => {
            if stream.send(json).await.is_err() {
                return (
                    StatusCode::NOT_FOUND,
                    format!("session {session_id} closed"),
                )
                    .into_response();
            }
        }
        Ok(Handled::Later(delay, json)) => {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                // A session closed meanwhile has no one left to tell.
                let _ = stream.send(json).await;
            });
        }
    }
    (StatusCode::ACCEPTED, "Accepted").into_response()
}
