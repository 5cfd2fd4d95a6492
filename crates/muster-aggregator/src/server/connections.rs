//! Accepting connections with bounds: at most [`ConnectionLimits::max_connections`] open at
//! once (further clients wait in the listen backlog), a deadline for a request's head and
//! body once its first byte arrived, and closing of connections idle between requests.
//!
//! A response given before its request's body was read to the end (a refusal by the Host
//! check or by authentication, say) says `Connection: close`: hyper closes such a
//! connection after the response, and a client told nothing would send its next request on
//! it and lose it.
//!
//! Every accepted socket gets `TCP_NODELAY`: without it, small responses wait for the
//! peer's delayed ACK, about 40 ms each.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, Request};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::{Service, ServiceExt};

use crate::wake_gate::WakeGated;

/// Default of [`ConnectionLimits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default of [`ConnectionLimits::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`ConnectionLimits::idle_timeout`].
pub const DEFAULT_CONNECTION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Bounds on the HTTP connections of the front door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections open at once (default 1024); more wait in the listen backlog.
    pub max_connections: usize,
    /// Time a client has to send a request's head, counted from its first byte, and again
    /// to send its body (default 10 s); a connection over it is closed.
    pub header_read_timeout: Duration,
    /// A connection without a request for this long is closed (default 60 s). Open
    /// requests and streams keep a connection busy, not idle.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_CONNECTION_IDLE_TIMEOUT,
        }
    }
}

/// Serves `router` (an axum [`Router`](axum::Router), or any service of its kind) on
/// `listener` within `limits` until `shutdown` completes; then stops accepting, lets open
/// requests finish and closes the connections.
///
/// # Errors
///
/// Never for a failed accept (logged and retried); the signature leaves room for listener
/// errors.
pub async fn serve_with_limits<S>(
    listener: TcpListener,
    router: S,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let tracker = TaskTracker::new();
    let closing = CancellationToken::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let router = router.clone();
        let closing = closing.clone();
        tracker.spawn(async move {
            serve_connection(tcp, peer, router, limits, closing).await;
            drop(permit);
        });
    }
    closing.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// Accept errors are per connection (or a full file table): log, give the system a moment.
async fn accept_error(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::warn!(error = %error, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// One connection: HTTP/1.1 with keep-alive and upgrades, watched for deadlines. Every
/// request carries the peer's address as axum's [`ConnectInfo`](axum::extract::ConnectInfo),
/// for the per-address bounds of authentication.
async fn serve_connection<S>(
    tcp: TcpStream,
    peer: std::net::SocketAddr,
    router: S,
    limits: ConnectionLimits,
    closing: CancellationToken,
) where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: tcp,
        activity: activity.clone(),
    });
    let service_activity = activity.clone();
    let body_timeout = limits.header_read_timeout;
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let request_guard = service_activity.begin_request();
        let router = router.clone();
        let body_activity = service_activity.clone();
        async move {
            let mut request = request
                .map(|body| Body::new(Deadline::new(body, body_timeout, body_activity.clone())));
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            let mut response = router.oneshot(request).await?;
            // A response given before the request's body was read (a refusal) ends the
            // connection, as hyper then closes it; saying so keeps the client from sending
            // its next request on it.
            if body_activity.body_unread.load(Ordering::Acquire) {
                response
                    .headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, std::convert::Infallible>(response.map(|body| {
                Body::new(Counted {
                    inner: body,
                    _guard: request_guard,
                })
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.header_read_timeout(None);
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    let mut shutting_down = false;
    let closed = WakeGated::new(closing.cancelled());
    tokio::pin!(closed);
    loop {
        let check = activity.next_check(&limits);
        // The connection first, and the timer polled only once it fired: the task wakes for
        // every read and write of the connection, the timer once in a while.
        tokio::select! {
            biased;
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = &mut closed, if !shutting_down => {
                shutting_down = true;
                connection.as_mut().graceful_shutdown();
            }
            () = WakeGated::new(tokio::time::sleep_until(check)) => {
                if let Some(reason) = activity.expired(&limits) {
                    tracing::debug!(reason, "closing a connection");
                    return;
                }
            }
        }
    }
}

/// What a connection is doing, in milliseconds since it opened.
#[derive(Debug)]
struct Activity {
    opened: Instant,
    /// Requests whose response has not been fully sent.
    open_requests: AtomicU32,
    /// When the last request ended (or the connection opened).
    idle_since: AtomicU64,
    /// When the first byte of the next request's head arrived; 0 when none has.
    head_since: AtomicU64,
    /// Whether the body of the request in progress has not been read to its end.
    body_unread: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            open_requests: AtomicU32::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
            body_unread: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Bytes arrived; when no request is open they start the next request's head.
    fn bytes_read(&self) {
        if self.open_requests.load(Ordering::Acquire) == 0
            && self.head_since.load(Ordering::Relaxed) == 0
        {
            self.head_since.store(self.now().max(1), Ordering::Relaxed);
        }
    }

    fn begin_request(self: &Arc<Self>) -> RequestGuard {
        self.open_requests.fetch_add(1, Ordering::AcqRel);
        self.head_since.store(0, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    /// Why the connection should be closed now, if it should.
    fn expired(&self, limits: &ConnectionLimits) -> Option<&'static str> {
        if self.open_requests.load(Ordering::Acquire) > 0 {
            return None;
        }
        let now = self.now();
        let head = self.head_since.load(Ordering::Relaxed);
        if head != 0 {
            return (now.saturating_sub(head) >= millis(limits.header_read_timeout))
                .then_some("header read timeout");
        }
        let idle = self.idle_since.load(Ordering::Relaxed);
        (now.saturating_sub(idle) >= millis(limits.idle_timeout)).then_some("idle timeout")
    }

    /// When to look again.
    fn next_check(&self, limits: &ConnectionLimits) -> Instant {
        let now = self.now();
        let due = if self.open_requests.load(Ordering::Acquire) > 0 {
            now + millis(limits.idle_timeout)
        } else {
            let head = self.head_since.load(Ordering::Relaxed);
            if head != 0 {
                head + millis(limits.header_read_timeout)
            } else {
                self.idle_since.load(Ordering::Relaxed) + millis(limits.idle_timeout)
            }
        };
        // Bytes of a new head may arrive while waiting for the idle deadline.
        let due = due
            .min(now + millis(limits.header_read_timeout))
            .max(now + 1);
        self.opened + Duration::from_millis(due)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An open request; dropping it (when its response body is done) makes the connection idle.
#[derive(Debug)]
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.idle_since.store(activity.now(), Ordering::Relaxed);
        activity.open_requests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The socket, reporting reads to the connection's [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.bytes_read();
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A response body that keeps its request open until it is done.
struct Counted {
    inner: Body,
    _guard: RequestGuard,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The body was not received in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTimedOut(Duration);

/// A request body that must arrive in full within a deadline, telling its connection's
/// [`Activity`] whether it has been read to its end.
struct Deadline {
    body: Incoming,
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    activity: Arc<Activity>,
}

impl Deadline {
    fn new(body: Incoming, limit: Duration, activity: Arc<Activity>) -> Self {
        activity
            .body_unread
            .store(!body.is_end_stream(), Ordering::Release);
        Self {
            body,
            limit,
            sleep: None,
            activity,
        }
    }
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            if frame.is_none() || self.body.is_end_stream() {
                self.activity.body_unread.store(false, Ordering::Release);
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let limit = self.limit;
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
