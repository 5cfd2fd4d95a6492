//! Reading the values of `headersFrom` entries: the [`SecretResolver`] seam.
//!
//! Kubernetes mode implements it over Secrets; filesystem mode has none, so a server with
//! `headersFrom` fails to connect there.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use muster_core::BoxError;
use muster_core::secret::{ExposeSecret, SecretString};

/// Why a Secret value could not be read. Messages name the Secret, never its value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The Secret does not exist.
    #[error("Secret {namespace}/{name} not found")]
    NotFound {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// The Secret exists but has no such key.
    #[error("Secret {namespace}/{name} has no key {key:?}")]
    MissingKey {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The key asked for.
        key: String,
    },
    /// muster may not read this Secret (protected, wrong type, policy not in force).
    #[error("{reason}")]
    Refused {
        /// Why, naming the Secret.
        reason: String,
    },
    /// The store failed.
    #[error("reading Secret {namespace}/{name}: {source}")]
    Backend {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The cause.
        #[source]
        source: BoxError,
    },
}

/// Reads one key of a Secret, each time a backend connects.
#[async_trait]
pub trait SecretResolver: Send + Sync + fmt::Debug {
    /// The value of `key` in Secret `namespace/name`, with one trailing newline (`\n` or
    /// `\r\n`) dropped, as the CRD reference requires; callers use it as it comes.
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<SecretString, SecretError>;
}

/// A fixed set of Secrets held in memory, values as a Secret holds them (one trailing newline
/// is dropped when read); for embedders and tests.
#[derive(Default)]
pub struct MemorySecrets {
    values: BTreeMap<(String, String, String), SecretString>,
}

impl MemorySecrets {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key` of Secret `namespace/name` with `value`.
    #[must_use]
    pub fn with(
        mut self,
        namespace: impl Into<String>,
        name: impl Into<String>,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.values.insert(
            (namespace.into(), name.into(), key.into()),
            SecretString::from(value.into()),
        );
        self
    }
}

impl fmt::Debug for MemorySecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySecrets")
            .field("entries", &self.values.len())
            .finish()
    }
}

/// Drops one trailing newline (`\n` or `\r\n`), as muster does with Secret values (for
/// resolvers such as [`MemorySecrets`]).
pub(crate) fn trim_one_newline(value: &str) -> &str {
    value
        .strip_suffix("\r\n")
        .or_else(|| value.strip_suffix('\n'))
        .unwrap_or(value)
}

#[async_trait]
impl SecretResolver for MemorySecrets {
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<SecretString, SecretError> {
        let lookup = (namespace.to_owned(), name.to_owned(), key.to_owned());
        if let Some(value) = self.values.get(&lookup) {
            let value = trim_one_newline(value.expose_secret());
            return Ok(SecretString::from(value.to_owned()));
        }
        let secret_exists = self
            .values
            .keys()
            .any(|(ns, n, _)| ns == namespace && n == name);
        if secret_exists {
            Err(SecretError::MissingKey {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                key: key.to_owned(),
            })
        } else {
            Err(SecretError::NotFound {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_trimming() {
        for (input, want) in [
            ("abc\n", "abc"),
            ("abc\r\n", "abc"),
            ("abc\n\n", "abc\n"),
            ("abc", "abc"),
            ("", ""),
        ] {
            assert_eq!(trim_one_newline(input), want, "{input:?}");
        }
    }
}
