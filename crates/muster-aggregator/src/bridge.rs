//! A transport bridge: an MCP endpoint on a byte stream (stdio for IDEs) that forwards every
//! message to a muster server over streamable HTTP.
//!
//! The bridge has no tool logic of muster's. Each line the MCP client writes is one JSON-RPC
//! message; it is POSTed to the server, and whatever the server answers (plain JSON or an
//! event stream with progress notifications, server requests and finally the response) is
//! written back, one message per line. A `GET` event stream carries the server's unsolicited
//! notifications (`list_changed`, `notifications/muster/event`). Responses of the client to
//! server requests and `notifications/cancelled` are forwarded like everything else.
//!
//! The bridge survives server restarts: requests made while the server is down wait for it (up
//! to [`Bridge::reconnect_timeout`]), and when the server no longer knows the session the
//! bridge initializes a new one with the client's original `initialize` parameters, replays
//! nothing else, and tells the client that the tool, resource and prompt lists may have
//! changed. The client's session stays alive throughout.
//!
//! With [`Credentials`] ([`Bridge::credentials`]) every request carries the current
//! `Authorization` value, and a request muster refuses with `401` is sent once more after a
//! refresh. When muster still refuses, the bridge answers the client by itself: `initialize`
//! succeeds, `tools/list` offers only `authenticate_muster`, which starts the credentials'
//! sign-in ([`Credentials::sign_in`]) and answers with its URL, and every other request gets
//! an error saying to call it. Once the sign-in completes the bridge opens a session with
//! the client's `initialize` parameters and sends `notifications/tools/list_changed`.
//!
//! As the original muster's agent does, the bridge reads the session's `auth://status`
//! resource right after the client's `initialize` and every [`AUTH_STATUS_INTERVAL`] (those
//! reads and their answers never reach the client); while servers wait for the session to
//! sign in, every `tools/call` result gets a text block naming them and
//! `_meta["giantswarm.io/auth_required"]` listing them (server, issuer, scope,
//! `auth_tool: core_auth_login`).
//!
//! ```no_run
//! # async fn run() -> Result<(), muster_aggregator::bridge::BridgeError> {
//! use muster_aggregator::bridge::Bridge;
//! Bridge::new("http://localhost:8090/mcp")?.run_stdio().await
//! # }
//! ```

mod credentials;
mod messages;
mod notices;
mod output;
mod replies;
mod signed_out;
mod upstream;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, BufReader};
use tokio::task::JoinSet;

pub use self::credentials::{Credentials, SignInFailed, SignInStarted};
use self::upstream::Upstream;
use crate::client::{ClientError, parse_endpoint};

/// How long a message waits for an unreachable server before it fails, by default.
pub const DEFAULT_RECONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the bridge reads the session's `auth://status`, by default.
pub const AUTH_STATUS_INTERVAL: Duration = Duration::from_secs(30);

/// What stops a bridge from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The endpoint is not an absolute `http(s)` URL.
    #[error("invalid muster endpoint {url:?}: {reason}")]
    Endpoint {
        /// The endpoint as given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// Reading the MCP client's messages failed.
    #[error("reading the MCP client's input failed: {0}")]
    Input(#[source] std::io::Error),
}

/// A stdio ↔ streamable-HTTP bridge to one muster endpoint; see the [module docs](self).
#[derive(Clone)]
pub struct Bridge {
    endpoint: reqwest::Url,
    headers: HeaderMap,
    reconnect_timeout: Duration,
    auth_status_interval: Duration,
    credentials: Option<Arc<dyn Credentials>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("endpoint", &self.endpoint.as_str())
            .field("headers", &self.headers)
            .field("reconnect_timeout", &self.reconnect_timeout)
            .field("auth_status_interval", &self.auth_status_interval)
            .field("credentials", &self.credentials.is_some())
            .finish()
    }
}

impl Bridge {
    /// A bridge to `endpoint`, such as `http://localhost:8090/mcp`.
    pub fn new(endpoint: &str) -> Result<Self, BridgeError> {
        let url = parse_endpoint(endpoint).map_err(|e| BridgeError::Endpoint {
            url: endpoint.to_owned(),
            reason: match e {
                ClientError::Endpoint { reason, .. } => reason,
                other => other.to_string(),
            },
        })?;
        Ok(Self {
            endpoint: url,
            headers: HeaderMap::new(),
            reconnect_timeout: DEFAULT_RECONNECT_TIMEOUT,
            auth_status_interval: AUTH_STATUS_INTERVAL,
            credentials: None,
        })
    }

    /// Sends `name: value` with every HTTP request. A fixed `Authorization` here is never
    /// refreshed; [`credentials`](Self::credentials) take precedence over it.
    #[must_use]
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Takes the `Authorization` of every request from `credentials`, refreshes it after a
    /// `401`, and signs in through them when muster refuses the bridge (see the
    /// [module docs](self)). Without credentials a `401` is an error for the client.
    #[must_use]
    pub fn credentials(mut self, credentials: Arc<dyn Credentials>) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// How often the session's `auth://status` is read for the auth notices on tool
    /// results ([`AUTH_STATUS_INTERVAL`] unless set).
    #[must_use]
    pub fn auth_status_interval(mut self, interval: Duration) -> Self {
        self.auth_status_interval = interval;
        self
    }

    /// How long a message waits for an unreachable server before the client gets an error
    /// ([`DEFAULT_RECONNECT_TIMEOUT`] unless set).
    #[must_use]
    pub fn reconnect_timeout(mut self, timeout: Duration) -> Self {
        self.reconnect_timeout = timeout;
        self
    }

    /// The endpoint messages are forwarded to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Bridges this process's stdin and stdout until stdin ends.
    pub async fn run_stdio(self) -> Result<(), BridgeError> {
        self.run(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Bridges `input` (newline-delimited JSON-RPC from the MCP client) and `output` (where
    /// the server's messages go, one per line) until `input` ends; then the server session is
    /// closed.
    pub async fn run<R, W>(self, input: R, output: W) -> Result<(), BridgeError>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let client = reqwest::Client::builder()
            .default_headers(self.headers)
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .build()
            .map_err(BridgeError::Client)?;
        let (out, writer) = output::spawn(output);
        let upstream = Arc::new(Upstream::new(
            client,
            self.endpoint,
            self.reconnect_timeout,
            out.clone(),
            self.credentials,
        ));
        let listener = tokio::spawn(Arc::clone(&upstream).listen());
        let status =
            tokio::spawn(Arc::clone(&upstream).watch_auth_status(self.auth_status_interval));
        let mut tasks = JoinSet::new();
        let mut lines = BufReader::new(input).lines();
        let result = loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => break Ok(()),
                Err(e) => break Err(BridgeError::Input(e)),
            };
            while tasks.try_join_next().is_some() {}
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(message) => Arc::clone(&upstream).forward(message, &mut tasks).await,
                Err(e) => out.send(messages::parse_error(&e)),
            }
        };
        listener.abort();
        status.abort();
        tasks.shutdown().await;
        upstream.close().await;
        drop(upstream);
        drop(out);
        if let Err(e) = writer.await {
            tracing::debug!(error = %e, "the output writer ended abnormally");
        }
        result
    }
}
