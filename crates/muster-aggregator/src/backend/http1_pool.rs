//! Keep-alive HTTP/1.1 connections to one plain `http://` server, for the lean hop.
//!
//! A connection ([`wire`]) has no task of its own: the call using it writes its request
//! and reads the reply from the socket itself, so that an exchange takes no wake-up across
//! tasks. Once the reply's body has been read to its end the connection goes back to the
//! pool, and a request takes the connection that was kept last. A call done with a reply
//! whose end has not arrived yet (a server that writes the last chunk of its stream apart)
//! hands the connection back with the rest of the body unread: whoever takes it next reads
//! that rest first, without waiting, and a connection whose rest does not end within its
//! time or byte budget is closed. A kept connection is looked at once when it is taken, and
//! every kept connection once a second, so that those the server closed while idle are
//! dropped; a request that finds none usable opens one. While any connection is kept, a
//! task sweeps them every 10 s as well and closes those idle for 90 s, so that the
//! connections a burst opened do not outlive it. A request whose write fails on a kept
//! connection (the server closed it meanwhile) is sent again on a new one.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use tokio::net::TcpStream;
use tokio::time::Instant;

pub(crate) use self::wire::Head;
use self::wire::Wire;
use super::post_headers::PostHeaders;

mod wire;

/// Connections kept per server (a few KB each while idle); a request that finds none kept
/// opens one more, which is closed after its exchange when the set is full.
const MAX_KEPT: usize = 256;

/// How often every kept connection is polled, so that those the server closed while idle
/// are dropped even when the ones kept last serve every request.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// How long a connection may stay kept without carrying a request before it is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How often a pool with kept connections closes those idle for [`IDLE_TIMEOUT`], even
/// when no request comes to sweep them.
const IDLE_SWEEP_EVERY: Duration = Duration::from_secs(10);

/// How long the server's looked-up addresses serve the connections opened after: those
/// opened together take one lookup (a thread of the blocking pool each otherwise).
const ADDRESSES_KEPT_FOR: Duration = Duration::from_secs(5);

/// The connections to one server.
#[derive(Debug)]
pub(crate) struct Http1Pool {
    host: String,
    port: u16,
    /// The addresses `host` was last looked up to, and when; forgotten when none of them
    /// could be reached. Locked across the lookup, so that concurrent opens share it.
    addresses: tokio::sync::Mutex<Option<(Instant, Arc<[SocketAddr]>)>>,
    /// How every request's head starts: its request line and `Host`.
    head_start: Box<[u8]>,
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
    /// Whether a task closes the connections idle for [`IDLE_TIMEOUT`]: one runs while
    /// any connection is kept.
    idle_sweeper: bool,
}

impl Kept {
    /// Polls every kept connection once, dropping those that have ended, whose last
    /// reply overran its budget, or that have been idle for [`IDLE_TIMEOUT`].
    fn sweep(&mut self, cx: &mut Context<'_>) {
        self.conns.retain_mut(|conn| {
            conn.kept_at.elapsed() < IDLE_TIMEOUT && !matches!(conn.poll_state(cx), State::Ended)
        });
        self.swept = Instant::now();
    }

    /// The connection kept last that can carry a request now; those that have ended are
    /// dropped on the way, those still reading their last reply stay kept.
    fn take_usable(&mut self, cx: &mut Context<'_>) -> Option<Box<Conn>> {
        let mut at = self.conns.len();
        while at > 0 {
            at -= 1;
            match self.conns[at].poll_state(cx) {
                State::Usable => return Some(self.conns.remove(at)),
                State::Finishing => {}
                State::Ended => drop(self.conns.remove(at)),
            }
        }
        None
    }
}

/// One connection, and what is left of its last reply.
struct Conn {
    wire: Wire,
    unread: Option<Unread>,
    /// When the connection was last handed back to the pool.
    kept_at: Instant,
}

/// The rest of a reply whose caller is done with it, read before the connection carries
/// another request.
struct Unread {
    /// How many more bytes may come before the connection is given up.
    budget: usize,
    /// When the connection is given up if the body has not ended by then.
    until: Instant,
}

/// What a kept connection can do now.
enum State {
    /// Carry a request.
    Usable,
    /// Nothing yet: the rest of its last reply is still on its way.
    Finishing,
    /// Nothing any more: closed, failed, or its last reply overran its budget.
    Ended,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").finish_non_exhaustive()
    }
}

impl Conn {
    /// Reads what has arrived of the last reply's rest, then checks that the server has not
    /// closed the connection meanwhile, without waiting.
    fn poll_state(&mut self, cx: &mut Context<'_>) -> State {
        if let Some(unread) = &mut self.unread {
            loop {
                match self.wire.poll_data(cx) {
                    Poll::Ready(None) => break,
                    Poll::Ready(Some(Ok(piece))) if piece.len() <= unread.budget => {
                        unread.budget -= piece.len();
                    }
                    Poll::Ready(Some(_)) => return State::Ended,
                    Poll::Pending if Instant::now() >= unread.until => return State::Ended,
                    Poll::Pending => return State::Finishing,
                }
            }
            self.unread = None;
        }
        if self.wire.idle_and_open(cx) {
            State::Usable
        } else {
            State::Ended
        }
    }
}

/// A connection in use by one exchange, and the head of its reply; dropped before the
/// reply's end (or [`release_unread`](Self::release_unread)), the connection is closed.
#[derive(Debug)]
pub(crate) struct InUse {
    /// `None` once the connection has ended (or was handed back).
    conn: Option<Box<Conn>>,
    pool: Arc<Http1Pool>,
    head: Head,
}

impl InUse {
    /// What the reply's head says.
    pub(crate) fn head(&self) -> Head {
        self.head
    }

    /// The next piece of the reply's body as it arrives; `None` at its end, when the
    /// connection goes back to the pool.
    ///
    /// # Errors
    ///
    /// When the connection fails, ends or breaks the protocol within the body; it is
    /// closed then.
    pub(crate) async fn chunk(&mut self) -> Option<Result<Bytes, String>> {
        let conn = self.conn.as_mut()?;
        match poll_fn(|cx| conn.wire.poll_data(cx)).await {
            None => {
                if let Some(conn) = self.conn.take()
                    && conn.wire.at_rest()
                {
                    self.pool.keep(conn);
                }
                None
            }
            Some(Ok(piece)) => Some(Ok(piece)),
            Some(Err(e)) => {
                self.conn = None;
                Some(Err(e.to_string()))
            }
        }
    }

    /// Hands the connection back to the pool with the rest of the reply unread: the caller
    /// is done with it. Whoever takes the connection next reads that rest first; when more
    /// than `budget` bytes of it come, or it has not ended after `time`, the connection is
    /// closed instead.
    pub(crate) fn release_unread(&mut self, budget: usize, time: Duration) {
        if let Some(mut conn) = self.conn.take() {
            conn.unread = Some(Unread {
                budget,
                until: Instant::now() + time,
            });
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
        let target = uri.path_and_query().map_or("/", |p| p.as_str());
        let head_start = format!("POST {target} HTTP/1.1\r\nhost: {authority}\r\n");
        Some(Self {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            addresses: tokio::sync::Mutex::new(None),
            head_start: head_start.into_bytes().into(),
            connect_timeout,
            kept: Mutex::new(Kept {
                conns: Vec::new(),
                swept: Instant::now(),
                idle_sweeper: false,
            }),
        })
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// POSTs `body` with `headers` (and the server's `Host`) to the server's URL: the
    /// connection the reply is read from, its head read.
    ///
    /// # Errors
    ///
    /// The connection's or the exchange's error, as one line.
    pub(crate) async fn post(
        self: &Arc<Self>,
        headers: &PostHeaders,
        body: Bytes,
    ) -> Result<InUse, String> {
        let head = self.request_head(headers, body.len());
        // Opening a connection is boxed: it is rare, and its state would otherwise be
        // carried (and moved) by every request's future.
        let (mut conn, kept) = match self.take_open() {
            Some(conn) => (conn, true),
            None => (Box::pin(self.connect()).await?, false),
        };
        if let Err(e) = conn.wire.send(&head, &body).await {
            if !kept {
                return Err(e.to_string());
            }
            // The server closed the kept connection before it had the whole request, so it
            // did not run it: a new connection takes it.
            conn = Box::pin(self.connect()).await?;
            conn.wire
                .send(&head, &body)
                .await
                .map_err(|e| e.to_string())?;
        }
        let head = conn.wire.read_head().await.map_err(|e| e.to_string())?;
        Ok(InUse {
            conn: Some(conn),
            pool: Arc::clone(self),
            head,
        })
    }

    /// The head of a request with `headers` and a body of `length` bytes (`Host`,
    /// `Content-Length` and `Transfer-Encoding` are the pool's to write).
    fn request_head(&self, headers: &PostHeaders, length: usize) -> Vec<u8> {
        let mut head = Vec::with_capacity(self.head_start.len() + 64 + 64 * headers.len_hint());
        head.extend_from_slice(&self.head_start);
        head.extend_from_slice(b"content-length: ");
        head.extend_from_slice(itoa::Buffer::new().format(length).as_bytes());
        head.extend_from_slice(b"\r\n");
        for (name, value) in headers.iter() {
            if name == HOST || name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
                continue;
            }
            head.extend_from_slice(name.as_str().as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value.as_bytes());
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head
    }

    /// The connection kept last that can carry a request now, sweeping every kept one
    /// first when a sweep is due. Each is polled once: one the server closed while it was
    /// idle ends then, one whose last exchange just ended becomes ready, and one still
    /// reading the rest of its last reply stays kept for later. They are polled with a
    /// waker that does nothing: what arrives later on a connection left kept waits for the
    /// next poll instead of waking the call that looked at it.
    fn take_open(&self) -> Option<Box<Conn>> {
        let mut quiet = Context::from_waker(Waker::noop());
        let mut kept = self.kept();
        if kept.swept.elapsed() >= SWEEP_EVERY {
            kept.sweep(&mut quiet);
        }
        kept.take_usable(&mut quiet)
    }

    /// Keeps `conn`, whose exchange is over, for later requests, and starts the task that
    /// closes idle connections if none runs.
    fn keep(self: &Arc<Self>, mut conn: Box<Conn>) {
        let mut kept = self.kept();
        if kept.conns.len() < MAX_KEPT {
            conn.kept_at = Instant::now();
            kept.conns.push(conn);
        }
        if !kept.idle_sweeper
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            kept.idle_sweeper = true;
            runtime.spawn(close_idle(Arc::downgrade(self)));
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
        tracing::debug!(host = %self.host, port = self.port, kept = self.kept().conns.len(), "opened a lean-hop connection");
        Ok(Box::new(Conn {
            wire: Wire::new(stream),
            unread: None,
            kept_at: Instant::now(),
        }))
    }

    async fn open_stream(&self) -> Result<TcpStream, String> {
        let addresses = self.addresses().await?;
        let mut last = format!("{} resolved to no address", self.host);
        for address in addresses.iter() {
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
        // The next connection looks the host up again: it may have moved.
        *self.addresses.lock().await = None;
        Err(last)
    }

    /// The server's addresses: those looked up within [`ADDRESSES_KEPT_FOR`], else looked
    /// up now.
    async fn addresses(&self) -> Result<Arc<[SocketAddr]>, String> {
        let mut kept = self.addresses.lock().await;
        if let Some((at, addresses)) = &*kept
            && at.elapsed() < ADDRESSES_KEPT_FOR
        {
            return Ok(Arc::clone(addresses));
        }
        let addresses: Arc<[SocketAddr]> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("resolving {}: {e}", self.host))?
            .collect();
        *kept = Some((Instant::now(), Arc::clone(&addresses)));
        Ok(addresses)
    }
}

/// Sweeps the kept connections of `pool` every [`IDLE_SWEEP_EVERY`], closing those idle
/// for [`IDLE_TIMEOUT`] or closed by the server, until none is kept or the pool is gone.
async fn close_idle(pool: std::sync::Weak<Http1Pool>) {
    loop {
        tokio::time::sleep(IDLE_SWEEP_EVERY).await;
        let Some(pool) = pool.upgrade() else {
            return;
        };
        let mut kept = pool.kept();
        kept.sweep(&mut Context::from_waker(Waker::noop()));
        if kept.conns.is_empty() {
            kept.idle_sweeper = false;
            return;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use http::Response;
    use http_body_util::Full;
    use hyper_util::rt::TokioIo;
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
        let mut connection = pool.post(&PostHeaders::default(), Bytes::new()).await?;
        let mut read = Vec::new();
        while let Some(piece) = connection.chunk().await {
            read.extend_from_slice(&piece?);
        }
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
    async fn connections_idle_for_the_idle_timeout_are_closed_without_a_request() {
        let (uri, accepted) = counting_server(false).await;
        let pool = pool_of(&uri);
        assert_eq!(&post_and_read(&pool).await.unwrap()[..], b"ok");
        assert!(
            pool.kept().idle_sweeper,
            "a kept connection starts the sweeper"
        );
        tokio::time::pause();
        let sweep_in = |steps: u32| async move {
            for _ in 0..steps {
                tokio::time::advance(IDLE_SWEEP_EVERY).await;
                tokio::task::yield_now().await;
            }
        };
        sweep_in(IDLE_TIMEOUT.as_secs() as u32 / IDLE_SWEEP_EVERY.as_secs() as u32 - 1).await;
        assert_eq!(pool.kept().conns.len(), 1, "not idle for long enough yet");
        sweep_in(2).await;
        assert!(
            pool.kept().conns.is_empty(),
            "closed once idle for the timeout"
        );
        assert!(
            !pool.kept().idle_sweeper,
            "the sweeper stops with no connection kept"
        );
        tokio::time::resume();
        assert_eq!(&post_and_read(&pool).await.unwrap()[..], b"ok");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "a new connection carried the next request"
        );
        assert!(pool.kept().idle_sweeper, "and started a sweeper again");
    }

    #[tokio::test]
    async fn a_reply_dropped_unread_closes_its_connection() {
        let (uri, accepted) = counting_server(false).await;
        let pool = pool_of(&uri);
        for _ in 0..3 {
            let connection = pool
                .post(&PostHeaders::default(), Bytes::new())
                .await
                .unwrap();
            drop(connection);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
        assert!(pool.kept().conns.is_empty());
    }

    /// A server whose replies send `first` at once, then `rest` bytes (if any) after
    /// `after`, then end (or never end, when `ends` is false), and the number of
    /// connections it accepted.
    pub(crate) async fn rest_server(
        after: Duration,
        rest: usize,
        ends: bool,
    ) -> (Uri, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let service = hyper::service::service_fn(move |_request| async move {
                    let frames = futures::stream::unfold(0, move |step| async move {
                        let data = match step {
                            0 => Bytes::from_static(b"first"),
                            1 => {
                                tokio::time::sleep(after).await;
                                if rest == 0 {
                                    return None;
                                }
                                Bytes::from(vec![b'x'; rest])
                            }
                            _ if ends => return None,
                            _ => std::future::pending().await,
                        };
                        Some((
                            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(data)),
                            step + 1,
                        ))
                    });
                    Ok::<_, std::convert::Infallible>(Response::new(
                        http_body_util::StreamBody::new(frames),
                    ))
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        (format!("http://{address}/mcp").parse().unwrap(), accepted)
    }

    /// POSTs, reads the first piece of the reply and hands the connection back with the
    /// rest unread (`budget` bytes, `time` to end).
    async fn post_and_leave(pool: &Arc<Http1Pool>, budget: usize, time: Duration) {
        let mut connection = pool
            .post(&PostHeaders::default(), Bytes::new())
            .await
            .unwrap();
        let first = connection.chunk().await.unwrap().unwrap();
        assert_eq!(first, Bytes::from_static(b"first"));
        connection.release_unread(budget, time);
    }

    #[tokio::test]
    async fn a_reply_left_unread_is_finished_by_whoever_takes_its_connection() {
        let (uri, accepted) = rest_server(Duration::from_millis(300), 10, true).await;
        let pool = pool_of(&uri);
        post_and_leave(&pool, 1024, Duration::from_secs(10)).await;
        // Its rest has not come yet: the next request opens a connection of its own, and
        // the first one stays kept.
        post_and_leave(&pool, 1024, Duration::from_secs(10)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.kept().conns.len(), 2);
        // Once the rest has come, both carry requests again.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let (a, b) = tokio::join!(post_and_read(&pool), post_and_read(&pool));
        assert_eq!(a.unwrap().len(), 15);
        assert_eq!(b.unwrap().len(), 15);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.kept().conns.len(), 2);
    }

    #[tokio::test]
    async fn a_reply_that_does_not_end_in_time_or_overruns_its_budget_closes_its_connection() {
        // Never ends: given up 50 ms after it was handed back.
        let (uri, accepted) = rest_server(Duration::ZERO, 10, false).await;
        let pool = pool_of(&uri);
        post_and_leave(&pool, 1024, Duration::from_millis(50)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        post_and_leave(&pool, 1024, Duration::from_secs(10)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.kept().conns.len(), 1, "the late connection is closed");
        // Ends, but with more than its budget.
        let (uri, accepted) = rest_server(Duration::ZERO, 2048, true).await;
        let pool = pool_of(&uri);
        post_and_leave(&pool, 1024, Duration::from_secs(10)).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(post_and_read(&pool).await.unwrap().len(), 5 + 2048);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(
            pool.kept().conns.len(),
            1,
            "the overrun connection is closed"
        );
    }

    #[tokio::test]
    async fn connections_opened_together_share_one_lookup_of_the_host() {
        let (uri, accepted) = counting_server(false).await;
        let port = uri.port_u16().unwrap();
        let uri: Uri = format!("http://localhost:{port}/mcp").parse().unwrap();
        let pool = pool_of(&uri);
        assert_eq!(&post_and_read(&pool).await.unwrap()[..], b"ok");
        let looked_up = pool.addresses.lock().await.as_ref().map(|(at, _)| *at);
        assert!(looked_up.is_some());
        let calls = (0..8).map(|_| post_and_read(&pool));
        for reply in futures::future::join_all(calls).await {
            assert_eq!(&reply.unwrap()[..], b"ok");
        }
        assert!(
            accepted.load(Ordering::SeqCst) > 1,
            "the calls ran together"
        );
        let now = pool.addresses.lock().await.as_ref().map(|(at, _)| *at);
        assert_eq!(now, looked_up, "no connection looked the host up again");
    }

    #[tokio::test]
    async fn addresses_none_of_which_answer_are_looked_up_again() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let uri: Uri = format!("http://localhost:{port}/mcp").parse().unwrap();
        let pool = pool_of(&uri);
        assert!(
            pool.post(&PostHeaders::default(), Bytes::new())
                .await
                .is_err()
        );
        assert!(pool.addresses.lock().await.is_none());
    }

    #[tokio::test]
    async fn a_refused_connection_names_its_cause() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let uri: Uri = format!("http://127.0.0.1:{port}/mcp").parse().unwrap();
        let pool = Arc::new(Http1Pool::new(&uri, Duration::from_secs(1)).unwrap());
        let error = pool
            .post(&PostHeaders::default(), Bytes::new())
            .await
            .unwrap_err();
        assert!(error.to_lowercase().contains("refused"), "{error}");
    }
}
