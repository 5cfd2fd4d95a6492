//! The store of `aggregator.oauth.server.storage`: memory, or Valkey/Redis shared by
//! replicas, with its values sealed under `encryptionKey`. With Valkey, the sign-ins of
//! muster's sessions to OAuth-protected MCP servers are kept there too.

use std::sync::Arc;

use muster_core::config::{OAuthServerConfig, OAuthStorageType};

use super::error::OAuthSetupError;
use super::store::{GrantStore, MemoryGrantStore};

/// The stores of the sign-ins of muster's sessions to OAuth-protected MCP servers
/// (`core_auth_login`: grants per session and issuer, pending sign-ins by `state`), kept in
/// the OAuth server's shared storage. Pass them to
/// [`BackendAuth::with_stores`](crate::auth::BackendAuth::with_stores) so every replica
/// finishes the sign-ins any of them started and uses the tokens any of them obtained.
#[derive(Debug, Clone)]
pub struct SignInStores {
    /// Grants, per (session, issuer).
    pub grants: Arc<dyn muster_core::auth::GrantStore>,
    /// Pending sign-ins, by their OAuth `state`.
    pub pending: Arc<dyn muster_core::auth::PendingSignInStore>,
}

/// What `aggregator.oauth.server.storage` asks for.
#[derive(Debug)]
pub(crate) struct Storage {
    /// The OAuth server's own state.
    pub(crate) store: Arc<dyn GrantStore>,
    /// The sign-ins to protected MCP servers, when the storage is shared (Valkey).
    pub(crate) sign_ins: Option<SignInStores>,
}

/// The storage `config` asks for. The rules on the settings themselves (a Valkey address
/// given, no `rediss://`, no key with memory storage) are checked before, by
/// `OAuthServerConfig::problems` through `Settings::from_config`.
///
/// # Errors
///
/// When `encryptionKey` is malformed, a secret file cannot be read, the Valkey address does
/// not parse, or Valkey storage is asked of a build without it.
pub(crate) fn storage_of(config: &OAuthServerConfig) -> Result<Storage, OAuthSetupError> {
    let key = super::settings::secret(
        config.encryption_key.as_ref(),
        config.encryption_key_file.as_deref(),
        "encryptionKeyFile",
    )?;
    match config.storage.kind {
        OAuthStorageType::Memory => Ok(Storage {
            store: Arc::new(MemoryGrantStore::default()),
            sign_ins: None,
        }),
        OAuthStorageType::Valkey => valkey(config, key),
    }
}

#[cfg(feature = "valkey")]
fn valkey(
    config: &OAuthServerConfig,
    key: Option<muster_core::secret::SecretString>,
) -> Result<Storage, OAuthSetupError> {
    use muster_core::auth::AuthStoreLimits;
    use muster_core::secret::ExposeSecret as _;

    use super::store::connection::{Valkey, ValkeySettings};
    use super::store::sealed::Sealer;
    use super::store::sign_ins::ValkeySignInStore;
    use super::store::valkey::ValkeyGrantStore;

    let valkey = &config.storage.valkey;
    let sealer = key
        .map(|k| Sealer::from_text(k.expose_secret()))
        .transpose()
        .map_err(|e| setting("encryptionKey", &e.to_string()))?;
    let password = super::settings::secret(
        valkey.password.as_ref(),
        valkey.password_file.as_deref(),
        "storage.valkey.passwordFile",
    )?;
    let connection = Valkey::open(ValkeySettings {
        url: valkey.url.trim().to_owned(),
        password,
        db: valkey.db,
        key_prefix: valkey.key_prefix.clone(),
        sealer,
    })
    .map_err(|e| setting("storage.valkey.url", &e.to_string()))?;
    let sign_ins = Arc::new(ValkeySignInStore::on(
        connection.clone(),
        AuthStoreLimits::default(),
    ));
    Ok(Storage {
        store: Arc::new(ValkeyGrantStore::on(connection)),
        sign_ins: Some(SignInStores {
            grants: sign_ins.clone(),
            pending: sign_ins,
        }),
    })
}

#[cfg(not(feature = "valkey"))]
fn valkey(
    _config: &OAuthServerConfig,
    _key: Option<muster_core::secret::SecretString>,
) -> Result<Storage, OAuthSetupError> {
    Err(setting(
        "storage.type",
        "`valkey` needs muster-aggregator's `valkey` feature, which this build lacks",
    ))
}

fn setting(key: &str, rule: &str) -> OAuthSetupError {
    OAuthSetupError::Setting {
        key: key.to_owned(),
        rule: rule.to_owned(),
    }
}
