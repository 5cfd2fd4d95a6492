//! [`PendingSignIn`]: a sign-in started and not finished yet.

use chrono::{DateTime, Utc};
use secrecy::SecretString;

use super::{AuthStoreError, SessionKey};

/// What muster remembers between `core_auth_login` and the authorization server's redirect
/// to its callback, found again by the OAuth `state`. `Debug` never shows the verifier.
#[derive(Clone)]
pub struct PendingSignIn {
    /// The session that started the sign-in; it is connected once the sign-in completes.
    pub session: SessionKey,
    /// The key the grant is filed under: the person's for a server with
    /// `grantScope: subject`, `None` for the session's own grant (`grantScope: session`).
    pub grant_owner: Option<SessionKey>,
    /// The MCP server the sign-in was started for.
    pub server: String,
    /// The issuer the grant is filed under.
    pub issuer: String,
    /// The `iss` the authorization response must carry when it carries one (RFC 9207).
    pub expected_issuer: String,
    /// Where the browser is sent: the authorization endpoint with every parameter.
    pub authorization_url: String,
    /// The token endpoint the code is exchanged at.
    pub token_endpoint: String,
    /// The client id of the request.
    pub client_id: String,
    /// The `redirect_uri` of the request, sent again with the code.
    pub redirect_uri: String,
    /// The PKCE code verifier.
    pub code_verifier: SecretString,
    /// When the sign-in stops being accepted.
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for PendingSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSignIn")
            .field("session", &self.session)
            .field("grant_owner", &self.grant_owner)
            .field("server", &self.server)
            .field("issuer", &self.issuer)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Where pending sign-ins live, keyed by their OAuth `state`.
#[async_trait::async_trait]
pub trait PendingSignInStore: Send + Sync + std::fmt::Debug {
    /// Remembers `pending` under `state`.
    async fn put_pending(&self, state: &str, pending: PendingSignIn) -> Result<(), AuthStoreError>;

    /// The pending sign-in of `state`, left in place (for the start redirect). Expired ones
    /// are absent.
    async fn pending(&self, state: &str) -> Result<Option<PendingSignIn>, AuthStoreError>;

    /// Removes and returns the pending sign-in of `state`: a `state` is accepted once.
    async fn take_pending(&self, state: &str) -> Result<Option<PendingSignIn>, AuthStoreError>;
}
