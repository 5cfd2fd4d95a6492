//! The OAuth server's state in Valkey or Redis (`storage.type: valkey`), so every replica
//! accepts the tokens any of them issued and sign-ins survive restarts.
//!
//! Keys, under the configured prefix (default `muster:`):
//!
//! | key | value | lifetime |
//! | --- | --- | --- |
//! | `oauth:client:<id>`, set `oauth:clients` | the registered client | kept (at most 10 000) |
//! | `oauth:pending:<digest of state>` | a sign-in at the provider | until it expires; taken once |
//! | `oauth:code:<digest of code>` | an issued code | until it expires; taken once |
//! | `oauth:family:<id>` | a signed-in session (the provider's tokens) | the family's rolling expiry |
//! | `oauth:current:<id>` | digest of the family's current refresh token | the same |
//! | `oauth:refresh:<digest>` | the family id of a refresh token, current or rotated | the family's expiry when issued |
//! | `oauth:access:<digest>` | the family id of an access token | the token's expiry |
//!
//! Tokens, codes and `state` values appear only as SHA-256 digests. Values holding the
//! provider's tokens (families, codes, pending sign-ins, clients) are sealed with
//! AES-256-GCM when an encryption key is configured. A presented refresh token that is not
//! the family's current one is a replay as long as its key lives.
//!
//! The connection, prefix and sealing are shared with the sign-ins of muster's sessions to
//! protected MCP servers (`auth:*` keys, see `sign_ins`).

use std::time::SystemTime;

use redis::{AsyncCommands as _, Script};

use super::connection::{EntryError, Valkey, unix_ms};
use super::{
    Client, Family, Grant, GrantStore, IssuedCode, PendingSignIn, RefreshUse, StoreError,
    StoreResult,
};

/// Most registered clients kept.
const MAX_CLIENTS: usize = 10_000;

/// Rotates a family's refresh token unless the family is gone (revoked or expired), so a
/// rotation racing a revocation never brings the family back. KEYS: current, family, new
/// refresh. ARGV: new digest, sealed family, expiry (Unix ms), family id.
const ROTATE: &str = r"
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PXAT', ARGV[3])
redis.call('SET', KEYS[3], ARGV[4], 'PXAT', ARGV[3])
return 1
";

/// A [`GrantStore`] in Valkey or Redis.
#[derive(Clone)]
pub(crate) struct ValkeyGrantStore {
    valkey: Valkey,
    prefix: String,
    rotate: Script,
}

impl std::fmt::Debug for ValkeyGrantStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValkeyGrantStore")
            .field("address", &self.valkey.address())
            .field("prefix", &self.prefix)
            .field("sealed", &self.valkey.sealed())
            .finish()
    }
}

impl From<EntryError> for StoreError {
    fn from(error: EntryError) -> Self {
        Self::Unavailable(error.to_string())
    }
}

impl ValkeyGrantStore {
    /// The store on `valkey`, its keys under `<prefix>oauth:`.
    pub(crate) fn on(valkey: Valkey) -> Self {
        Self {
            prefix: format!("{}oauth:", valkey.key_prefix()),
            valkey,
            rotate: Script::new(ROTATE),
        }
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}:{id}", self.prefix)
    }

    fn unavailable(&self, e: &redis::RedisError) -> StoreError {
        self.valkey.failure(e).into()
    }

    fn encode<T: serde::Serialize>(&self, key: &str, value: &T) -> StoreResult<String> {
        Ok(self.valkey.encode(key, value)?)
    }

    /// The value stored at `key`, opened. An entry that does not open or parse is treated as
    /// absent (and logged): a changed key or a tampered entry ends that sign-in, nothing more.
    fn decode<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        stored: &str,
    ) -> StoreResult<Option<T>> {
        Ok(self.valkey.decode(kind_of(key), key, stored)?)
    }

    async fn get(&self, key: &str) -> StoreResult<Option<String>> {
        let mut c = self.valkey.connection();
        c.get(key).await.map_err(|e| self.unavailable(&e))
    }

    async fn get_del(&self, key: &str) -> StoreResult<Option<String>> {
        let mut c = self.valkey.connection();
        c.get_del(key).await.map_err(|e| self.unavailable(&e))
    }

    /// `SET key value PXAT expires`.
    async fn set_until(&self, key: &str, value: &str, expires: SystemTime) -> StoreResult<()> {
        let mut c = self.valkey.connection();
        redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("PXAT")
            .arg(unix_ms(expires))
            .query_async::<()>(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))
    }

    async fn delete(&self, keys: &[String]) -> StoreResult<()> {
        let mut c = self.valkey.connection();
        c.del::<_, ()>(keys).await.map_err(|e| self.unavailable(&e))
    }

    /// The family record under `id`, if it is alive.
    async fn live_family(&self, id: &str) -> StoreResult<Option<Family>> {
        let key = self.key("family", id);
        let Some(stored) = self.get(&key).await? else {
            return Ok(None);
        };
        let family: Option<Family> = self.decode(&key, &stored)?;
        Ok(family.filter(|f| f.expires > SystemTime::now()))
    }
}

/// The kind of entry a key names (`family`, `code`, …), for logs without ids.
fn kind_of(key: &str) -> &str {
    key.rsplit(':').nth(1).unwrap_or("entry")
}

#[async_trait::async_trait]
impl GrantStore for ValkeyGrantStore {
    async fn put_client(&self, client: Client) -> StoreResult<()> {
        let key = self.key("client", &client.id);
        let set = self.key("clients", "all");
        let mut c = self.valkey.connection();
        let known: bool = c
            .sismember(&set, &client.id)
            .await
            .map_err(|e| self.unavailable(&e))?;
        if !known {
            let count: usize = c.scard(&set).await.map_err(|e| self.unavailable(&e))?;
            if count >= MAX_CLIENTS {
                return Err(StoreError::Full);
            }
        }
        let value = self.encode(&key, &client)?;
        redis::pipe()
            .atomic()
            .set(&key, value)
            .ignore()
            .sadd(&set, &client.id)
            .ignore()
            .query_async::<()>(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))
    }

    async fn client(&self, id: &str) -> StoreResult<Option<Client>> {
        let key = self.key("client", id);
        match self.get(&key).await? {
            Some(stored) => self.decode(&key, &stored),
            None => Ok(None),
        }
    }

    async fn put_pending(&self, state: String, pending: PendingSignIn) -> StoreResult<()> {
        let key = self.key("pending", &state);
        let value = self.encode(&key, &pending)?;
        self.set_until(&key, &value, pending.expires).await
    }

    async fn take_pending(&self, state: &str) -> StoreResult<Option<PendingSignIn>> {
        let key = self.key("pending", state);
        let Some(stored) = self.get_del(&key).await? else {
            return Ok(None);
        };
        let pending: Option<PendingSignIn> = self.decode(&key, &stored)?;
        Ok(pending.filter(|p| p.expires > SystemTime::now()))
    }

    async fn put_code(&self, code: String, issued: IssuedCode) -> StoreResult<()> {
        let key = self.key("code", &code);
        let value = self.encode(&key, &issued)?;
        self.set_until(&key, &value, issued.expires).await
    }

    async fn take_code(&self, code: &str) -> StoreResult<Option<IssuedCode>> {
        let key = self.key("code", code);
        let Some(stored) = self.get_del(&key).await? else {
            return Ok(None);
        };
        let issued: Option<IssuedCode> = self.decode(&key, &stored)?;
        Ok(issued.filter(|c| c.expires > SystemTime::now()))
    }

    async fn start_family(&self, family: Family, refresh: String) -> StoreResult<()> {
        let family_key = self.key("family", &family.id);
        let value = self.encode(&family_key, &family)?;
        let at = unix_ms(family.expires);
        let mut c = self.valkey.connection();
        redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(&family_key)
            .arg(value)
            .arg("PXAT")
            .arg(at)
            .ignore()
            .cmd("SET")
            .arg(self.key("current", &family.id))
            .arg(&refresh)
            .arg("PXAT")
            .arg(at)
            .ignore()
            .cmd("SET")
            .arg(self.key("refresh", &refresh))
            .arg(&family.id)
            .arg("PXAT")
            .arg(at)
            .ignore()
            .query_async::<()>(&mut c)
            .await
            .map_err(|e| self.unavailable(&e))
    }

    async fn rotate(
        &self,
        id: &str,
        new_refresh: String,
        grant: Grant,
        expires: SystemTime,
    ) -> StoreResult<()> {
        let family_key = self.key("family", id);
        let family = Family {
            id: id.to_owned(),
            grant,
            expires,
        };
        let value = self.encode(&family_key, &family)?;
        let mut c = self.valkey.connection();
        self.rotate
            .key(self.key("current", id))
            .key(&family_key)
            .key(self.key("refresh", &new_refresh))
            .arg(&new_refresh)
            .arg(value)
            .arg(unix_ms(expires))
            .arg(id)
            .invoke_async::<i64>(&mut c)
            .await
            .map(drop)
            .map_err(|e| self.unavailable(&e))
    }

    async fn use_refresh(&self, refresh: &str) -> StoreResult<RefreshUse> {
        let Some(id) = self.get(&self.key("refresh", refresh)).await? else {
            return Ok(RefreshUse::Unknown);
        };
        // The current token and the family in one round trip.
        let family_key = self.key("family", &id);
        let mut c = self.valkey.connection();
        let (current, stored): (Option<String>, Option<String>) = c
            .mget(&[self.key("current", &id), family_key.clone()])
            .await
            .map_err(|e| self.unavailable(&e))?;
        let family: Option<Family> = match stored {
            Some(stored) => self.decode(&family_key, &stored)?,
            None => None,
        };
        let Some(family) = family.filter(|f| f.expires > SystemTime::now()) else {
            return Ok(RefreshUse::Unknown);
        };
        Ok(if current.as_deref() == Some(refresh) {
            RefreshUse::Current(Box::new(family))
        } else {
            RefreshUse::Replayed(id)
        })
    }

    async fn family(&self, id: &str) -> StoreResult<Option<Family>> {
        self.live_family(id).await
    }

    async fn revoke_family(&self, id: &str) -> StoreResult<()> {
        self.delete(&[self.key("family", id), self.key("current", id)])
            .await
    }

    async fn put_access(
        &self,
        access: String,
        family: &str,
        expires: SystemTime,
    ) -> StoreResult<()> {
        self.set_until(&self.key("access", &access), family, expires)
            .await
    }

    async fn access(&self, access: &str) -> StoreResult<Option<Family>> {
        let Some(id) = self.get(&self.key("access", access)).await? else {
            return Ok(None);
        };
        self.live_family(&id).await
    }

    async fn revoke_access(&self, access: &str) -> StoreResult<()> {
        self.delete(&[self.key("access", access)]).await
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::process::{Child, Command, Stdio};

    use std::time::Duration;

    use muster_core::secret::SecretString;

    use super::super::connection::ValkeySettings;
    use super::super::contract;
    use super::super::sealed::Sealer;
    use super::*;

    impl ValkeyGrantStore {
        /// The store of `settings`, on a connection of its own.
        fn new(
            settings: ValkeySettings,
        ) -> Result<Self, super::super::connection::ValkeySetupError> {
            Ok(Self::on(Valkey::open(settings)?))
        }
    }

    /// A `redis-server` of its own on a free port, without persistence, killed on drop.
    struct Server {
        child: Child,
        port: u16,
    }

    impl Server {
        fn start() -> Self {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--requirepass", "store-password"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server (Debian package redis-server) must be installed");
            Self { child, port }
        }

        fn store(&self, sealer: Option<Sealer>, prefix: &str) -> ValkeyGrantStore {
            ValkeyGrantStore::new(ValkeySettings {
                url: format!("127.0.0.1:{}", self.port),
                password: Some(SecretString::from("store-password".to_owned())),
                db: 3,
                key_prefix: prefix.to_owned(),
                sealer,
            })
            .unwrap()
        }

        async fn ready(&self) {
            let store = self.store(None, "probe:");
            for _ in 0..100 {
                if store.client("x").await.is_ok() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("redis-server did not answer");
        }

        fn raw(&self) -> redis::Connection {
            let client =
                redis::Client::open(format!("redis://:store-password@127.0.0.1:{}/3", self.port))
                    .unwrap();
            client.get_connection().unwrap()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn sealer(byte: u8) -> Sealer {
        use base64::Engine as _;
        Sealer::from_text(&base64::engine::general_purpose::STANDARD.encode([byte; 32])).unwrap()
    }

    #[tokio::test]
    async fn the_store_contract_holds_plain_and_sealed() {
        let server = Server::start();
        server.ready().await;
        contract::rotation_and_replay(&server.store(None, "plain:")).await;
        contract::single_use_and_expiry(&server.store(None, "plain:")).await;
        contract::rotation_and_replay(&server.store(Some(sealer(1)), "sealed:")).await;
        contract::single_use_and_expiry(&server.store(Some(sealer(1)), "sealed:")).await;
    }

    #[tokio::test]
    async fn sealed_entries_hide_the_tokens_and_need_their_key() {
        let server = Server::start();
        server.ready().await;
        let store = server.store(Some(sealer(2)), "m:");
        let family = Family {
            id: "fam".into(),
            grant: Grant {
                upstream: super::super::UpstreamTokens {
                    access_token: SecretString::from("upstream-access-secret".to_owned()),
                    refresh_token: Some(SecretString::from("upstream-refresh-secret".to_owned())),
                    id_token: None,
                    expires_at: None,
                },
                ..contract::grant()
            },
            expires: SystemTime::now() + Duration::from_secs(60),
        };
        store.start_family(family, "r1".into()).await.unwrap();
        let mut raw = server.raw();
        let keys: Vec<String> = redis::cmd("KEYS").arg("m:*").query(&mut raw).unwrap();
        assert!(keys.contains(&"m:oauth:family:fam".to_owned()), "{keys:?}");
        for key in &keys {
            let value: String = redis::cmd("GET").arg(key).query(&mut raw).unwrap();
            assert!(!value.contains("upstream-access-secret"), "{key}: {value}");
            assert!(!value.contains("alice"), "{key}: {value}");
        }
        // Another key: the family is gone for it, not an error.
        assert!(
            server
                .store(Some(sealer(3)), "m:")
                .family("fam")
                .await
                .unwrap()
                .is_none()
        );
        // No key at all: a clear error, not a silent loss.
        let err = server.store(None, "m:").family("fam").await.unwrap_err();
        assert!(err.to_string().contains("encryptionKey"), "{err}");
        // The same key in another process (replica): found.
        let again = server
            .store(Some(sealer(2)), "m:")
            .family("fam")
            .await
            .unwrap();
        assert_eq!(again.unwrap().grant.subject, "alice");
    }

    #[tokio::test]
    async fn an_unreachable_store_is_an_error_naming_it_without_the_password() {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let store = ValkeyGrantStore::new(ValkeySettings {
            url: format!("redis://127.0.0.1:{port}"),
            password: Some(SecretString::from("hunter2-password".to_owned())),
            db: 0,
            key_prefix: "muster:".into(),
            sealer: None,
        })
        .unwrap();
        let err = store.access("digest").await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, StoreError::Unavailable(_)), "{text}");
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
}
