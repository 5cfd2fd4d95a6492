//! The store of `aggregator.oauth.server.storage`: memory, or Valkey/Redis shared by
//! replicas, with its values sealed under `encryptionKey`.

use std::sync::Arc;

use muster_core::config::{OAuthServerConfig, OAuthStorageType};

use super::error::OAuthSetupError;
use super::store::{GrantStore, MemoryGrantStore};

/// The store `config` asks for. The rules on the settings themselves (a Valkey address
/// given, no `rediss://`, no key with memory storage) are checked before, by
/// `OAuthServerConfig::problems` through `Settings::from_config`.
///
/// # Errors
///
/// When `encryptionKey` is malformed, a secret file cannot be read, the Valkey address does
/// not parse, or Valkey storage is asked of a build without it.
pub(crate) fn store_of(config: &OAuthServerConfig) -> Result<Arc<dyn GrantStore>, OAuthSetupError> {
    let key = super::settings::secret(
        config.encryption_key.as_ref(),
        config.encryption_key_file.as_deref(),
        "encryptionKeyFile",
    )?;
    match config.storage.kind {
        OAuthStorageType::Memory => Ok(Arc::new(MemoryGrantStore::default())),
        OAuthStorageType::Valkey => valkey(config, key),
    }
}

#[cfg(feature = "valkey")]
fn valkey(
    config: &OAuthServerConfig,
    key: Option<muster_core::secret::SecretString>,
) -> Result<Arc<dyn GrantStore>, OAuthSetupError> {
    use muster_core::secret::ExposeSecret as _;

    use super::store::sealed::Sealer;
    use super::store::valkey::{ValkeyGrantStore, ValkeySettings};

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
    let store = ValkeyGrantStore::new(ValkeySettings {
        url: valkey.url.trim().to_owned(),
        password,
        db: valkey.db,
        key_prefix: valkey.key_prefix.clone(),
        sealer,
    })
    .map_err(|e| setting("storage.valkey.url", &e.to_string()))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "valkey"))]
fn valkey(
    _config: &OAuthServerConfig,
    _key: Option<muster_core::secret::SecretString>,
) -> Result<Arc<dyn GrantStore>, OAuthSetupError> {
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
