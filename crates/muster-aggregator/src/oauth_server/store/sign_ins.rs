//! The sign-ins of muster's sessions to OAuth-protected MCP servers (`core_auth_login`) in
//! the Valkey of the OAuth server's storage, so a sign-in started at one replica finishes at
//! any other, and every replica uses the tokens any of them obtained.
//!
//! Keys, under the configured prefix (default `muster:`):
//!
//! | key | value | lifetime |
//! | --- | --- | --- |
//! | `auth:pending:<digest of state>` | a started sign-in, with its PKCE verifier | until it expires; taken once |
//! | `auth:grant:<digest of session>:<digest of issuer>` | the session's tokens at that issuer | `grant_idle_ttl` (30 days) without use |
//! | `auth:session:<digest of session>` | set of the issuer digests of the session's grants | the same |
//!
//! `state` values, session keys and issuers appear only as SHA-256 digests. Values are
//! sealed with AES-256-GCM when an encryption key is configured, bound to their key. Reading
//! any grant of a session, or storing one, renews every grant of that session (as the
//! memory store keeps a session's grants by its last use). A session holds at most
//! `max_grants_per_session` grants, checked in the same script that stores one, so replicas
//! storing at once cannot exceed it. Pending sign-ins and sessions are bounded by their
//! lifetime rather than by count.

use chrono::{DateTime, Utc};
use muster_core::auth::{
    AuthStoreError, AuthStoreLimits, Grant, GrantStore, PendingSignIn, PendingSignInStore,
    SessionKey,
};
use muster_core::secret::SecretString;
use redis::{AsyncCommands as _, Script};
use serde::{Deserialize, Serialize};

use super::super::secrets::digest;
use super::connection::{EntryError, Valkey};

/// Reads a grant and renews every grant of its session. KEYS: grant, session set. ARGV:
/// idle lifetime (ms), prefix of the session's grant keys.
const READ_GRANT: &str = r"
local value = redis.call('GET', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  for _, issuer in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    redis.call('PEXPIRE', ARGV[2] .. issuer, ARGV[1])
  end
end
return value
";

/// Stores a grant unless its session is full, and renews every grant of the session.
/// KEYS: grant, session set. ARGV: value, idle lifetime (ms), issuer digest, most grants per
/// session, prefix of the session's grant keys. 1 when stored, 0 when the session is full.
const PUT_GRANT: &str = r"
if redis.call('SISMEMBER', KEYS[2], ARGV[3]) == 0 then
  for _, issuer in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if redis.call('EXISTS', ARGV[5] .. issuer) == 0 then
      redis.call('SREM', KEYS[2], issuer)
    end
  end
  if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
for _, issuer in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  redis.call('PEXPIRE', ARGV[5] .. issuer, ARGV[2])
end
return 1
";

/// Drops a grant. KEYS: grant, session set. ARGV: issuer digest. How many grants were
/// dropped (0 or 1).
const REMOVE_GRANT: &str = r"
local removed = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return removed
";

/// Drops every grant of a session. KEYS: session set. ARGV: prefix of the session's grant
/// keys. How many grants were dropped.
const REMOVE_SESSION: &str = r"
local removed = 0
for _, issuer in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  removed = removed + redis.call('DEL', ARGV[1] .. issuer)
end
redis.call('DEL', KEYS[1])
return removed
";

/// A [`GrantStore`] and [`PendingSignInStore`] in Valkey or Redis.
#[derive(Clone)]
pub(crate) struct ValkeySignInStore {
    valkey: Valkey,
    /// `<key prefix>auth:`.
    prefix: String,
    limits: AuthStoreLimits,
    read_grant: Script,
    put_grant: Script,
    remove_grant: Script,
    remove_session: Script,
}

impl std::fmt::Debug for ValkeySignInStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValkeySignInStore")
            .field("address", &self.valkey.address())
            .field("prefix", &self.prefix)
            .field("sealed", &self.valkey.sealed())
            .field("limits", &self.limits)
            .finish()
    }
}

impl From<EntryError> for AuthStoreError {
    fn from(error: EntryError) -> Self {
        Self::Unavailable(error.to_string())
    }
}

impl ValkeySignInStore {
    /// The store on `valkey`, its keys under `<prefix>auth:`, bounded by `limits` (of which
    /// `max_grants_per_session` and `grant_idle_ttl` apply; `max_pending` and `max_sessions`
    /// only when 0, refusing every entry).
    pub(crate) fn on(valkey: Valkey, limits: AuthStoreLimits) -> Self {
        Self {
            prefix: format!("{}auth:", valkey.key_prefix()),
            valkey,
            limits,
            read_grant: Script::new(READ_GRANT),
            put_grant: Script::new(PUT_GRANT),
            remove_grant: Script::new(REMOVE_GRANT),
            remove_session: Script::new(REMOVE_SESSION),
        }
    }

    fn pending_key(&self, state: &str) -> String {
        format!("{}pending:{}", self.prefix, digest(state))
    }

    /// The keys of `session`: its set of issuers, and the prefix of its grant keys.
    fn session_keys(&self, session: &SessionKey) -> (String, String) {
        let session = digest(session.as_str());
        (
            format!("{}session:{session}", self.prefix),
            format!("{}grant:{session}:", self.prefix),
        )
    }

    /// How long a session's grants live without use, in milliseconds.
    fn idle_ms(&self) -> i64 {
        self.limits.grant_idle_ttl.num_milliseconds().max(1)
    }

    fn unavailable(&self, e: &redis::RedisError) -> AuthStoreError {
        self.valkey.failure(e).into()
    }

    /// The pending sign-in stored as `stored` at `key`, while it is valid.
    fn open_pending(
        &self,
        key: &str,
        stored: Option<String>,
    ) -> Result<Option<PendingSignIn>, AuthStoreError> {
        let Some(stored) = stored else {
            return Ok(None);
        };
        let pending: Option<StoredPending> = self.valkey.decode("pending sign-in", key, &stored)?;
        let now = Utc::now();
        Ok(pending
            .map(PendingSignIn::from)
            .filter(|p| p.expires_at > now))
    }
}

#[async_trait::async_trait]
impl PendingSignInStore for ValkeySignInStore {
    async fn put_pending(&self, state: &str, pending: PendingSignIn) -> Result<(), AuthStoreError> {
        if self.limits.max_pending == 0 {
            return Err(AuthStoreError::Full(
                "no pending sign-ins allowed".to_owned(),
            ));
        }
        let key = self.pending_key(state);
        let expires = pending.expires_at.timestamp_millis().max(1);
        let value = self.valkey.encode(&key, &StoredPending::from(pending))?;
        let mut c = self.valkey.connection();
        redis::cmd("SET")
            .arg(&key)
            .arg(value)
            .arg("PXAT")
            .arg(expires)
            .query_async::<()>(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))
    }

    async fn pending(&self, state: &str) -> Result<Option<PendingSignIn>, AuthStoreError> {
        let key = self.pending_key(state);
        let mut c = self.valkey.connection();
        let stored: Option<String> = c.get(&key).await.map_err(|e| self.unavailable(&e))?;
        self.open_pending(&key, stored)
    }

    async fn take_pending(&self, state: &str) -> Result<Option<PendingSignIn>, AuthStoreError> {
        let key = self.pending_key(state);
        let mut c = self.valkey.connection();
        let stored: Option<String> = c.get_del(&key).await.map_err(|e| self.unavailable(&e))?;
        self.open_pending(&key, stored)
    }
}

#[async_trait::async_trait]
impl GrantStore for ValkeySignInStore {
    async fn grant(
        &self,
        session: &SessionKey,
        issuer: &str,
    ) -> Result<Option<Grant>, AuthStoreError> {
        let (set, grants) = self.session_keys(session);
        let key = format!("{grants}{}", digest(issuer));
        let mut c = self.valkey.connection();
        let stored: Option<String> = self
            .read_grant
            .key(&key)
            .key(&set)
            .arg(self.idle_ms())
            .arg(&grants)
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))?;
        let Some(stored) = stored else {
            return Ok(None);
        };
        let grant: Option<StoredGrant> = self.valkey.decode("grant", &key, &stored)?;
        Ok(grant.map(Grant::from).filter(|g| g.issuer == issuer))
    }

    async fn put_grant(&self, session: &SessionKey, grant: Grant) -> Result<(), AuthStoreError> {
        if self.limits.max_sessions == 0 {
            return Err(AuthStoreError::Full("no sessions allowed".to_owned()));
        }
        let (set, grants) = self.session_keys(session);
        let issuer = digest(&grant.issuer);
        let key = format!("{grants}{issuer}");
        let value = self.valkey.encode(&key, &StoredGrant::from(grant))?;
        let mut c = self.valkey.connection();
        let stored: i64 = self
            .put_grant
            .key(&key)
            .key(&set)
            .arg(value)
            .arg(self.idle_ms())
            .arg(&issuer)
            .arg(self.limits.max_grants_per_session)
            .arg(&grants)
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))?;
        if stored == 1 {
            Ok(())
        } else {
            Err(AuthStoreError::Full(format!(
                "a session holds at most {} grants",
                self.limits.max_grants_per_session
            )))
        }
    }

    async fn remove_grant(
        &self,
        session: &SessionKey,
        issuer: &str,
    ) -> Result<bool, AuthStoreError> {
        let (set, grants) = self.session_keys(session);
        let issuer = digest(issuer);
        let mut c = self.valkey.connection();
        let removed: i64 = self
            .remove_grant
            .key(format!("{grants}{issuer}"))
            .key(&set)
            .arg(&issuer)
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))?;
        Ok(removed > 0)
    }

    async fn remove_session(&self, session: &SessionKey) -> Result<usize, AuthStoreError> {
        let (set, grants) = self.session_keys(session);
        let mut c = self.valkey.connection();
        let removed: u64 = self
            .remove_session
            .key(&set)
            .arg(&grants)
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}

/// A [`Grant`] as stored: the tokens written out, for sealing. Private, so the public type
/// never serializes its secrets by accident.
#[derive(Serialize, Deserialize)]
struct StoredGrant {
    issuer: String,
    #[serde(with = "crate::oauth_server::exposed")]
    access_token: SecretString,
    #[serde(default, with = "crate::oauth_server::exposed::option")]
    refresh_token: Option<SecretString>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
    token_endpoint: String,
    client_id: String,
    obtained_at: DateTime<Utc>,
}

impl From<Grant> for StoredGrant {
    fn from(grant: Grant) -> Self {
        // Every field named: a field added to `Grant` must be added here too.
        let Grant {
            issuer,
            access_token,
            refresh_token,
            scope,
            expires_at,
            token_endpoint,
            client_id,
            obtained_at,
        } = grant;
        Self {
            issuer,
            access_token,
            refresh_token,
            scope,
            expires_at,
            token_endpoint,
            client_id,
            obtained_at,
        }
    }
}

impl From<StoredGrant> for Grant {
    fn from(stored: StoredGrant) -> Self {
        let StoredGrant {
            issuer,
            access_token,
            refresh_token,
            scope,
            expires_at,
            token_endpoint,
            client_id,
            obtained_at,
        } = stored;
        Self {
            issuer,
            access_token,
            refresh_token,
            scope,
            expires_at,
            token_endpoint,
            client_id,
            obtained_at,
        }
    }
}

/// A [`PendingSignIn`] as stored: the PKCE verifier written out, for sealing.
#[derive(Serialize, Deserialize)]
struct StoredPending {
    session: SessionKey,
    #[serde(default)]
    grant_owner: Option<SessionKey>,
    server: String,
    issuer: String,
    expected_issuer: String,
    authorization_url: String,
    token_endpoint: String,
    client_id: String,
    redirect_uri: String,
    #[serde(with = "crate::oauth_server::exposed")]
    code_verifier: SecretString,
    expires_at: DateTime<Utc>,
}

impl From<PendingSignIn> for StoredPending {
    fn from(pending: PendingSignIn) -> Self {
        // Every field named: a field added to `PendingSignIn` must be added here too.
        let PendingSignIn {
            session,
            grant_owner,
            server,
            issuer,
            expected_issuer,
            authorization_url,
            token_endpoint,
            client_id,
            redirect_uri,
            code_verifier,
            expires_at,
        } = pending;
        Self {
            session,
            grant_owner,
            server,
            issuer,
            expected_issuer,
            authorization_url,
            token_endpoint,
            client_id,
            redirect_uri,
            code_verifier,
            expires_at,
        }
    }
}

impl From<StoredPending> for PendingSignIn {
    fn from(stored: StoredPending) -> Self {
        let StoredPending {
            session,
            grant_owner,
            server,
            issuer,
            expected_issuer,
            authorization_url,
            token_endpoint,
            client_id,
            redirect_uri,
            code_verifier,
            expires_at,
        } = stored;
        Self {
            session,
            grant_owner,
            server,
            issuer,
            expected_issuer,
            authorization_url,
            token_endpoint,
            client_id,
            redirect_uri,
            code_verifier,
            expires_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use muster_core::secret::ExposeSecret as _;

    use super::*;

    #[test]
    fn stored_forms_keep_every_field() {
        let now = Utc::now();
        let grant = Grant {
            issuer: "https://idp".into(),
            access_token: SecretString::from("access-secret".to_owned()),
            refresh_token: Some(SecretString::from("refresh-secret".to_owned())),
            scope: Some("mcp:read".into()),
            expires_at: Some(now),
            token_endpoint: "https://idp/token".into(),
            client_id: "c".into(),
            obtained_at: now,
        };
        let json = serde_json::to_string(&StoredGrant::from(grant)).unwrap();
        let back = Grant::from(serde_json::from_str::<StoredGrant>(&json).unwrap());
        assert_eq!(back.access_token.expose_secret(), "access-secret");
        assert_eq!(
            back.refresh_token.as_ref().map(|t| t.expose_secret()),
            Some("refresh-secret")
        );
        assert_eq!(
            (back.scope.as_deref(), back.expires_at, back.obtained_at),
            (Some("mcp:read"), Some(now), now)
        );
        assert_eq!(
            (back.token_endpoint.as_str(), back.client_id.as_str()),
            ("https://idp/token", "c")
        );

        let pending = PendingSignIn {
            session: SessionKey::new("s"),
            grant_owner: Some(SessionKey::new("subject-1")),
            server: "srv".into(),
            issuer: "https://idp".into(),
            expected_issuer: "https://idp/".into(),
            authorization_url: "https://idp/authorize?x".into(),
            token_endpoint: "https://idp/token".into(),
            client_id: "c".into(),
            redirect_uri: "http://localhost/cb".into(),
            code_verifier: SecretString::from("verifier-secret".to_owned()),
            expires_at: now,
        };
        let json = serde_json::to_string(&StoredPending::from(pending)).unwrap();
        let back = PendingSignIn::from(serde_json::from_str::<StoredPending>(&json).unwrap());
        assert_eq!(back.code_verifier.expose_secret(), "verifier-secret");
        assert_eq!(back.grant_owner, Some(SessionKey::new("subject-1")));
        assert_eq!(
            (back.session.as_str(), back.server.as_str(), back.expires_at),
            ("s", "srv", now)
        );
        assert_eq!(back.expected_issuer, "https://idp/");
        assert_eq!(back.redirect_uri, "http://localhost/cb");
    }
}
