//! Connecting a session to a server with the session's grant.

use std::sync::Arc;

use muster_core::auth::{Grant, SessionKey};
use muster_core::secret::{ExposeSecret, Redactor};
use muster_core::tool::SessionId;

use super::BackendAuth;
use super::session_token::SessionToken;
use crate::backend::{Backend, BackendError, BearerSource};
use crate::naming::BackendNaming;

impl BackendAuth {
    /// Connects `session` to the server of `global` with the grant of `owner` (the session
    /// itself, or its person for a `grantScope: subject` server) at `grant.issuer`, and
    /// exposes the connection to that session alone. A `forwardIdentity` server also gets
    /// the session's forwarded token in `X-Muster-Id-Token`. A connection that fails is
    /// closed.
    pub(crate) async fn connect_session(
        &self,
        session: &SessionId,
        owner: &SessionKey,
        global: &Backend,
        grant: &Grant,
    ) -> Result<Backend, BackendError> {
        let server = muster_core::tool::ToolProvider::name(global).to_owned();
        let forwards_identity = global
            .spec()
            .transport
            .remote()
            .and_then(|r| r.auth.as_ref())
            .is_some_and(|a| a.forward_identity);
        let identity = forwards_identity
            .then(|| self.inner.forwarding.token_of(session))
            .flatten();
        let source = Arc::new(SessionToken {
            identity: identity.clone(),
            grants: Arc::clone(&self.inner.grants),
            refreshing: self.inner.refreshes.lock_of(owner, &grant.issuer),
            session: owner.clone(),
            issuer: grant.issuer.clone(),
            server: server.clone(),
            services: self.inner.services.clone(),
            http: self.inner.http.clone(),
            margin: self.inner.settings.refresh_margin,
            redactor: std::sync::OnceLock::new(),
        });
        let watched = Arc::clone(&source);
        let backend = self
            .connect_pooled(
                session,
                global,
                (&grant.issuer, owner),
                source,
                |redactor| {
                    redactor.add(grant.access_token.expose_secret());
                    if let Some(refresh) = &grant.refresh_token {
                        redactor.add(refresh.expose_secret());
                    }
                    if let Some(identity) = &identity {
                        identity.watch(redactor.clone());
                    }
                    let _ = watched.redactor.set(redactor.clone());
                },
            )
            .await?;
        tracing::info!(%server, "session connected with its own sign-in");
        Ok(backend)
    }

    /// Connects `session` to the server of `global` authorized by `bearer`, and exposes the
    /// connection to that session alone, filed under `grant`: the issuer and whom the grant
    /// belongs to. `watch` gets the connection's
    /// redactor before it connects, for the tokens `bearer` hands out. A connection that
    /// fails is closed; the one it replaces is stopped.
    pub(super) async fn connect_pooled(
        &self,
        session: &SessionId,
        global: &Backend,
        grant: (&str, &SessionKey),
        bearer: Arc<dyn BearerSource>,
        watch: impl FnOnce(&Redactor),
    ) -> Result<Backend, BackendError> {
        let server = muster_core::tool::ToolProvider::name(global).to_owned();
        let options = global.options().clone().with_bearer(bearer);
        let spec = global.spec().clone();
        let naming = BackendNaming {
            namespace: Some(options.namespace.clone()),
            tool_prefix: spec.tool_prefix.clone(),
            family: spec.family.clone(),
        };
        let backend = Backend::new(server.clone(), spec, options);
        watch(backend.redactor());
        if let Err(e) = backend.start().await {
            backend.stop().await;
            return Err(e);
        }
        for old in self
            .inner
            .pool
            .insert(session, &server, grant, naming, backend.clone())
        {
            old.stop().await;
        }
        Ok(backend)
    }
}
