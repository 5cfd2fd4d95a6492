//! The HTTP client of the lean hop: keep-alive HTTP/1.1 connections of its own
//! ([`Http1Pool`]) for plain `http://` servers reached without a proxy, the backend's
//! reqwest client otherwise (TLS with the extra CA certificates, proxies from the
//! environment).
//!
//! The pool's connections write the request as built — no URL parsing, redirect policy or
//! header merging per call, no task or channel between the call and its socket — which is
//! most of what reqwest and hyper add on the way to the same bytes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use http::StatusCode;

use super::failure::with_causes;
use super::http1_pool::{Http1Pool, InUse};
use super::post_headers::PostHeaders;
use super::sse_reply::is_event_stream;

/// Environment variables through which reqwest sends plain-HTTP requests to a proxy.
const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// Where lean calls are posted, and with which client. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) enum LeanClient {
    /// Connections of the lean hop's own, for a plain `http://` URL.
    Plain(Arc<Http1Pool>),
    /// The backend's reqwest client.
    Reqwest {
        /// The client (shared with rmcp's transport).
        client: reqwest::Client,
        /// The server's URL.
        url: reqwest::Url,
    },
}

/// The reply to a POST: status, what its head says of the body, and the body as it
/// arrives.
pub(crate) struct Reply {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// `Content-Length`, when the body is framed by it.
    content_length: Option<u64>,
    /// Whether `Content-Type` is `text/event-stream`.
    event_stream: bool,
    body: ReplyBody,
}

enum ReplyBody {
    /// The connection the body is read from (handed back at the body's end).
    Plain(InUse),
    Reqwest(reqwest::Response),
}

impl LeanClient {
    /// The client of `url`: connections of its own for `http://` without a proxy variable
    /// set (connecting within `connect_timeout`, no Nagle delay), else `http`.
    pub(crate) fn new(http: reqwest::Client, url: &str, connect_timeout: Duration) -> Option<Self> {
        let parsed = reqwest::Url::parse(url).ok()?;
        let proxied = PROXY_VARIABLES
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        if parsed.scheme() == "http"
            && !proxied
            && let Ok(uri) = url.parse::<http::Uri>()
            && let Some(pool) = Http1Pool::new(&uri, connect_timeout)
        {
            return Some(Self::Plain(Arc::new(pool)));
        }
        Some(Self::Reqwest {
            client: http,
            url: parsed,
        })
    }

    /// POSTs `body` with `headers`.
    ///
    /// # Errors
    ///
    /// The transport's error and its causes, as one line.
    pub(crate) async fn post(&self, headers: PostHeaders, body: Bytes) -> Result<Reply, String> {
        match self {
            Self::Plain(pool) => {
                let connection = pool.post(&headers, body).await?;
                let head = connection.head();
                Ok(Reply {
                    status: head.status,
                    content_length: head.content_length,
                    event_stream: head.event_stream,
                    body: ReplyBody::Plain(connection),
                })
            }
            Self::Reqwest { client, url } => {
                let response = client
                    .post(url.clone())
                    .headers(headers.into_map())
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| with_causes(&e))?;
                let event_stream = response
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .is_some_and(|ct| is_event_stream(ct.as_bytes()));
                Ok(Reply {
                    status: response.status(),
                    content_length: response.content_length(),
                    event_stream,
                    body: ReplyBody::Reqwest(response),
                })
            }
        }
    }
}

/// How long the rest of a reply is read after the call's response, so that its connection
/// can carry later requests; a server still streaming then loses the connection.
const DRAIN_TIME: Duration = Duration::from_secs(10);

impl Reply {
    /// Reads what is left of the body after the call's response so that the connection is
    /// kept for the next request (a connection whose reply is dropped unread is closed):
    /// right here when it has arrived already. Else a connection of the pool goes back to
    /// it with the rest unread, for whoever takes it next to read first; reqwest's is read
    /// in a task of its own. Either way for at most [`DRAIN_TIME`] and `max_bytes`.
    pub(crate) fn drain(mut self, max_bytes: usize) {
        let mut read = 0usize;
        loop {
            match self.chunk().now_or_never() {
                Some(Some(Ok(chunk))) => {
                    read += chunk.len();
                    if read > max_bytes {
                        return;
                    }
                }
                Some(Some(Err(_)) | None) => return,
                None => break,
            }
        }
        match self.body {
            ReplyBody::Plain(mut connection) => {
                connection.release_unread(max_bytes - read, DRAIN_TIME);
            }
            ReplyBody::Reqwest(mut response) => {
                tokio::spawn(async move {
                    let rest = async {
                        while let Ok(Some(chunk)) = response.chunk().await {
                            read += chunk.len();
                            if read > max_bytes {
                                return;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(DRAIN_TIME, rest).await;
                });
            }
        }
    }

    /// The body's announced length, when it has one.
    pub(crate) fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// Whether the body is an SSE stream (`text/event-stream`).
    pub(crate) fn is_event_stream(&self) -> bool {
        self.event_stream
    }

    /// The next piece of the body; `None` at its end.
    ///
    /// # Errors
    ///
    /// When the connection fails while the body is read.
    pub(crate) async fn chunk(&mut self) -> Option<Result<Bytes, String>> {
        match &mut self.body {
            // At the body's end the connection can carry the next exchange.
            ReplyBody::Plain(connection) => connection.chunk().await,
            ReplyBody::Reqwest(response) => response
                .chunk()
                .await
                .map_err(|e| with_causes(&e))
                .transpose(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[tokio::test]
    async fn plain_http_takes_the_pool_and_https_takes_reqwest() {
        let http = reqwest::Client::new();
        let timeout = Duration::from_secs(1);
        let plain = LeanClient::new(http.clone(), "http://127.0.0.1:9/mcp", timeout);
        let tls = LeanClient::new(http.clone(), "https://example.com/mcp", timeout);
        if std::env::var_os("HTTP_PROXY").is_none() && std::env::var_os("http_proxy").is_none() {
            assert!(matches!(plain, Some(LeanClient::Plain(_))));
        }
        assert!(matches!(tls, Some(LeanClient::Reqwest { .. })));
        assert!(LeanClient::new(http, "not a url", timeout).is_none());
    }

    #[tokio::test]
    async fn a_drained_reply_leaves_its_connection_for_the_next_call() {
        // The reply's first piece at once, its end 10 ms later.
        let (uri, accepted) =
            super::super::http1_pool::tests::rest_server(Duration::from_millis(10), 0, true).await;
        let pool = Http1Pool::new(&uri, Duration::from_secs(2)).unwrap();
        let client = LeanClient::Plain(Arc::new(pool));
        for _ in 0..20 {
            let mut reply = client
                .post(PostHeaders::default(), Bytes::new())
                .await
                .unwrap();
            assert_eq!(&reply.chunk().await.unwrap().unwrap()[..], b"first");
            reply.drain(1024);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A reply dropped before its end closes its connection: 20 connections.
        let opened = accepted.load(Ordering::SeqCst);
        assert!(opened <= 8, "20 calls opened {opened} connections");
    }

    #[test]
    fn the_chain_says_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer: inner")]
        struct Outer(#[source] Inner);
        #[derive(Debug, thiserror::Error)]
        #[error("inner")]
        struct Inner;
        #[derive(Debug, thiserror::Error)]
        #[error("client error")]
        struct Plain(#[source] Inner);
        assert_eq!(with_causes(&Outer(Inner)), "outer: inner");
        assert_eq!(with_causes(&Plain(Inner)), "client error: inner");
    }
}
