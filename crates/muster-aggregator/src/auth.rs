//! muster as OAuth client of protected MCP servers: a server that answers 401 waits in
//! `Auth Required`; each session signs in to it with `core_auth_login` and gets a connection
//! of its own, with its own token, whose tools only that session sees.
//!
//! The pieces, each in its own module:
//!
//! - discovery: the issuer and scope from the server's `WWW-Authenticate` challenge and its
//!   RFC 9728 protected-resource metadata (or `spec.auth.authorizationServer`), then the
//!   authorization server's RFC 8414 / OpenID Connect metadata;
//! - the sign-in: `core_auth_login` stores a [`PendingSignIn`] under a random `state` with a
//!   PKCE verifier and answers a link to `/oauth/proxy/start`, which redirects to the
//!   authorization server; `/oauth/proxy/callback` takes the `state` once, exchanges the code
//!   and files the [`Grant`] under (session, issuer);
//! - the pool: per-session connections authorized with the session's token (refreshed before
//!   it expires and after a 401), registered in the session's view of the [`Registry`],
//!   closed when idle;
//! - `core_auth_logout`, the `auth://status` resource and the session state of
//!   `core_mcpserver_list`.
//!
//! A token for an issuer serves every server of that issuer (single sign-on): after one
//! sign-in, `core_auth_login` on another server of the same issuer connects at once.
//!
//! Tokens, codes, verifiers and `state` values are never logged, and every token is added
//! to the connection's [`Redactor`](muster_core::secret::Redactor), so no error shows one.
//!
//! [`PendingSignIn`]: muster_core::auth::PendingSignIn
//! [`Registry`]: crate::registry::Registry
//! [`Grant`]: muster_core::auth::Grant

mod callback;
mod caller_token;
mod challenge;
mod connect;
pub(crate) mod discovery;
mod exchange;
mod forward;
mod login;
mod logout;
mod owner;
mod pinned_client;
pub(crate) mod pkce;
mod pool;
mod protection;
mod rate;
mod restore;
#[cfg(feature = "server")]
mod routes;
mod session_token;
mod settings;
mod status;
pub(crate) mod token;
mod tools;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use muster_core::auth::{GrantStore, MemoryAuthStore, PendingSignInStore};
use muster_core::tool::SessionId;
use tokio_util::sync::CancellationToken;

pub use callback::{CallbackError, CallbackParams, SignedIn};
pub use login::LoginOutcome;
pub use settings::{ClientSettings, START_PATH};
pub use status::SessionServerStatus;
pub use tools::{AuthTools, LOGIN_TOOL, LOGOUT_TOOL};

use crate::services::Services;

/// The URI of the resource that tells a session which servers it is signed in to.
pub const STATUS_URI: &str = "auth://status";

/// Sign-in to protected MCP servers for every session. Cheap to clone.
#[derive(Debug, Clone)]
pub struct BackendAuth {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: ClientSettings,
    services: Services,
    grants: Arc<dyn GrantStore>,
    pending: Arc<dyn PendingSignInStore>,
    http: reqwest::Client,
    pool: pool::Pool,
    /// One refresh at a time per grant.
    refreshes: session_token::RefreshLocks,
    /// When each session's missing connections were last looked for.
    restores: restore::Restores,
    limiter: rate::RateLimiter,
    /// Token forwarding of each session.
    forwarding: forward::Forwarding,
    /// Discovered protection of each server, by (server, url).
    resources: Mutex<HashMap<(String, String), discovery::ProtectedResource>>,
    /// Stops the idle reaper when the last handle is gone.
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Why [`BackendAuth`] could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client for sign-ins: {0}")]
pub struct BuildError(String);

impl BackendAuth {
    /// Sign-in for the servers of `services` with `settings`, state in memory.
    ///
    /// # Errors
    ///
    /// When the HTTP client cannot be built.
    pub fn new(settings: ClientSettings, services: Services) -> Result<Self, BuildError> {
        let store = Arc::new(MemoryAuthStore::new());
        Self::with_stores(settings, services, store.clone(), store)
    }

    /// Like [`new`](Self::new), with grants and pending sign-ins in the given stores.
    ///
    /// # Errors
    ///
    /// When the HTTP client cannot be built.
    pub fn with_stores(
        settings: ClientSettings,
        services: Services,
        grants: Arc<dyn GrantStore>,
        pending: Arc<dyn PendingSignInStore>,
    ) -> Result<Self, BuildError> {
        let http = settings
            .extra_roots
            .apply(reqwest::Client::builder())
            .timeout(settings.http_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| BuildError(e.to_string()))?;
        let auth = Self {
            inner: Arc::new(Inner {
                pool: pool::Pool::new(services.clone(), settings.max_connections),
                refreshes: session_token::RefreshLocks::default(),
                restores: restore::Restores::default(),
                limiter: rate::RateLimiter::new(settings.sign_ins_per_minute),
                forwarding: forward::Forwarding::default(),
                settings,
                services,
                grants,
                pending,
                http,
                resources: Mutex::default(),
                stop: CancellationToken::new(),
            }),
        };
        auth.spawn_reaper();
        auth.spawn_server_watch();
        Ok(auth)
    }

    /// The settings.
    pub fn settings(&self) -> &ClientSettings {
        &self.inner.settings
    }

    /// The `core_auth_login` and `core_auth_logout` tools.
    pub fn tools(&self) -> AuthTools {
        AuthTools::new(self.clone())
    }

    /// Closes every session's connection to `server` (the server was removed or changed).
    pub async fn forget_server(&self, server: &str) {
        for backend in self.inner.pool.remove_server(server) {
            backend.stop().await;
        }
        self.inner.forwarding.forget_server(server);
        self.inner.services.report_exchange_failure(server, None);
        self.inner
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(name, _), _| name != server);
    }

    /// Ends what `session` holds here and in the grant store: its sign-in to muster ended
    /// (signed out or revoked). Its connections are closed and its own grants dropped;
    /// grants of `grantScope: subject` servers belong to the person and stay until
    /// `core_auth_logout`.
    pub async fn end_session(&self, session: &SessionId) {
        for backend in self.inner.pool.remove_session(session) {
            backend.stop().await;
        }
        self.inner.forwarding.retain_sessions(|s| s != session);
        match self
            .inner
            .grants
            .remove_session(&Self::session_key(session))
            .await
        {
            Ok(0) => {}
            Ok(dropped) => tracing::info!(
                dropped,
                "a session's sign-ins to MCP servers ended with its sign-in to muster"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "dropping the sign-ins of an ended session failed")
            }
        }
    }

    /// Closes the connections unused for the idle timeout, every tenth of it.
    fn spawn_reaper(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let stop = self.inner.stop.clone();
        let idle = self.inner.settings.idle_timeout;
        let tick = (idle / 10).max(std::time::Duration::from_secs(1));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(tick) => {}
                }
                let Some(inner) = weak.upgrade() else { return };
                let evicted = inner.pool.evict_idle(idle);
                inner
                    .forwarding
                    .retain_sessions(|session| inner.pool.has_session(session));
                drop(inner);
                for backend in evicted {
                    tracing::debug!(
                        server = %muster_core::tool::ToolProvider::name(&backend),
                        "closing an idle session connection"
                    );
                    backend.stop().await;
                }
            }
        });
    }

    /// Closes the session connections of servers that were removed or changed, whenever
    /// the set of servers changes.
    fn spawn_server_watch(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let stop = self.inner.stop.clone();
        let mut changes = self.inner.services.membership();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                let Some(inner) = weak.upgrade() else { return };
                let stale = inner
                    .pool
                    .remove_stale(|name| inner.services.backend(name).map(|b| b.spec().clone()));
                drop(inner);
                for backend in stale {
                    tracing::info!(
                        server = %muster_core::tool::ToolProvider::name(&backend),
                        "closing a session connection: the server was removed or changed"
                    );
                    backend.stop().await;
                }
            }
        });
    }

    fn session_key(session: &SessionId) -> muster_core::auth::SessionKey {
        muster_core::auth::SessionKey::from(session)
    }
}
