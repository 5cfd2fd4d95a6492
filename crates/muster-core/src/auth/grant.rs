//! [`Grant`]: the tokens of one session at one authorization server.

use chrono::{DateTime, Utc};
use secrecy::SecretString;

use super::{AuthStoreError, SessionKey};

/// Tokens a session obtained from the authorization server `issuer`, with what is needed to
/// refresh them. `Debug` never shows a token.
#[derive(Clone)]
pub struct Grant {
    /// The issuer the grant is filed under.
    pub issuer: String,
    /// The access token sent as `Authorization: Bearer`.
    pub access_token: SecretString,
    /// The refresh token, when the server issued one.
    pub refresh_token: Option<SecretString>,
    /// The scope granted, as the server reported it.
    pub scope: Option<String>,
    /// When the access token expires, when the server said.
    pub expires_at: Option<DateTime<Utc>>,
    /// The token endpoint refreshes go to.
    pub token_endpoint: String,
    /// The client id the grant was obtained with.
    pub client_id: String,
    /// When the grant was obtained or last refreshed.
    pub obtained_at: DateTime<Utc>,
}

impl Grant {
    /// Whether the access token expires within `margin` of `now` (or has expired).
    pub fn expires_within(&self, now: DateTime<Utc>, margin: chrono::Duration) -> bool {
        self.expires_at.is_some_and(|at| at - margin <= now)
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("issuer", &self.issuer)
            .field("scope", &self.scope)
            .field("expires_at", &self.expires_at)
            .field("has_refresh_token", &self.refresh_token.is_some())
            .finish_non_exhaustive()
    }
}

/// Where grants live, keyed by (session, issuer).
#[async_trait::async_trait]
pub trait GrantStore: Send + Sync + std::fmt::Debug {
    /// The grant of `session` at `issuer`.
    async fn grant(
        &self,
        session: &SessionKey,
        issuer: &str,
    ) -> Result<Option<Grant>, AuthStoreError>;

    /// Stores (or replaces) the grant of `session` at `grant.issuer`.
    async fn put_grant(&self, session: &SessionKey, grant: Grant) -> Result<(), AuthStoreError>;

    /// Drops the grant of `session` at `issuer`; whether there was one.
    async fn remove_grant(
        &self,
        session: &SessionKey,
        issuer: &str,
    ) -> Result<bool, AuthStoreError>;

    /// Drops every grant of `session` (its sign-out of muster); how many there were.
    async fn remove_session(&self, session: &SessionKey) -> Result<usize, AuthStoreError>;
}
