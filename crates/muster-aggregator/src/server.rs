//! The MCP front door: an rmcp [`ServerHandler`](rmcp::ServerHandler) that serves the
//! eleven meta-tools, and the axum router that carries it.
//!
//! [`Aggregator::router`] serves:
//!
//! - `/mcp`: streamable HTTP, with sessions for clients that `initialize` and stateless
//!   service for 2026-07-28 clients;
//! - `GET /sse` + `POST /message?sessionId=`: the legacy HTTP+SSE transport (2024-11-05);
//! - `GET /health`: `200 {"status":"ok"}`, never behind the Host check (liveness);
//! - `GET /metrics`: the Prometheus text format of the registry set with
//!   [`AggregatorBuilder::metrics`], when one is set; never behind the Host check;
//! - `GET /ready`: the [readiness report](crate::health), `200` or `503`, never behind the
//!   Host check;
//! - every other path: `404`.
//!
//! [`Aggregator::serve_stdio`] serves one session over a byte stream pair instead (the
//! stdio transport).
//!
//! The MCP endpoints refuse requests whose `Host` is not allowed (loopback names, plus the
//! configured ones) with `403 Forbidden: invalid Host header "<host>"`, and requests with an
//! `Origin` that does not name an allowed host with `403 Forbidden: invalid Origin header
//! "<origin>"`: the DNS-rebinding guard.
//!
//! Behind that guard, a plain meta-tool `tools/call` in an initialized session takes a lean
//! path (one `application/json` reply, no session worker or SSE stream; see the `lean`
//! module); sessions are capped, parked when idle and expired ([`SessionLimits`]), and
//! [`Aggregator::serve_tcp`] bounds connections ([`ConnectionLimits`]).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use muster_aggregator::registry::Registry;
//! use muster_aggregator::server::Aggregator;
//!
//! let aggregator = Aggregator::builder(Registry::new()).version("1.2.3").build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8090").await?;
//! aggregator.serve_tcp(listener, std::future::pending()).await
//! # }
//! ```

mod caller;
mod connections;
mod front;
mod handler;
mod hosts;
mod http;
mod invalid_params;
mod jsonrpc_errors;
mod lean;
mod listen;
mod notify;
mod observe;
mod progress;
mod reads;
mod room;
mod sessions;
mod sse;
mod trace;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use prometheus_client::registry::Registry as MetricsRegistry;
use rmcp::model::Implementation;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use connections::{
    ConnectionLimits, DEFAULT_CONNECTION_IDLE_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, serve_with_limits,
};
pub use hosts::{AllowedHosts, LOOPBACK_HOSTS};
pub use sessions::{
    DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_SESSION_PARK_AFTER,
    SessionFootprint, SessionLimits, SessionTable, SessionTableError,
};

/// Authentication in front of the MCP endpoints (`/mcp`, `/sse`, `/message`): it wraps
/// their routes with its check and serves public routes of its own (sign-in endpoints,
/// metadata documents). The check puts the caller's
/// [`SessionId`](muster_core::tool::SessionId) and
/// [`CallerIdentity`](muster_core::tool::CallerIdentity) into the request's extensions;
/// every call made on the request then belongs to that session.
pub trait FrontDoorAuth: Send + Sync + std::fmt::Debug + 'static {
    /// The MCP routes behind the check.
    fn protect(&self, routes: Router) -> Router;
    /// Routes served next to them, without the check.
    fn routes(&self) -> Router;
}

#[cfg(feature = "oauth-server")]
impl FrontDoorAuth for crate::oauth_server::OAuthServer {
    fn protect(&self, routes: Router) -> Router {
        crate::oauth_server::OAuthServer::protect(self, routes)
    }

    fn routes(&self) -> Router {
        crate::oauth_server::OAuthServer::routes(self)
    }
}

use crate::health::Readiness;
use crate::meta_tools::MetaTools;
use crate::registry::Registry;

/// The `serverInfo.name` muster answers `initialize` with.
pub const SERVER_NAME: &str = "muster-aggregator";

/// The version reported when none is configured.
pub const DEFAULT_VERSION: &str = "dev";

/// The path of the streamable HTTP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The legacy SSE stream's keep-alive interval.
pub const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The MCP server in front of a [`Registry`]. Cheap to clone; every MCP session gets a
/// clone.
#[derive(Debug, Clone)]
pub struct Aggregator {
    inner: Arc<Inner>,
}

/// Configures an [`Aggregator`].
#[derive(Debug)]
pub struct AggregatorBuilder {
    registry: Registry,
    name: String,
    version: String,
    allowed_hosts: AllowedHosts,
    sse_keep_alive: Duration,
    shutdown: Option<CancellationToken>,
    auth: Option<Arc<dyn FrontDoorAuth>>,
    #[cfg(feature = "http-client")]
    backend_auth: Option<crate::auth::BackendAuth>,
    session_limits: SessionLimits,
    connection_limits: ConnectionLimits,
    readiness: Readiness,
    metrics: Option<Arc<MetricsRegistry>>,
}

#[derive(Debug)]
struct Inner {
    /// Authentication in front of the MCP endpoints, when configured.
    auth: Option<Arc<dyn FrontDoorAuth>>,
    meta: MetaTools,
    implementation: Implementation,
    allowed_hosts: AllowedHosts,
    sse_keep_alive: Duration,
    /// Ends every session and stream when cancelled.
    shutdown: CancellationToken,
    readiness: Readiness,
    metrics: Option<Arc<MetricsRegistry>>,
    peers: notify::Peers,
    notifier_started: AtomicBool,
    /// Stops the list-changed notifier and the session reaper when the aggregator is gone.
    notifier_stop: CancellationToken,
    /// Sign-in to protected servers: its routes and `auth://status`.
    #[cfg(feature = "http-client")]
    backend_auth: Option<crate::auth::BackendAuth>,
    /// The streamable HTTP sessions.
    sessions: Arc<SessionTable>,
    connection_limits: ConnectionLimits,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.notifier_stop.cancel();
    }
}

// === impl AggregatorBuilder ===

impl AggregatorBuilder {
    /// Sets `serverInfo.name` (default `muster-aggregator`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets `serverInfo.version` (default `dev`; an empty version also means `dev`).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Adds hosts the MCP endpoints accept in `Host` and `Origin` to the loopback names
    /// (`localhost`, `127.0.0.1`, `::1`, always accepted). An entry may carry a port
    /// (`example.com:8080`); `*` accepts any host and any origin, which turns the
    /// DNS-rebinding guard off.
    #[must_use]
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = AllowedHosts::from_entries(hosts);
        self
    }

    /// Sets the keep-alive interval of legacy SSE streams (default 30 s).
    #[must_use]
    pub fn sse_keep_alive(mut self, interval: Duration) -> Self {
        self.sse_keep_alive = interval;
        self
    }

    /// Sets the session cap and idle timeouts (defaults: [`SessionLimits::default`]).
    #[must_use]
    pub fn session_limits(mut self, limits: SessionLimits) -> Self {
        self.session_limits = limits;
        self
    }

    /// Sets the connection cap and the header-read and idle-connection timeouts that
    /// [`Aggregator::serve_tcp`] applies (defaults: [`ConnectionLimits::default`]).
    #[must_use]
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.connection_limits = limits;
        self
    }

    /// Uses `token` to end every session and stream: cancel it when shutting down, or
    /// graceful shutdown waits for clients holding streams open.
    /// [`Aggregator::serve_tcp`] cancels it itself.
    #[must_use]
    pub fn cancellation_token(mut self, token: CancellationToken) -> Self {
        self.shutdown = Some(token);
        self
    }

    /// Puts `auth` in front of the MCP endpoints (default: none, every caller is the
    /// `default-user` session).
    #[must_use]
    pub fn auth(mut self, auth: Arc<dyn FrontDoorAuth>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Serves the sign-in routes of `auth` (`/oauth/proxy/*`) and the `auth://status`
    /// resource.
    #[cfg(feature = "http-client")]
    #[must_use]
    pub fn backend_auth(mut self, auth: crate::auth::BackendAuth) -> Self {
        self.backend_auth = Some(auth);
        self
    }

    /// Sets the checks of `GET /ready` (default none: always ready).
    #[must_use]
    pub fn readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = readiness;
        self
    }

    /// Serves `registry` at `GET /metrics` (Prometheus text format 0.0.4). Register the
    /// [`AggregatorMetrics`](crate::metrics::AggregatorMetrics) of the aggregator's
    /// [`Registry`] in it for `muster_sessions_active` to be kept current.
    #[must_use]
    pub fn metrics(mut self, registry: Arc<MetricsRegistry>) -> Self {
        self.metrics = Some(registry);
        self
    }

    /// Builds the aggregator.
    pub fn build(self) -> Aggregator {
        let version = if self.version.is_empty() {
            DEFAULT_VERSION.to_owned()
        } else {
            self.version
        };
        let peers = notify::Peers::default();
        let aggregator = Aggregator {
            inner: Arc::new(Inner {
                auth: self.auth,
                meta: MetaTools::new(self.registry),
                implementation: Implementation::new(self.name, version),
                allowed_hosts: self.allowed_hosts,
                sse_keep_alive: self.sse_keep_alive,
                shutdown: self.shutdown.unwrap_or_default(),
                readiness: self.readiness,
                metrics: self.metrics,
                peers: peers.clone(),
                notifier_started: AtomicBool::new(false),
                notifier_stop: CancellationToken::new(),
                #[cfg(feature = "http-client")]
                backend_auth: self.backend_auth,
                sessions: Arc::new(SessionTable::new(self.session_limits, peers)),
                connection_limits: self.connection_limits,
            }),
        };
        aggregator.ensure_notifier();
        aggregator
    }
}

// === impl Aggregator ===

impl Aggregator {
    /// A builder over `registry`.
    pub fn builder(registry: Registry) -> AggregatorBuilder {
        AggregatorBuilder {
            registry,
            name: SERVER_NAME.to_owned(),
            version: DEFAULT_VERSION.to_owned(),
            allowed_hosts: AllowedHosts::default(),
            sse_keep_alive: DEFAULT_SSE_KEEP_ALIVE,
            shutdown: None,
            auth: None,
            #[cfg(feature = "http-client")]
            backend_auth: None,
            session_limits: SessionLimits::default(),
            connection_limits: ConnectionLimits::default(),
            readiness: Readiness::default(),
            metrics: None,
        }
    }

    /// The registry behind the meta-tools.
    pub fn registry(&self) -> &Registry {
        self.inner.meta.registry()
    }

    /// The meta-tools.
    pub fn meta_tools(&self) -> &MetaTools {
        &self.inner.meta
    }

    /// What a call needs before it runs: the session's connections made with its caller's
    /// forwarded token (servers with `auth.forwardToken`), and those of sign-ins it made
    /// earlier or at another replica.
    pub(crate) async fn before_call(&self, context: &muster_core::tool::CallContext) {
        self.before_read(&context.session, context.caller.as_deref())
            .await;
    }

    /// What a read (resource, prompt) of `session` needs before it runs; see
    /// [`before_call`](Self::before_call).
    pub(crate) async fn before_read(
        &self,
        session: &muster_core::tool::SessionId,
        caller: Option<&muster_core::tool::CallerIdentity>,
    ) {
        #[cfg(feature = "http-client")]
        if let Some(auth) = &self.inner.backend_auth
            && auth.may_act_before_calls_of(caller)
        {
            // Boxed, so that the futures of calls without backend sign-ins (most) stay small:
            // a call's future is moved whole on its way to the runtime.
            Box::pin(async move {
                if let Some(caller) = caller {
                    auth.forward_identity(session, caller).await;
                }
                auth.restore_sign_ins(session, caller).await;
            })
            .await;
        }
        #[cfg(not(feature = "http-client"))]
        let _ = (session, caller);
    }

    /// The streamable HTTP sessions (how many exist, how many have a running worker).
    pub fn sessions(&self) -> &SessionTable {
        &self.inner.sessions
    }

    /// The token whose cancellation ends every session and stream.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// The axum router with `/mcp` (streamable HTTP), `/sse` + `/message` (legacy SSE) and
    /// `/health`; any other path answers `404`.
    pub fn router(&self) -> Router {
        self.ensure_notifier();
        http::router(self)
    }

    /// Serves what [`router`](Self::router) serves (its MCP paths matched without it, which
    /// saves every call the router's work) on `listener` until `shutdown` completes, then
    /// cancels the [cancellation token](Self::cancellation_token) and finishes gracefully.
    ///
    /// # Errors
    ///
    /// When the listener fails.
    pub async fn serve_tcp(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let token = self.cancellation_token();
        let signal = async move {
            shutdown.await;
            token.cancel();
        };
        let limits = self.inner.connection_limits;
        self.ensure_notifier();
        serve_with_limits(listener, http::front_door(&self), limits, signal).await
    }

    /// Serves one MCP session on `reader` and `writer` (the stdio transport: one JSON-RPC
    /// message per line, as `aggregator.transport: stdio` offers it on muster's own stdin
    /// and stdout) until the client closes its side or `shutdown` completes.
    ///
    /// # Errors
    ///
    /// When the client does not complete the handshake or the transport fails.
    pub async fn serve_stdio<R, W>(
        self,
        reader: R,
        writer: W,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        use rmcp::ServiceExt;
        self.ensure_notifier();
        let token = self.cancellation_token();
        let on_shutdown = token.clone();
        tokio::spawn(async move {
            shutdown.await;
            on_shutdown.cancel();
        });
        let running = self
            .serve_with_ct((reader, writer), token.child_token())
            .await
            .map_err(|e| {
                std::io::Error::other(format!("the MCP handshake on stdio failed: {e}"))
            })?;
        let ended = running.waiting().await;
        token.cancel();
        ended
            .map(|_| ())
            .map_err(|e| std::io::Error::other(format!("the stdio session failed: {e}")))
    }

    /// Starts the task that tells connected sessions about catalog changes, once, when a
    /// runtime is available.
    fn ensure_notifier(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if !self.inner.notifier_started.swap(true, Ordering::AcqRel) {
            notify::spawn_notifier(
                self.inner.peers.clone(),
                self.registry().changes(),
                self.inner.notifier_stop.clone(),
            );
            let peers = self.inner.peers.clone();
            sessions::spawn_reaper(
                &self.inner.sessions,
                self.inner.notifier_stop.clone(),
                move || peers.prune(),
            );
        }
    }
}

/// Serves `router` on `listener` with `TCP_NODELAY` on every accepted socket (without it,
/// small responses wait for the peer's delayed ACK, about 40 ms each) and the default
/// [`ConnectionLimits`], until `shutdown` completes; then stops accepting and waits for open
/// connections to finish.
///
/// # Errors
///
/// When the listener fails.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_limits(listener, router, ConnectionLimits::default(), shutdown).await
}
