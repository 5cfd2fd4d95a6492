//! [`KubeSecrets`]: credentials for MCPServers read from Secrets, with every rule of the CRD
//! reference's "Secret references":
//!
//! - muster never reads its own Secrets ([`SecretRules::protected`]) or Secrets of the
//!   protected types (Helm releases, TLS, service-account and bootstrap tokens, registry
//!   credentials);
//! - it reads none unless the admission policy binding named in
//!   [`SecretRules::admission_policy_binding`] is in force: `validationActions` with `Deny`,
//!   no `matchResources`, and its policy exists with `failurePolicy: Fail`. A passed check
//!   holds for at most a minute;
//! - a missing Secret or key is an error the caller retries with backoff;
//! - one trailing newline (`\n` or `\r\n`) of a value is dropped.
//!
//! Values are [`SecretString`]s: they never appear in `Debug` output, errors or logs.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use muster_core::secret::SecretString;

use crate::convert::api_code;

/// Secret types muster never reads for an MCPServer.
pub const PROTECTED_TYPES: [&str; 6] = [
    "helm.sh/release.v1",
    "kubernetes.io/tls",
    "kubernetes.io/service-account-token",
    "bootstrap.kubernetes.io/token",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/dockercfg",
];

/// How long a passed policy check holds before it is made again.
pub const POLICY_RECHECK: Duration = Duration::from_secs(60);

/// The message of every refusal for want of the admission policy.
pub const POLICY_NOT_IN_FORCE: &str = "MCPServer Secret reference policy is not in force";

/// The `secretBinding` settings of the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretRules {
    /// The ValidatingAdmissionPolicyBinding that must be in force
    /// (`secretBinding.admissionPolicyBinding`); without one no Secret is read.
    pub admission_policy_binding: Option<String>,
    /// muster's own Secrets, never read for an MCPServer (`secretBinding.protectedSecrets`).
    pub protected: Vec<String>,
}

/// Why a Secret value could not be read. Messages name the Secret, never a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretReadError {
    /// The Secret does not exist (yet).
    #[error("Secret {namespace}/{name} not found")]
    NotFound {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
    },
    /// The Secret has no such key.
    #[error("Secret {namespace}/{name} has no key {key:?}")]
    MissingKey {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// The key.
        key: String,
    },
    /// muster never reads this Secret for an MCPServer.
    #[error("{0}")]
    Protected(String),
    /// The admission policy that guards Secret references is not in force; retried.
    #[error("{POLICY_NOT_IN_FORCE}: {0}")]
    PolicyNotInForce(String),
    /// The API server failed.
    #[error("reading Secret {namespace}/{name}: {source}")]
    Api {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// Reads Secret keys for MCPServers through the Secret API.
pub struct KubeSecrets {
    client: kube::Client,
    rules: SecretRules,
    /// When the policy check last passed.
    passed_at: Mutex<Option<Instant>>,
}

impl fmt::Debug for KubeSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeSecrets")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl KubeSecrets {
    /// A reader applying `rules`.
    pub fn new(client: kube::Client, rules: SecretRules) -> Self {
        Self {
            client,
            rules,
            passed_at: Mutex::new(None),
        }
    }

    /// The value of `key` in Secret `namespace/name`.
    pub async fn read(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<SecretString, SecretReadError> {
        if self.rules.protected.iter().any(|p| p == name) {
            return Err(SecretReadError::Protected(format!(
                "Secret {namespace}/{name} is one of muster's own Secrets: muster never reads it \
                 for an MCPServer"
            )));
        }
        self.check_policy().await?;
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let secret = api
            .get_opt(name)
            .await
            .map_err(|source| SecretReadError::Api {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                source,
            })?
            .ok_or_else(|| SecretReadError::NotFound {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })?;
        if let Some(t) = secret.type_.as_deref()
            && PROTECTED_TYPES.contains(&t)
        {
            return Err(SecretReadError::Protected(format!(
                "Secret {namespace}/{name} has type {t}, which muster never reads for an MCPServer"
            )));
        }
        let missing = || SecretReadError::MissingKey {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            key: key.to_owned(),
        };
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|b| b.0.clone())
            .or_else(|| {
                secret
                    .string_data
                    .as_ref()
                    .and_then(|d| d.get(key))
                    .map(|s| s.clone().into_bytes())
            })
            .ok_or_else(missing)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            SecretReadError::Protected(format!(
                "Secret {namespace}/{name} key {key:?} is not UTF-8 text"
            ))
        })?;
        Ok(SecretString::from(trim_one_newline(&text).to_owned()))
    }

    /// Passes when the binding and its policy are in force; a pass holds for a minute.
    async fn check_policy(&self) -> Result<(), SecretReadError> {
        let fresh = self
            .passed_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|t| t.elapsed() < POLICY_RECHECK);
        if fresh {
            return Ok(());
        }
        let result = self.policy_in_force().await;
        *self
            .passed_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = result.is_ok().then(Instant::now);
        result.map_err(SecretReadError::PolicyNotInForce)
    }

    async fn policy_in_force(&self) -> Result<(), String> {
        let Some(binding_name) = &self.rules.admission_policy_binding else {
            return Err("no secretBinding.admissionPolicyBinding is configured".to_owned());
        };
        let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(self.client.clone());
        let binding = match bindings.get_opt(binding_name).await {
            Ok(Some(b)) => b,
            Ok(None) => {
                return Err(format!(
                    "ValidatingAdmissionPolicyBinding {binding_name} does not exist"
                ));
            }
            Err(e) if api_code(&e) == Some(403) => {
                return Err(format!(
                    "muster may not read ValidatingAdmissionPolicyBinding {binding_name}"
                ));
            }
            Err(e) => {
                return Err(format!(
                    "reading ValidatingAdmissionPolicyBinding {binding_name}: {e}"
                ));
            }
        };
        let spec = binding.spec;
        if !spec.validation_actions.iter().any(|a| a == "Deny") {
            return Err(format!(
                "ValidatingAdmissionPolicyBinding {binding_name} has no Deny in validationActions"
            ));
        }
        if spec.match_resources.is_some() {
            return Err(format!(
                "ValidatingAdmissionPolicyBinding {binding_name} narrows what it applies to with \
                 matchResources"
            ));
        }
        let policies: Api<ValidatingAdmissionPolicy> = Api::all(self.client.clone());
        let policy_name = spec.policy_name;
        let policy = match policies.get_opt(&policy_name).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                return Err(format!(
                    "ValidatingAdmissionPolicy {policy_name} does not exist"
                ));
            }
            Err(e) => {
                return Err(format!(
                    "reading ValidatingAdmissionPolicy {policy_name}: {e}"
                ));
            }
        };
        let failure_policy = policy.spec.and_then(|s| s.failure_policy);
        // The API server defaults failurePolicy to Fail.
        if failure_policy.as_deref().is_some_and(|f| f != "Fail") {
            return Err(format!(
                "ValidatingAdmissionPolicy {policy_name} does not have failurePolicy: Fail"
            ));
        }
        Ok(())
    }
}

/// Drops one trailing `\n` or `\r\n`.
pub fn trim_one_newline(value: &str) -> &str {
    value
        .strip_suffix("\r\n")
        .or_else(|| value.strip_suffix('\n'))
        .unwrap_or(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_trailing_newline_goes() {
        assert_eq!(trim_one_newline("a\n"), "a");
        assert_eq!(trim_one_newline("a\r\n"), "a");
        assert_eq!(trim_one_newline("a\n\n"), "a\n");
        assert_eq!(trim_one_newline("a"), "a");
    }
}
