//! The live set of tool providers behind the aggregator, and the snapshot clients read.
//!
//! [`Registry`] has one writer side (the `upsert`/`remove`/`set_core` calls and a background
//! task that follows every provider's [`revisions`](ToolProvider::revisions)) and cheap
//! readers: [`Registry::snapshot`] hands out the current `Arc<AggregatedCatalog>`, which is
//! rebuilt only when a provider or the backend set changes, never per request.
//!
//! Calls are routed by exposed name through [`Registry::service`] (reference §2.6):
//!
//! ```no_run
//! # async fn demo(provider: std::sync::Arc<dyn muster_core::tool::ToolProvider>) {
//! use muster_aggregator::registry::{BackendNaming, Registry};
//! use muster_core::tool::ToolCall;
//! use tower::ServiceExt;
//!
//! let registry = Registry::new();
//! registry.upsert_backend("git", BackendNaming::default(), provider);
//! let result = registry
//!     .service()
//!     .oneshot(ToolCall::new("x_git_status", None))
//!     .await;
//! # }
//! ```

mod build;
mod catalog;
mod route;
mod sessions;
mod watcher;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use muster_core::tool::{
    CallContext, Revision, SessionId, ToolAvailability, ToolCall, ToolProvider, ToolService,
};
use tokio::runtime::Handle;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

pub use self::catalog::{
    AggregatedCatalog, ExposedPrompt, ExposedResource, ExposedTool, ItemOrigin, LABELS_META_KEY,
    ToolOrigin,
};
pub use crate::naming::{BackendNaming, FamilyDescriptions, NamingOptions};

use self::build::BackendEntry;
use crate::metrics::AggregatorMetrics;

/// The live set of providers: MCP server backends under per-server or family names, and
/// core providers under their own names.
///
/// Cheap to clone; clones share one registry. Create it inside a Tokio runtime: the
/// background task that follows provider revisions is spawned on the current runtime (when
/// there is none, it starts with the first change made inside one). The task stops when the
/// last clone is dropped.
#[derive(Debug, Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

/// Configures a [`Registry`].
#[derive(Debug, Clone, Default)]
pub struct RegistryBuilder {
    naming: NamingOptions,
    metrics: Option<AggregatorMetrics>,
}

#[derive(Debug)]
struct Inner {
    naming: NamingOptions,
    metrics: Option<AggregatorMetrics>,
    state: Mutex<State>,
    snapshot: watch::Sender<Arc<AggregatedCatalog>>,
    generation: watch::Sender<u64>,
    dirty: Arc<Notify>,
    stop: CancellationToken,
    rebuilder_started: AtomicBool,
    /// How many sessions have servers of their own: 0 keeps session reads lock-free.
    overlay_count: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    backends: BTreeMap<String, Registered<BackendEntry>>,
    cores: Vec<Registered<Arc<dyn ToolProvider>>>,
    sessions: sessions::Overlays,
}

/// A provider plus the token that stops its revision watcher, and the revision the
/// current snapshot was built from.
#[derive(Debug)]
struct Registered<T> {
    value: T,
    watch: CancellationToken,
    /// Marked seen by every rebuild; changed when the provider published a revision the
    /// snapshot does not reflect yet.
    seen: watch::Receiver<Revision>,
}

impl<T> Registered<T> {
    fn new(value: T, provider: &Arc<dyn ToolProvider>, watch: CancellationToken) -> Self {
        Self {
            value,
            watch,
            seen: provider.revisions(),
        }
    }

    /// Whether the provider published a revision since the last rebuild.
    fn is_stale(&self) -> bool {
        self.seen.has_changed().unwrap_or(false)
    }
}

impl<T> Drop for Registered<T> {
    fn drop(&mut self) {
        self.watch.cancel();
    }
}

// === impl RegistryBuilder ===

impl RegistryBuilder {
    /// Sets the naming options (global prefix, home namespace, family policy).
    #[must_use]
    pub fn naming(mut self, naming: NamingOptions) -> Self {
        self.naming = naming;
        self
    }

    /// Counts every tool call in `metrics` (see [`crate::metrics`]).
    #[must_use]
    pub fn metrics(mut self, metrics: AggregatorMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Builds the registry, empty.
    pub fn build(self) -> Registry {
        let (snapshot, _) = watch::channel(Arc::new(AggregatedCatalog::default()));
        let (generation, _) = watch::channel(0);
        let registry = Registry {
            inner: Arc::new(Inner {
                naming: self.naming,
                metrics: self.metrics,
                state: Mutex::new(State::default()),
                snapshot,
                generation,
                dirty: Arc::new(Notify::new()),
                stop: CancellationToken::new(),
                rebuilder_started: AtomicBool::new(false),
                overlay_count: AtomicUsize::new(0),
            }),
        };
        registry.ensure_rebuilder();
        registry
    }
}

// === impl Registry ===

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry with default naming (`x_` prefix, no home namespace).
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The metrics tool calls are counted in, when set.
    pub fn metrics(&self) -> Option<&AggregatorMetrics> {
        self.inner.metrics.as_ref()
    }

    /// The naming options.
    pub fn naming(&self) -> &NamingOptions {
        &self.inner.naming
    }

    /// Adds or replaces the MCP server `server`; its tools are exposed under names derived
    /// from `naming`, and calls reach `provider` under the server's own tool names.
    pub fn upsert_backend(
        &self,
        server: &str,
        naming: BackendNaming,
        provider: Arc<dyn ToolProvider>,
    ) {
        let runtime = self.ensure_rebuilder();
        let mut state = self.inner.lock();
        let watch = self.watch(runtime.as_ref(), &provider);
        let entry = Registered::new(
            BackendEntry {
                naming,
                provider: Arc::clone(&provider),
            },
            &provider,
            watch,
        );
        state.backends.insert(server.to_owned(), entry);
        self.inner.rebuild(&mut state);
    }

    /// Removes the MCP server `server`; returns whether it was registered.
    pub fn remove_backend(&self, server: &str) -> bool {
        let mut state = self.inner.lock();
        let removed = state.backends.remove(server).is_some();
        if removed {
            self.inner.rebuild(&mut state);
        }
        removed
    }

    /// Adds a core provider (core tools, workflow tools), whose names are exposed as they
    /// are, after the ones already set; a provider with the same [`name`](ToolProvider::name)
    /// is replaced in place.
    pub fn set_core(&self, provider: Arc<dyn ToolProvider>) {
        let runtime = self.ensure_rebuilder();
        let mut state = self.inner.lock();
        let watch = self.watch(runtime.as_ref(), &provider);
        let entry = Registered::new(Arc::clone(&provider), &provider, watch);
        match state
            .cores
            .iter()
            .position(|c| c.value.name() == entry.value.name())
        {
            Some(i) => state.cores[i] = entry,
            None => state.cores.push(entry),
        }
        self.inner.rebuild(&mut state);
    }

    /// Removes the core provider called `name`; returns whether it was set.
    pub fn remove_core(&self, name: &str) -> bool {
        let mut state = self.inner.lock();
        let before = state.cores.len();
        state.cores.retain(|c| c.value.name() != name);
        let removed = state.cores.len() != before;
        if removed {
            self.inner.rebuild(&mut state);
        }
        removed
    }

    /// The tool prefixes shared by more than one registered MCP server, with the server that
    /// owns each (see [`prefix_collisions`](crate::naming::prefix_collisions)).
    pub fn prefix_collisions(&self) -> Vec<crate::naming::PrefixCollision> {
        let state = self.inner.lock();
        crate::naming::prefix_collisions(
            &self.inner.naming,
            state
                .backends
                .iter()
                .map(|(server, entry)| (server.as_str(), &entry.value.naming)),
        )
    }

    /// The names of the registered MCP servers, sorted.
    pub fn backends(&self) -> Vec<String> {
        self.inner.lock().backends.keys().cloned().collect()
    }

    /// Rebuilds the snapshot now from every provider's current catalog (published only when
    /// something changed).
    pub fn refresh(&self) {
        let mut state = self.inner.lock();
        self.inner.rebuild(&mut state);
    }

    /// The current snapshot. Cheap: an `Arc` clone.
    pub fn snapshot(&self) -> Arc<AggregatedCatalog> {
        self.inner.snapshot.borrow().clone()
    }

    /// The snapshot generation; changes whenever a new snapshot is published (for
    /// `notifications/*/list_changed`).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    /// The service that calls any exposed tool by its exposed name, against the snapshot
    /// of the caller's session ([`snapshot_for`](Self::snapshot_for)) current at the time of
    /// each call.
    ///
    /// A name the snapshot lacks is looked up again after a rebuild when a provider has
    /// published a revision the snapshot does not reflect yet, so a tool is callable as soon
    /// as the call that created it has returned (a workflow just created, a server just
    /// connected), not only once the background rebuild has run.
    pub fn service(&self) -> ToolService {
        let snapshots = self.inner.snapshot.subscribe();
        let weak = Arc::downgrade(&self.inner);
        ToolService::new(tower::service_fn(move |call: ToolCall| {
            let catalog = match weak.upgrade() {
                Some(inner) => Registry { inner }.catalog_for_call(&call),
                None => snapshots.borrow().clone(),
            };
            route::call(catalog, call)
        }))
    }

    /// The snapshot `call` is routed against: its session's, rebuilt first when it lacks
    /// the tool and is behind a provider's revision.
    fn catalog_for_call(&self, call: &ToolCall) -> Arc<AggregatedCatalog> {
        let catalog = self.snapshot_for(&call.context.session);
        self.caught_up(catalog, call)
    }

    /// `catalog` when it has the tool; otherwise the snapshot after a catch-up. The snapshot
    /// is read again even when the catch-up found nothing behind: the background rebuild
    /// may have published the tool between the first read and the catch-up (it marks the
    /// revisions seen under the same lock).
    fn caught_up(
        &self,
        catalog: Arc<AggregatedCatalog>,
        call: &ToolCall,
    ) -> Arc<AggregatedCatalog> {
        if catalog.tool(call.name.as_str()).is_some() {
            return catalog;
        }
        self.inner.catch_up();
        self.snapshot_for(&call.context.session)
    }

    /// Connects `provider` as the MCP server `server` for `session` alone: that session's
    /// snapshot exposes its tools, prompts and resources (in place of a global server of the
    /// same name), no other session's does.
    pub fn upsert_session_backend(
        &self,
        session: &SessionId,
        server: &str,
        naming: BackendNaming,
        provider: Arc<dyn ToolProvider>,
    ) {
        let mut state = self.inner.lock();
        let overlay = state.sessions.entry(session.clone()).or_default();
        overlay
            .backends
            .insert(server.to_owned(), BackendEntry { naming, provider });
        overlay.invalidate();
        self.inner.count_overlays(&state);
    }

    /// Removes the session server `server` of `session`; returns whether it was there.
    pub fn remove_session_backend(&self, session: &SessionId, server: &str) -> bool {
        let mut state = self.inner.lock();
        let Some(overlay) = state.sessions.get_mut(session) else {
            return false;
        };
        let removed = overlay.backends.remove(server).is_some();
        overlay.invalidate();
        if overlay.backends.is_empty() {
            state.sessions.remove(session);
        }
        self.inner.count_overlays(&state);
        removed
    }

    /// The names of the servers connected for `session` alone, sorted.
    pub fn session_backends(&self, session: &SessionId) -> Vec<String> {
        self.inner
            .lock()
            .sessions
            .get(session)
            .map(|o| o.backends.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The snapshot `session` sees: the global one, plus the servers connected for that
    /// session alone. Cheap when the session has none (the global `Arc`); otherwise built
    /// once per change of the global snapshot or of the session's servers.
    pub fn snapshot_for(&self, session: &SessionId) -> Arc<AggregatedCatalog> {
        let global = self.snapshot();
        if self.inner.overlay_count.load(Ordering::Acquire) == 0 {
            return global;
        }
        let mut state = self.inner.lock();
        let State {
            backends,
            cores,
            sessions,
            ..
        } = &mut *state;
        let Some(overlay) = sessions.get_mut(session) else {
            return global;
        };
        if let Some(cached) = overlay.cached(global.generation()) {
            return cached;
        }
        let inputs = overlay.catalogs();
        let catalog = {
            let merged = sessions::merged(backends, &overlay.backends);
            let cores: Vec<&Arc<dyn ToolProvider>> = cores.iter().map(|c| &c.value).collect();
            Arc::new(build::build(
                &self.inner.naming,
                &merged,
                &cores,
                global.generation(),
                &AggregatedCatalog::default(),
                self.inner.metrics.as_ref(),
            ))
        };
        overlay.remember(global.generation(), inputs, Arc::clone(&catalog));
        catalog
    }

    /// Starts the rebuild task if it is not running and a runtime is available; returns that
    /// runtime.
    fn ensure_rebuilder(&self) -> Option<Handle> {
        let runtime = Handle::try_current().ok()?;
        if !self.inner.rebuilder_started.swap(true, Ordering::AcqRel) {
            let weak: Weak<Inner> = Arc::downgrade(&self.inner);
            watcher::spawn_rebuilder(
                &runtime,
                Arc::clone(&self.inner.dirty),
                self.inner.stop.clone(),
                move || match weak.upgrade() {
                    Some(inner) => {
                        let mut state = inner.lock();
                        inner.rebuild(&mut state);
                        true
                    }
                    None => false,
                },
            );
        }
        Some(runtime)
    }

    /// A token for a new revision watcher of `provider`, spawned when a runtime exists.
    fn watch(
        &self,
        runtime: Option<&Handle>,
        provider: &Arc<dyn ToolProvider>,
    ) -> CancellationToken {
        let token = self.inner.stop.child_token();
        if let Some(runtime) = runtime {
            watcher::spawn_revision_watcher(
                runtime,
                provider,
                Arc::clone(&self.inner.dirty),
                token.clone(),
            );
        }
        token
    }
}

impl ToolAvailability for Registry {
    fn is_available(&self, tool: &str, context: &CallContext) -> bool {
        self.snapshot_for(&context.session).contains_tool(tool)
    }
}

// === impl Inner ===

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count_overlays(&self, state: &State) {
        self.overlay_count
            .store(state.sessions.len(), Ordering::Release);
    }

    /// Rebuilds now when a provider published a revision the snapshot does not reflect.
    /// Costs one atomic load per provider when nothing is behind.
    fn catch_up(&self) {
        let mut state = self.lock();
        let behind = state.backends.values().any(Registered::is_stale)
            || state.cores.iter().any(Registered::is_stale);
        if behind {
            self.rebuild(&mut state);
        }
    }

    /// Publishes a new snapshot of `state` unless nothing visible changed. Runs with the
    /// state lock held, so snapshots are published in the order the changes were made.
    fn rebuild(&self, state: &mut State) {
        // Marked before the catalogs are read: a revision published during the build is
        // seen as new by the next check.
        for entry in state.backends.values_mut() {
            entry.seen.mark_unchanged();
        }
        for entry in &mut state.cores {
            entry.seen.mark_unchanged();
        }
        let backends: Vec<(&str, &BackendEntry)> = state
            .backends
            .iter()
            .map(|(server, entry)| (server.as_str(), &entry.value))
            .collect();
        let cores: Vec<&Arc<dyn ToolProvider>> = state.cores.iter().map(|c| &c.value).collect();
        let previous = self.snapshot.borrow().clone();
        let generation = state.generation + 1;
        let catalog = build::build(
            &self.naming,
            &backends,
            &cores,
            generation,
            &previous,
            self.metrics.as_ref(),
        );
        if catalog.same_content(&previous) {
            return;
        }
        state.generation = generation;
        self.snapshot.send_replace(Arc::new(catalog));
        self.generation.send_replace(state.generation);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests;
