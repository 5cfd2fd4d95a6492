//! The muster side of the bridge: one streamable-HTTP session, re-created when the server
//! forgets it, with the current `Authorization` on every request.

mod auth_status;
mod sign_in;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode, Url};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::credentials::Credentials;
use super::messages::{self, Kind};
use super::notices::{self, AuthRequired};
use super::output::Output;
use super::replies;

const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// Pause between attempts to reach a server that is down.
const RETRY_PAUSE: Duration = Duration::from_millis(250);
/// Pause before the notification stream is opened again.
const LISTEN_PAUSE: Duration = Duration::from_secs(1);

/// The server session as the bridge knows it.
#[derive(Debug, Clone, Default)]
struct Session {
    /// `mcp-session-id`, once the server gave one.
    id: Option<HeaderValue>,
    /// The negotiated protocol version, sent as `mcp-protocol-version`.
    protocol: Option<HeaderValue>,
    /// Bumped each time the session is replaced.
    generation: u64,
}

/// Why a message could not be delivered.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("cannot reach muster at {url}: is `muster serve` running? ({source})")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("muster at {url} forgot the session and a new one could not be opened: {reason}")]
    Reconnect { url: String, reason: String },
    /// muster refused the credentials (`401`) even after a refresh.
    #[error("muster at {url} asks for a sign-in")]
    SignedOut {
        url: String,
        /// The `Authorization` value refused; none when none was sent.
        rejected: Option<HeaderValue>,
    },
}

/// The bridge while muster refuses its credentials.
#[derive(Debug, Default)]
struct SignedOut {
    /// The `Authorization` value muster refused last; none when none was sent. Another value
    /// from the credentials is worth a try.
    rejected: Option<HeaderValue>,
    /// The URL of the sign-in under way.
    pending: Option<String>,
}

/// An answer of muster, and the `Authorization` value it answered.
type Sent = (Response, Option<HeaderValue>);

/// Forwards messages to one muster endpoint.
pub(super) struct Upstream {
    client: Client,
    endpoint: Url,
    reconnect_timeout: Duration,
    out: Output,
    credentials: Option<Arc<dyn Credentials>>,
    session: watch::Sender<Session>,
    /// The client's `initialize` parameters, to open a new session after a restart.
    init_params: Mutex<Option<Value>>,
    /// Requests the client cancelled: their missing answers are not errors.
    cancelled: Mutex<HashSet<String>>,
    /// Serialises re-initialisation.
    reconnecting: tokio::sync::Mutex<()>,
    /// The servers of the session's `auth://status` that wait for a sign-in.
    auth_required: Mutex<Vec<AuthRequired>>,
    /// Wakes the `auth://status` reader: the session was initialized or replaced.
    read_status_now: Notify,
    /// Set while muster refuses the credentials.
    signed_out: Mutex<Option<SignedOut>>,
    /// Serialises the start of sign-ins.
    signing_in: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("endpoint", &self.endpoint.as_str())
            .field("credentials", &self.credentials.is_some())
            .field("session", &*self.session.borrow())
            .finish_non_exhaustive()
    }
}

impl Upstream {
    pub(super) fn new(
        client: Client,
        endpoint: Url,
        reconnect_timeout: Duration,
        out: Output,
        credentials: Option<Arc<dyn Credentials>>,
    ) -> Self {
        Self {
            client,
            endpoint,
            reconnect_timeout,
            out,
            credentials,
            session: watch::Sender::new(Session::default()),
            init_params: Mutex::new(None),
            cancelled: Mutex::new(HashSet::new()),
            reconnecting: tokio::sync::Mutex::new(()),
            auth_required: Mutex::new(Vec::new()),
            read_status_now: Notify::new(),
            signed_out: Mutex::new(None),
            signing_in: tokio::sync::Mutex::new(()),
        }
    }

    /// Forwards one message of the client. Requests are answered by a task in `tasks` once
    /// the server accepted them, so answers may interleave; everything else is forwarded
    /// before the next message is read, which keeps the client's order on the wire. While
    /// muster refuses the credentials, the bridge answers by itself.
    pub(super) async fn forward(self: Arc<Self>, message: Value, tasks: &mut JoinSet<()>) {
        let kind = Kind::of(&message);
        let initialize = matches!(&kind, Kind::Request { method, .. } if method == "initialize");
        if initialize {
            // A new session of the client: muster decides again whether it is signed in.
            *lock(&self.signed_out) = None;
        } else if self.is_signed_out() && !self.resume().await {
            self.answer_signed_out(&message, kind, tasks);
            return;
        }
        match kind.clone() {
            Kind::Request { id, .. } if initialize => {
                *lock(&self.init_params) = message.get("params").cloned();
                self.session.send_modify(|s| {
                    *s = Session {
                        generation: s.generation + 1,
                        ..Session::default()
                    }
                });
                match self.post(&message, true).await {
                    Ok(response) => self.deliver(response, Some(&id), false).await,
                    Err(Failure::SignedOut { rejected, .. }) => {
                        self.sign_out(rejected, false);
                        self.answer_signed_out(&message, kind, tasks);
                    }
                    Err(e) => self.out.send(messages::error(&id, e.to_string())),
                }
            }
            Kind::Request { id, method } => match self.post(&message, false).await {
                Ok(response) => {
                    let tool_call = method == "tools/call";
                    tasks.spawn(async move { self.deliver(response, Some(&id), tool_call).await });
                }
                Err(Failure::SignedOut { rejected, .. }) => {
                    self.sign_out(rejected, true);
                    self.answer_signed_out(&message, kind, tasks);
                }
                Err(e) => self.out.send(messages::error(&id, e.to_string())),
            },
            Kind::Notification { method } => {
                if method == "notifications/cancelled"
                    && let Some(id) = messages::cancelled_request(&message)
                {
                    lock(&self.cancelled).insert(id.to_string());
                }
                self.forward_other(&message).await;
                if method == "notifications/initialized" {
                    self.read_status_now.notify_one();
                }
            }
            Kind::Other => self.forward_other(&message).await,
        }
    }

    /// Forwards a notification or response of the client.
    async fn forward_other(&self, message: &Value) {
        match self.post(message, false).await {
            Ok(response) => self.deliver(response, None, false).await,
            Err(Failure::SignedOut { rejected, .. }) => self.sign_out(rejected, true),
            Err(e) => tracing::warn!(error = %e, "a message to muster was dropped"),
        }
    }

    /// Keeps a `GET` event stream open for the server's own notifications, re-opening it
    /// after errors and whenever the session changes.
    pub(super) async fn listen(self: Arc<Self>) {
        let mut changes = self.session.subscribe();
        loop {
            let session = changes.borrow_and_update().clone();
            let Some(id) = session.id.clone() else {
                if changes.changed().await.is_err() {
                    return;
                }
                continue;
            };
            let sent = self
                .send(|| {
                    self.request(Method::GET, &session)
                        .header(ACCEPT, "text/event-stream")
                        .header(SESSION_HEADER, id.clone())
                })
                .await;
            match sent {
                Ok((response, _)) if response.status() == StatusCode::NOT_FOUND => {
                    match self.reinitialize(session.generation).await {
                        Ok(()) => {}
                        Err(Failure::SignedOut { rejected, .. }) => self.sign_out(rejected, true),
                        Err(e) => {
                            tracing::warn!(error = %e, "reconnecting to muster failed");
                            tokio::time::sleep(LISTEN_PAUSE).await;
                        }
                    }
                    continue;
                }
                Ok((response, rejected))
                    if response.status() == StatusCode::UNAUTHORIZED
                        && self.credentials.is_some() =>
                {
                    self.sign_out(rejected, true);
                    continue;
                }
                Ok((response, _)) if response.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    if changes.changed().await.is_err() {
                        return;
                    }
                    continue;
                }
                Ok((response, _)) if response.status().is_success() => {
                    let mut stream = replies::messages(response);
                    loop {
                        tokio::select! {
                            message = stream.next() => match message {
                                Some(message) => self.out.send(message),
                                None => break,
                            },
                            changed = changes.changed() => {
                                if changed.is_err() {
                                    return;
                                }
                                break;
                            }
                        }
                    }
                }
                Ok((response, _)) => {
                    tracing::debug!(status = %response.status(), "muster refused the event stream");
                }
                Err(e) => tracing::debug!(error = %e, "muster's event stream is unavailable"),
            }
            tokio::time::sleep(LISTEN_PAUSE).await;
        }
    }

    /// Ends the server session (best effort).
    pub(super) async fn close(&self) {
        let session = self.session.borrow().clone();
        let Some(id) = session.id.clone() else {
            return;
        };
        let sent = self
            .send(|| {
                self.request(Method::DELETE, &session)
                    .header(SESSION_HEADER, id.clone())
                    .timeout(Duration::from_secs(2))
            })
            .await;
        if let Err(e) = sent {
            tracing::debug!(error = %e, "closing the muster session failed");
        }
    }

    /// Writes the messages of `response` to the client. For a request, a missing answer is
    /// reported as an error response; the answer to a `tools/call` (`tool_call`) gets the
    /// notice of the servers waiting for a sign-in.
    async fn deliver(&self, response: Response, request: Option<&Value>, tool_call: bool) {
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let text = format!(
                "muster at {} answered HTTP {status}: {}",
                self.endpoint,
                body.trim()
            );
            match request {
                Some(id) => self.out.send(messages::error(id, text)),
                None => tracing::warn!("{text}"),
            }
            return;
        }
        let mut answered = false;
        let mut stream = replies::messages(response);
        while let Some(mut message) = stream.next().await {
            if let Some(id) = request
                && messages::answers(&message, id)
            {
                answered = true;
                self.note_protocol(&message);
                if tool_call {
                    let servers = lock(&self.auth_required).clone();
                    notices::decorate(&mut message, &servers);
                }
            }
            self.out.send(message);
        }
        if let Some(id) = request {
            let cancelled = lock(&self.cancelled).remove(&id.to_string());
            if !answered && !cancelled && status != StatusCode::ACCEPTED {
                self.out.send(messages::error(
                    id,
                    format!(
                        "the connection to muster at {} ended before it answered",
                        self.endpoint
                    ),
                ));
            }
        }
    }

    /// Remembers the protocol version of an `initialize` result.
    fn note_protocol(&self, message: &Value) {
        if let Some(version) = message
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            self.session
                .send_modify(|s| s.protocol = Some(version.clone()));
        }
    }

    /// POSTs `message` in the current session. While the server is unreachable this retries
    /// until the reconnect timeout; when the server forgot the session, a new one is opened
    /// once and the message sent again.
    async fn post(&self, message: &Value, initialize: bool) -> Result<Response, Failure> {
        let deadline = Instant::now() + self.reconnect_timeout;
        let mut reinitialized = false;
        loop {
            let session = self.session.borrow().clone();
            let sent = self
                .send(|| {
                    let request = self.request(Method::POST, &session).json(message);
                    match session.id.clone() {
                        Some(id) => request.header(SESSION_HEADER, id),
                        None => request,
                    }
                })
                .await;
            let (response, authorization) = match sent {
                Ok(sent) => sent,
                Err(e) if e.is_connect() && Instant::now() < deadline => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
                Err(source) => {
                    return Err(Failure::Unreachable {
                        url: self.endpoint.to_string(),
                        source,
                    });
                }
            };
            if response.status() == StatusCode::UNAUTHORIZED && self.credentials.is_some() {
                return Err(Failure::SignedOut {
                    url: self.endpoint.to_string(),
                    rejected: authorization,
                });
            }
            if response.status() == StatusCode::NOT_FOUND
                && session.id.is_some()
                && !initialize
                && !reinitialized
            {
                reinitialized = true;
                self.reinitialize(session.generation).await?;
                continue;
            }
            if initialize && let Some(id) = response.headers().get(SESSION_HEADER).cloned() {
                self.session.send_modify(|s| s.id = Some(id));
            }
            return Ok(response);
        }
    }

    /// Opens a new session with the client's `initialize` parameters, unless another task
    /// already replaced session `generation`. The bridge is signed in again once it worked.
    async fn reinitialize(&self, generation: u64) -> Result<(), Failure> {
        let _guard = self.reconnecting.lock().await;
        if self.session.borrow().generation != generation {
            return Ok(());
        }
        let fail = |reason: String| Failure::Reconnect {
            url: self.endpoint.to_string(),
            reason,
        };
        let params = lock(&self.init_params)
            .clone()
            .ok_or_else(|| fail("the client never initialized".to_owned()))?;
        let id = Value::String(format!("muster-bridge-reconnect-{generation}"));
        let init = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize", "params": params,
        });
        let fresh = Session::default();
        let (response, authorization) = self
            .send(|| self.request(Method::POST, &fresh).json(&init))
            .await
            .map_err(|e| fail(e.to_string()))?;
        if response.status() == StatusCode::UNAUTHORIZED && self.credentials.is_some() {
            return Err(Failure::SignedOut {
                url: self.endpoint.to_string(),
                rejected: authorization,
            });
        }
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        let session_id = response.headers().get(SESSION_HEADER).cloned();
        let mut result = None;
        let mut stream = replies::messages(response);
        while let Some(message) = stream.next().await {
            if messages::answers(&message, &id) {
                result = Some(message);
                break;
            }
        }
        let result = result.ok_or_else(|| fail("no answer to initialize".to_owned()))?;
        if let Some(error) = result.get("error") {
            return Err(fail(error.to_string()));
        }
        let protocol = result
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .and_then(|v| HeaderValue::from_str(v).ok());
        let session = Session {
            id: session_id,
            protocol,
            generation: generation + 1,
        };
        let initialized = messages::notification("notifications/initialized");
        self.send(|| {
            let request = self.request(Method::POST, &session).json(&initialized);
            match session.id.clone() {
                Some(id) => request.header(SESSION_HEADER, id),
                None => request,
            }
        })
        .await
        .map_err(|e| fail(e.to_string()))?;
        self.session.send_replace(session);
        let was_signed_out = lock(&self.signed_out).take().is_some();
        if was_signed_out {
            tracing::info!(endpoint = %self.endpoint, "signed in to muster; its tools are available again");
        } else {
            tracing::info!(endpoint = %self.endpoint, "reconnected to muster with a new session");
        }
        self.read_status_now.notify_one();
        let capabilities = result.pointer("/result/capabilities");
        for (capability, method) in [
            ("tools", "notifications/tools/list_changed"),
            ("resources", "notifications/resources/list_changed"),
            ("prompts", "notifications/prompts/list_changed"),
        ] {
            if capabilities.and_then(|c| c.get(capability)).is_some() {
                self.out.send(messages::notification(method));
            }
        }
        Ok(())
    }

    /// Sends the request `build` makes with the current `Authorization` of the credentials;
    /// after a `401`, once more with a refreshed one. The answer, and the value it answered.
    async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Sent, reqwest::Error> {
        let Some(credentials) = &self.credentials else {
            return Ok((build().send().await?, None));
        };
        let authorization = credentials.authorization().await;
        let response = authorized(build(), authorization.as_ref()).send().await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok((response, authorization));
        }
        let Some(rejected) = authorization else {
            return Ok((response, None));
        };
        let Some(fresh) = credentials.refreshed(&rejected).await else {
            return Ok((response, Some(rejected)));
        };
        tracing::debug!(endpoint = %self.endpoint, "muster refused the token; sending the request again with a refreshed one");
        let response = authorized(build(), Some(&fresh)).send().await?;
        Ok((response, Some(fresh)))
    }

    /// A request to the endpoint with the headers every message carries.
    fn request(&self, method: Method, session: &Session) -> RequestBuilder {
        let mut request = self
            .client
            .request(method, self.endpoint.clone())
            .header(ACCEPT, ACCEPT_BOTH)
            .header(CONTENT_TYPE, "application/json");
        if let Some(protocol) = session.protocol.clone() {
            request = request.header(PROTOCOL_HEADER, protocol);
        }
        request
    }

    /// Whether muster refuses the credentials.
    fn is_signed_out(&self) -> bool {
        lock(&self.signed_out).is_some()
    }
}

/// `request` with `Authorization: value`, when there is one.
fn authorized(request: RequestBuilder, value: Option<&HeaderValue>) -> RequestBuilder {
    match value {
        Some(value) => request.header(AUTHORIZATION, value.clone()),
        None => request,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
