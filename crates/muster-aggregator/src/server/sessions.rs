//! The sessions of the streamable HTTP endpoint: a cap on how many exist, expiry of idle
//! ones, and parking, which keeps an idle session at a few hundred bytes.
//!
//! rmcp runs every session as a worker task with its own service and channels (tens of KB).
//! [`SessionTable`] wraps rmcp's [`LocalSessionManager`] and is also its
//! [`SessionStore`]: it remembers each session's `initialize` parameters (as compact JSON),
//! so a session without traffic for [`SessionLimits::park_after`] can have its worker
//! stopped ("parked") while the session stays valid. The next request to a parked session
//! has rmcp restore the worker from the store, replaying `initialize`, transparently to the
//! client. A session the front door opened itself (a plain `initialize`, see the lean path)
//! starts parked: its worker is built by the first request that needs one. A session with a
//! request or stream open is never parked or expired; one without
//! traffic for [`SessionLimits::idle_timeout`] is closed and forgotten, and so is one a
//! client deletes. Every request carrying `Mcp-Session-Id` counts as traffic; see
//! [`track`].
//!
//! A closed, expired or parked session leaves nothing behind in the front door's
//! per-session structures: its worker's entry in rmcp's session manager and its peer (kept
//! for notifications, holding the worker's channels) go with it, and the maps give back
//! the room of sessions that came and went ([`SessionTable::footprint`] counts them).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use futures::Stream;
use http_body::{Body as HttpBody, Frame, SizeHint};
use rmcp::model::{ClientJsonRpcMessage, InitializeRequestParams, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState, SessionStore,
    SessionStoreError,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::notify::{self, Peers};
use super::room::{SessionMap, shrink};
use muster_core::tool::SessionNotifier;

/// The header carrying the streamable HTTP session id.
pub(super) const SESSION_HEADER: http::HeaderName = http::HeaderName::from_static("mcp-session-id");

/// Default of [`SessionLimits::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// Default of [`SessionLimits::idle_timeout`].
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Default of [`SessionLimits::park_after`].
pub const DEFAULT_SESSION_PARK_AFTER: Duration = Duration::from_secs(30);

/// How often and how long a request polls while its session's worker is being parked or
/// restored.
const PARKING_POLL: Duration = Duration::from_millis(2);
const PARKING_POLLS: u32 = 1000;

/// How many sessions may exist and how long idle ones live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Most sessions open at once (parked ones included); an `initialize` beyond it is
    /// refused with `503` (default 10 000).
    pub max_sessions: usize,
    /// A session without a request for this long is closed (default 30 min).
    pub idle_timeout: Duration,
    /// A session without a request for this long has its worker stopped until its next
    /// request (default 30 s); clients do not notice.
    pub park_after: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            park_after: DEFAULT_SESSION_PARK_AFTER,
        }
    }
}

/// Why the table refused an operation.
#[derive(Debug, thiserror::Error)]
pub enum SessionTableError {
    /// The session cap is reached.
    #[error(
        "too many sessions: the limit of {max} (aggregator.limits.maxSessions) is reached; \
         close unused sessions or raise the limit"
    )]
    Full {
        /// The cap.
        max: usize,
    },
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// A session's `initialize` parameters could not be kept.
    #[error("keeping the session's initialize parameters: {0}")]
    Store(String),
}

#[derive(Debug)]
struct Entry {
    /// The client's `initialize` parameters as JSON, once the handshake completed.
    init: Option<Box<str>>,
    /// The client can be asked things during a call (sampling, elicitation, roots), which
    /// only the rmcp path relays.
    answers_requests: bool,
    /// The worker is stopped until the next request restores it.
    parked: bool,
    /// The reaper is stopping the worker; requests wait until it is parked.
    parking: bool,
    /// rmcp is restoring the worker and replaying the handshake; requests wait until the
    /// worker has answered it.
    restoring: bool,
    /// Exits of parked workers still to come: each worker's exit calls `close_session`,
    /// which must not forget a session that was only parked.
    pending_exits: u16,
    /// Requests and streams of the session still open.
    active: u32,
    last_seen: Instant,
    /// Where the session's lean calls send their notifications, made at the first one.
    notifier: Option<SessionNotifier>,
}

impl Entry {
    /// The session completed `initialize` and its client cannot be asked anything during a
    /// call: its meta-tool calls may take the lean path.
    fn is_lean(&self) -> bool {
        self.init.is_some() && !self.answers_requests
    }

    fn new(now: Instant) -> Self {
        Self {
            init: None,
            answers_requests: false,
            parked: false,
            parking: false,
            restoring: false,
            pending_exits: 0,
            active: 0,
            last_seen: now,
            notifier: None,
        }
    }
}

/// How many entries the per-session structures of the front door hold: what
/// [`SessionTable::footprint`] counts. Once every session is closed or expired, all of it
/// is zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionFootprint {
    /// Sessions in the table, parked ones included.
    pub sessions: usize,
    /// Sessions with a running worker in rmcp's session manager.
    pub workers: usize,
    /// Connected sessions whose peer is kept for notifications (legacy SSE and stdio
    /// sessions included).
    pub peers: usize,
    /// Slots the three maps have allocated, used or not: after many sessions came and
    /// went, the maps give the room back.
    pub slots: usize,
}

/// The session manager and session store of the streamable HTTP service.
#[derive(Debug)]
pub struct SessionTable {
    local: LocalSessionManager,
    entries: Mutex<SessionMap<Arc<str>, Entry>>,
    limits: SessionLimits,
    /// The peers of connected sessions, forgotten with their session.
    peers: Peers,
}

impl SessionTable {
    /// A table with `limits` whose sessions' peers are in `peers`; rmcp's own idle expiry is
    /// off, the table's reaper does it.
    pub(super) fn new(limits: SessionLimits, peers: Peers) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = None;
        Self {
            local,
            entries: Mutex::new(SessionMap::default()),
            limits,
            peers,
        }
    }

    /// How many entries the per-session structures hold.
    pub async fn footprint(&self) -> SessionFootprint {
        let (sessions, table_slots) = {
            let entries = self.lock();
            (entries.len(), entries.capacity())
        };
        let (workers, worker_slots) = {
            let local = self.local.sessions.read().await;
            (local.len(), local.capacity())
        };
        let (peers, peer_slots) = self.peers.footprint();
        SessionFootprint {
            sessions,
            workers,
            peers,
            slots: table_slots + worker_slots + peer_slots,
        }
    }

    fn lock(&self) -> MutexGuard<'_, SessionMap<Arc<str>, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions exist.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many sessions have a running worker.
    pub fn live(&self) -> usize {
        self.lock().values().filter(|e| !e.parked).count()
    }

    /// Whether a new session would exceed the cap.
    pub(super) fn is_full(&self) -> bool {
        self.len() >= self.limits.max_sessions
    }

    /// The cap.
    pub(super) fn max_sessions(&self) -> usize {
        self.limits.max_sessions
    }

    /// Opens a session whose handshake the front door answered itself (see the lean path's
    /// `handshake` module): it starts parked, without a worker, and the first request that
    /// needs one has rmcp restore it from `init`, the client's `initialize` parameters.
    ///
    /// # Errors
    ///
    /// [`SessionTableError::Full`] when the cap is reached, [`SessionTableError::Store`]
    /// when the parameters cannot be encoded.
    pub(super) fn open_parked(
        &self,
        init: &InitializeRequestParams,
    ) -> Result<Arc<str>, SessionTableError> {
        let json = serde_json::to_string(init)
            .map_err(|e| SessionTableError::Store(e.to_string()))?
            .into_boxed_str();
        let mut entries = self.lock();
        if entries.len() >= self.limits.max_sessions {
            return Err(SessionTableError::Full {
                max: self.limits.max_sessions,
            });
        }
        let id = rmcp::transport::common::server_side_http::session_id();
        let mut entry = Entry::new(Instant::now());
        entry.init = Some(json);
        entry.answers_requests = answers_requests(init);
        entry.parked = true;
        entries.insert(id.clone(), entry);
        Ok(id)
    }

    /// Whether session `id` exists (parked or not).
    pub(super) fn contains(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }

    /// Whether session `id` exists with its worker stopped (parked, or never started):
    /// the front door answers what it can of it without starting one.
    pub(super) fn is_parked(&self, id: &str) -> bool {
        self.lock()
            .get(id)
            .is_some_and(|e| e.parked && e.init.is_some())
    }

    /// Whether `id` names a session that completed `initialize` and whose client cannot
    /// be asked anything during a call: its meta-tool calls may take the lean path.
    pub(super) fn is_lean(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(Entry::is_lean)
    }

    /// The notifier of session `id` when its meta-tool calls may take the lean path (see
    /// [`is_lean`](Self::is_lean)): one per session, made at its first lean call, whose
    /// notifications go, in order, to where the session's go when each is sent, until the
    /// session is gone. With it, the session's id as calls name it, sharing the table's
    /// text.
    pub(super) fn lean_notifier(
        self: &Arc<Self>,
        id: &str,
    ) -> Option<(SessionNotifier, muster_core::tool::SessionId)> {
        let mut entries = self.lock();
        let key = entries.get_key_value(id)?.0.clone();
        let entry = entries.get_mut(&key)?;
        if !entry.is_lean() {
            return None;
        }
        let session = muster_core::tool::SessionId::from(Arc::clone(&key));
        let notifier = entry.notifier.get_or_insert_with(|| {
            let table = Arc::downgrade(self);
            let session = Arc::clone(&key);
            notify::session_id_notifier(self.peers.clone(), key, move || {
                table.upgrade().is_none_or(|t| !t.contains(&session))
            })
        });
        Some((notifier.clone(), session))
    }

    /// Marks a request of session `id` as open until the returned guard is dropped.
    pub(super) fn open(self: &Arc<Self>, id: &str) -> Option<Activity> {
        let mut entries = self.lock();
        let key = entries.get_key_value(id)?.0.clone();
        let entry = entries.get_mut(&key)?;
        entry.active = entry.active.saturating_add(1);
        entry.last_seen = Instant::now();
        Some(Activity {
            table: Arc::downgrade(self),
            id: key,
        })
    }

    fn close_activity(&self, id: &str) {
        if let Some(entry) = self.lock().get_mut(id) {
            entry.active = entry.active.saturating_sub(1);
            entry.last_seen = Instant::now();
        }
    }

    /// Parks sessions idle for `park_after` and closes those idle for `idle_timeout`.
    async fn sweep(&self) {
        let now = Instant::now();
        let mut park = Vec::new();
        let mut expire = Vec::new();
        let mut quiet = Vec::new();
        {
            let mut entries = self.lock();
            entries.retain(|id, entry| {
                if entry.active > 0 {
                    return true;
                }
                let idle = now.saturating_duration_since(entry.last_seen);
                if idle >= self.limits.idle_timeout {
                    if entry.parked {
                        quiet.push(id.clone());
                    } else {
                        expire.push(id.clone());
                    }
                    return false;
                }
                if idle >= self.limits.park_after && entry.parked {
                    // No worker and no stream: what the front door kept for its stream goes.
                    quiet.push(id.clone());
                } else if idle >= self.limits.park_after
                    && !entry.parked
                    && !entry.parking
                    && entry.init.is_some()
                {
                    entry.parking = true;
                    entry.pending_exits = entry.pending_exits.saturating_add(1);
                    park.push(id.clone());
                }
                true
            });
            shrink(&mut entries);
        }
        self.peers.forget_quiet(&quiet);
        for id in expire {
            tracing::debug!(session = %id, "closing an idle session");
            self.peers.forget(&id);
            self.stop_worker(&id).await;
        }
        for id in park {
            // Requests wait while the session is parking, so no restored peer is lost.
            self.peers.forget(&id);
            self.stop_worker(&id).await;
            let mut entries = self.lock();
            if entries.get(&id).is_some_and(|e| e.parking)
                && let Some((key, mut entry)) = entries.remove_entry(&id)
            {
                entry.parking = false;
                entry.parked = true;
                // What a parked session keeps is copied out of the pages its worker shared
                // with it, so the allocator can hand those back whole.
                entry.init = entry.init.as_deref().map(Box::from);
                entries.insert(Arc::from(&*key), entry);
            }
        }
        shrink(&mut *self.local.sessions.write().await);
    }

    /// Whether the reaper is stopping the worker of `id` right now.
    fn is_parking(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(|e| e.parking)
    }

    async fn stop_worker(&self, id: &Arc<str>) {
        let session_id = SessionId::from(id.clone());
        if let Err(e) = self.local.close_session(&session_id).await {
            tracing::debug!(session = %id, error = %e, "closing a session worker failed");
        }
    }
}

/// Runs the sweeps of `table`, each followed by `after_sweep`, until `stop` is cancelled or
/// the table is gone.
pub(super) fn spawn_reaper(
    table: &Arc<SessionTable>,
    stop: CancellationToken,
    after_sweep: impl Fn() + Send + 'static,
) {
    let period = table
        .limits
        .park_after
        .min(table.limits.idle_timeout)
        .div_f64(4.0)
        .clamp(Duration::from_millis(50), Duration::from_secs(10));
    let weak: Weak<SessionTable> = Arc::downgrade(table);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = ticks.tick() => {}
            }
            let Some(table) = weak.upgrade() else { break };
            table.sweep().await;
            after_sweep();
        }
    });
}

/// An open request of a session; dropping it records the session's last activity.
#[derive(Debug)]
pub(super) struct Activity {
    table: Weak<SessionTable>,
    id: Arc<str>,
}

impl Drop for Activity {
    fn drop(&mut self) {
        if let Some(table) = self.table.upgrade() {
            table.close_activity(&self.id);
        }
    }
}

/// A response body holding an [`Activity`] until it is dropped: a request naming a session
/// keeps it open (never parked or expired) until its response, streams included, has been
/// sent.
pub(super) struct Guarded {
    inner: Body,
    _activity: Activity,
}

impl Guarded {
    pub(super) fn new(inner: Body, activity: Activity) -> Self {
        Self {
            inner,
            _activity: activity,
        }
    }
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl SessionManager for SessionTable {
    type Error = SessionTableError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if self.is_full() {
            return Err(SessionTableError::Full {
                max: self.limits.max_sessions,
            });
        }
        let (id, transport) = self.local.create_session().await?;
        self.lock().insert(id.clone(), Entry::new(Instant::now()));
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let result = self.local.initialize_session(id, message).await;
        // A restored worker has answered the replayed handshake: it takes requests now.
        if let Some(entry) = self.lock().get_mut(id.as_ref()) {
            entry.restoring = false;
        }
        Ok(result?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // A request arriving while its worker is being parked waits for the parking to end,
        // then has rmcp restore the worker.
        for _ in 0..PARKING_POLLS {
            if !self.is_parking(id) {
                break;
            }
            tokio::time::sleep(PARKING_POLL).await;
        }
        // A request arriving while rmcp restores the worker must not reach it before the
        // worker has answered the replayed handshake: it waits for that too.
        for _ in 0..PARKING_POLLS {
            if !self.lock().get(id.as_ref()).is_some_and(|e| e.restoring) {
                break;
            }
            tokio::time::sleep(PARKING_POLL).await;
        }
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut entries = self.lock();
            if let Some(entry) = entries.get_mut(id.as_ref()) {
                if entry.pending_exits > 0 {
                    // A parked worker ended; the session lives on.
                    entry.pending_exits -= 1;
                    return Ok(());
                }
                entries.remove(id.as_ref());
            }
        }
        self.peers.forget(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Marked before rmcp's manager knows the worker, so that no request finds it
        // before it has answered the replayed handshake.
        if let Some(entry) = self.lock().get_mut(id.as_ref()) {
            entry.restoring = true;
        }
        let outcome = self.local.restore_session(id.clone()).await;
        if let Some(entry) = self.lock().get_mut(id.as_ref()) {
            entry.parked = false;
            entry.parking = false;
            entry.restoring = matches!(outcome, Ok(RestoreOutcome::Restored(_)));
            entry.last_seen = Instant::now();
        }
        Ok(outcome?)
    }
}

/// Whether the client of `params` can be asked things during a call (sampling, elicitation,
/// roots), which only the rmcp path relays.
pub(super) fn answers_requests(params: &InitializeRequestParams) -> bool {
    let capabilities = &params.capabilities;
    capabilities.sampling.is_some()
        || capabilities.elicitation.is_some()
        || capabilities.roots.is_some()
}

/// The store side: what rmcp needs to restore a parked session.
#[derive(Debug, Clone)]
pub(super) struct Store(pub(super) Arc<SessionTable>);

#[async_trait::async_trait]
impl SessionStore for Store {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let init = {
            let entries = self.0.lock();
            match entries.get(session_id) {
                Some(entry) if entry.parked => entry.init.clone(),
                _ => None,
            }
        };
        let Some(init) = init else { return Ok(None) };
        let params = serde_json::from_str(&init)?;
        Ok(Some(SessionState::new(params)))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let json = serde_json::to_string(&state.initialize_params)?;
        let answers_requests = answers_requests(&state.initialize_params);
        if let Some(entry) = self.0.lock().get_mut(session_id) {
            entry.init = Some(json.into_boxed_str());
            entry.answers_requests = answers_requests;
        }
        Ok(())
    }

    /// Called when a client deletes its session: forget it, worker and all.
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let removed = self.0.lock().remove(session_id);
        self.0.peers.forget(session_id);
        if let Some(entry) = removed
            && !entry.parked
        {
            self.0.stop_worker(&Arc::from(session_id)).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::streamable_http_server::session::SessionManager;

    use super::*;

    fn init(capabilities: serde_json::Value) -> InitializeRequestParams {
        serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": capabilities,
            "clientInfo": {"name": "test", "version": "1"},
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_lean_session_has_one_notifier_for_its_calls_until_it_closes() {
        let table = Arc::new(SessionTable::new(
            SessionLimits::default(),
            Peers::default(),
        ));
        assert!(table.lean_notifier("unknown").is_none());
        let asks = table
            .open_parked(&init(serde_json::json!({"sampling": {}})))
            .unwrap();
        assert!(
            table.lean_notifier(&asks).is_none(),
            "its client can be asked things"
        );

        let id = table.open_parked(&init(serde_json::json!({}))).unwrap();
        assert!(
            table.lock().get(&id).unwrap().notifier.is_none(),
            "made at the first call"
        );
        let (first, session) = table.lean_notifier(&id).unwrap();
        assert_eq!(session.as_str(), &*id);
        assert!(table.lock().get(&id).unwrap().notifier.is_some());
        let (second, _) = table.lean_notifier(&id).unwrap();
        assert!(!first.is_closed() && !second.is_closed());

        table.close_session(&id).await.unwrap();
        assert!(first.is_closed() && second.is_closed());
        assert!(table.lean_notifier(&id).is_none());
    }
}
