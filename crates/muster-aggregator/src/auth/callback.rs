//! The authorization server's redirect back to muster: the `state` is taken once, the `iss`
//! checked (RFC 9207), the code exchanged and the grant filed under (session, issuer), or
//! (person, issuer) for a `grantScope: subject` server; then the session is connected.

use muster_core::tool::SessionId;
use subtle::ConstantTimeEq;

use super::BackendAuth;
use super::token::{self, GrantContext};

/// Why a callback was refused; the texts are safe to show in the browser.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// No `state`, or one muster did not issue, already used or expired.
    #[error(
        "this sign-in link is unknown, was already used or has expired; start the sign-in again"
    )]
    UnknownState,
    /// The authorization server answered with an error.
    #[error("the authorization server refused the sign-in: {0}")]
    Denied(String),
    /// The response names another issuer than the sign-in was started with (RFC 9207).
    #[error("the authorization response comes from another issuer than expected")]
    IssuerMismatch,
    /// No code in the response.
    #[error("the authorization response carries no code")]
    MissingCode,
    /// Exchanging the code failed.
    #[error("exchanging the authorization code failed: {0}")]
    Exchange(String),
    /// The grant could not be stored.
    #[error("storing the sign-in failed: {0}")]
    Store(String),
}

/// The query of a callback request.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct CallbackParams {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` muster sent.
    pub state: Option<String>,
    /// RFC 9207 issuer identifier.
    pub iss: Option<String>,
    /// An OAuth error code.
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
}

/// A finished sign-in.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// The server the sign-in was started for.
    pub server: String,
    /// Whether the session's connection to it is up.
    pub connected: bool,
}

impl BackendAuth {
    /// Completes the sign-in of `params.state`.
    ///
    /// # Errors
    ///
    /// When the state is unknown (or used, or expired), the issuer does not match, the
    /// authorization server refused, or the code exchange failed.
    pub async fn complete_sign_in(
        &self,
        params: CallbackParams,
    ) -> Result<SignedIn, CallbackError> {
        let state = params.state.as_deref().unwrap_or_default();
        if state.is_empty() {
            return Err(CallbackError::UnknownState);
        }
        let pending = self
            .inner
            .pending
            .take_pending(state)
            .await
            .map_err(|e| CallbackError::Store(e.to_string()))?
            .ok_or_else(|| {
                tracing::warn!("sign-in callback with an unknown or expired state refused");
                CallbackError::UnknownState
            })?;
        if let Some(error) = params.error.as_deref() {
            let code: String = error
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(64)
                .collect();
            tracing::info!(server = %pending.server, error = %code, "sign-in refused by the authorization server");
            return Err(CallbackError::Denied(code));
        }
        if let Some(iss) = params.iss.as_deref() {
            let expected = pending.expected_issuer.trim_end_matches('/').as_bytes();
            let given = iss.trim_end_matches('/').as_bytes();
            if !bool::from(expected.ct_eq(given)) {
                tracing::warn!(server = %pending.server, "sign-in callback from an unexpected issuer refused");
                return Err(CallbackError::IssuerMismatch);
            }
        }
        let code = params
            .code
            .filter(|c| !c.is_empty())
            .ok_or(CallbackError::MissingCode)?;
        let global = self.inner.services.backend(&pending.server);
        let client = match &global {
            Some(backend) => Self::pinned_client_of(backend)
                .await
                .map_err(CallbackError::Exchange)?,
            None => None,
        };
        if client
            .as_ref()
            .is_some_and(|c| c.client_id != pending.client_id)
        {
            tracing::info!(server = %pending.server, "the server's client changed during a sign-in");
            return Err(CallbackError::Exchange(
                "the server's client changed while signing in; start the sign-in again".to_owned(),
            ));
        }
        let context = GrantContext {
            issuer: &pending.issuer,
            token_endpoint: &pending.token_endpoint,
            client_id: &pending.client_id,
            client_secret: client.as_ref().map(|c| &c.client_secret),
        };
        let grant = token::exchange_code(
            &self.inner.http,
            &context,
            &code,
            &pending.redirect_uri,
            &pending.code_verifier,
        )
        .await
        .map_err(|e| CallbackError::Exchange(e.to_string()))?;
        let owner = pending
            .grant_owner
            .clone()
            .unwrap_or_else(|| pending.session.clone());
        self.inner
            .grants
            .put_grant(&owner, grant.clone())
            .await
            .map_err(|e| CallbackError::Store(e.to_string()))?;
        tracing::info!(server = %pending.server, issuer = %pending.issuer, "sign-in completed");
        let session = SessionId::new(pending.session.as_str());
        let connected = match global {
            Some(global) => match self
                .connect_session(&session, &owner, &global, &grant)
                .await
            {
                Ok(_) => true,
                Err(e) => {
                    tracing::info!(server = %pending.server, error = %e, "connecting after sign-in failed");
                    false
                }
            },
            None => false,
        };
        Ok(SignedIn {
            server: pending.server,
            connected,
        })
    }
}
