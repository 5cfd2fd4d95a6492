//! Keep-alive HTTP/1.1 connections to one plain `http://` server, for the lean hop.
//!
//! A connection has no task of its own: the call using it polls the connection's future
//! together with its request, and then with the reply's body, so that an exchange takes no
//! wake-up across tasks. Once the reply's body has been read to its end the connection goes
//! back to the pool, and a request takes the connection that was kept last. A kept
//! connection is polled once when it is taken, and every kept connection once a second, so
//! that those the server closed while idle are dropped; a request that finds none opens
//! one. Requests that never reached a connection that closed meanwhile are sent again on a
//! new one.

use std::future::{Future, poll_fn};
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
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
use tokio::time::Instant;

use super::failure::with_causes;

/// Connections kept per server (a few KB each while idle); a request that finds none kept
/// opens one more, which is closed after its exchange when the set is full.
const MAX_KEPT: usize = 256;

/// How often every kept connection is polled, so that those the server closed while idle
/// are dropped even when the ones kept last serve every request.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The connections to one server.
#[derive(Debug)]
pub(crate) struct Http1Pool {
    host: String,
    port: u16,
    /// The `Host` header of every request.
    host_header: HeaderValue,
    /// The request target (origin form).
    target: PathAndQuery,
    connect_timeout: Duration,
    kept: Mutex<Kept>,
}

/// The idle connections, the one kept last at the end.
#[derive(Debug)]
struct Kept {
    /// Boxed: a connection's state is large, and it moves in and out of the pool and
    /// along with its reply, a pointer instead of the whole.
    #[allow(clippy::vec_box)]
    conns: Vec<Box<Conn>>,
    /// When every kept connection was last polled.
    swept: Instant,
}

impl Kept {
    /// Polls every kept connection once, dropping those that have ended.
    fn sweep(&mut self, cx: &mut Context<'_>) {
        self.conns
            .retain_mut(|conn| conn.poll_connection(cx).is_pending());
        self.swept = Instant::now();
    }
}

/// One connection: the handle requests are sent with, and the connection's future, which
/// whoever uses the connection polls.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    connection: http1::Connection<TokioIo<TcpStream>, Full<Bytes>>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").finish_non_exhaustive()
    }
}

impl Conn {
    /// Polls the connection's future (its reads and writes): `Ready` once it has ended,
    /// closed or failed, after which it must not be polled again.
    fn poll_connection(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.connection).poll(cx).map(|ended| {
            if let Err(e) = ended {
                tracing::debug!(error = %with_causes(&e), "a lean-hop connection ended");
            }
        })
    }
}

/// A connection in use by one exchange; dropped before [`release`](Self::release), it is
/// closed.
#[derive(Debug)]
pub(crate) struct InUse {
    /// `None` once the connection has ended (or was handed back).
    conn: Option<Box<Conn>>,
    pool: Arc<Http1Pool>,
}

impl InUse {
    /// Polls `work` (the exchange's response, or its body) to its end, driving the
    /// connection meanwhile.
    pub(crate) async fn drive<F: Future>(&mut self, work: F) -> F::Output {
        let mut work = pin!(work);
        poll_fn(|cx| {
            if let Poll::Ready(out) = work.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            // What the connection reads now reaches `work` at once.
            if let Some(conn) = &mut self.conn
                && conn.poll_connection(cx).is_ready()
            {
                self.conn = None;
            }
            work.as_mut().poll(cx)
        })
        .await
    }

    /// Hands the connection back to the pool: its exchange is over.
    pub(crate) fn release(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.keep(conn);
        }
    }
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
            kept: Mutex::new(Kept {
                conns: Vec::new(),
                swept: Instant::now(),
            }),
        })
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// POSTs `body` with `headers` (and the server's `Host`) to the server's URL: the
    /// response, and the connection its body is read with.
    ///
    /// # Errors
    ///
    /// The connection's or the exchange's error and its causes, as one line.
    pub(crate) async fn post(
        self: &Arc<Self>,
        headers: http::HeaderMap,
        body: Bytes,
    ) -> Result<(Response<Incoming>, InUse), String> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = Uri::from(self.target.clone());
        *request.headers_mut() = headers;
        request.headers_mut().insert(HOST, self.host_header.clone());
        let mut conn = self.checkout().await?;
        let sent = conn.sender.try_send_request(request);
        let mut in_use = self.in_use(conn);
        match in_use.drive(sent).await {
            Ok(response) => Ok((response, in_use)),
            Err(mut error) => match error.take_message() {
                // The connection closed before the request was written: a new one takes it.
                Some(request) => {
                    let mut conn = Box::pin(self.connect()).await?;
                    let sent = conn.sender.send_request(request);
                    let mut in_use = self.in_use(conn);
                    let response = in_use.drive(sent).await.map_err(|e| with_causes(&e))?;
                    Ok((response, in_use))
                }
                None => Err(with_causes(error.error())),
            },
        }
    }

    fn in_use(self: &Arc<Self>, conn: Box<Conn>) -> InUse {
        InUse {
            conn: Some(conn),
            pool: Arc::clone(self),
        }
    }

    /// A connection ready for a request: the one kept last that is still open, or a new
    /// one.
    async fn checkout(&self) -> Result<Box<Conn>, String> {
        if let Some(conn) = poll_fn(|cx| Poll::Ready(self.take_open(cx))).await {
            return Ok(conn);
        }
        // Boxed: opening a connection is rare, and its state would otherwise be carried
        // (and moved) by every request's future.
        Box::pin(self.connect()).await
    }

    /// The connection kept last that is still open and ready, sweeping every kept one first
    /// when a sweep is due. Each is polled once: one the server closed while it was idle
    /// ends then, and one whose last exchange just ended becomes ready.
    fn take_open(&self, cx: &mut Context<'_>) -> Option<Box<Conn>> {
        let mut kept = self.kept();
        if kept.swept.elapsed() >= SWEEP_EVERY {
            kept.sweep(cx);
        }
        while let Some(mut conn) = kept.conns.pop() {
            if conn.poll_connection(cx).is_pending() && conn.sender.is_ready() {
                return Some(conn);
            }
        }
        None
    }

    /// Keeps `conn`, whose exchange is over, for later requests.
    fn keep(&self, conn: Box<Conn>) {
        let mut kept = self.kept();
        if kept.conns.len() < MAX_KEPT {
            kept.conns.push(conn);
        }
    }

    /// Opens a connection within the connect timeout, trying each address of the host.
    async fn connect(&self) -> Result<Box<Conn>, String> {
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
        Ok(Box::new(Conn { sender, connection }))
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

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A server answering every request with `ok` (closing the connection after each
    /// answer when `close`), counting the connections it accepted.
    async fn counting_server(close: bool) -> (Uri, Arc<AtomicUsize>) {
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
                        .keep_alive(!close)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let uri = format!("http://{address}/mcp").parse().unwrap();
        (uri, accepted)
    }

    /// POSTs an empty body and reads the reply to its end, driving the connection.
    async fn post_and_read(pool: &Arc<Http1Pool>) -> Result<Bytes, String> {
        let (response, mut connection) = pool.post(http::HeaderMap::new(), Bytes::new()).await?;
        let mut body = response.into_body();
        let mut read = Vec::new();
        while let Some(frame) = connection.drive(body.frame()).await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Ok(data) = frame.into_data() {
                read.extend_from_slice(&data);
            }
        }
        connection.release();
        Ok(read.into())
    }

    fn pool_of(uri: &Uri) -> Arc<Http1Pool> {
        Arc::new(Http1Pool::new(uri, Duration::from_secs(2)).unwrap())
    }

    #[tokio::test]
    async fn back_to_back_requests_share_one_connection() {
        let (uri, accepted) = counting_server(false).await;
        let pool = pool_of(&uri);
        for _ in 0..50 {
            assert_eq!(&post_and_read(&pool).await.unwrap()[..], b"ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn concurrent_requests_open_more_connections_and_keep_them() {
        let (uri, accepted) = counting_server(false).await;
        let pool = pool_of(&uri);
        for _ in 0..3 {
            let calls: Vec<_> = (0..4)
                .map(|_| {
                    let pool = pool.clone();
                    tokio::spawn(async move { post_and_read(&pool).await })
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
    async fn connections_the_server_closed_are_replaced() {
        let (uri, accepted) = counting_server(true).await;
        let pool = pool_of(&uri);
        for _ in 0..5 {
            assert_eq!(&post_and_read(&pool).await.unwrap()[..], b"ok");
            // Give the server's close time to arrive before the next request.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 5);
        assert!(pool.kept().conns.len() <= 1);
    }

    #[tokio::test]
    async fn kept_connections_the_server_closed_are_swept() {
        // The server closes its first connection 100 ms after accepting it.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: Uri = format!("http://{}/mcp", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        tokio::spawn(async move {
            let mut first = true;
            while let Ok((stream, _)) = listener.accept().await {
                let lifetime = std::mem::take(&mut first).then(|| Duration::from_millis(100));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_request| async {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                            Bytes::from_static(b"ok"),
                        )))
                    });
                    let serving = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    match lifetime {
                        Some(lifetime) => drop(tokio::time::timeout(lifetime, serving).await),
                        None => drop(serving.await),
                    }
                });
            }
        });
        let pool = pool_of(&uri);
        // Two calls at once: two connections kept.
        let (a, b) = tokio::join!(post_and_read(&pool), post_and_read(&pool));
        assert_eq!((&a.unwrap()[..], &b.unwrap()[..]), (&b"ok"[..], &b"ok"[..]));
        assert_eq!(pool.kept().conns.len(), 2);
        tokio::time::sleep(Duration::from_millis(200)).await;
        poll_fn(|cx| {
            pool.kept().sweep(cx);
            Poll::Ready(())
        })
        .await;
        assert_eq!(
            pool.kept().conns.len(),
            1,
            "the closed connection is dropped"
        );
        assert_eq!(&post_and_read(&pool).await.unwrap()[..], b"ok");
    }

    #[tokio::test]
    async fn a_reply_dropped_unread_closes_its_connection() {
        let (uri, accepted) = counting_server(false).await;
        let pool = pool_of(&uri);
        for _ in 0..3 {
            let (response, _connection) = pool
                .post(http::HeaderMap::new(), Bytes::new())
                .await
                .unwrap();
            drop(response);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
        assert!(pool.kept().conns.is_empty());
    }

    #[tokio::test]
    async fn a_refused_connection_names_its_cause() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let uri: Uri = format!("http://127.0.0.1:{port}/mcp").parse().unwrap();
        let pool = Arc::new(Http1Pool::new(&uri, Duration::from_secs(1)).unwrap());
        let error = pool
            .post(http::HeaderMap::new(), Bytes::new())
            .await
            .unwrap_err();
        assert!(error.to_lowercase().contains("refused"), "{error}");
    }
}
