//! [`MemoryAuthStore`]: grants and pending sign-ins in process memory, bounded, each entry
//! with a time to live.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};

use super::{AuthStoreError, Grant, GrantStore, PendingSignIn, PendingSignInStore, SessionKey};

/// Bounds of a [`MemoryAuthStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthStoreLimits {
    /// Pending sign-ins held at once (default 10 000); the oldest is dropped for a new one.
    pub max_pending: usize,
    /// Sessions holding grants at once (default 10 000); the least recently used session's
    /// grants are dropped for a new one.
    pub max_sessions: usize,
    /// Grants one session holds (default 64, one per issuer); more are refused.
    pub max_grants_per_session: usize,
    /// How long a session's grants live without being used (default 30 days).
    pub grant_idle_ttl: chrono::Duration,
}

impl Default for AuthStoreLimits {
    fn default() -> Self {
        Self {
            max_pending: 10_000,
            max_sessions: 10_000,
            max_grants_per_session: 64,
            grant_idle_ttl: chrono::Duration::days(30),
        }
    }
}

/// Grants and pending sign-ins in memory. State is lost on restart and not shared between
/// replicas.
#[derive(Debug, Default)]
pub struct MemoryAuthStore {
    limits: AuthStoreLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<String, PendingSignIn>,
    sessions: HashMap<SessionKey, SessionGrants>,
}

#[derive(Debug)]
struct SessionGrants {
    grants: HashMap<String, Grant>,
    last_used: DateTime<Utc>,
}

impl MemoryAuthStore {
    /// An empty store with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with `limits`.
    pub fn with_limits(limits: AuthStoreLimits) -> Self {
        Self {
            limits,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops expired pending sign-ins and idle sessions.
    fn expire(&self, state: &mut State, now: DateTime<Utc>) {
        state.pending.retain(|_, p| p.expires_at > now);
        let ttl = self.limits.grant_idle_ttl;
        state.sessions.retain(|_, s| s.last_used + ttl > now);
    }
}

#[async_trait::async_trait]
impl PendingSignInStore for MemoryAuthStore {
    async fn put_pending(
        &self,
        state_value: &str,
        pending: PendingSignIn,
    ) -> Result<(), AuthStoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        self.expire(&mut state, now);
        if self.limits.max_pending == 0 {
            return Err(AuthStoreError::Full(
                "no pending sign-ins allowed".to_owned(),
            ));
        }
        while state.pending.len() >= self.limits.max_pending {
            let Some(oldest) = state
                .pending
                .iter()
                .min_by_key(|(_, p)| p.expires_at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            state.pending.remove(&oldest);
        }
        state.pending.insert(state_value.to_owned(), pending);
        Ok(())
    }

    async fn pending(&self, state_value: &str) -> Result<Option<PendingSignIn>, AuthStoreError> {
        let now = Utc::now();
        let state = self.lock();
        Ok(state
            .pending
            .get(state_value)
            .filter(|p| p.expires_at > now)
            .cloned())
    }

    async fn take_pending(
        &self,
        state_value: &str,
    ) -> Result<Option<PendingSignIn>, AuthStoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        Ok(state
            .pending
            .remove(state_value)
            .filter(|p| p.expires_at > now))
    }
}

#[async_trait::async_trait]
impl GrantStore for MemoryAuthStore {
    async fn grant(
        &self,
        session: &SessionKey,
        issuer: &str,
    ) -> Result<Option<Grant>, AuthStoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        self.expire(&mut state, now);
        Ok(state.sessions.get_mut(session).and_then(|s| {
            s.last_used = now;
            s.grants.get(issuer).cloned()
        }))
    }

    async fn put_grant(&self, session: &SessionKey, grant: Grant) -> Result<(), AuthStoreError> {
        let now = Utc::now();
        let mut state = self.lock();
        self.expire(&mut state, now);
        if !state.sessions.contains_key(session) {
            if self.limits.max_sessions == 0 {
                return Err(AuthStoreError::Full("no sessions allowed".to_owned()));
            }
            while state.sessions.len() >= self.limits.max_sessions {
                let Some(idle) = state
                    .sessions
                    .iter()
                    .min_by_key(|(_, s)| s.last_used)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                state.sessions.remove(&idle);
            }
        }
        let entry = state
            .sessions
            .entry(session.clone())
            .or_insert_with(|| SessionGrants {
                grants: HashMap::new(),
                last_used: now,
            });
        if !entry.grants.contains_key(&grant.issuer)
            && entry.grants.len() >= self.limits.max_grants_per_session
        {
            return Err(AuthStoreError::Full(format!(
                "a session holds at most {} grants",
                self.limits.max_grants_per_session
            )));
        }
        entry.last_used = now;
        entry.grants.insert(grant.issuer.clone(), grant);
        Ok(())
    }

    async fn remove_grant(
        &self,
        session: &SessionKey,
        issuer: &str,
    ) -> Result<bool, AuthStoreError> {
        let mut state = self.lock();
        let Some(entry) = state.sessions.get_mut(session) else {
            return Ok(false);
        };
        let removed = entry.grants.remove(issuer).is_some();
        if entry.grants.is_empty() {
            state.sessions.remove(session);
        }
        Ok(removed)
    }

    async fn remove_session(&self, session: &SessionKey) -> Result<usize, AuthStoreError> {
        let mut state = self.lock();
        Ok(state.sessions.remove(session).map_or(0, |s| s.grants.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::{ExposeSecret, SecretString};

    fn grant(issuer: &str, token: &str) -> Grant {
        Grant {
            issuer: issuer.to_owned(),
            access_token: SecretString::from(token.to_owned()),
            refresh_token: None,
            scope: None,
            expires_at: None,
            token_endpoint: format!("{issuer}/token"),
            client_id: "c".to_owned(),
            obtained_at: Utc::now(),
        }
    }

    fn pending(session: &str, ttl: chrono::Duration) -> PendingSignIn {
        PendingSignIn {
            session: SessionKey::new(session),
            grant_owner: None,
            server: "s".to_owned(),
            issuer: "https://idp".to_owned(),
            expected_issuer: "https://idp".to_owned(),
            authorization_url: "https://idp/authorize".to_owned(),
            token_endpoint: "https://idp/token".to_owned(),
            client_id: "c".to_owned(),
            redirect_uri: "http://localhost/cb".to_owned(),
            code_verifier: SecretString::from("v".repeat(43)),
            expires_at: Utc::now() + ttl,
        }
    }

    #[tokio::test]
    async fn grants_are_per_session_and_issuer() {
        let store = MemoryAuthStore::new();
        let (a, b) = (SessionKey::new("a"), SessionKey::new("b"));
        store
            .put_grant(&a, grant("https://idp", "tok-a"))
            .await
            .unwrap();
        let got = store.grant(&a, "https://idp").await.unwrap().unwrap();
        assert_eq!(got.access_token.expose_secret(), "tok-a");
        assert!(store.grant(&b, "https://idp").await.unwrap().is_none());
        assert!(store.grant(&a, "https://other").await.unwrap().is_none());
        assert!(store.remove_grant(&a, "https://idp").await.unwrap());
        assert!(store.grant(&a, "https://idp").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_state_is_taken_once_and_expires() {
        let store = MemoryAuthStore::new();
        store
            .put_pending("st", pending("a", chrono::Duration::minutes(5)))
            .await
            .unwrap();
        assert!(store.pending("st").await.unwrap().is_some());
        assert!(store.take_pending("st").await.unwrap().is_some());
        assert!(store.take_pending("st").await.unwrap().is_none());
        store
            .put_pending("old", pending("a", chrono::Duration::seconds(-1)))
            .await
            .unwrap();
        assert!(store.take_pending("old").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn bounds_hold() {
        let limits = AuthStoreLimits {
            max_pending: 2,
            max_sessions: 1,
            max_grants_per_session: 1,
            ..AuthStoreLimits::default()
        };
        let store = MemoryAuthStore::with_limits(limits);
        for s in ["1", "2", "3"] {
            store
                .put_pending(s, pending("a", chrono::Duration::minutes(5)))
                .await
                .unwrap();
        }
        assert_eq!(store.lock().pending.len(), 2);
        let a = SessionKey::new("a");
        store
            .put_grant(&a, grant("https://one", "t"))
            .await
            .unwrap();
        assert!(matches!(
            store.put_grant(&a, grant("https://two", "t")).await,
            Err(AuthStoreError::Full(_))
        ));
        let b = SessionKey::new("b");
        store
            .put_grant(&b, grant("https://one", "t"))
            .await
            .unwrap();
        assert!(store.grant(&a, "https://one").await.unwrap().is_none());
    }

    #[test]
    fn debug_shows_no_secret() {
        let text = format!(
            "{:?} {:?}",
            grant("https://i", "tok-secret"),
            pending("sess-long-id-123", chrono::Duration::minutes(1))
        );
        assert!(!text.contains("tok-secret"), "{text}");
        assert!(!text.contains("vvvv"), "{text}");
        assert!(!text.contains("sess-long-id-123"), "{text}");
    }
}
