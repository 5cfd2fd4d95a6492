//! [`Namespaces`]: which namespaces a store serves, and the APIs that watch them.

use kube::api::Api;
use kube::core::{ApiResource, DynamicObject};

/// The namespaces a [`KubeStore`](super::KubeStore) serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// These namespaces (muster's own among them once the store is built), each watched on
    /// its own: the service account needs `list` and `watch` in each, nothing cluster-wide.
    Listed(Vec<String>),
    /// Every namespace, through one cluster-wide watch.
    All,
}

impl Namespaces {
    /// The scope of a `mcpServerNamespaces` setting: `*` alone is every namespace, names are
    /// those namespaces, empty is none besides muster's own.
    pub fn from_setting(entries: &[String]) -> Self {
        if entries.iter().any(|e| e == "*") {
            Self::All
        } else {
            Self::Listed(entries.to_vec())
        }
    }

    /// This scope with `home` in it, each namespace once, in order.
    #[must_use]
    pub fn including(self, home: &str) -> Self {
        match self {
            Self::All => Self::All,
            Self::Listed(list) => {
                let mut out = vec![home.to_owned()];
                for namespace in list {
                    if !out.contains(&namespace) {
                        out.push(namespace);
                    }
                }
                Self::Listed(out)
            }
        }
    }

    /// Whether objects of `namespace` are served.
    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Self::All => true,
            Self::Listed(list) => list.iter().any(|n| n == namespace),
        }
    }

    /// The APIs whose lists and watches cover the scope.
    pub(super) fn apis(
        &self,
        client: &kube::Client,
        resource: &ApiResource,
    ) -> Vec<Api<DynamicObject>> {
        match self {
            Self::All => vec![Api::all_with(client.clone(), resource)],
            Self::Listed(list) => list
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, resource))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_scopes() {
        let listed = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(Namespaces::from_setting(&listed(&["*"])), Namespaces::All);
        let scope =
            Namespaces::from_setting(&listed(&["team-a", "muster", "team-a"])).including("muster");
        assert_eq!(scope, Namespaces::Listed(listed(&["muster", "team-a"])));
        assert!(scope.contains("team-a") && !scope.contains("team-b"));
        assert_eq!(
            Namespaces::from_setting(&[]).including("muster"),
            Namespaces::Listed(listed(&["muster"]))
        );
    }
}
