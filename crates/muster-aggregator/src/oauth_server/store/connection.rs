//! The Valkey (or Redis) behind `storage.type: valkey`, shared by every store kept there:
//! the OAuth server's own state and the sign-ins of muster's sessions to protected MCP
//! servers. One multiplexed connection, made on first use and remade after failures; the key
//! prefix; the sealing of values under `encryptionKey`; errors that name the store's address
//! and never its password or a stored value.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use muster_core::secret::{ExposeSecret as _, SecretString};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::sealed::{SealError, Sealer, is_sealed};

/// Bound on one request to the store, connecting included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Where to reach the store and how to seal its values.
#[derive(Debug, Clone)]
pub(crate) struct ValkeySettings {
    /// `host:port`, `redis://…` or `rediss://…`.
    pub(crate) url: String,
    /// Password, if the server requires one.
    pub(crate) password: Option<SecretString>,
    /// Database number.
    pub(crate) db: u32,
    /// Prefix of every key.
    pub(crate) key_prefix: String,
    /// Seals stored values, when an encryption key is configured.
    pub(crate) sealer: Option<Sealer>,
}

/// Why the store could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ValkeySetupError(String);

/// Why a request to the store failed. No text carries a credential or a stored value.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum EntryError {
    /// The store could not be reached, timed out, or refused the command.
    #[error("Valkey at {address}: {detail}")]
    Request {
        /// `host:port/db`.
        address: String,
        /// What went wrong: the kind of failure and the server's error code.
        detail: String,
    },
    /// An entry could not be written as JSON.
    #[error("cannot encode an entry: {0}")]
    Encode(String),
    /// An entry could not be sealed, or is sealed while no key is configured.
    #[error(transparent)]
    Seal(#[from] SealError),
}

/// A handle on the store. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub(crate) struct Valkey {
    connection: ConnectionManager,
    /// `host:port/db`, for error messages: never the password.
    address: String,
    key_prefix: String,
    sealer: Option<Sealer>,
}

impl std::fmt::Debug for Valkey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Valkey")
            .field("address", &self.address)
            .field("key_prefix", &self.key_prefix)
            .field("sealed", &self.sealer.is_some())
            .finish()
    }
}

impl Valkey {
    /// The store of `settings`. It connects on first use and reconnects after failures, so
    /// muster starts while Valkey is down (requests that need the store fail meanwhile).
    pub(crate) fn open(settings: ValkeySettings) -> Result<Self, ValkeySetupError> {
        let url = if settings.url.contains("://") {
            settings.url.clone()
        } else {
            format!("redis://{}", settings.url)
        };
        let mut info: redis::ConnectionInfo =
            redis::IntoConnectionInfo::into_connection_info(url.as_str())
                .map_err(|e| ValkeySetupError(format!("not a Valkey address: {}", e.category())))?;
        let mut redis_settings = info.redis_settings().clone().set_db(i64::from(settings.db));
        if let Some(password) = &settings.password {
            redis_settings = redis_settings.set_password(password.expose_secret());
        }
        info = info.set_redis_settings(redis_settings);
        let address = format!("{}/{}", info.addr(), settings.db);
        let client = redis::Client::open(info)
            .map_err(|e| ValkeySetupError(format!("{address}: {}", e.category())))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REQUEST_TIMEOUT))
            .set_response_timeout(Some(REQUEST_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(2));
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| ValkeySetupError(format!("{address}: {}", e.category())))?;
        Ok(Self {
            connection,
            address,
            key_prefix: settings.key_prefix,
            sealer: settings.sealer,
        })
    }

    /// The shared connection, for one request.
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// `host:port/db`.
    pub(crate) fn address(&self) -> &str {
        &self.address
    }

    /// The configured prefix of every key (`muster:` by default).
    pub(crate) fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// Whether values are sealed.
    pub(crate) fn sealed(&self) -> bool {
        self.sealer.is_some()
    }

    /// `e` as an error naming the store, without a value or a credential.
    pub(crate) fn failure(&self, e: &redis::RedisError) -> EntryError {
        let detail = if e.is_timeout() {
            "timed out".to_owned()
        } else if e.is_connection_refusal() || e.is_connection_dropped() || e.is_io_error() {
            "cannot connect".to_owned()
        } else {
            // The kind and the server's error code; never a value or a credential.
            match e.code() {
                Some(code) => format!("{} ({code})", e.category()),
                None => e.category().to_owned(),
            }
        };
        EntryError::Request {
            address: self.address.clone(),
            detail,
        }
    }

    /// `value` as stored at `key`: JSON, sealed for `key` when a key is configured.
    pub(crate) fn encode<T: Serialize>(&self, key: &str, value: &T) -> Result<String, EntryError> {
        let json = serde_json::to_vec(value).map_err(|e| EntryError::Encode(safe(&e)))?;
        match &self.sealer {
            Some(sealer) => Ok(sealer.seal(key, &json)?),
            None => String::from_utf8(json).map_err(|e| EntryError::Encode(e.to_string())),
        }
    }

    /// The value stored at `key` (an entry of kind `kind`, for logs), opened. An entry that
    /// does not open or parse is treated as absent (and logged): a changed key or a
    /// tampered entry ends what it held, nothing more. A sealed entry while no key is
    /// configured is an error naming `encryptionKey`.
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        kind: &str,
        key: &str,
        stored: &str,
    ) -> Result<Option<T>, EntryError> {
        let plain = match (&self.sealer, is_sealed(stored)) {
            (Some(sealer), _) => match sealer.open(key, stored) {
                Ok(plain) => plain,
                Err(e) => {
                    tracing::warn!(entry = kind, "stored entry ignored: {e}");
                    return Ok(None);
                }
            },
            (None, true) => return Err(EntryError::Seal(SealError::NoKey)),
            (None, false) => stored.as_bytes().to_vec(),
        };
        match serde_json::from_slice(&plain) {
            Ok(value) => Ok(Some(value)),
            Err(e) => {
                tracing::warn!(entry = kind, "stored entry ignored: {}", safe(&e));
                Ok(None)
            }
        }
    }
}

/// What went wrong with some JSON, without the text of a value (serde's messages may quote
/// one).
fn safe(e: &serde_json::Error) -> String {
    format!(
        "not a valid entry ({:?} error at line {} column {})",
        e.classify(),
        e.line(),
        e.column()
    )
}

/// `at` in milliseconds since the Unix epoch, at least 1 (a time before 1970 is as expired
/// as 1 ms after it).
pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .max(1)
}
