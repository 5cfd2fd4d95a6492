//! `core_auth_logout`: the session's connection to a server is closed and, unless another
//! of its servers still uses the issuer, the grant dropped. A `grantScope: subject` grant
//! belongs to the person: it is revoked at the authorization server (RFC 7009, when it has a
//! revocation endpoint) and dropped, and every connection of the person's sessions that used
//! it is closed.

use muster_core::auth::SessionKey;
use muster_core::resource::mcp_server::{GrantScope, McpServerSpec};
use muster_core::tool::{CallerIdentity, SessionId};

use super::BackendAuth;
use super::login::{LoginOutcome, is_sso};
use super::owner::{grant_owner, grant_scope};
use super::token;
use crate::backend::Backend;

impl BackendAuth {
    /// `core_auth_logout(server)` for `session`, whose caller (with OAuth in front of
    /// muster) is `caller`.
    pub async fn logout(
        &self,
        session: &SessionId,
        caller: Option<&CallerIdentity>,
        server: &str,
    ) -> LoginOutcome {
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
        let scope = grant_scope(&spec);
        let owner = grant_owner(session, caller, scope);
        self.inner.restores.signed_out(session, server);
        let pooled = self.inner.pool.remove(session, server);
        let issuer = match &pooled {
            Some(p) => Some(p.issuer.clone()),
            None => self.resource_of(server, &spec).await.ok().map(|r| r.issuer),
        };
        if let Some(p) = pooled {
            p.backend.stop().await;
        }
        let mut revoked = false;
        if let Some(issuer) = issuer {
            let result = match scope {
                GrantScope::Session if self.inner.pool.issuer_in_use(session, &issuer, server) => {
                    Ok(())
                }
                GrantScope::Session => self.drop_grant(&owner, &issuer).await,
                GrantScope::Subject => {
                    revoked = self
                        .revoke_grant(server, &global, &spec, &owner, &issuer)
                        .await;
                    let dropped = self.drop_grant(&owner, &issuer).await;
                    for backend in self.inner.pool.remove_grant_users(&owner, &issuer) {
                        backend.stop().await;
                    }
                    dropped
                }
            };
            if let Err(e) = result {
                return LoginOutcome::Failed(format!("Logging out from '{server}' failed: {e}"));
            }
        }
        tracing::info!(%server, "session signed out");
        let ended = match (scope, revoked) {
            (GrantScope::Session, _) => "",
            (GrantScope::Subject, true) => {
                " Your sign-in was revoked at the authorization server and ended for all your \
                 sessions."
            }
            (GrantScope::Subject, false) => " Your sign-in ended for all your sessions.",
        };
        LoginOutcome::Done(format!(
            "Successfully logged out from '{server}'.{ended} Run \
             core_auth_login(server=\"{server}\") to sign in again."
        ))
    }

    /// Drops the grant of `owner` at `issuer`.
    async fn drop_grant(&self, owner: &SessionKey, issuer: &str) -> Result<(), String> {
        self.inner
            .grants
            .remove_grant(owner, issuer)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Revokes the grant of `owner` at `issuer` at the revocation endpoint of `server`
    /// (`revocationEndpoint`, else the authorization server's metadata); whether it did.
    /// Without an endpoint, or when the revocation fails, the grant is only dropped, and
    /// the log says so.
    async fn revoke_grant(
        &self,
        server: &str,
        global: &Backend,
        spec: &McpServerSpec,
        owner: &SessionKey,
        issuer: &str,
    ) -> bool {
        let grant = match self.inner.grants.grant(owner, issuer).await {
            Ok(Some(grant)) => grant,
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(%server, error = %e, "reading the grant to revoke failed");
                return false;
            }
        };
        let pinned = spec
            .transport
            .remote()
            .and_then(|r| r.auth.as_ref())
            .and_then(|a| a.authorization_server.as_ref())
            .and_then(|s| s.revocation_endpoint.clone());
        let endpoint = match pinned {
            Some(endpoint) => Some(endpoint),
            None => match self.protection_of(server, spec).await {
                Ok(protection) => protection.server.revocation_endpoint,
                Err(e) => {
                    tracing::info!(%server, error = %e, "cannot find the revocation endpoint; the grant is only dropped");
                    None
                }
            },
        };
        let Some(endpoint) = endpoint else {
            tracing::info!(%server, %issuer, "the authorization server has no revocation endpoint; the grant is only dropped");
            return false;
        };
        let client = match Self::pinned_client_of(global).await {
            Ok(client) => client.filter(|c| c.client_id == grant.client_id),
            Err(e) => {
                tracing::info!(%server, error = %e, "reading the server's client for the revocation failed");
                None
            }
        };
        match token::revoke(
            &self.inner.http,
            &endpoint,
            &grant,
            client.as_ref().map(|c| &c.client_secret),
        )
        .await
        {
            Ok(()) => {
                tracing::info!(%server, %issuer, "sign-in revoked at the authorization server");
                true
            }
            Err(e) => {
                tracing::warn!(%server, %issuer, error = %e, "revoking the sign-in failed; the grant is only dropped");
                false
            }
        }
    }
}
