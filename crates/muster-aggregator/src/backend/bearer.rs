//! Remote servers reached with a session's OAuth access token: the token is read from a
//! [`BearerSource`] on every request (so a refreshed token is used at once), and a request
//! the server answers with 401 is sent once more after the source refreshed the token.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use muster_core::secret::{ExposeSecret, SecretString};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// Where a backend gets the access token it sends as `Authorization: Bearer`.
pub trait BearerSource: Send + Sync + std::fmt::Debug {
    /// The token to send now (refreshed first when it is about to expire); `None` sends no
    /// `Authorization` header.
    fn token(&self) -> BoxFuture<'_, Option<SecretString>>;

    /// The server refused `rejected` with 401: get a new token if possible; `true` when
    /// there is one worth retrying with.
    fn refresh(&self, rejected: SecretString) -> BoxFuture<'_, bool>;
}

/// A reqwest client that authorizes every request with the current token of its source.
#[derive(Clone, Debug)]
pub(crate) struct BearerClient {
    http: reqwest::Client,
    source: Arc<dyn BearerSource>,
}

impl BearerClient {
    pub(crate) fn new(http: reqwest::Client, source: Arc<dyn BearerSource>) -> Self {
        Self { http, source }
    }

    async fn current(&self) -> Option<SecretString> {
        self.source.token().await
    }
}

fn expose(token: Option<&SecretString>) -> Option<String> {
    token.map(|t| t.expose_secret().to_owned())
}

fn is_unauthorized<E: std::error::Error + Send + Sync + 'static>(
    error: &StreamableHttpError<E>,
) -> bool {
    matches!(error, StreamableHttpError::AuthRequired(_))
}

impl StreamableHttpClient for BearerClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            None,
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
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let token = self.current().await;
        let first = self
            .http
            .post_message_with_response_limits(
                Arc::clone(&uri),
                message.clone(),
                session_id.clone(),
                expose(token.as_ref()),
                custom_headers.clone(),
                limits,
            )
            .await;
        match (first, token) {
            (Err(e), Some(rejected)) if is_unauthorized(&e) => {
                if !self.source.refresh(rejected).await {
                    return Err(e);
                }
                let token = self.current().await;
                self.http
                    .post_message_with_response_limits(
                        uri,
                        message,
                        session_id,
                        expose(token.as_ref()),
                        custom_headers,
                        limits,
                    )
                    .await
            }
            (result, _) => result,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let token = self.current().await;
        self.http
            .delete_session(uri, session_id, expose(token.as_ref()), custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let token = self.current().await;
        self.http
            .get_stream(
                uri,
                session_id,
                last_event_id,
                expose(token.as_ref()),
                custom_headers,
            )
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let token = self.current().await;
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                expose(token.as_ref()),
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
