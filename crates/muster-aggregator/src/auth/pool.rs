//! The connections made for one session alone, to servers it signed in to: registered in the
//! session's view of the registry, closed after an idle time, on sign-out and when the
//! server goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use muster_core::auth::SessionKey;
use muster_core::tool::{Catalog, Revision, SessionId, ToolError, ToolProvider, ToolService};
use rmcp::model::{GetPromptResult, JsonObject, ReadResourceResult};
use tokio::sync::watch;
use tokio::time::Instant;
use tower::util::BoxCloneSyncService;

use crate::backend::Backend;
use crate::naming::BackendNaming;
use crate::registry::Registry;
use crate::services::Services;

/// One session's connection to one server.
#[derive(Debug, Clone)]
pub(crate) struct Pooled {
    pub(crate) backend: Backend,
    pub(crate) issuer: String,
    /// Whom the grant of the connection belongs to: the session, or the person of a
    /// `grantScope: subject` server.
    pub(crate) owner: SessionKey,
    last_used: Arc<Mutex<Instant>>,
}

/// Every per-session connection.
#[derive(Debug)]
pub(crate) struct Pool {
    registry: Registry,
    services: Services,
    max: usize,
    entries: Mutex<HashMap<(SessionId, String), Pooled>>,
}

impl Pool {
    /// A pool registering connections in the registry of `services`, at most `max`, and
    /// reporting to `services` how many sessions each server has.
    pub(crate) fn new(services: Services, max: usize) -> Self {
        Self {
            registry: services.registry().clone(),
            services,
            max,
            entries: Mutex::default(),
        }
    }

    /// Tells the services how many connections each server has now.
    fn report(&self) {
        let mut counts = std::collections::BTreeMap::new();
        for (_, server) in self.lock().keys() {
            *counts.entry(server.clone()).or_insert(0) += 1;
        }
        self.services.report_session_connections(counts);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(SessionId, String), Pooled>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection of `session` to `server`.
    pub(crate) fn get(&self, session: &SessionId, server: &str) -> Option<Pooled> {
        self.lock()
            .get(&(session.clone(), server.to_owned()))
            .cloned()
    }

    /// Adds the connected `backend` of `session` to `server`, authorized by the grant of
    /// `owner` at `issuer`, and exposes it to the session; returns the connections it
    /// replaces or evicts (to be stopped).
    pub(crate) fn insert(
        &self,
        session: &SessionId,
        server: &str,
        grant: (&str, &SessionKey),
        naming: BackendNaming,
        backend: Backend,
    ) -> Vec<Backend> {
        let (issuer, owner) = grant;
        let pooled = Pooled {
            backend: backend.clone(),
            issuer: issuer.to_owned(),
            owner: owner.clone(),
            last_used: Arc::new(Mutex::new(Instant::now())),
        };
        let provider = Touching {
            backend,
            last_used: Arc::clone(&pooled.last_used),
        };
        let mut out = Vec::new();
        {
            let mut entries = self.lock();
            let key = (session.clone(), server.to_owned());
            if let Some(old) = entries.insert(key.clone(), pooled) {
                out.push(old.backend);
            }
            while entries.len() > self.max.max(1) {
                let Some(idlest) = entries
                    .iter()
                    .filter(|(k, _)| **k != key)
                    .min_by_key(|(_, p)| p.last_used())
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                if let Some(evicted) = entries.remove(&idlest) {
                    self.registry.remove_session_backend(&idlest.0, &idlest.1);
                    out.push(evicted.backend);
                }
            }
        }
        self.registry
            .upsert_session_backend(session, server, naming, Arc::new(provider));
        self.report();
        out
    }

    /// Removes the connection of `session` to `server` from the pool and the session's view.
    pub(crate) fn remove(&self, session: &SessionId, server: &str) -> Option<Pooled> {
        let removed = self.lock().remove(&(session.clone(), server.to_owned()));
        if removed.is_some() {
            self.registry.remove_session_backend(session, server);
            self.report();
        }
        removed
    }

    /// Removes every session's connection to `server`.
    pub(crate) fn remove_server(&self, server: &str) -> Vec<Backend> {
        self.remove_where(|(_, name), _| name == server)
    }

    /// Removes every connection authorized by the grant of `owner` at `issuer`, whichever
    /// session and server it serves (that grant was signed out).
    pub(crate) fn remove_grant_users(&self, owner: &SessionKey, issuer: &str) -> Vec<Backend> {
        self.remove_where(|_, p| p.owner == *owner && p.issuer == issuer)
    }

    /// Removes every connection of `session`.
    pub(crate) fn remove_session(&self, session: &SessionId) -> Vec<Backend> {
        self.remove_where(|(s, _), _| s == session)
    }

    /// Removes the connections unused for `idle`.
    pub(crate) fn evict_idle(&self, idle: Duration) -> Vec<Backend> {
        let now = Instant::now();
        self.remove_where(|_, p| now.duration_since(p.last_used()) >= idle)
    }

    /// Removes the connections whose server is gone or whose spec is no longer `current`
    /// says (the server was removed or changed).
    pub(crate) fn remove_stale(
        &self,
        current: impl Fn(&str) -> Option<muster_core::resource::mcp_server::McpServerSpec>,
    ) -> Vec<Backend> {
        self.remove_where(|(_, server), p| current(server).as_ref() != Some(p.backend.spec()))
    }

    /// Removes the connections `pick` selects; returns their backends (to be stopped).
    fn remove_where(&self, pick: impl Fn(&(SessionId, String), &Pooled) -> bool) -> Vec<Backend> {
        let keys: Vec<(SessionId, String)> = self
            .lock()
            .iter()
            .filter(|(k, p)| pick(k, p))
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|(session, server)| self.remove(&session, &server))
            .map(|p| p.backend)
            .collect()
    }

    /// Whether `session` has any connection.
    pub(crate) fn has_session(&self, session: &SessionId) -> bool {
        self.lock().keys().any(|(s, _)| s == session)
    }

    /// Whether another connection of `session` than the one to `server` uses `issuer`.
    pub(crate) fn issuer_in_use(&self, session: &SessionId, issuer: &str, server: &str) -> bool {
        self.lock()
            .iter()
            .any(|((s, name), p)| s == session && name != server && p.issuer == issuer)
    }
}

impl Pooled {
    fn last_used(&self) -> Instant {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A session's backend as the registry sees it: every use counts as activity.
#[derive(Debug, Clone)]
struct Touching {
    backend: Backend,
    last_used: Arc<Mutex<Instant>>,
}

impl Touching {
    fn touch(last_used: &Mutex<Instant>) {
        *last_used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }
}

impl ToolProvider for Touching {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.backend.catalog()
    }

    fn revisions(&self) -> watch::Receiver<Revision> {
        self.backend.revisions()
    }

    fn service(&self) -> ToolService {
        let last_used = Arc::clone(&self.last_used);
        let inner = self.backend.service();
        BoxCloneSyncService::new(tower::util::MapRequest::new(inner, move |call| {
            Self::touch(&last_used);
            call
        }))
    }

    fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> BoxFuture<'static, Result<GetPromptResult, ToolError>> {
        Self::touch(&self.last_used);
        ToolProvider::get_prompt(&self.backend, name, arguments)
    }

    fn read_resource(
        &self,
        uri: &str,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ToolError>> {
        Self::touch(&self.last_used);
        ToolProvider::read_resource(&self.backend, uri)
    }
}
