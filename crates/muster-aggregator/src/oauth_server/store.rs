//! What the OAuth server remembers: registered clients, pending sign-ins at the provider,
//! authorization codes, and refresh-token families with their access tokens.
//!
//! Tokens, codes and `state` values are kept only as digests. Every map is bounded; expired
//! entries are dropped as new ones come in. [`GrantStore`] is the seam for stores shared by
//! replicas; [`MemoryGrantStore`] keeps everything in the process, and `ValkeyGrantStore`
//! (feature `valkey`) in Valkey or Redis, where `ValkeySignInStore` keeps the sign-ins of
//! muster's sessions to protected MCP servers too, on the same connection.

#[cfg(feature = "valkey")]
pub(crate) mod connection;
#[cfg(feature = "valkey")]
pub(crate) mod sealed;
#[cfg(feature = "valkey")]
pub(crate) mod sign_ins;
#[cfg(feature = "valkey")]
pub(crate) mod valkey;

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::SystemTime;

use axum::http::StatusCode;
use muster_core::secret::SecretString;
use serde::{Deserialize, Serialize};

use super::error::OAuthError;
use super::upstream::UpstreamTokens;

/// Most registered clients kept.
const MAX_CLIENTS: usize = 10_000;
/// Most sign-ins waiting for the provider, and most unredeemed codes.
const MAX_PENDING: usize = 10_000;
/// Most refresh-token families (signed-in sessions).
const MAX_FAMILIES: usize = 100_000;
/// Most access tokens alive at once.
const MAX_ACCESS_TOKENS: usize = 400_000;
/// How many rotated refresh tokens of a family are remembered to detect reuse.
const USED_REFRESH_KEPT: usize = 32;

/// A client registered with `POST /oauth/register` or described by a metadata document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Client {
    pub(crate) id: String,
    /// Digest of the client secret of a confidential client.
    pub(crate) secret_digest: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
}

/// A sign-in sent to the provider, waiting for its callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PendingSignIn {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    pub(crate) client_state: Option<String>,
    pub(crate) code_challenge: String,
    pub(crate) scope: String,
    pub(crate) resource: String,
    #[serde(with = "super::exposed")]
    pub(crate) upstream_verifier: SecretString,
    pub(crate) nonce: String,
    pub(crate) expires: SystemTime,
}

/// Who signed in, and the provider's tokens of the sign-in.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) client_id: String,
    pub(crate) scope: String,
    pub(crate) resource: String,
    pub(crate) issuer: String,
    pub(crate) subject: String,
    pub(crate) email: Option<String>,
    pub(crate) upstream: UpstreamTokens,
}

/// An authorization code muster issued, waiting to be redeemed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IssuedCode {
    pub(crate) grant: Grant,
    pub(crate) redirect_uri: String,
    pub(crate) code_challenge: String,
    pub(crate) expires: SystemTime,
}

/// A refresh-token family: one sign-in, refreshed any number of times.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Family {
    pub(crate) id: String,
    pub(crate) grant: Grant,
    /// Rolling: moved forward by every refresh.
    pub(crate) expires: SystemTime,
}

/// What presenting a refresh token found.
#[derive(Debug, Clone)]
pub(crate) enum RefreshUse {
    /// The family's current refresh token.
    Current(Box<Family>),
    /// A refresh token of the family that was already rotated: a replay.
    Replayed(String),
    /// Not a refresh token muster knows (or its family is gone).
    Unknown,
}

/// Why the store could not do what was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum StoreError {
    /// The store was full.
    #[error("the OAuth store is full; try again later")]
    Full,
    /// The shared store could not be reached or refused the operation. The text names the
    /// store's address without credentials.
    #[error("the OAuth store is unavailable ({0}); try again later")]
    Unavailable(String),
}

/// What a store operation gives.
pub(crate) type StoreResult<T> = Result<T, StoreError>;

impl From<StoreError> for OAuthError {
    fn from(error: StoreError) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            error.to_string(),
        )
    }
}

/// Where the OAuth server keeps its state.
#[async_trait::async_trait]
pub(crate) trait GrantStore: Send + Sync + std::fmt::Debug {
    async fn put_client(&self, client: Client) -> StoreResult<()>;
    async fn client(&self, id: &str) -> StoreResult<Option<Client>>;
    async fn put_pending(&self, state: String, pending: PendingSignIn) -> StoreResult<()>;
    /// Removes and returns the pending sign-in of a `state` digest (single use).
    async fn take_pending(&self, state: &str) -> StoreResult<Option<PendingSignIn>>;
    async fn put_code(&self, code: String, issued: IssuedCode) -> StoreResult<()>;
    /// Removes and returns the code of a digest (single use).
    async fn take_code(&self, code: &str) -> StoreResult<Option<IssuedCode>>;
    /// Starts a family whose current refresh token has digest `refresh`.
    async fn start_family(&self, family: Family, refresh: String) -> StoreResult<()>;
    /// Makes `new_refresh` the family's current refresh token, remembering the old one as
    /// used, and stores `grant` and the new expiry.
    async fn rotate(
        &self,
        id: &str,
        new_refresh: String,
        grant: Grant,
        expires: SystemTime,
    ) -> StoreResult<()>;
    async fn use_refresh(&self, refresh: &str) -> StoreResult<RefreshUse>;
    async fn family(&self, id: &str) -> StoreResult<Option<Family>>;
    /// Ends a family: every refresh and access token of it stops working.
    async fn revoke_family(&self, id: &str) -> StoreResult<()>;
    async fn put_access(
        &self,
        access: String,
        family: &str,
        expires: SystemTime,
    ) -> StoreResult<()>;
    /// The family of a live access token digest.
    async fn access(&self, access: &str) -> StoreResult<Option<Family>>;
    async fn revoke_access(&self, access: &str) -> StoreResult<()>;
}

#[derive(Debug, Default)]
struct State {
    clients: HashMap<String, Client>,
    pending: HashMap<String, PendingSignIn>,
    codes: HashMap<String, IssuedCode>,
    families: HashMap<String, FamilyEntry>,
    refresh_index: HashMap<String, String>,
    access: HashMap<String, (String, SystemTime)>,
}

#[derive(Debug)]
struct FamilyEntry {
    family: Family,
    current_refresh: String,
    used_refresh: VecDeque<String>,
}

/// A [`GrantStore`] in the process's memory.
#[derive(Debug, Default)]
pub(crate) struct MemoryGrantStore {
    state: Mutex<State>,
}

impl MemoryGrantStore {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    fn purge(&mut self, now: SystemTime) {
        self.pending.retain(|_, p| p.expires > now);
        self.codes.retain(|_, c| c.expires > now);
        let mut gone = Vec::new();
        self.families.retain(|id, f| {
            let live = f.family.expires > now;
            if !live {
                gone.push(id.clone());
            }
            live
        });
        for id in &gone {
            self.drop_family_tokens(id);
        }
        let families = &self.families;
        self.access
            .retain(|_, (family, expires)| *expires > now && families.contains_key(family));
    }

    fn drop_family_tokens(&mut self, id: &str) {
        self.refresh_index.retain(|_, family| family != id);
        self.access.retain(|_, (family, _)| family != id);
    }

    fn live_family(&self, id: &str, now: SystemTime) -> Option<&FamilyEntry> {
        self.families.get(id).filter(|f| f.family.expires > now)
    }
}

fn room<K, V>(map: &HashMap<K, V>, max: usize) -> StoreResult<()> {
    if map.len() >= max {
        Err(StoreError::Full)
    } else {
        Ok(())
    }
}

#[async_trait::async_trait]
impl GrantStore for MemoryGrantStore {
    async fn put_client(&self, client: Client) -> StoreResult<()> {
        let mut state = self.state();
        if !state.clients.contains_key(&client.id) {
            room(&state.clients, MAX_CLIENTS)?;
        }
        state.clients.insert(client.id.clone(), client);
        Ok(())
    }

    async fn client(&self, id: &str) -> StoreResult<Option<Client>> {
        Ok(self.state().clients.get(id).cloned())
    }

    async fn put_pending(&self, key: String, pending: PendingSignIn) -> StoreResult<()> {
        let mut state = self.state();
        if state.pending.len() >= MAX_PENDING {
            state.purge(SystemTime::now());
        }
        room(&state.pending, MAX_PENDING)?;
        state.pending.insert(key, pending);
        Ok(())
    }

    async fn take_pending(&self, key: &str) -> StoreResult<Option<PendingSignIn>> {
        Ok(self
            .state()
            .pending
            .remove(key)
            .filter(|p| p.expires > SystemTime::now()))
    }

    async fn put_code(&self, key: String, issued: IssuedCode) -> StoreResult<()> {
        let mut state = self.state();
        if state.codes.len() >= MAX_PENDING {
            state.purge(SystemTime::now());
        }
        room(&state.codes, MAX_PENDING)?;
        state.codes.insert(key, issued);
        Ok(())
    }

    async fn take_code(&self, key: &str) -> StoreResult<Option<IssuedCode>> {
        Ok(self
            .state()
            .codes
            .remove(key)
            .filter(|c| c.expires > SystemTime::now()))
    }

    async fn start_family(&self, family: Family, refresh: String) -> StoreResult<()> {
        let mut state = self.state();
        if state.families.len() >= MAX_FAMILIES {
            state.purge(SystemTime::now());
        }
        room(&state.families, MAX_FAMILIES)?;
        state
            .refresh_index
            .insert(refresh.clone(), family.id.clone());
        state.families.insert(
            family.id.clone(),
            FamilyEntry {
                family,
                current_refresh: refresh,
                used_refresh: VecDeque::new(),
            },
        );
        Ok(())
    }

    async fn rotate(
        &self,
        id: &str,
        new_refresh: String,
        grant: Grant,
        expires: SystemTime,
    ) -> StoreResult<()> {
        let mut state = self.state();
        let Some(entry) = state.families.get_mut(id) else {
            return Ok(());
        };
        let old = std::mem::replace(&mut entry.current_refresh, new_refresh.clone());
        entry.used_refresh.push_back(old);
        let evicted = if entry.used_refresh.len() > USED_REFRESH_KEPT {
            entry.used_refresh.pop_front()
        } else {
            None
        };
        entry.family.grant = grant;
        entry.family.expires = expires;
        if let Some(evicted) = evicted {
            state.refresh_index.remove(&evicted);
        }
        state.refresh_index.insert(new_refresh, id.to_owned());
        Ok(())
    }

    async fn use_refresh(&self, refresh: &str) -> StoreResult<RefreshUse> {
        let state = self.state();
        let Some(id) = state.refresh_index.get(refresh) else {
            return Ok(RefreshUse::Unknown);
        };
        let Some(entry) = state.live_family(id, SystemTime::now()) else {
            return Ok(RefreshUse::Unknown);
        };
        Ok(if entry.current_refresh == refresh {
            RefreshUse::Current(Box::new(entry.family.clone()))
        } else {
            RefreshUse::Replayed(id.clone())
        })
    }

    async fn family(&self, id: &str) -> StoreResult<Option<Family>> {
        Ok(self
            .state()
            .live_family(id, SystemTime::now())
            .map(|e| e.family.clone()))
    }

    async fn revoke_family(&self, id: &str) -> StoreResult<()> {
        let mut state = self.state();
        state.families.remove(id);
        state.drop_family_tokens(id);
        Ok(())
    }

    async fn put_access(&self, key: String, family: &str, expires: SystemTime) -> StoreResult<()> {
        let mut state = self.state();
        if state.access.len() >= MAX_ACCESS_TOKENS {
            state.purge(SystemTime::now());
        }
        room(&state.access, MAX_ACCESS_TOKENS)?;
        state.access.insert(key, (family.to_owned(), expires));
        Ok(())
    }

    async fn access(&self, key: &str) -> StoreResult<Option<Family>> {
        let now = SystemTime::now();
        let state = self.state();
        let Some((family, expires)) = state.access.get(key) else {
            return Ok(None);
        };
        if *expires <= now {
            return Ok(None);
        }
        Ok(state.live_family(family, now).map(|e| e.family.clone()))
    }

    async fn revoke_access(&self, key: &str) -> StoreResult<()> {
        self.state().access.remove(key);
        Ok(())
    }
}

/// What every [`GrantStore`] must do, run against each implementation.
#[cfg(test)]
pub(crate) mod contract {
    use std::time::Duration;

    use super::*;

    /// A grant of `alice`, for store tests.
    pub(crate) fn grant() -> Grant {
        Grant {
            client_id: "c".into(),
            scope: String::new(),
            resource: "https://m".into(),
            issuer: "https://idp".into(),
            subject: "alice".into(),
            email: None,
            upstream: UpstreamTokens {
                access_token: SecretString::from("up".to_owned()),
                refresh_token: None,
                id_token: None,
                expires_at: None,
            },
        }
    }

    /// Refresh rotation, replay detection and revocation of a family.
    pub(crate) async fn rotation_and_replay(store: &dyn GrantStore) {
        let later = SystemTime::now() + Duration::from_secs(60);
        let family = Family {
            id: "f".into(),
            grant: grant(),
            expires: later,
        };
        store.start_family(family, "r1".into()).await.unwrap();
        store.put_access("a1".into(), "f", later).await.unwrap();
        assert!(matches!(
            store.use_refresh("r1").await.unwrap(),
            RefreshUse::Current(_)
        ));
        store
            .rotate("f", "r2".into(), grant(), later)
            .await
            .unwrap();
        assert!(
            matches!(store.use_refresh("r1").await.unwrap(), RefreshUse::Replayed(ref id) if id == "f")
        );
        assert!(matches!(
            store.use_refresh("r2").await.unwrap(),
            RefreshUse::Current(_)
        ));
        let family = store
            .access("a1")
            .await
            .unwrap()
            .expect("live access token");
        assert_eq!(family.grant.subject, "alice");
        assert!(store.family("f").await.unwrap().is_some());
        store.revoke_access("a1").await.unwrap();
        assert!(store.access("a1").await.unwrap().is_none());
        store.put_access("a2".into(), "f", later).await.unwrap();
        store.revoke_family("f").await.unwrap();
        assert!(store.access("a2").await.unwrap().is_none());
        assert!(store.family("f").await.unwrap().is_none());
        assert!(matches!(
            store.use_refresh("r2").await.unwrap(),
            RefreshUse::Unknown
        ));
        assert!(matches!(
            store.use_refresh("never").await.unwrap(),
            RefreshUse::Unknown
        ));
    }

    /// Codes and pending sign-ins are single use and expire; clients are kept.
    pub(crate) async fn single_use_and_expiry(store: &dyn GrantStore) {
        let issued = IssuedCode {
            grant: grant(),
            redirect_uri: "http://localhost/cb".into(),
            code_challenge: "x".into(),
            expires: SystemTime::now() + Duration::from_secs(60),
        };
        store.put_code("c1".into(), issued.clone()).await.unwrap();
        let taken = store.take_code("c1").await.unwrap().expect("code once");
        assert_eq!(taken.redirect_uri, "http://localhost/cb");
        assert!(store.take_code("c1").await.unwrap().is_none());
        let expired = IssuedCode {
            expires: SystemTime::now() - Duration::from_secs(1),
            ..issued
        };
        store.put_code("c2".into(), expired).await.unwrap();
        assert!(store.take_code("c2").await.unwrap().is_none());

        let pending = PendingSignIn {
            client_id: "c".into(),
            redirect_uri: "http://localhost/cb".into(),
            client_state: Some("s".into()),
            code_challenge: "x".into(),
            scope: "openid".into(),
            resource: "https://m".into(),
            upstream_verifier: SecretString::from("verifier".to_owned()),
            nonce: "n".into(),
            expires: SystemTime::now() + Duration::from_secs(60),
        };
        store.put_pending("p1".into(), pending).await.unwrap();
        let taken = store
            .take_pending("p1")
            .await
            .unwrap()
            .expect("pending once");
        assert_eq!(
            muster_core::secret::ExposeSecret::expose_secret(&taken.upstream_verifier),
            "verifier"
        );
        assert!(store.take_pending("p1").await.unwrap().is_none());

        let client = Client {
            id: "client-1".into(),
            secret_digest: None,
            redirect_uris: vec!["http://localhost/cb".into()],
        };
        store.put_client(client).await.unwrap();
        let found = store
            .client("client-1")
            .await
            .unwrap()
            .expect("client kept");
        assert_eq!(found.redirect_uris, ["http://localhost/cb"]);
        assert!(store.client("other").await.unwrap().is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rotation_and_replay() {
        contract::rotation_and_replay(&MemoryGrantStore::default()).await;
    }

    #[tokio::test]
    async fn single_use_and_expiry() {
        contract::single_use_and_expiry(&MemoryGrantStore::default()).await;
    }
}
