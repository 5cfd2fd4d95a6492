//! Kubernetes mode's `headersFrom` reader: muster-k8s's Secret reader behind the aggregator's
//! `SecretResolver` seam, with the `secretBinding` settings of `config.yaml`.

use std::path::Path;

use async_trait::async_trait;
use muster_aggregator::backend::{SecretError, SecretResolver};
use muster_core::secret::SecretString;
use muster_k8s::secrets::SecretReadError;
use muster_k8s::{KubeSecrets, SecretRules};

/// The `secretBinding` keys of `config.yaml` (`admissionPolicyBinding`, `protectedSecrets`).
pub(crate) fn rules(root: &Path) -> SecretRules {
    let value = std::fs::read_to_string(root.join("config.yaml"))
        .ok()
        .and_then(|text| serde_norway::from_str::<serde_json::Value>(&text).ok())
        .unwrap_or_default();
    let binding = &value["secretBinding"];
    SecretRules {
        admission_policy_binding: binding["admissionPolicyBinding"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        protected: binding["protectedSecrets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
    }
}

/// [`KubeSecrets`] as the aggregator's [`SecretResolver`].
#[derive(Debug)]
pub(crate) struct Resolver(pub(crate) KubeSecrets);

#[async_trait]
impl SecretResolver for Resolver {
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<SecretString, SecretError> {
        self.0
            .read(namespace, name, key)
            .await
            .map_err(|e| match e {
                SecretReadError::NotFound { namespace, name } => {
                    SecretError::NotFound { namespace, name }
                }
                SecretReadError::MissingKey {
                    namespace,
                    name,
                    key,
                } => SecretError::MissingKey {
                    namespace,
                    name,
                    key,
                },
                SecretReadError::Protected(reason) => SecretError::Refused { reason },
                // Retried with backoff: the policy may come into force.
                other => SecretError::Backend {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    source: Box::new(other),
                },
            })
    }
}
