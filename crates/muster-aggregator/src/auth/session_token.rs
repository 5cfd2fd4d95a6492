//! The access token of one session at one issuer, as a backend's [`BearerSource`]:
//! refreshed shortly before it expires and after the server refused it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use http::{HeaderName, HeaderValue};
use muster_core::auth::{Grant, GrantStore, SessionKey};
use muster_core::secret::{ExposeSecret, Redactor, SecretString};

use super::caller_token::ForwardedToken;
use super::{BackendAuth, token};
use crate::backend::BearerSource;

/// The grant of `session` at `issuer`, read from the store on every request.
#[derive(Debug)]
pub(crate) struct SessionToken {
    pub(crate) grants: Arc<dyn GrantStore>,
    /// Whom the grant belongs to: the session, or its person (`grantScope: subject`).
    pub(crate) session: SessionKey,
    pub(crate) issuer: String,
    /// The server the token is for: a refresh reads its pinned client (if any) then.
    pub(crate) server: String,
    pub(crate) services: crate::services::Services,
    pub(crate) http: reqwest::Client,
    pub(crate) margin: Duration,
    /// The connection's redactor, set once it exists: every token is added, so the
    /// connection's errors never show one.
    pub(crate) redactor: std::sync::OnceLock<Redactor>,
    /// The caller's ID token the session forwards in `X-Muster-Id-Token`, for a server with
    /// `spec.auth.forwardIdentity`; followed as the caller's token is refreshed.
    pub(crate) identity: Option<Arc<ForwardedToken>>,
    /// One refresh of the grant at a time, across every connection using it (the sessions
    /// of one person share a subject grant): concurrent requests wait and use its result,
    /// so a rotating refresh token is never sent twice.
    pub(crate) refreshing: Arc<tokio::sync::Mutex<()>>,
}

impl SessionToken {
    async fn grant(&self) -> Option<Grant> {
        match self.grants.grant(&self.session, &self.issuer).await {
            Ok(grant) => grant,
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "reading the session's grant failed");
                None
            }
        }
    }

    /// Refreshes the stored grant unless another request did since `seen` was read.
    async fn refresh_from(&self, seen: &SecretString) -> Option<Grant> {
        let _one = self.refreshing.lock().await;
        let current = self.grant().await?;
        if current.access_token.expose_secret() != seen.expose_secret() {
            return Some(current);
        }
        current.refresh_token.as_ref()?;
        let client = match self.services.backend(&self.server) {
            Some(backend) => match BackendAuth::pinned_client_of(&backend).await {
                Ok(client) => client,
                Err(e) => {
                    tracing::info!(issuer = %self.issuer, error = %e, "reading the server's client for a refresh failed");
                    return None;
                }
            },
            None => None,
        };
        // A client other than the grant's (changed since the sign-in) cannot refresh it.
        let secret = client
            .as_ref()
            .filter(|c| c.client_id == current.client_id)
            .map(|c| &c.client_secret);
        match token::refresh(&self.http, &current, secret).await {
            Ok(fresh) => {
                if let Some(redactor) = self.redactor.get() {
                    redactor.add(fresh.access_token.expose_secret());
                }
                if let Err(e) = self.grants.put_grant(&self.session, fresh.clone()).await {
                    tracing::warn!(issuer = %self.issuer, error = %e, "storing a refreshed grant failed");
                }
                tracing::debug!(issuer = %self.issuer, "access token refreshed");
                Some(fresh)
            }
            Err(e) => {
                tracing::info!(issuer = %self.issuer, error = %e, "refreshing the access token failed");
                None
            }
        }
    }
}

impl BearerSource for SessionToken {
    fn token(&self) -> BoxFuture<'_, Option<SecretString>> {
        Box::pin(async move {
            let grant = self.grant().await?;
            let margin = chrono::Duration::from_std(self.margin).unwrap_or_default();
            if grant.refresh_token.is_some()
                && grant.expires_within(Utc::now(), margin)
                && let Some(fresh) = self.refresh_from(&grant.access_token).await
            {
                return Some(fresh.access_token);
            }
            Some(grant.access_token)
        })
    }

    fn refresh(&self, rejected: SecretString) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            self.refresh_from(&rejected)
                .await
                .is_some_and(|g| g.access_token.expose_secret() != rejected.expose_secret())
        })
    }

    fn companion_headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        let Some(identity) = &self.identity else {
            return Vec::new();
        };
        match HeaderValue::from_str(identity.current().expose_secret()) {
            Ok(mut value) => {
                value.set_sensitive(true);
                vec![(HeaderName::from_static(ID_TOKEN_HEADER), value)]
            }
            Err(_) => Vec::new(),
        }
    }
}

/// The header a `forwardIdentity` server receives the session's ID token in.
pub(crate) const ID_TOKEN_HEADER: &str = "x-muster-id-token";

/// The lock one grant's refreshes take.
type RefreshLock = tokio::sync::Mutex<()>;

/// The refresh locks of the grants in use, one per (owner, issuer), held by the connections
/// that use the grant and dropped with the last of them.
#[derive(Debug, Default)]
pub(crate) struct RefreshLocks {
    locks: Mutex<HashMap<(SessionKey, String), Weak<RefreshLock>>>,
}

impl RefreshLocks {
    /// The refresh lock of the grant of `owner` at `issuer`.
    pub(crate) fn lock_of(&self, owner: &SessionKey, issuer: &str) -> Arc<RefreshLock> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (owner.clone(), issuer.to_owned());
        if let Some(lock) = locks.get(&key).and_then(Weak::upgrade) {
            return lock;
        }
        locks.retain(|_, lock| lock.strong_count() > 0);
        let lock = Arc::new(RefreshLock::new(()));
        locks.insert(key, Arc::downgrade(&lock));
        lock
    }
}
