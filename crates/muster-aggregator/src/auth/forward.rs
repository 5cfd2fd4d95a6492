//! Token forwarding (`spec.auth.forwardToken`): a session whose caller brought a token muster
//! validated — the upstream ID token of a sign-in to muster, or a trusted issuer's JWT — gets
//! a connection of its own to every forwarding server, authorized with that token. No manual
//! sign-in: the connection is made on the session's first request and follows the caller's
//! token when it is refreshed.
//!
//! A server that refuses the token is not retried with the same token (the next request would
//! only be refused again); a new token of the caller tries again. Each outcome is an event
//! (`MCPServerTokenForwarded`, `MCPServerTokenForwardingFailed`), whose texts never carry the
//! token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use muster_core::event::message::Details;
use muster_core::secret::{Redactor, SecretString};
use muster_core::tool::{CallerIdentity, SessionId, ToolProvider};

use super::BackendAuth;
use super::caller_token::ForwardedToken;
use super::exchange::{self, ExchangeSettings, ExchangedToken};
use super::login::{LoginOutcome, connected_text};
use super::settings::forwards_token;
use crate::backend::{Backend, BackendError, BearerSource, ServiceState};
use crate::services::ExchangeFailure;

/// The issuer recorded for forwarded connections whose token names none.
const FORWARDED: &str = "forwarded";

/// What forwarding knows of each session: the token it last forwarded and the servers that
/// refused it.
#[derive(Debug, Default)]
pub(crate) struct Forwarding {
    sessions: Mutex<HashMap<SessionId, SessionForwarding>>,
    /// One connection attempt at a time, so concurrent first requests of a session connect
    /// once.
    connecting: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct SessionForwarding {
    /// The caller's token the session's connections use now.
    token: Arc<ForwardedToken>,
    /// The membership generation every forwarding server was settled at (connected or
    /// refused); `None` while some server could not be tried yet.
    settled_at: Option<u64>,
    /// Servers that refused the current token, with the reason.
    refused: HashMap<String, String>,
}

impl Forwarding {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, SessionForwarding>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The reason `server` refused the session's current token, if it did.
    pub(crate) fn refusal(&self, session: &SessionId, server: &str) -> Option<String> {
        self.lock()
            .get(session)
            .and_then(|s| s.refused.get(server).cloned())
    }

    /// The caller's token `session` forwards now (kept current as the caller's token is
    /// refreshed), when its caller brought one.
    pub(crate) fn token_of(&self, session: &SessionId) -> Option<Arc<ForwardedToken>> {
        self.lock().get(session).map(|s| Arc::clone(&s.token))
    }

    /// Keeps what is known of the sessions `keep` selects (those with connections left);
    /// the others start afresh on their next request.
    pub(crate) fn retain_sessions(&self, keep: impl Fn(&SessionId) -> bool) {
        self.lock().retain(|session, _| keep(session));
    }

    /// Forgets every refusal by `server` (it was removed or changed).
    pub(crate) fn forget_server(&self, server: &str) {
        for state in self.lock().values_mut() {
            state.refused.remove(server);
            state.settled_at = None;
        }
    }
}

impl BackendAuth {
    /// Connects `session` to every token-forwarding server it has no connection to yet, with
    /// `caller`'s token, and keeps the token of its existing connections current. Cheap when
    /// nothing changed since the last request: one map lookup.
    pub async fn forward_identity(&self, session: &SessionId, caller: &CallerIdentity) {
        let Some(token) = caller.forwardable_token() else {
            return;
        };
        let generation = *self.inner.services.membership().borrow();
        if !self.adopt_token(session, token, generation) {
            return;
        }
        let _one = self.inner.forwarding.connecting.lock().await;
        let mut settled = true;
        for name in self.inner.services.names() {
            match self.forward_to(session, caller, token, &name).await {
                Attempt::Settled => {}
                Attempt::NotYet => settled = false,
            }
        }
        if settled && let Some(state) = self.inner.forwarding.lock().get_mut(session) {
            state.settled_at = Some(generation);
        }
    }

    /// Records `token` as the session's current one; `true` when some server may still need
    /// a connection (the token is new, or the servers changed since the last settlement).
    fn adopt_token(&self, session: &SessionId, token: &SecretString, generation: u64) -> bool {
        let mut sessions = self.inner.forwarding.lock();
        match sessions.get_mut(session) {
            Some(state) if state.token.is(token) => state.settled_at != Some(generation),
            Some(state) => {
                // A new token (the caller's was refreshed): live connections use it from now
                // on, and servers that refused the old one are tried again.
                state.token.replace(token.clone());
                state.refused.clear();
                state.settled_at = None;
                true
            }
            None => {
                sessions.insert(
                    session.clone(),
                    SessionForwarding {
                        token: Arc::new(ForwardedToken::new(token.clone())),
                        settled_at: None,
                        refused: HashMap::new(),
                    },
                );
                true
            }
        }
    }

    /// Makes the session's connection to `server`, if it forwards tokens and has none.
    async fn forward_to(
        &self,
        session: &SessionId,
        caller: &CallerIdentity,
        token: &SecretString,
        server: &str,
    ) -> Attempt {
        let Some(global) = self.inner.services.backend(server) else {
            return Attempt::Settled;
        };
        let exchange = ExchangeSettings::of(global.spec());
        if (exchange.is_none() && !forwards_token(global.spec()))
            || self.inner.pool.get(session, server).is_some()
        {
            return Attempt::Settled;
        }
        if self.inner.forwarding.refusal(session, server).is_some() {
            return Attempt::Settled;
        }
        // The server's own connection tells whether it wants a token: until it answered,
        // there is nothing to decide.
        match global.snapshot().state {
            ServiceState::AuthRequired => {}
            ServiceState::Unknown | ServiceState::Starting => return Attempt::NotYet,
            _ => return Attempt::Settled,
        }
        let Some(source) = self.current_token(session, token) else {
            return Attempt::NotYet;
        };
        let (outcome, done, failed) = match exchange {
            Some(settings) => (
                self.connect_exchanging(session, caller, &global, source, settings)
                    .await,
                "MCPServerTokenExchanged",
                "MCPServerTokenExchangeFailed",
            ),
            None => (
                self.connect_forwarding(session, caller, &global, source)
                    .await
                    .map_err(|e| e.to_string()),
                "MCPServerTokenForwarded",
                "MCPServerTokenForwardingFailed",
            ),
        };
        match outcome {
            Ok(_) => self.inner.services.event(server, done, &Details::default()),
            Err(reason) => {
                tracing::info!(%server, error = %reason, "the server refused the caller's token");
                self.inner
                    .services
                    .event(server, failed, &Details::error(reason.clone()));
                if let Some(state) = self.inner.forwarding.lock().get_mut(session) {
                    state.refused.insert(server.to_owned(), reason);
                }
            }
        }
        Attempt::Settled
    }

    /// The session's token source, while `token` is still its current token.
    fn current_token(
        &self,
        session: &SessionId,
        token: &SecretString,
    ) -> Option<Arc<ForwardedToken>> {
        self.inner
            .forwarding
            .lock()
            .get(session)
            .filter(|s| s.token.is(token))
            .map(|s| Arc::clone(&s.token))
    }

    /// Connects `session` to the server of `global` with the forwarded token of `source`.
    async fn connect_forwarding(
        &self,
        session: &SessionId,
        caller: &CallerIdentity,
        global: &Backend,
        source: Arc<ForwardedToken>,
    ) -> Result<Backend, BackendError> {
        let watched = Arc::clone(&source);
        self.connect_session_with(session, caller, global, source, move |redactor| {
            watched.watch(redactor.clone());
        })
        .await
    }

    /// Connects `session` to the server of `global` with the caller's token of `subject`
    /// exchanged as `settings` say; the first exchange is made before connecting, so its
    /// failure is the reason given.
    async fn connect_exchanging(
        &self,
        session: &SessionId,
        caller: &CallerIdentity,
        global: &Backend,
        subject: Arc<ForwardedToken>,
        settings: ExchangeSettings,
    ) -> Result<Backend, String> {
        let first_subject = subject.current();
        let exchanged = exchange::exchange(
            &self.inner.http,
            &settings,
            global.options(),
            &first_subject,
        )
        .await
        .map_err(|e| {
            if let Some(reason) = e.ready_reason() {
                tracing::warn!(
                    server = %ToolProvider::name(global),
                    endpoint = %settings.endpoint(),
                    connector = %settings.connector(),
                    error = %e,
                    "the token exchange fails for every caller"
                );
                self.inner.services.report_exchange_failure(
                    ToolProvider::name(global),
                    Some(ExchangeFailure {
                        reason,
                        error: format!("token exchange failed: {e}"),
                    }),
                );
            }
            e.to_string()
        })?;
        self.inner
            .services
            .report_exchange_failure(ToolProvider::name(global), None);
        let source = Arc::new(ExchangedToken::new(
            subject,
            settings,
            global.options().clone(),
            self.inner.http.clone(),
            (exchanged, first_subject),
        ));
        let watched = Arc::clone(&source);
        self.connect_session_with(session, caller, global, source, move |redactor| {
            watched.watch(redactor.clone());
        })
        .await
        .map_err(|e| e.to_string())
    }

    /// Connects `session` to the server of `global` authorized by `bearer`, filed under the
    /// caller's issuer; `watch` gets the connection's redactor.
    async fn connect_session_with(
        &self,
        session: &SessionId,
        caller: &CallerIdentity,
        global: &Backend,
        bearer: Arc<dyn BearerSource>,
        watch: impl FnOnce(&Redactor),
    ) -> Result<Backend, BackendError> {
        let issuer = caller.issuer.as_deref().unwrap_or(FORWARDED);
        let owner = Self::session_key(session);
        let backend = self
            .connect_pooled(session, global, (issuer, &owner), bearer, watch)
            .await?;
        tracing::info!(
            server = %ToolProvider::name(global),
            "session connected with the caller's token"
        );
        Ok(backend)
    }

    /// `core_auth_login` for a token-forwarding server: connects with the caller's token.
    pub(crate) async fn login_forwarding(
        &self,
        session: &SessionId,
        caller: Option<&CallerIdentity>,
        server: &str,
    ) -> LoginOutcome {
        let Some(caller) = caller.filter(|c| c.forwardable_token().is_some()) else {
            return LoginOutcome::Failed(format!(
                "Server '{server}' authenticates with your muster sign-in (token forwarding): \
                 manual login is not supported for SSO servers. Sign in to muster itself (muster \
                 auth login) and the connection is made for you."
            ));
        };
        self.forward_identity(session, caller).await;
        if let Some(pooled) = self.inner.pool.get(session, server) {
            return LoginOutcome::Done(connected_text(server, &pooled.backend));
        }
        match self.inner.forwarding.refusal(session, server) {
            Some(reason) => LoginOutcome::Failed(format!(
                "Server '{server}' refused your forwarded muster sign-in: {reason}"
            )),
            None => LoginOutcome::Failed(format!(
                "Server '{server}' is not ready for a connection yet; try again in a moment."
            )),
        }
    }
}

/// Whether a server could be settled for a session now.
enum Attempt {
    /// Connected, refused, or nothing to do.
    Settled,
    /// The server is still starting: try again on a later request.
    NotYet,
}
