//! The shared state behind a [`Backend`](super::Backend) handle. One `std` mutex guards the
//! service data; it is never held across an `.await`, so readers never wait for I/O.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::Utc;
use muster_core::resource::mcp_server::McpServerSpec;
use muster_core::secret::Redactor;
use muster_core::tool::{Catalog, Revision};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::caller::CallerRouter;
use super::options::BackendOptions;
use super::progress::ProgressRouter;
use super::state::BackendSnapshot;

/// One live, initialized connection.
#[derive(Debug)]
pub(crate) struct Connection {
    /// Which attempt opened it.
    pub(crate) epoch: u64,
    /// Sends requests to the server.
    pub(crate) peer: Peer<RoleClient>,
    /// Routes the server's progress notifications.
    pub(crate) progress: ProgressRouter,
    /// Routes the server's requests to the callers of the calls in flight.
    pub(crate) callers: CallerRouter,
    /// The lean hop of `tools/call` (streamable-HTTP servers with a session, legacy SSE
    /// servers).
    #[cfg(feature = "http-client")]
    pub(crate) lean: Option<Arc<super::lean_call::LeanHop>>,
    /// Cancelling it closes the connection and ends its tasks.
    pub(crate) stop: CancellationToken,
    /// The task that owns the client (and the process) and reaps them.
    pub(crate) supervisor: Mutex<Option<JoinHandle<()>>>,
}

impl Connection {
    /// Closes the connection and waits until the process (if any) is reaped.
    pub(crate) async fn close(&self) {
        self.stop.cancel();
        let task = self
            .supervisor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// The mutable part of a backend.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) snapshot: BackendSnapshot,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) conn: Option<Arc<Connection>>,
    /// Increases with every attempt; events of older attempts are ignored.
    pub(crate) epoch: u64,
    /// The attempt in flight; cancelled by `stop`.
    pub(crate) attempt: Option<CancellationToken>,
    /// The scheduled retry; cancelled by `stop` and by a manual start.
    pub(crate) retry: Option<CancellationToken>,
    /// A stdio process died while running; the health probe starts it again.
    pub(crate) lost_stdio: bool,
    /// Whether the health probe task runs.
    pub(crate) health_started: bool,
}

/// Everything a backend is made of.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) spec: McpServerSpec,
    pub(crate) options: BackendOptions,
    /// The spec's secret values (and those read from Secrets at connect time): cut out of
    /// every text that leaves the backend.
    pub(crate) redactor: Redactor,
    pub(crate) shared: Mutex<Shared>,
    pub(crate) changes: watch::Sender<u64>,
    pub(crate) revisions: watch::Sender<Revision>,
    /// Serializes start, stop and restart.
    pub(crate) ops: tokio::sync::Mutex<()>,
    /// Cancelled when the backend is dropped; ends its background tasks.
    pub(crate) closed: CancellationToken,
}

impl Inner {
    pub(crate) fn new(name: String, spec: McpServerSpec, options: BackendOptions) -> Self {
        let mut snapshot = BackendSnapshot::initial(name.clone(), spec.server_type(), Utc::now());
        snapshot.suspended = spec.suspended;
        let redactor = Redactor::for_spec(&spec);
        options.redactions.register(&redactor);
        Self {
            name,
            spec,
            options,
            redactor,
            shared: Mutex::new(Shared {
                snapshot,
                catalog: Arc::new(Catalog::default()),
                conn: None,
                epoch: 0,
                attempt: None,
                retry: None,
                lost_stdio: false,
                health_started: false,
            }),
            changes: watch::Sender::new(0),
            revisions: watch::Sender::new(Revision::default()),
            ops: tokio::sync::Mutex::new(()),
            closed: CancellationToken::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `f` to the shared state, keeps `state_since` current and tells watchers.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Shared) -> R) -> R {
        let (result, revision) = {
            let mut shared = self.lock();
            let before_state = shared.snapshot.state;
            let before_revision = shared.catalog.revision;
            let result = f(&mut shared);
            if shared.snapshot.state != before_state {
                shared.snapshot.state_since = Utc::now();
            }
            let revision = shared.catalog.revision;
            (result, (revision != before_revision).then_some(revision))
        };
        if let Some(revision) = revision {
            self.revisions.send_replace(revision);
        }
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        result
    }

    /// Replaces the catalog with `catalog` under the next revision.
    pub(crate) fn set_catalog(shared: &mut Shared, mut catalog: Catalog) {
        catalog.revision = shared.catalog.revision.next();
        shared.catalog = Arc::new(catalog);
    }

    /// Empties the catalog (next revision) unless it is empty already.
    pub(crate) fn clear_catalog(shared: &mut Shared) {
        let c = &shared.catalog;
        if !(c.tools.is_empty()
            && c.prompts.is_empty()
            && c.resources.is_empty()
            && c.resource_templates.is_empty())
        {
            Self::set_catalog(shared, Catalog::default());
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.cancel();
        let shared = self
            .shared
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(attempt) = shared.attempt.take() {
            attempt.cancel();
        }
        if let Some(retry) = shared.retry.take() {
            retry.cancel();
        }
        if let Some(conn) = shared.conn.take() {
            // The supervisor task sees this, closes the client and reaps the process.
            conn.stop.cancel();
        }
    }
}
