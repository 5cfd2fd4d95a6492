//! [`FsConfigStore`]: `config.yaml` behind the `core_config_*` tools.

use std::path::PathBuf;
use std::sync::{PoisonError, RwLock};

use async_trait::async_trait;
use muster_core::StoreError;
use muster_core::config::{AggregatorConfig, ConfigStore, MusterConfig};

use crate::atomic;
use crate::codec::from_yaml;
use crate::layout::Layout;

/// The configuration of a config directory, saved to and reloaded from its `config.yaml`.
///
/// Saving writes the file atomically. Credentials given inline are not written back (they
/// are never serialized); keep them in the `*File` keys.
#[derive(Debug)]
pub struct FsConfigStore {
    path: PathBuf,
    config: RwLock<MusterConfig>,
}

impl FsConfigStore {
    /// The store of `layout`'s `config.yaml`, holding `config` (as loaded at start).
    pub fn new(layout: &Layout, config: MusterConfig) -> Self {
        Self {
            path: layout.config_file(),
            config: RwLock::new(config),
        }
    }

    fn write(&self, config: &MusterConfig) -> Result<(), StoreError> {
        let text = serde_norway::to_string(config).map_err(|e| StoreError::Codec {
            message: format!("cannot encode config.yaml: {e}"),
        })?;
        atomic::replace(&self.path, text.as_bytes()).map_err(|e| StoreError::Backend(Box::new(e)))
    }
}

#[async_trait]
impl ConfigStore for FsConfigStore {
    fn current(&self) -> MusterConfig {
        self.config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn update_aggregator(&self, aggregator: AggregatorConfig) -> Result<(), StoreError> {
        let next = {
            let mut config = self.config.write().unwrap_or_else(PoisonError::into_inner);
            config.aggregator = aggregator;
            config.clone()
        };
        self.write(&next)
    }

    async fn save(&self) -> Result<(), StoreError> {
        self.write(&self.current())
    }

    async fn reload(&self) -> Result<MusterConfig, StoreError> {
        let config = match atomic::read(&self.path).map_err(|e| StoreError::Backend(Box::new(e)))? {
            Some(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                from_yaml::<MusterConfig>(&text).map_err(|e| StoreError::Codec {
                    message: format!("{}: {e}", self.path.display()),
                })?
            }
            None => MusterConfig::default(),
        };
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = config.clone();
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn update_save_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let store = FsConfigStore::new(&layout, MusterConfig::default());
        let mut aggregator = store.current().aggregator;
        aggregator.port = 9191;
        store.update_aggregator(aggregator).await.unwrap();
        let text = std::fs::read_to_string(layout.config_file()).unwrap();
        assert!(text.contains("9191"), "{text}");
        std::fs::write(
            layout.config_file(),
            "aggregator:\n  port: 9292\nunknown: 1\n",
        )
        .unwrap();
        assert_eq!(store.reload().await.unwrap().aggregator.port, 9292);
        assert_eq!(store.current().aggregator.port, 9292);
        assert_eq!(store.current().aggregator.host, "localhost");
    }
}
