//! Keep-alive HTTP/1.1 connections to one plain `http://` server, for the lean hop.
//!
//! hyper-util's pooled client races a new connection (and a name lookup on the blocking
//! pool) against the return of a busy one whenever no connection is idle at the instant a
//! request starts, and a connection whose reply has just been read is handed back by a task
//! of its own. Back-to-back calls at concurrency 1 kept opening connections that way. Here a
//! request takes a connection that is ready, lets the connection tasks run once when only
//! busy ones are left (the one whose reply was just read becomes ready then), and opens a
//! new connection only after that. Requests that never reached a connection that closed
//! meanwhile are sent again on a new one.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::HOST;
use http::uri::PathAndQuery;
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::failure::with_causes;

/// Connections kept per server (a few KB each while idle); a request that finds all of them
/// busy opens one more, which is closed after its exchange when the set is full.
const MAX_KEPT: usize = 256;

/// The connections to one server. Each has a task of its own that drives it.
#[derive(Debug)]
pub(crate) struct Http1Pool {
    host: String,
    port: u16,
    /// The `Host` header of every request.
    host_header: HeaderValue,
    /// The request target (origin form).
    target: PathAndQuery,
    connect_timeout: Duration,
    kept: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Http1Pool {
    /// The pool of the `http://` server at `uri`; `None` when `uri` has no host.
    pub(crate) fn new(uri: &Uri, connect_timeout: Duration) -> Option<Self> {
        let authority = uri.authority()?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        Some(Self {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            host_header: HeaderValue::from_str(authority.as_str()).ok()?,
            target: uri
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/")),
            connect_timeout,
            kept: Mutex::new(Vec::new()),
        })
    }

    fn kept(&self) -> MutexGuard<'_, Vec<SendRequest<Full<Bytes>>>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// POSTs `body` with `headers` (and the server's `Host`) to the server's URL.
    ///
    /// # Errors
    ///
    /// The connection's or the exchange's error and its causes, as one line.
    pub(crate) async fn post(
        &self,
        headers: http::HeaderMap,
        body: Bytes,
    ) -> Result<Response<Incoming>, String> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = Uri::from(self.target.clone());
        *request.headers_mut() = headers;
        request.headers_mut().insert(HOST, self.host_header.clone());
        let mut sender = self.checkout().await?;
        match sender.try_send_request(request).await {
            Ok(response) => {
                self.keep(sender);
                Ok(response)
            }
            Err(mut error) => match error.take_message() {
                // The connection closed before the request was written: a new one takes it.
                Some(request) => {
                    let mut sender = Box::pin(self.connect()).await?;
                    let response = sender
                        .send_request(request)
                        .await
                        .map_err(|e| with_causes(&e))?;
                    self.keep(sender);
                    Ok(response)
                }
                None => Err(with_causes(error.error())),
            },
        }
    }

    /// A connection ready for a request: a kept one, or a new one.
    async fn checkout(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        match self.take_ready() {
            Taken::Ready(sender) => return Ok(sender),
            Taken::AllBusy => {
                // The connection whose reply was read last is made ready by its task.
                tokio::task::yield_now().await;
                if let Taken::Ready(sender) = self.take_ready() {
                    return Ok(sender);
                }
            }
            Taken::None => {}
        }
        // Boxed: opening a connection is rare, and its state would otherwise be carried
        // (and moved) by every request's future.
        Box::pin(self.connect()).await
    }

    fn take_ready(&self) -> Taken {
        let mut kept = self.kept();
        kept.retain(|sender| !sender.is_closed());
        match kept.iter().rposition(SendRequest::is_ready) {
            Some(i) => Taken::Ready(kept.swap_remove(i)),
            None if kept.is_empty() => Taken::None,
            None => Taken::AllBusy,
        }
    }

    /// Keeps `sender` for later requests (its exchange may still be running).
    fn keep(&self, sender: SendRequest<Full<Bytes>>) {
        let mut kept = self.kept();
        if kept.len() < MAX_KEPT {
            kept.push(sender);
        }
    }

    /// Opens a connection within the connect timeout, trying each address of the host.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let stream = tokio::time::timeout(self.connect_timeout, self.open_stream())
            .await
            .map_err(|_| {
                format!(
                    "connecting to {}:{} timed out after {:?}",
                    self.host, self.port, self.connect_timeout
                )
            })??;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| with_causes(&e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %with_causes(&e), "a lean-hop connection ended");
            }
        });
        Ok(sender)
    }

    async fn open_stream(&self) -> Result<TcpStream, String> {
        let addresses: Vec<SocketAddr> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("resolving {}: {e}", self.host))?
            .collect();
        let mut last = format!("{} resolved to no address", self.host);
        for address in addresses {
            match TcpStream::connect(address).await {
                Ok(stream) => {
                    stream
                        .set_nodelay(true)
                        .map_err(|e| format!("setting TCP_NODELAY: {e}"))?;
                    return Ok(stream);
                }
                Err(e) => last = format!("connecting to {address}: {e}"),
            }
        }
        Err(last)
    }
}

/// What [`Http1Pool::take_ready`] found.
enum Taken {
    Ready(SendRequest<Full<Bytes>>),
    /// Connections are kept, none of them ready yet.
    AllBusy,
    None,
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A server answering every request with `ok`, counting the connections it accepted.
    async fn counting_server() -> (Uri, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_request| async {
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                            Bytes::from_static(b"ok"),
                        )))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let uri = format!("http://{address}/mcp").parse().unwrap();
        (uri, accepted)
    }

    #[tokio::test]
    async fn back_to_back_requests_share_one_connection() {
        let (uri, accepted) = counting_server().await;
        let pool = Http1Pool::new(&uri, Duration::from_secs(2)).unwrap();
        for _ in 0..50 {
            let response = pool
                .post(http::HeaderMap::new(), Bytes::new())
                .await
                .unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn concurrent_requests_open_more_connections_and_keep_them() {
        let (uri, accepted) = counting_server().await;
        let pool = Arc::new(Http1Pool::new(&uri, Duration::from_secs(2)).unwrap());
        for _ in 0..3 {
            let calls: Vec<_> = (0..4)
                .map(|_| {
                    let pool = pool.clone();
                    tokio::spawn(async move {
                        let response = pool.post(http::HeaderMap::new(), Bytes::new()).await?;
                        response
                            .into_body()
                            .collect()
                            .await
                            .map_err(|e| e.to_string())
                    })
                })
                .collect();
            for call in calls {
                call.await.unwrap().unwrap();
            }
        }
        let opened = accepted.load(Ordering::SeqCst);
        assert!((1..=4).contains(&opened), "{opened} connections");
    }

    #[tokio::test]
    async fn a_refused_connection_names_its_cause() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let uri: Uri = format!("http://127.0.0.1:{port}/mcp").parse().unwrap();
        let pool = Http1Pool::new(&uri, Duration::from_secs(1)).unwrap();
        let error = pool
            .post(http::HeaderMap::new(), Bytes::new())
            .await
            .unwrap_err();
        assert!(error.to_lowercase().contains("refused"), "{error}");
    }
}
