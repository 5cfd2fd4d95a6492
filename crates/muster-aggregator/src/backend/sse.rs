//! Legacy HTTP+SSE servers (protocol 2024-11-05): `GET` opens an event stream whose first
//! `endpoint` event names where to `POST` messages (relative or absolute); answers come back
//! as `message` events. The stream ending closes the connection; reconnecting is a restart.
//!
//! A connection made with a session's sign-in ([`BearerSource`]) sends the current access
//! token with the `GET` and with every `POST`; a request answered with 401 is sent once more
//! after the source refreshed the token.

use futures::future::BoxFuture;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderName, HeaderValue};
use muster_core::resource::mcp_server::RemoteTransport;
use muster_core::secret::{ExposeSecret as _, Redactor, SecretString};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::HttpStatusError;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::bearer::BearerSource;
use super::client_credentials::check_client_credentials;
use super::failure::{Failure, FailureFacts, FailureKind, classify, describe, facts_of};
use super::handler::UpstreamHandler;
use super::handshake::{init_failure, negotiated_protocol, serve};
use super::headers::resolve_headers;
use super::http::{Running, http_client};
use super::lean_call::LeanHop;
use super::options::BackendOptions;
use super::sse_routes::CallRoutes;

/// The message endpoint refused a message; the status travels typed, for the lifecycle to
/// classify.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status} posting to the message endpoint")]
struct PostRejected {
    status: reqwest::StatusCode,
    #[source]
    http: HttpStatusError,
}

fn network_failure(context: &str, error: &reqwest::Error) -> Failure {
    let facts = facts_of(error);
    Failure::new(
        classify(facts),
        format!("{context}: {}", describe(error, facts)),
    )
    .with_http_status(facts.http_status)
}

/// `request` with `Authorization: Bearer <token>` (marked sensitive, so it is never logged)
/// when there is a token.
fn authorized(
    request: reqwest::RequestBuilder,
    token: Option<&SecretString>,
) -> reqwest::RequestBuilder {
    let Some(token) = token else { return request };
    match HeaderValue::from_str(&format!("Bearer {}", token.expose_secret())) {
        Ok(mut value) => {
            value.set_sensitive(true);
            request.header(http::header::AUTHORIZATION, value)
        }
        Err(_) => request,
    }
}

/// Sends what `build` makes with the current token of `bearer` (and its companion headers);
/// when the server answers 401 and the source has a new token, sends it once more with that
/// one.
async fn send_authorized(
    bearer: Option<&Arc<dyn BearerSource>>,
    build: impl Fn(Option<&SecretString>) -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, reqwest::Error> {
    let token = match bearer {
        Some(source) => source.token().await,
        None => None,
    };
    let build = |token: Option<&SecretString>| {
        let mut request = build(token);
        for (name, value) in super::bearer::companions(bearer) {
            request = request.header(name, value);
        }
        request
    };
    let response = build(token.as_ref()).send().await?;
    if response.status() == reqwest::StatusCode::UNAUTHORIZED
        && let (Some(source), Some(rejected)) = (bearer, token)
        && source.refresh(rejected).await
    {
        let token = source.token().await;
        return build(token.as_ref()).send().await;
    }
    Ok(response)
}

/// Opens the event stream and waits for the `endpoint` event.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: HashMap<HeaderName, HeaderValue>,
    bearer: Option<Arc<dyn BearerSource>>,
) -> Result<SseTransport, Failure> {
    let base = reqwest::Url::parse(url)
        .map_err(|e| Failure::new(FailureKind::Permanent, format!("invalid url {url:?}: {e}")))?;
    let response = send_authorized(bearer.as_ref(), |token| {
        let mut request = client.get(base.clone()).header(ACCEPT, "text/event-stream");
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        authorized(request, token)
    })
    .await
    .map_err(|e| network_failure("opening the event stream", &e))?;
    let status = response.status();
    if !status.is_success() {
        let facts = FailureFacts {
            http_status: Some(status.as_u16()),
            ..FailureFacts::default()
        };
        return Err(Failure::new(
            classify(facts),
            format!("HTTP {status} opening the event stream"),
        )
        .with_http_status(Some(status.as_u16())));
    }
    let mut events: EventStream = Box::pin(sse_stream::SseStream::from_bytes_stream(
        response.bytes_stream(),
    ));
    let endpoint = loop {
        match events.next().await {
            None => {
                return Err(Failure::new(
                    FailureKind::Transient,
                    "the event stream ended before the endpoint event",
                ));
            }
            Some(Err(e)) => {
                return Err(Failure::new(
                    FailureKind::Transient,
                    format!("reading the event stream: {e}"),
                ));
            }
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                let data = event.data.unwrap_or_default();
                break base.join(data.trim()).map_err(|e| {
                    Failure::new(
                        FailureKind::Permanent,
                        format!("invalid endpoint {data:?}: {e}"),
                    )
                })?;
            }
            Some(Ok(_)) => {}
        }
    };
    let (tx, rx) = mpsc::channel(64);
    let routes = Arc::new(CallRoutes::new(super::lean_call::ID_PREFIX));
    let reader = tokio::spawn(read_messages(events, tx, routes.clone()));
    Ok(SseTransport {
        client,
        endpoint,
        headers: Arc::new(headers),
        bearer,
        rx,
        reader,
        routes,
    })
}

type EventStream = Pin<Box<dyn Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>>;

/// Hands `message` events to the lean calls they belong to, and forwards the others to
/// rmcp's client, until the stream or the transport ends.
async fn read_messages(
    mut events: EventStream,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    routes: Arc<CallRoutes>,
) {
    // However the reader ends (the stream closed, the transport dropped, the task aborted),
    // the lean calls still waiting learn it.
    let _closed = CloseOnDrop(routes.clone());
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        if event.event.as_deref().unwrap_or("message") != "message" {
            continue;
        }
        let Some(data) = event.data.and_then(|data| routes.dispatch(data)) else {
            continue;
        };
        match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
            Ok(message) => {
                if tx.send(message).await.is_err() {
                    return;
                }
            }
            Err(error) => tracing::debug!(%error, "dropping an undecodable SSE message"),
        }
    }
}

/// Closes the routes of lean calls when dropped.
struct CloseOnDrop(Arc<CallRoutes>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The client side of a legacy SSE connection.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: Arc<HashMap<HeaderName, HeaderValue>>,
    /// The session's sign-in, for a connection made with one.
    bearer: Option<Arc<dyn BearerSource>>,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: JoinHandle<()>,
    /// The lean calls waiting on the event stream.
    routes: Arc<CallRoutes>,
}

impl Transport<RoleClient> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let headers = self.headers.clone();
        let bearer = self.bearer.clone();
        let body = serde_json::to_vec(&item);
        async move {
            let body = bytes::Bytes::from(body.map_err(std::io::Error::other)?);
            let response = send_authorized(bearer.as_ref(), |token| {
                let mut request = client
                    .post(endpoint.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
                for (name, value) in headers.iter() {
                    request = request.header(name, value);
                }
                authorized(request, token)
            })
            .await
            .map_err(std::io::Error::other)?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(std::io::Error::other(PostRejected {
                    status,
                    http: HttpStatusError::new(status.as_u16(), None),
                }))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Connects and initializes a legacy SSE server; the lean hop of `tools/call` posts to the
/// same message endpoint and takes its responses from the event stream's reader.
pub(crate) fn open<'a>(
    remote: &'a RemoteTransport,
    timeout: Duration,
    options: &'a BackendOptions,
    redactor: &'a Redactor,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> BoxFuture<'a, Result<Running, Failure>> {
    Box::pin(open_inner(remote, timeout, options, redactor, handler, ct))
}

async fn open_inner(
    remote: &RemoteTransport,
    timeout: Duration,
    options: &BackendOptions,
    redactor: &Redactor,
    handler: UpstreamHandler,
    ct: CancellationToken,
) -> Result<Running, Failure> {
    let headers = resolve_headers(remote, options, redactor).await?;
    check_client_credentials(remote, options, redactor).await?;
    let http = http_client(timeout, options)?;
    let transport = connect(http.clone(), &remote.url, headers, options.bearer.clone()).await?;
    let endpoint = transport.endpoint.clone();
    let post_headers = transport.headers.clone();
    let routes = transport.routes.clone();
    let relist = handler.relist.clone();
    let running = serve(handler, transport, options, ct)
        .await
        .map_err(|e| init_failure(&e))?;
    let protocol = negotiated_protocol(&running);
    let lean = options
        .lean_calls
        .then(|| {
            LeanHop::over_event_stream(
                http,
                endpoint.as_str(),
                &post_headers,
                timeout,
                options.bearer.clone(),
                options.max_result_bytes,
                relist,
                routes,
                protocol.as_ref(),
            )
        })
        .flatten()
        .map(Arc::new);
    Ok((running, lean))
}
