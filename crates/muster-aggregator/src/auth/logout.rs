//! `core_auth_logout`: the session's connection to a server is closed and, unless another
//! of its servers still uses the issuer, the grant dropped.

use muster_core::tool::SessionId;

use super::BackendAuth;
use super::login::{LoginOutcome, is_sso};

impl BackendAuth {
    /// `core_auth_logout(server)` for `session`.
    pub async fn logout(&self, session: &SessionId, server: &str) -> LoginOutcome {
        let Some(global) = self.inner.services.backend(server) else {
            return LoginOutcome::Failed(format!("Server '{server}' not found."));
        };
        let spec = global.spec().clone();
        if is_sso(&spec) {
            return LoginOutcome::Failed(format!(
                "Server '{server}' authenticates with your muster sign-in (token forwarding or \
                 token exchange): logout is not supported for SSO servers."
            ));
        }
        let pooled = self.inner.pool.remove(session, server);
        let issuer = match &pooled {
            Some(p) => Some(p.issuer.clone()),
            None => self.resource_of(server, &spec).await.ok().map(|r| r.issuer),
        };
        if let Some(p) = pooled {
            p.backend.stop().await;
        }
        if let Some(issuer) = issuer
            && !self.inner.pool.issuer_in_use(session, &issuer, server)
        {
            match self
                .inner
                .grants
                .remove_grant(&Self::session_key(session), &issuer)
                .await
            {
                Ok(_) => {}
                Err(e) => {
                    return LoginOutcome::Failed(format!(
                        "Logging out from '{server}' failed: {e}"
                    ));
                }
            }
        }
        tracing::info!(%server, "session signed out");
        LoginOutcome::Done(format!(
            "Successfully logged out from '{server}'. Run core_auth_login(server=\"{server}\") \
             to sign in again."
        ))
    }
}
