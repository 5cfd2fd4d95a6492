//! Watches what rmcp's streamable-HTTP client sends, to learn the MCP session a lean call
//! uses: the `Mcp-Session-Id` (none on 2026-07-28 connections) and the headers of every
//! request after the handshake (the spec's headers and the negotiated
//! `MCP-Protocol-Version`). rmcp keeps both to itself and changes them when it re-initializes
//! an expired session, so the tap records them from each POST it passes on. The same client
//! authorizes the requests of servers reached with a session's OAuth token (see
//! [`bearer`](super::bearer)).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use muster_core::secret::{ExposeSecret, SecretString};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::bearer::BearerSource;

/// Headers that describe one request (2026-07-28 standard headers), never the session.
const PER_REQUEST_PREFIX: &str = "mcp-";
/// The `Accept` of a JSON-RPC POST.
const POST_ACCEPT: &str = "application/json, text/event-stream";
/// The session's id.
const SESSION_ID_HEADER: &str = "mcp-session-id";
/// Headers of the session that start like per-request ones.
const SESSION_HEADERS: [&str; 2] = ["mcp-protocol-version", "mcp-session-id"];

/// The MCP session of a connection as last seen on the wire.
#[derive(Debug, Clone)]
pub(crate) struct SessionHeaders {
    /// `Mcp-Session-Id`; `None` for servers without sessions.
    pub(crate) session_id: Option<Arc<str>>,
    /// The headers of a POST in the session: every header rmcp sends with the session's
    /// requests, `Mcp-Session-Id`, and the `Accept` and `Content-Type` of a JSON-RPC POST.
    pub(crate) headers: Arc<http::HeaderMap>,
}

/// Where the tap records the session. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionSlot(Arc<RwLock<Option<SessionHeaders>>>);

impl SessionSlot {
    /// The session as of now; `None` before `initialize` finished and for servers without
    /// sessions.
    pub(crate) fn current(&self) -> Option<SessionHeaders> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, session_id: Option<&Arc<str>>, custom: &HashMap<HeaderName, HeaderValue>) {
        if self
            .current()
            .is_some_and(|s| s.session_id.as_deref() == session_id.map(|id| &**id))
        {
            return;
        }
        let mut headers: http::HeaderMap = custom
            .iter()
            .filter(|(name, _)| {
                let name = name.as_str();
                !name.starts_with(PER_REQUEST_PREFIX) || SESSION_HEADERS.contains(&name)
            })
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        headers.insert(http::header::ACCEPT, HeaderValue::from_static(POST_ACCEPT));
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(id) = session_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert(SESSION_ID_HEADER, id);
        }
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(SessionHeaders {
            session_id: session_id.cloned(),
            headers: Arc::new(headers),
        });
    }

    /// A slot holding `session` for good: the headers of a connection without sessions
    /// that no tap watches.
    pub(crate) fn fixed(session: SessionHeaders) -> Self {
        Self(Arc::new(RwLock::new(Some(session))))
    }

    /// Forgets the session (it expired); the next rmcp request records its successor.
    pub(crate) fn forget(&self, expired: &Arc<str>) {
        let mut slot = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if slot
            .as_ref()
            .is_some_and(|s| s.session_id.as_deref() == Some(&**expired))
        {
            *slot = None;
        }
    }
}

/// The streamable-HTTP client rmcp drives for a remote server: reqwest, recording the
/// session of the requests it sends and, for servers reached with a session's OAuth token,
/// authorizing every request with the current token of its [`BearerSource`] (a request
/// answered with 401, POST, GET or DELETE, is sent once more after the source refreshed the
/// token).
#[derive(Clone, Debug)]
pub(crate) struct SessionTap {
    http: reqwest::Client,
    bearer: Option<Arc<dyn BearerSource>>,
    slot: SessionSlot,
}

impl SessionTap {
    pub(crate) fn new(
        http: reqwest::Client,
        bearer: Option<Arc<dyn BearerSource>>,
        slot: SessionSlot,
    ) -> Self {
        Self { http, bearer, slot }
    }

    /// The token to send now, when the server is reached with one.
    async fn token(&self) -> Option<SecretString> {
        match &self.bearer {
            Some(source) => source.token().await,
            None => None,
        }
    }

    /// `headers` with the source's companion headers (`X-Muster-Id-Token`) added. They are
    /// added after the session's headers were recorded for the lean hop, which adds them
    /// itself per call.
    fn with_companions(&self, mut headers: Headers) -> Headers {
        headers.extend(super::bearer::companions(self.bearer.as_ref()));
        headers
    }

    /// The bearer token a request carries: the source's current one when the server is
    /// reached with a [`BearerSource`], else the one rmcp asked for.
    fn auth_header(
        &self,
        token: Option<&SecretString>,
        rmcp_own: Option<String>,
    ) -> Option<String> {
        match &self.bearer {
            Some(_) => token.map(|t| t.expose_secret().to_owned()),
            None => rmcp_own,
        }
    }
}

/// Whether `message` is one that only goes out once the handshake is done.
fn after_handshake(message: &ClientJsonRpcMessage) -> bool {
    use rmcp::model::ClientRequest;
    !matches!(
        message,
        ClientJsonRpcMessage::Request(r)
            if matches!(
                r.request,
                ClientRequest::InitializeRequest(_) | ClientRequest::DiscoverRequest(_)
            )
    )
}

impl SessionTap {
    /// Sends one request with the current token; when the server answers 401 and the source
    /// has a new token, sends it once more with that one. `request` is what `send` takes
    /// (the message and headers), copied for the second attempt only when a token is sent.
    async fn send_authorized<A, T, F, Fut>(
        &self,
        rmcp_own: Option<String>,
        request: A,
        copy: impl FnOnce(&A) -> A,
        send: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(A, Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let token = self.token().await;
        let again = token.is_some().then(|| copy(&request));
        let result = send(request, self.auth_header(token.as_ref(), rmcp_own.clone())).await;
        if matches!(result, Err(StreamableHttpError::AuthRequired(_)))
            && let (Some(rejected), Some(source), Some(request)) = (token, &self.bearer, again)
            && source.refresh(rejected).await
        {
            let token = self.token().await;
            return send(request, self.auth_header(token.as_ref(), rmcp_own)).await;
        }
        result
    }
}

type Headers = HashMap<HeaderName, HeaderValue>;

impl StreamableHttpClient for SessionTap {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        if after_handshake(&message) {
            self.slot.record(session_id.as_ref(), &custom_headers);
        }
        let custom_headers = self.with_companions(custom_headers);
        let result = self
            .send_authorized(
                auth_header,
                (message, custom_headers),
                |(m, h)| (m.clone(), h.clone()),
                |(message, headers), auth| {
                    self.http.post_message_with_response_limits(
                        Arc::clone(&uri),
                        message,
                        session_id.clone(),
                        auth,
                        headers,
                        limits,
                    )
                },
            )
            .await;
        if let (Err(StreamableHttpError::SessionExpired), Some(expired)) = (&result, &session_id) {
            self.slot.forget(expired);
        }
        result
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.slot.forget(&session_id);
        self.send_authorized(
            auth_header,
            self.with_companions(custom_headers),
            Clone::clone,
            |headers, auth| {
                self.http
                    .delete_session(Arc::clone(&uri), Arc::clone(&session_id), auth, headers)
            },
        )
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.send_authorized(
            auth_header,
            self.with_companions(custom_headers),
            Clone::clone,
            |headers, auth| {
                self.http.get_stream(
                    Arc::clone(&uri),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth,
                    headers,
                )
            },
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.send_authorized(
            auth_header,
            self.with_companions(custom_headers),
            Clone::clone,
            |headers, auth| {
                self.http.get_stream_with_max_sse_event_size(
                    Arc::clone(&uri),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_session_headers_and_forgets_an_expired_session() {
        let slot = SessionSlot::default();
        let custom: HashMap<HeaderName, HeaderValue> = [
            ("mcp-protocol-version", "2025-06-18"),
            ("mcp-method", "tools/call"),
            ("x-tenant", "acme"),
        ]
        .into_iter()
        .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v)))
        .collect();
        let first: Arc<str> = Arc::from("s-1");
        slot.record(Some(&first), &custom);
        let seen = slot.current().unwrap();
        assert_eq!(seen.session_id.as_deref(), Some("s-1"));
        assert_eq!(seen.headers["mcp-protocol-version"], "2025-06-18");
        assert_eq!(seen.headers["x-tenant"], "acme");
        assert!(seen.headers.get("mcp-method").is_none());
        slot.forget(&Arc::from("s-0"));
        assert!(slot.current().is_some());
        slot.forget(&first);
        assert!(slot.current().is_none());
    }
}
