//! `core_auth_login`: every outcome of a session asking to use a protected server.

use chrono::Utc;
use muster_core::auth::PendingSignIn;
use muster_core::resource::mcp_server::McpServerSpec;
use muster_core::secret::SecretString;
use muster_core::tool::{CallerIdentity, SessionId, ToolProvider};
use url::Url;

use super::discovery::DiscoveryError;
use super::protection::Protection;
use super::{BackendAuth, START_PATH, pkce};
use crate::backend::{Backend, BackendError, ServiceState};

/// What `core_auth_login` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOutcome {
    /// Done, or nothing to do: the text says which.
    Done(String),
    /// The session must sign in in a browser at `auth_url`.
    Challenge {
        /// The message.
        text: String,
        /// Where to sign in.
        auth_url: String,
    },
    /// Refused: the text says why.
    Failed(String),
}

/// Whether a server uses the caller's own identity (token forwarding or exchange).
pub(crate) fn is_sso(spec: &McpServerSpec) -> bool {
    spec.transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .is_some_and(muster_core::resource::mcp_server::McpServerAuth::is_per_session)
}

/// Whether `backend` waits for each session's sign-in.
pub(crate) fn needs_sign_in(backend: &Backend) -> bool {
    backend.snapshot().state == ServiceState::AuthRequired
}

impl BackendAuth {
    /// `core_auth_login(server)` for `session`, whose caller (with OAuth in front of muster)
    /// is `caller`.
    pub async fn login(
        &self,
        session: &SessionId,
        caller: Option<&CallerIdentity>,
        server: &str,
    ) -> LoginOutcome {
        let Some(global) = self.inner.services.backend(server) else {
            return LoginOutcome::Failed(format!(
                "Server '{server}' not found. Use list_tools to see available servers."
            ));
        };
        let spec = global.spec().clone();
        if super::settings::forwards_token(&spec) {
            return self.login_forwarding(session, caller, server).await;
        }
        if is_sso(&spec) {
            return LoginOutcome::Failed(format!(
                "Server '{server}' authenticates with your muster sign-in (token exchange): \
                 manual login is not supported for SSO servers."
            ));
        }
        self.inner.restores.signing_in(session, server);
        if self.inner.pool.get(session, server).is_some() {
            return LoginOutcome::Done(format!("Server '{server}' is already authenticated."));
        }
        if !needs_sign_in(&global) {
            return LoginOutcome::Done(if global.snapshot().state.is_active() {
                format!("Server '{server}' is already authenticated and connected.")
            } else {
                format!("Server '{server}' does not require authentication.")
            });
        }
        if !self.inner.settings.enabled {
            return LoginOutcome::Failed(format!(
                "OAuth is not configured. Server '{server}' requires authentication but OAuth \
                 proxy is not enabled. Enable OAuth proxy in the configuration to authenticate \
                 to remote MCP servers."
            ));
        }
        let protection = match self.protection_of(server, &spec).await {
            Ok(p) => p,
            Err(DiscoveryError::ResourceMetadataNotFound) => {
                return LoginOutcome::Failed(format!(
                    "Cannot authenticate to '{server}': RFC 9728 protected resource metadata \
                     not found. The server names no authorization server; set \
                     spec.auth.authorizationServer.issuer to the issuer it trusts."
                ));
            }
            Err(e) => {
                return LoginOutcome::Failed(format!("Cannot authenticate to '{server}': {e}"));
            }
        };
        let mut status = "Not signed in".to_owned();
        let owner = super::owner::grant_owner(session, caller, super::owner::grant_scope(&spec));
        match self.inner.grants.grant(&owner, &protection.issuer).await {
            Ok(Some(grant)) => match self.connect_session(session, &owner, &global, &grant).await {
                Ok(backend) => return LoginOutcome::Done(connected_text(server, &backend)),
                Err(BackendError::AuthRequired { .. }) => {
                    status = "Your sign-in was refused or has expired; sign in again".to_owned();
                }
                Err(e) => {
                    return LoginOutcome::Failed(format!(
                        "Signed in to the issuer of '{server}', but connecting failed: {e}"
                    ));
                }
            },
            Ok(None) => {}
            Err(e) => {
                return LoginOutcome::Failed(format!("Cannot authenticate to '{server}': {e}"));
            }
        }
        if self.inner.limiter.attempt(session).is_err() {
            return LoginOutcome::Failed(format!(
                "Rate limit exceeded. Too many authentication attempts. At most {} sign-ins per \
                 minute; 0 attempts remaining, try again in a minute.",
                self.inner.settings.sign_ins_per_minute
            ));
        }
        let client_id = match Self::pinned_client_of(&global).await {
            Ok(Some(client)) => client.client_id,
            Ok(None) => self.inner.settings.effective_client_id(),
            Err(e) => {
                return LoginOutcome::Failed(format!("Cannot authenticate to '{server}': {e}"));
            }
        };
        match self
            .start_sign_in(session, &owner, server, &protection, client_id)
            .await
        {
            Ok(auth_url) => LoginOutcome::Challenge {
                text: format!(
                    "Authentication Required\n\nServer: {server}\nStatus: {status}\n\nSign in \
                     by opening this link in your browser:\n\n{auth_url}\n\nAfter signing in, \
                     run this tool again to confirm the connection."
                ),
                auth_url,
            },
            Err(e) => LoginOutcome::Failed(format!("Cannot authenticate to '{server}': {e}")),
        }
    }

    /// Remembers a new sign-in of `session` to `server` as `client_id`, whose grant goes to
    /// `owner`, and returns its start link.
    async fn start_sign_in(
        &self,
        session: &SessionId,
        owner: &muster_core::auth::SessionKey,
        server: &str,
        protection: &Protection,
        client_id: String,
    ) -> Result<String, String> {
        let settings = &self.inner.settings;
        let state = pkce::random_value().map_err(|e| format!("no randomness: {e}"))?;
        let verifier = pkce::random_value().map_err(|e| format!("no randomness: {e}"))?;
        let redirect_uri = settings.redirect_uri();
        let mut url = Url::parse(&protection.server.authorization_endpoint)
            .map_err(|e| format!("invalid authorization endpoint: {e}"))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce::s256_challenge(&verifier))
                .append_pair("code_challenge_method", "S256");
            if let Some(scope) = &protection.scope {
                query.append_pair("scope", scope);
            }
            query.append_pair("resource", &resource_of(self, server));
        }
        let ttl = chrono::Duration::from_std(settings.sign_in_ttl).unwrap_or_default();
        let session = Self::session_key(session);
        let pending = PendingSignIn {
            grant_owner: (*owner != session).then(|| owner.clone()),
            session,
            server: server.to_owned(),
            issuer: protection.issuer.clone(),
            expected_issuer: protection.expected_issuer.clone(),
            authorization_url: url.to_string(),
            token_endpoint: protection.server.token_endpoint.clone(),
            client_id,
            redirect_uri,
            code_verifier: SecretString::from(verifier),
            expires_at: Utc::now() + ttl,
        };
        self.inner
            .pending
            .put_pending(&state, pending)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(%server, issuer = %protection.issuer, "sign-in started");
        let mut start = Url::parse(&format!("{}{START_PATH}", settings.public_url))
            .map_err(|e| format!("invalid public URL: {e}"))?;
        start.query_pairs_mut().append_pair("state", &state);
        Ok(start.to_string())
    }

    /// The browser target of the sign-in `state`: the authorization URL, while it is pending.
    pub async fn start_target(&self, state: &str) -> Option<String> {
        match self.inner.pending.pending(state).await {
            Ok(pending) => pending.map(|p| p.authorization_url),
            Err(e) => {
                tracing::warn!(error = %e, "reading a pending sign-in failed");
                None
            }
        }
    }
}

/// The RFC 8707 resource indicator of `server`: its URL.
fn resource_of(auth: &BackendAuth, server: &str) -> String {
    auth.inner
        .services
        .backend(server)
        .and_then(|b| b.spec().transport.remote().map(|r| r.url.clone()))
        .unwrap_or_default()
}

/// The text of a session connection made with an existing grant.
pub(crate) fn connected_text(server: &str, backend: &Backend) -> String {
    let catalog = backend.catalog();
    format!(
        "Successfully connected to '{server}'! Available: {} tools, {} resources, {} prompts.",
        catalog.tools.len(),
        catalog.resources.len(),
        catalog.prompts.len()
    )
}
