//! Object metadata and store keys.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DEFAULT_NAMESPACE;

/// Object metadata: the subset of Kubernetes `ObjectMeta` muster reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// The resource name; in filesystem mode it is the file name without extension.
    #[serde(default)]
    pub name: String,
    /// The namespace; `default` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels; on workflows they become discovery labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations, e.g. `ui.giantswarm.io/display-name`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Incremented by the store on every spec change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Opaque version for optimistic concurrency, set by the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// When the object was first stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<DateTime<Utc>>,
}

impl Meta {
    /// Metadata with only a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// The namespace, with the default applied.
    pub fn namespace_or_default(&self) -> &str {
        self.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE)
    }

    /// The key of the object this metadata belongs to.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::new(self.namespace_or_default(), &self.name)
    }
}

/// The identity of an object in a store: namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// A key from namespace and name.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A key in the default namespace.
    pub fn named(name: impl Into<String>) -> Self {
        Self::new(DEFAULT_NAMESPACE, name)
    }

    /// The key a muster in namespace `home` means by `name`: `<namespace>/<name>` names an
    /// object of another namespace, a plain name one of `home` (Kubernetes names never
    /// contain `/`).
    pub fn qualified(home: &str, name: &str) -> Self {
        match name.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() => Self::new(namespace, name),
            _ => Self::new(home, name),
        }
    }

    /// How a muster in namespace `home` names this object: the plain name in `home`,
    /// `<namespace>/<name>` elsewhere; the inverse of [`qualified`](Self::qualified).
    pub fn name_in(&self, home: &str) -> String {
        if self.namespace == home {
            self.name.clone()
        } else {
            self.to_string()
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::ObjectKey;

    #[test]
    fn qualified_names_round_trip() {
        for (name, namespace, plain) in [
            ("github", "muster", "github"),
            ("team-a/github", "team-a", "github"),
            ("muster/github", "muster", "github"),
            ("/github", "muster", "/github"),
        ] {
            let key = ObjectKey::qualified("muster", name);
            assert_eq!(
                (key.namespace.as_str(), key.name.as_str()),
                (namespace, plain)
            );
        }
        assert_eq!(ObjectKey::new("muster", "a").name_in("muster"), "a");
        assert_eq!(ObjectKey::new("team-a", "a").name_in("muster"), "team-a/a");
    }
}
