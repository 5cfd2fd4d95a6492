//! The lean hop of a `tools/call` to a streamable-HTTP server: one POST on the pooled
//! keep-alive connection of the backend's HTTP client, in the MCP session rmcp negotiated
//! (or, on 2026-07-28 connections, with the per-request `_meta` and headers rmcp would
//! send), the body written once, the reply read as `application/json` or as an SSE stream
//! parsed as it arrives. No client worker task, no channel hops.
//!
//! It keeps what the rmcp path does: the caller's progress token and `_meta` (trace context)
//! go upstream; progress notifications inside the reply reach the caller in order, before
//! the result; a caller that gives up (or drops the call) makes muster send
//! `notifications/cancelled`; `list_changed` notifications re-list the catalog. A call whose
//! caller can be asked (sampling, elicitation, roots) takes the rmcp path, which relays the
//! server's requests; on the lean hop the server's requests are answered as rmcp answers them
//! for a call without such a caller. A reply that refuses the request before the server ran
//! it (any 4xx: an expired session, a token to refresh, ...) sends the call again on the rmcp
//! path, which re-initializes, refreshes and reports exactly as before.
//!
//! To a legacy SSE server the hop posts to the connection's message endpoint, which answers
//! `202`; the reply comes on the connection's event stream, whose reader hands the call's
//! messages to it ([`sse_routes`](super::sse_routes)) instead of to rmcp's client worker.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use muster_core::secret::ExposeSecret;
use muster_core::tool::{ProgressSink, ProgressUpdate, ToolArguments, ToolCall, ToolError};
use rmcp::model::{
    CallToolResult, ErrorCode, ErrorData, JsonObject, NumberOrString, ProtocolVersion,
    RequestMetaObject, ResultType, ServerResult,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::bearer::BearerSource;
use super::cancel_guard::CancelGuard;
use super::lean_http::{LeanClient, Reply};
use super::post_headers::PostHeaders;
use super::session_tap::{SessionHeaders, SessionSlot};
use super::sse_reply::SseReader;
use super::sse_routes::{CallRoutes, Route};
use super::tool_result::TextResponse;
use crate::wake_gate::WakeGated;

/// The 2026-07-28 standard headers of a request.
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
/// The prefix of the request ids of lean calls; rmcp numbers its own requests.
pub(crate) const ID_PREFIX: &str = "muster-";

/// What a lean call came to.
pub(crate) enum Outcome {
    /// The call's result or error.
    Done(Result<CallToolResult, ToolError>),
    /// The server refused the request without running it: send it on the rmcp path.
    Refused,
}

/// The lean hop of one connection.
#[derive(Debug)]
pub(crate) struct LeanHop {
    client: LeanClient,
    bearer: Option<Arc<dyn BearerSource>>,
    session: SessionSlot,
    max_bytes: usize,
    relist: Arc<Notify>,
    next_id: AtomicU64,
    /// On 2026-07-28 connections: the `_meta` every request carries (protocol version,
    /// client info and capabilities), as rmcp stamps it, each value serialized once.
    stamp: Option<Stamp>,
    /// On legacy SSE connections: where the replies, which come on the event stream, are
    /// waited for.
    event_stream: Option<Arc<CallRoutes>>,
}

/// One JSON-RPC message of the server, its parts left raw.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<ErrorData>,
}

/// `params` of `notifications/progress`.
#[derive(Deserialize)]
struct ProgressParams<'a> {
    #[serde(rename = "progressToken", borrow)]
    token: &'a RawValue,
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
}

/// The body of a `tools/call` request with id `id` (plain ASCII), written in one pass.
///
/// # Errors
///
/// When an argument cannot be written as JSON.
fn request_body(
    id: &str,
    name: &str,
    arguments: Option<&ToolArguments>,
    meta: &Meta<'_>,
) -> Result<Vec<u8>, serde_json::Error> {
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":""#);
    body.extend_from_slice(id.as_bytes());
    body.extend_from_slice(br#"","method":"tools/call","params":{"name":"#);
    serde_json::to_writer(&mut body, name)?;
    if let Some(arguments) = arguments {
        body.extend_from_slice(br#","arguments":"#);
        arguments.write_json(&mut body)?;
    }
    if !meta.is_empty() {
        body.extend_from_slice(br#","_meta":"#);
        meta.write_to(&mut body)?;
    }
    body.extend_from_slice(b"}}");
    Ok(body)
}

/// The `_meta` entries every request of a connection carries, values already serialized.
#[derive(Debug)]
struct Stamp {
    entries: Vec<(String, Box<RawValue>)>,
    /// All of `entries` as the inside of a JSON object (`"k":v,...`), for the requests
    /// whose caller overrides none of them.
    written: String,
}

/// The stamp of a connection that negotiated `version`: none before 2026-07-28.
fn stamp_for(version: &ProtocolVersion) -> Result<Option<Stamp>, serde_json::Error> {
    if version.has_initialize() {
        return Ok(None);
    }
    let info = super::handler::client_info();
    let mut meta = RequestMetaObject::default();
    meta.set_protocol_version(version.clone());
    meta.set_client_info(info.client_info);
    meta.set_client_capabilities(info.capabilities);
    stamp_of(&meta.0.0).map(Some)
}

/// `stamp` with each value serialized (a `progressToken` in it is left out: each request
/// has its own).
fn stamp_of(meta: &JsonObject) -> Result<Stamp, serde_json::Error> {
    let mut entries = Vec::with_capacity(meta.len());
    let mut written = String::new();
    for (key, value) in meta {
        if key == PROGRESS_TOKEN {
            continue;
        }
        let value = serde_json::value::to_raw_value(value)?;
        if !written.is_empty() {
            written.push(',');
        }
        written.push_str(&serde_json::to_string(key)?);
        written.push(':');
        written.push_str(value.get());
        entries.push((key.clone(), value));
    }
    Ok(Stamp { entries, written })
}

/// The `_meta` key of a request's progress token.
const PROGRESS_TOKEN: &str = "progressToken";

struct Meta<'a> {
    /// What the connection's requests carry; the caller's keys win over it.
    stamp: Option<&'a Stamp>,
    caller: Option<&'a JsonObject>,
    progress_token: Option<&'a str>,
}

impl Meta<'_> {
    fn is_empty(&self) -> bool {
        self.stamp.is_none_or(|s| s.entries.is_empty())
            && self.caller.is_none_or(JsonObject::is_empty)
            && self.progress_token.is_none()
    }

    /// Writes the object: the stamp's entries the caller does not override, the caller's
    /// entries, then the progress token (the caller's own token never goes on).
    fn write_to(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.push(b'{');
        let mut first = true;
        let mut separate = |out: &mut Vec<u8>| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
        };
        if let Some(stamp) = self.stamp.filter(|s| !s.entries.is_empty()) {
            let overridden = |key: &str| self.caller.is_some_and(|caller| caller.contains_key(key));
            if stamp.entries.iter().any(|(key, _)| overridden(key)) {
                for (key, value) in stamp.entries.iter().filter(|(key, _)| !overridden(key)) {
                    separate(out);
                    serde_json::to_writer(&mut *out, key)?;
                    out.push(b':');
                    out.extend_from_slice(value.get().as_bytes());
                }
            } else {
                separate(out);
                out.extend_from_slice(stamp.written.as_bytes());
            }
        }
        for (key, value) in self.caller.into_iter().flatten() {
            if key != PROGRESS_TOKEN {
                separate(out);
                serde_json::to_writer(&mut *out, key)?;
                out.push(b':');
                serde_json::to_writer(&mut *out, value)?;
            }
        }
        if let Some(token) = self.progress_token {
            separate(out);
            out.extend_from_slice(br#""progressToken":"#);
            serde_json::to_writer(&mut *out, token)?;
        }
        out.push(b'}');
        Ok(())
    }
}

/// What the reply of one call is read with.
struct Exchange<'a> {
    hop: &'a LeanHop,
    provider: &'a str,
    session: &'a SessionHeaders,
    /// The request id as JSON (`"muster-7"`).
    id_json: String,
    progress: Option<&'a ProgressSink>,
}

impl LeanHop {
    /// The lean hop of a connection to `uri` whose session `session` records, on a
    /// connection that negotiated `protocol`; `http` is the backend's client, used where
    /// the pool's connections cannot go (TLS, proxies), `connect_timeout` bounds new
    /// connections.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        http: reqwest::Client,
        uri: &str,
        connect_timeout: Duration,
        bearer: Option<Arc<dyn BearerSource>>,
        session: SessionSlot,
        max_bytes: usize,
        relist: Arc<Notify>,
        protocol: Option<&ProtocolVersion>,
    ) -> Option<Self> {
        let stamp = stamp_for(protocol?).ok()?;
        Some(Self {
            client: LeanClient::new(http, uri, connect_timeout)?,
            bearer,
            session,
            max_bytes,
            relist,
            next_id: AtomicU64::new(0),
            stamp,
            event_stream: None,
        })
    }

    /// The lean hop of a legacy SSE connection that negotiated `protocol`: calls are posted
    /// to its message `endpoint` with the spec's `headers`, and their replies taken from
    /// `routes`, which the event stream's reader fills.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn over_event_stream(
        http: reqwest::Client,
        endpoint: &str,
        headers: &std::collections::HashMap<HeaderName, HeaderValue>,
        connect_timeout: Duration,
        bearer: Option<Arc<dyn BearerSource>>,
        max_bytes: usize,
        relist: Arc<Notify>,
        routes: Arc<CallRoutes>,
        protocol: Option<&ProtocolVersion>,
    ) -> Option<Self> {
        let mut post_headers: HeaderMap = headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        post_headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let session = SessionSlot::fixed(SessionHeaders {
            session_id: None,
            headers: Arc::new(post_headers),
        });
        let mut hop = Self::new(
            http,
            endpoint,
            connect_timeout,
            bearer,
            session,
            max_bytes,
            relist,
            protocol,
        )?;
        hop.event_stream = Some(routes);
        Some(hop)
    }

    /// The session a lean call of the tool `name` would use; `None` when the call must
    /// take the rmcp path (no session recorded yet, or a 2026-07-28 tool name that needs
    /// the Base64 header form).
    pub(crate) fn session_for(&self, name: &str) -> Option<SessionHeaders> {
        if self.stamp.is_some() && !plain_header_value(name) {
            return None;
        }
        self.session.current()
    }

    /// Whether calls carry the 2026-07-28 per-request headers (and so the tool's
    /// `x-mcp-header` arguments, which only rmcp's client promotes).
    pub(crate) fn is_stateless_era(&self) -> bool {
        self.stamp.is_some()
    }

    /// Calls the tool of `call` in `session`.
    pub(crate) async fn call(
        &self,
        peer: &rmcp::service::Peer<rmcp::service::RoleClient>,
        provider: &str,
        session: &SessionHeaders,
        call: &ToolCall,
    ) -> Outcome {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(ID_PREFIX.len() + 20);
        id.push_str(ID_PREFIX);
        id.push_str(itoa::Buffer::new().format(n));
        let progress = call.context.progress.as_ref();
        let meta = Meta {
            stamp: self.stamp.as_ref(),
            caller: call.context.request_meta.as_ref(),
            progress_token: progress.map(|_| id.as_str()),
        };
        let body = match request_body(&id, call.name.as_str(), call.arguments.as_ref(), &meta) {
            Ok(body) => body,
            Err(e) => {
                return Outcome::Done(Err(ToolError::failed(format!("encoding the call: {e}"))));
            }
        };
        let mut headers = PostHeaders::new(session.headers.clone());
        if self.stamp.is_some() {
            headers.insert(METHOD_HEADER, HeaderValue::from_static("tools/call"));
            // `session_for` let only plain header values through.
            if let Ok(name) = HeaderValue::from_str(call.name.as_str()) {
                headers.insert(NAME_HEADER, name);
            }
        }
        sign(&mut headers, self.bearer.as_deref()).await;
        let id_json = ["\"", id.as_str(), "\""].concat();
        // The reply may come on the event stream before the POST is answered.
        let route = match &self.event_stream {
            Some(routes) => match routes.register(&id_json) {
                Some(route) => Some(route),
                // The stream has ended: rmcp's client reports the connection's end.
                None => return Outcome::Refused,
            },
            None => None,
        };
        // From here on the server may be running the call: giving up tells it so.
        let mut guard = CancelGuard::new(peer.clone(), NumberOrString::String(id.as_str().into()));
        let exchange = Exchange {
            hop: self,
            provider,
            session,
            id_json,
            progress,
        };
        let outcome = tokio::select! {
            biased;
            () = WakeGated::new(call.context.cancellation.cancelled()) => {
                // Boxed: a rare path whose state would otherwise add to every call's future.
                Box::pin(guard.cancel_now()).await;
                return Outcome::Done(Err(ToolError::Cancelled));
            }
            outcome = exchange.run(headers, Bytes::from(body), route) => outcome,
        };
        guard.disarm();
        outcome
    }
}

impl Exchange<'_> {
    fn transport_error(&self, error: impl std::fmt::Display, retryable: bool) -> ToolError {
        ToolError::Backend {
            provider: self.provider.to_owned(),
            retryable,
            source: error.to_string().into(),
        }
    }

    /// Posts the call and reads its reply: from the POST's response, or, with a `route`,
    /// from the event stream.
    async fn run(&self, headers: PostHeaders, body: Bytes, route: Option<Route>) -> Outcome {
        let response = match self.hop.client.post(headers, body).await {
            Ok(response) => response,
            Err(e) => {
                return Outcome::Done(Err(
                    self.transport_error(format_args!("sending the call: {e}"), true)
                ));
            }
        };
        let status = response.status;
        if status == http::StatusCode::NOT_FOUND
            && let Some(session_id) = &self.session.session_id
        {
            self.hop.session.forget(session_id);
        }
        if status.is_client_error() {
            return Outcome::Refused;
        }
        if let Some(route) = route {
            if !status.is_success() {
                return Outcome::Done(Err(
                    self.transport_error(format_args!("the server answered HTTP {status}"), false)
                ));
            }
            // The POST's own reply (`202`, no body) frees its connection.
            response.drain(self.hop.max_bytes);
            return Outcome::Done(self.read_routed(route).await);
        }
        let result = if response.is_event_stream() {
            self.read_sse(response).await
        } else {
            self.read_json(response, status).await
        };
        Outcome::Done(result)
    }

    async fn read_json(
        &self,
        response: Reply,
        status: http::StatusCode,
    ) -> Result<CallToolResult, ToolError> {
        let body = self.bounded_body(response).await?;
        let text = json_text(&body);
        if let Some(TextReading::Answer(result)) = text.map(|text| self.text_response(text)) {
            return Ok(result);
        }
        match text.and_then(|body| serde_json::from_str::<Incoming<'_>>(body).ok()) {
            Some(message) if message.id.is_some_and(|id| id.get() == self.id_json) => {
                self.finish(&message)
            }
            _ if !status.is_success() => {
                Err(self.transport_error(format_args!("the server answered HTTP {status}"), false))
            }
            _ => Err(self.transport_error("the server's reply is not the call's response", false)),
        }
    }

    async fn bounded_body(&self, mut response: Reply) -> Result<Vec<u8>, ToolError> {
        let announced = response.content_length();
        if announced.is_some_and(|n| n > self.hop.max_bytes as u64) {
            return Err(self.too_large());
        }
        let mut body = Vec::with_capacity(announced.map_or(0, |n| n as usize));
        while let Some(chunk) = response.chunk().await {
            let chunk = chunk
                .map_err(|e| self.transport_error(format_args!("reading the reply: {e}"), true))?;
            if body.len() + chunk.len() > self.hop.max_bytes {
                return Err(self.too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn too_large(&self) -> ToolError {
        self.transport_error(
            format_args!("the server's reply exceeds {} bytes", self.hop.max_bytes),
            false,
        )
    }

    async fn read_sse(&self, mut response: Reply) -> Result<CallToolResult, ToolError> {
        let mut reader = SseReader::new(self.hop.max_bytes);
        loop {
            while let Some(data) = reader.next_event().map_err(|_| self.too_large())? {
                if data.is_empty() {
                    continue;
                }
                let Some(data) = json_text(&data) else {
                    tracing::debug!(server = %self.provider, "skipping an event that is not JSON-RPC");
                    continue;
                };
                if let Some(result) = self.take(data) {
                    response.drain(self.hop.max_bytes);
                    return result;
                }
            }
            match response.chunk().await {
                Some(Ok(chunk)) => reader.push(&chunk),
                Some(Err(e)) => {
                    return Err(self.transport_error(format_args!("reading the reply: {e}"), true));
                }
                None => {
                    return Err(self.transport_error(
                        "the server ended the reply before answering the call",
                        true,
                    ));
                }
            }
        }
    }

    /// Reads the call's messages from the event stream until its response.
    async fn read_routed(&self, mut route: Route) -> Result<CallToolResult, ToolError> {
        while let Some(data) = route.next().await {
            if data.len() > self.hop.max_bytes {
                return Err(self.too_large());
            }
            if let Some(result) = self.take(&data) {
                return result;
            }
        }
        Err(self.transport_error(
            "the server's event stream ended before answering the call",
            true,
        ))
    }

    /// Acts on one message of the reply, its JSON text; `Some` once it is the call's
    /// response. A plain response of text blocks (what most tools answer) is read in one
    /// pass, any other message by its envelope first; text that is no JSON-RPC message is
    /// skipped.
    fn take(&self, data: &str) -> Option<Result<CallToolResult, ToolError>> {
        match self.text_response(data) {
            TextReading::Answer(result) => return Some(Ok(result)),
            TextReading::NotOurs => return None,
            TextReading::Other => {}
        }
        match serde_json::from_str::<Incoming<'_>>(data) {
            Ok(message) => self.handle(&message),
            Err(_) => {
                tracing::debug!(server = %self.provider, "skipping a message that is not JSON-RPC");
                None
            }
        }
    }

    /// `data` read in one pass as a plain response of text blocks.
    fn text_response(&self, data: &str) -> TextReading {
        let Ok(response) = serde_json::from_str::<TextResponse<'_>>(data) else {
            return TextReading::Other;
        };
        if response.id.get() != self.id_json {
            return TextReading::NotOurs;
        }
        response
            .into_result()
            .map_or(TextReading::Other, TextReading::Answer)
    }

    /// Acts on one message of the reply; `Some` once it is the call's response.
    fn handle(&self, message: &Incoming<'_>) -> Option<Result<CallToolResult, ToolError>> {
        match (&message.method, message.id) {
            (None, Some(id)) if id.get() == self.id_json => Some(self.finish(message)),
            (None, _) => None,
            (Some(method), None) => {
                self.notification(method, message.params);
                None
            }
            (Some(method), Some(id)) => {
                self.answer_server_request(method, id);
                None
            }
        }
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            "notifications/progress" => {
                let (Some(sink), Some(params)) = (self.progress, params) else {
                    return;
                };
                let Ok(p) = serde_json::from_str::<ProgressParams<'_>>(params.get()) else {
                    return;
                };
                if p.token.get() == self.id_json {
                    sink.report(ProgressUpdate {
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    });
                }
            }
            "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed" => self.hop.relist.notify_one(),
            _ => {}
        }
    }

    /// Answers a request of the server during the call as rmcp's client does for a call
    /// whose caller cannot be asked anything.
    fn answer_server_request(&self, method: &str, id: &RawValue) {
        let reply = match method {
            "ping" => Ok(serde_json::json!({})),
            "roots/list" => Ok(serde_json::json!({"roots": []})),
            "sampling/createMessage" | "elicitation/create" => Err(ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!("{method} reached muster outside any call that can relay it to a client"),
                None,
            )),
            other => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
                None,
            )),
        };
        let body = match reply {
            Ok(result) => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        let mut headers = PostHeaders::new(self.session.headers.clone());
        let client = self.hop.client.clone();
        let bearer = self.hop.bearer.clone();
        tokio::spawn(async move {
            sign(&mut headers, bearer.as_deref()).await;
            let body = Bytes::from(body.to_string());
            match client.post(headers, body).await {
                // The reply carries nothing; reading it to the end frees the connection.
                Ok(mut reply) => while let Some(Ok(_)) = reply.chunk().await {},
                Err(error) => tracing::debug!(%error, "answering the server's request failed"),
            }
        });
    }

    /// The call's response.
    fn finish(&self, message: &Incoming<'_>) -> Result<CallToolResult, ToolError> {
        if let Some(error) = &message.error {
            return Err(if error.code == ErrorCode::INVALID_PARAMS {
                ToolError::InvalidArguments {
                    message: error.message.to_string(),
                }
            } else {
                ToolError::Failed {
                    message: error.message.to_string(),
                    retryable: false,
                }
            });
        }
        let Some(result) = message.result else {
            return Err(
                self.transport_error("the server's response has neither result nor error", false)
            );
        };
        if let Some(result) = super::tool_result::text_only(result.get()) {
            return Ok(result);
        }
        if let Ok(mut result) = serde_json::from_str::<CallToolResult>(result.get()) {
            result.result_type.get_or_insert(ResultType::COMPLETE);
            return Ok(result);
        }
        super::tool_result::tool_result(
            self.provider,
            serde_json::from_str::<ServerResult>(result.get()).map_err(|e| {
                self.transport_error(
                    format_args!("the server's result does not parse: {e}"),
                    false,
                )
            })?,
        )
    }
}

/// A message of the reply read as a plain response of text blocks.
enum TextReading {
    /// The call's response, and the result it carries.
    Answer(CallToolResult),
    /// A response to another request.
    NotOurs,
    /// Something else, read by its envelope.
    Other,
}

/// `bytes` as the text of a JSON message, checked as UTF-8 once so that the parser does
/// not check each of its strings again; `None` when it is not UTF-8 (and so not JSON).
fn json_text(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

/// Signs a request to a server that takes a bearer from `bearer`: its `Authorization`
/// (marked sensitive, so it is never logged) and the headers that go with the token.
async fn sign(headers: &mut PostHeaders, bearer: Option<&dyn BearerSource>) {
    let Some(source) = bearer else {
        return;
    };
    let Some(token) = source.token().await else {
        return;
    };
    if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret())) {
        value.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, value);
    }
    for (name, value) in source.companion_headers() {
        headers.append(name, value);
    }
}

/// Whether `value` goes into a 2026-07-28 header as it is (rmcp Base64-encodes the others).
fn plain_header_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    !matches!(bytes.first(), Some(b' ' | b'\t'))
        && !matches!(bytes.last(), Some(b' ' | b'\t'))
        && bytes.iter().all(|b| (0x20..=0x7e).contains(b))
}

/// Whether a tool's input schema promotes arguments to `Mcp-Param-*` headers.
pub(crate) fn has_param_headers(schema: &JsonObject) -> bool {
    fn walk(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(map) => {
                map.contains_key("x-mcp-header") || map.values().any(walk)
            }
            serde_json::Value::Array(items) => items.iter().any(walk),
            _ => false,
        }
    }
    schema.contains_key("x-mcp-header") || schema.values().any(walk)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `meta` as written into a request.
    fn written(meta: &Meta<'_>) -> String {
        let mut out = Vec::new();
        meta.write_to(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_stamp_yields_to_the_callers_keys() {
        let stamp = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28", "k": 1, "progressToken": 5
        });
        let stamp = stamp_of(stamp.as_object().unwrap()).unwrap();
        let caller = serde_json::json!({"k": 2}).as_object().cloned().unwrap();
        let meta = Meta {
            stamp: Some(&stamp),
            caller: Some(&caller),
            progress_token: Some("muster-1"),
        };
        assert_eq!(
            written(&meta),
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","k":2,"progressToken":"muster-1"}"#
        );
        // A caller overriding nothing takes the stamp as written once.
        let other = serde_json::json!({"traceparent": "00-aa"})
            .as_object()
            .cloned()
            .unwrap();
        let meta = Meta {
            stamp: Some(&stamp),
            caller: Some(&other),
            progress_token: None,
        };
        assert_eq!(
            written(&meta),
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","k":1,"traceparent":"00-aa"}"#
        );
        let alone = Meta {
            stamp: Some(&stamp),
            caller: None,
            progress_token: Some("muster-2"),
        };
        assert_eq!(
            written(&alone),
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","k":1,"progressToken":"muster-2"}"#
        );
    }

    #[test]
    fn header_values_and_param_headers() {
        assert!(plain_header_value("echo_tool-1"));
        assert!(!plain_header_value(" echo"));
        assert!(!plain_header_value("ech\u{f6}"));
        let schema = serde_json::json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
        assert!(has_param_headers(schema.as_object().unwrap()));
        let plain =
            serde_json::json!({"type": "object", "properties": {"message": {"type": "string"}}});
        assert!(!has_param_headers(plain.as_object().unwrap()));
    }

    #[test]
    fn the_body_carries_arguments_meta_and_the_progress_token() {
        let arguments = serde_json::json!({"message": "hi"})
            .as_object()
            .cloned()
            .unwrap();
        let caller = serde_json::json!({"traceparent": "00-aa-bb-01", "progressToken": 9})
            .as_object()
            .cloned()
            .unwrap();
        let meta = Meta {
            stamp: None,
            caller: Some(&caller),
            progress_token: Some("muster-3"),
        };
        let body = request_body(
            "muster-3",
            "echo \"quoted\"",
            Some(&arguments.into()),
            &meta,
        )
        .unwrap();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "jsonrpc": "2.0", "id": "muster-3", "method": "tools/call",
                "params": {"name": "echo \"quoted\"", "arguments": {"message": "hi"},
                           "_meta": {"traceparent": "00-aa-bb-01", "progressToken": "muster-3"}}
            })
        );
        let bare = Meta {
            stamp: None,
            caller: None,
            progress_token: None,
        };
        assert_eq!(
            String::from_utf8(request_body("muster-4", "echo", None, &bare).unwrap()).unwrap(),
            r#"{"jsonrpc":"2.0","id":"muster-4","method":"tools/call","params":{"name":"echo"}}"#
        );
    }
}
