//! Per-session MCP servers: servers a session signed in to are connected for that session
//! alone, and only that session's snapshot exposes their tools, prompts and resources.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use muster_core::tool::{Catalog, SessionId};

use super::build::BackendEntry;
use super::catalog::AggregatedCatalog;

/// The servers of one session and the snapshot last built for it.
#[derive(Debug, Default)]
pub(super) struct SessionOverlay {
    pub(super) backends: BTreeMap<String, BackendEntry>,
    cache: Option<CachedSnapshot>,
}

/// A session snapshot and what it was built from.
#[derive(Debug)]
struct CachedSnapshot {
    global: u64,
    catalogs: Vec<Arc<Catalog>>,
    catalog: Arc<AggregatedCatalog>,
}

/// Every session's overlay.
pub(super) type Overlays = HashMap<SessionId, SessionOverlay>;

impl SessionOverlay {
    /// The current catalogs of the session's providers, in server order.
    pub(super) fn catalogs(&self) -> Vec<Arc<Catalog>> {
        self.backends
            .values()
            .map(|e| e.provider.catalog())
            .collect()
    }

    /// The cached snapshot when it still matches the global snapshot `global` and the
    /// session's providers.
    pub(super) fn cached(&self, global: u64) -> Option<Arc<AggregatedCatalog>> {
        let cache = self.cache.as_ref()?;
        let current = self.catalogs();
        let same = cache.global == global
            && cache.catalogs.len() == current.len()
            && cache
                .catalogs
                .iter()
                .zip(&current)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        same.then(|| Arc::clone(&cache.catalog))
    }

    /// Remembers `catalog` as built over the global snapshot `global` and the session's
    /// provider catalogs `catalogs` (read before the build).
    pub(super) fn remember(
        &mut self,
        global: u64,
        catalogs: Vec<Arc<Catalog>>,
        catalog: Arc<AggregatedCatalog>,
    ) {
        self.cache = Some(CachedSnapshot {
            global,
            catalogs,
            catalog,
        });
    }

    /// Drops the cached snapshot.
    pub(super) fn invalidate(&mut self) {
        self.cache = None;
    }
}

/// The backends of a session snapshot: the global ones, with the session's own in place of
/// a global one of the same name, sorted by server name.
pub(super) fn merged<'a>(
    global: &'a BTreeMap<String, super::Registered<BackendEntry>>,
    session: &'a BTreeMap<String, BackendEntry>,
) -> Vec<(&'a str, &'a BackendEntry)> {
    let mut all: BTreeMap<&str, &BackendEntry> = global
        .iter()
        .map(|(name, entry)| (name.as_str(), &entry.value))
        .collect();
    for (name, entry) in session {
        all.insert(name.as_str(), entry);
    }
    all.into_iter().collect()
}
