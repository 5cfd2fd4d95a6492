//! The HTTP client of the lean hop: hyper's pooled keep-alive HTTP/1.1 client for plain
//! `http://` servers reached without a proxy, the backend's reqwest client otherwise (TLS
//! with the extra CA certificates, proxies from the environment).
//!
//! hyper's client takes the request as built — no URL parsing, redirect policy or header
//! merging per call — which is most of what reqwest adds on the way to the same hyper
//! connection.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::failure::with_causes;

/// Environment variables through which reqwest sends plain-HTTP requests to a proxy.
const PROXY_VARIABLES: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// Where lean calls are posted, and with which client. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) enum LeanClient {
    /// hyper's client, for a plain `http://` URL.
    Plain {
        /// The pooled client (boxed: it is ten times the size of reqwest's handle).
        client: Box<Client<HttpConnector, Full<Bytes>>>,
        /// The server's URL.
        uri: http::Uri,
    },
    /// The backend's reqwest client.
    Reqwest {
        /// The client (shared with rmcp's transport).
        client: reqwest::Client,
        /// The server's URL.
        url: reqwest::Url,
    },
}

/// The reply to a POST: status, headers and the body as it arrives.
pub(crate) struct Reply {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// The response headers.
    pub(crate) headers: HeaderMap,
    body: ReplyBody,
}

enum ReplyBody {
    Plain(hyper::body::Incoming),
    Reqwest(reqwest::Response),
}

impl LeanClient {
    /// The client of `url`: hyper's for `http://` without a proxy variable set (connecting
    /// within `connect_timeout`, no Nagle delay), else `http`.
    pub(crate) fn new(http: reqwest::Client, url: &str, connect_timeout: Duration) -> Option<Self> {
        let parsed = reqwest::Url::parse(url).ok()?;
        let proxied = PROXY_VARIABLES
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        if parsed.scheme() == "http"
            && !proxied
            && let Ok(uri) = url.parse::<http::Uri>()
        {
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            connector.set_connect_timeout(Some(connect_timeout));
            let client = Box::new(Client::builder(TokioExecutor::new()).build(connector));
            return Some(Self::Plain { client, uri });
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
    pub(crate) async fn post(&self, headers: HeaderMap, body: Bytes) -> Result<Reply, String> {
        match self {
            Self::Plain { client, uri } => {
                let mut request = Request::post(uri.clone())
                    .body(Full::new(body))
                    .map_err(|e| e.to_string())?;
                *request.headers_mut() = headers;
                let response = client.request(request).await.map_err(|e| with_causes(&e))?;
                let (parts, body) = response.into_parts();
                Ok(Reply {
                    status: parts.status,
                    headers: parts.headers,
                    body: ReplyBody::Plain(body),
                })
            }
            Self::Reqwest { client, url } => {
                let response = client
                    .post(url.clone())
                    .headers(headers)
                    .body(body)
                    .send()
                    .await
                    .map_err(|e| with_causes(&e))?;
                Ok(Reply {
                    status: response.status(),
                    headers: response.headers().clone(),
                    body: ReplyBody::Reqwest(response),
                })
            }
        }
    }
}

impl Reply {
    /// The body's announced length, when it has one.
    pub(crate) fn content_length(&self) -> Option<u64> {
        self.headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    }

    /// The next piece of the body; `None` at its end.
    ///
    /// # Errors
    ///
    /// When the connection fails while the body is read.
    pub(crate) async fn chunk(&mut self) -> Option<Result<Bytes, String>> {
        match &mut self.body {
            ReplyBody::Plain(body) => loop {
                match body.frame().await? {
                    Ok(frame) => {
                        if let Ok(data) = frame.into_data() {
                            return Some(Ok(data));
                        }
                    }
                    Err(e) => return Some(Err(with_causes(&e))),
                }
            },
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

    #[tokio::test]
    async fn plain_http_takes_hyper_and_https_takes_reqwest() {
        let http = reqwest::Client::new();
        let timeout = Duration::from_secs(1);
        let plain = LeanClient::new(http.clone(), "http://127.0.0.1:9/mcp", timeout);
        let tls = LeanClient::new(http.clone(), "https://example.com/mcp", timeout);
        if std::env::var_os("HTTP_PROXY").is_none() && std::env::var_os("http_proxy").is_none() {
            assert!(matches!(plain, Some(LeanClient::Plain { .. })));
        }
        assert!(matches!(tls, Some(LeanClient::Reqwest { .. })));
        assert!(LeanClient::new(http, "not a url", timeout).is_none());
    }

    #[tokio::test]
    async fn a_refused_connection_names_its_cause() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = LeanClient::Plain {
            client: Box::new(Client::builder(TokioExecutor::new()).build(HttpConnector::new())),
            uri: format!("http://127.0.0.1:{port}/mcp").parse().unwrap(),
        };
        let Err(error) = client.post(HeaderMap::new(), Bytes::new()).await else {
            panic!("a closed port answered");
        };
        assert!(error.to_lowercase().contains("refused"), "{error}");
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
