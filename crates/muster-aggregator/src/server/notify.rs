//! `notifications/tools/list_changed` to every connected session when the catalog changes.
//!
//! `tools/list` itself is static (the meta-tools), but clients that cache what they learned
//! through `list_tools` use the notification as a cue to look again.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use muster_core::tool::SessionNotifier;
use rmcp::model::{
    CustomNotification, ServerJsonRpcMessage, ServerNotification, ToolListChangedNotification,
};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::room::SessionMap;

mod outbox;

use self::outbox::Outbox;

/// Where the notifications of one session go.
#[derive(Debug, Clone)]
pub(super) enum SessionPeer {
    /// The session's rmcp worker, which writes them to the session's stream.
    Worker(Peer<RoleServer>),
    /// The outbox of the session's `GET` stream, served by the front door: the session's
    /// entry lasts as long as the session (or until it goes quiet), stream or not.
    Stream(Arc<Outbox>),
}

impl SessionPeer {
    /// Whether the session's transport (worker or stream) is gone.
    pub(super) fn is_transport_closed(&self) -> bool {
        match self {
            Self::Worker(peer) => peer.is_transport_closed(),
            Self::Stream(_) => false,
        }
    }

    /// Sends `notification` to the session.
    async fn send(&self, notification: ServerNotification) -> Result<(), String> {
        match self {
            Self::Worker(peer) => peer
                .send_notification(notification)
                .await
                .map_err(|e| e.to_string()),
            Self::Stream(outbox) => {
                let message = ServerJsonRpcMessage::notification(notification);
                let text = serde_json::to_string(&message).map_err(|e| e.to_string())?;
                outbox.send(text)
            }
        }
    }
}

/// The peers of the sessions that completed `initialize`, by streamable HTTP session id
/// where there is one (legacy SSE sessions are numbered).
#[derive(Debug, Clone, Default)]
pub(super) struct Peers(Arc<Mutex<PeerMap>>);

#[derive(Debug, Default)]
struct PeerMap {
    peers: SessionMap<PeerKey, SessionPeer>,
    next_anonymous: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum PeerKey {
    Session(Box<str>),
    Anonymous(u64),
}

impl Peers {
    fn lock(&self) -> MutexGuard<'_, PeerMap> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds the peer of a new (or restored) session; `session` is its `Mcp-Session-Id`. A
    /// session whose `GET` stream the front door serves keeps sending there.
    pub(super) fn register(&self, session: Option<&str>, peer: Peer<RoleServer>) {
        let mut map = self.lock();
        map.peers.retain(|_, p| !p.is_transport_closed());
        let key = match session {
            Some(id) => PeerKey::Session(id.into()),
            None => {
                map.next_anonymous += 1;
                PeerKey::Anonymous(map.next_anonymous)
            }
        };
        if !matches!(map.peers.get(&key), Some(SessionPeer::Stream(_))) {
            map.peers.insert(key, SessionPeer::Worker(peer));
        }
    }

    /// Makes the front door's `GET` stream the place the notifications of streamable HTTP
    /// session `session` go, keeping them until a stream opens.
    pub(super) fn expect_stream(&self, session: &str) {
        self.outbox(session);
    }

    /// Opens a `GET` stream of session `session` and returns what it is to send, starting
    /// with what was kept for it; `None` while another stream of the session is open (one
    /// stream carries each message, so a second one only keeps its connection alive).
    pub(super) fn open_stream(&self, session: &str) -> Option<mpsc::Receiver<String>> {
        self.outbox(session).open()
    }

    /// The outbox of session `session`, made (in place of its worker's peer) if need be.
    fn outbox(&self, session: &str) -> Arc<Outbox> {
        let mut map = self.lock();
        let key = PeerKey::Session(session.into());
        if let Some(SessionPeer::Stream(outbox)) = map.peers.get(&key) {
            return outbox.clone();
        }
        let outbox = Arc::new(Outbox::default());
        map.peers.insert(key, SessionPeer::Stream(outbox.clone()));
        outbox
    }

    /// Forgets the outboxes of `sessions`, which went quiet (no stream open): what they
    /// would be sent meanwhile is not kept, as for a parked session.
    pub(super) fn forget_quiet(&self, sessions: &[Arc<str>]) {
        if sessions.is_empty() {
            return;
        }
        let mut map = self.lock();
        for session in sessions {
            let key = PeerKey::Session(Box::from(&**session));
            if let Some(SessionPeer::Stream(outbox)) = map.peers.get(&key)
                && !outbox.is_open()
            {
                map.peers.remove(&key);
            }
        }
    }

    /// The `GET` stream the front door serves for session `session`, if one is open.
    pub(super) fn stream_of(&self, session: &str) -> Option<SessionPeer> {
        self.of_session(session)
            .filter(|peer| matches!(peer, SessionPeer::Stream(_)))
    }

    /// The connected peer of streamable HTTP session `session`.
    pub(super) fn of_session(&self, session: &str) -> Option<SessionPeer> {
        let map = self.lock();
        map.peers
            .get(&PeerKey::Session(session.into()))
            .filter(|p| !p.is_transport_closed())
            .cloned()
    }

    /// Forgets the peer of streamable HTTP session `session` (closed, expired or parked):
    /// the peer holds the channels of the session's stopped worker until it is dropped.
    pub(super) fn forget(&self, session: &str) {
        let mut map = self.lock();
        map.peers.remove(&PeerKey::Session(session.into()));
    }

    /// Forgets the peers whose session ended, and hands back the room of a map that
    /// emptied out (after many sessions came and went).
    pub(super) fn prune(&self) {
        let mut map = self.lock();
        map.peers.retain(|_, p| !p.is_transport_closed());
        super::room::shrink(&mut map.peers);
    }

    /// How many peers are kept, and how many slots their map has allocated.
    pub(super) fn footprint(&self) -> (usize, usize) {
        let map = self.lock();
        (map.peers.len(), map.peers.capacity())
    }

    /// How many sessions without a streamable HTTP session id (legacy SSE, stdio) are
    /// still connected; the session table counts the others, parked ones included.
    pub(super) fn anonymous_count(&self) -> usize {
        let mut map = self.lock();
        map.peers.retain(|_, p| !p.is_transport_closed());
        map.peers
            .keys()
            .filter(|k| matches!(k, PeerKey::Anonymous(_)))
            .count()
    }

    /// The peers still connected; closed ones are forgotten.
    fn live(&self) -> Vec<SessionPeer> {
        let mut map = self.lock();
        map.peers.retain(|_, p| !p.is_transport_closed());
        map.peers.values().cloned().collect()
    }
}

/// Spawns the task that notifies `peers` after every change of `changes`, until `stop` is
/// cancelled or the registry is gone.
pub(super) fn spawn_notifier(
    peers: Peers,
    mut changes: watch::Receiver<u64>,
    stop: CancellationToken,
) {
    changes.mark_unchanged();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
            for peer in peers.live() {
                // One slow session must not hold up the others.
                tokio::spawn(async move {
                    let changed = ServerNotification::ToolListChangedNotification(
                        ToolListChangedNotification::default(),
                    );
                    if let Err(e) = peer.send(changed).await {
                        tracing::debug!(error = %e, "tools/list_changed not delivered");
                    }
                });
            }
        }
    });
}

/// How many session notifications may wait for a slow session before new ones are dropped.
const SESSION_QUEUE: usize = 1024;

/// The notifications of one notifier, in order, for a forwarding task that starts with the
/// first one (so calls that send none cost nothing more).
type Queue = Arc<OnceLock<mpsc::Sender<CustomNotification>>>;

/// What hands `(method, params)` to `queue` without blocking, starting the forwarding task
/// with `start` the first time.
fn enqueue(
    queue: Queue,
    start: impl Fn(mpsc::Receiver<CustomNotification>) + Send + Sync + 'static,
) -> impl Fn(&str, serde_json::Value) + Send + Sync + 'static {
    move |method, params| {
        let sender = queue.get_or_init(|| {
            let (sender, pending) = mpsc::channel(SESSION_QUEUE);
            start(pending);
            sender
        });
        if sender
            .try_send(CustomNotification::new(method, Some(params)))
            .is_err()
        {
            tracing::debug!(
                method,
                "a session notification was dropped: the session is slow or gone"
            );
        }
    }
}

/// A [`SessionNotifier`] sending custom notifications (such as `notifications/muster/event`)
/// to the session of `peer`, in order, without blocking the sender.
pub(super) fn session_notifier(peer: SessionPeer) -> SessionNotifier {
    let queue = Queue::default();
    let closed_queue = Arc::clone(&queue);
    let closed_peer = peer.clone();
    SessionNotifier::new(
        enqueue(queue, move |pending| {
            tokio::spawn(forward(peer.clone(), pending));
        }),
        move || {
            closed_peer.is_transport_closed()
                || closed_queue.get().is_some_and(mpsc::Sender::is_closed)
        },
    )
}

/// A [`SessionNotifier`] for streamable HTTP session `session` as a whole: each notification
/// goes, in order, to where the session's notifications go when it is sent (dropped while the
/// session has no stream or worker to take it), until `gone` says the session ended.
pub(super) fn session_id_notifier(
    peers: Peers,
    session: Arc<str>,
    gone: impl Fn() -> bool + Send + Sync + 'static,
) -> SessionNotifier {
    let start = move |mut pending: mpsc::Receiver<CustomNotification>| {
        let (peers, session) = (peers.clone(), session.clone());
        tokio::spawn(async move {
            while let Some(notification) = pending.recv().await {
                let Some(peer) = peers.of_session(&session) else {
                    tracing::debug!("a session notification was dropped: no stream is open");
                    continue;
                };
                let notification = ServerNotification::CustomNotification(notification);
                if let Err(e) = peer.send(notification).await {
                    tracing::debug!(error = %e, "a session notification was not delivered");
                }
            }
        });
    };
    SessionNotifier::new(enqueue(Queue::default(), start), gone)
}

async fn forward(peer: SessionPeer, mut pending: mpsc::Receiver<CustomNotification>) {
    while let Some(notification) = pending.recv().await {
        let notification = ServerNotification::CustomNotification(notification);
        if let Err(e) = peer.send(notification).await {
            tracing::debug!(error = %e, "a session notification was not delivered");
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_session_notifier_follows_the_stream_the_session_has_when_it_sends() {
        let peers = Peers::default();
        let ended = Arc::new(AtomicBool::new(false));
        let gone = Arc::clone(&ended);
        let notifier = session_id_notifier(peers.clone(), Arc::from("s-1"), move || {
            gone.load(Ordering::SeqCst)
        });
        // Nowhere to go yet: dropped, and the session is not taken for gone.
        notifier.notify("notifications/muster/event", serde_json::json!({"n": 0}));
        assert!(!notifier.is_closed());
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Expected by the front door's stream: kept for it.
        peers.expect_stream("s-1");
        notifier.notify("notifications/muster/event", serde_json::json!({"n": 1}));
        tokio::time::sleep(Duration::from_millis(50)).await;

        let mut stream = peers.open_stream("s-1").expect("first stream");
        assert!(
            peers.open_stream("s-1").is_none(),
            "one stream carries them"
        );
        notifier.notify("notifications/muster/event", serde_json::json!({"n": 2}));
        notifier.notify("notifications/muster/event", serde_json::json!({"n": 3}));
        for n in [1, 2, 3] {
            let text = tokio::time::timeout(Duration::from_secs(5), stream.recv())
                .await
                .expect("in time")
                .expect("open");
            let message: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(message["method"], "notifications/muster/event");
            assert_eq!(message["params"]["n"], n, "{text}");
        }
        assert!(stream.try_recv().is_err(), "the first was not kept");

        ended.store(true, Ordering::SeqCst);
        assert!(notifier.is_closed());
    }

    #[tokio::test]
    async fn a_closed_stream_makes_room_for_the_next_and_quiet_sessions_are_forgotten() {
        let peers = Peers::default();
        let first = peers.open_stream("s-2").expect("stream");
        drop(first);
        let second = peers
            .open_stream("s-2")
            .expect("a closed stream is replaced");
        assert!(matches!(
            peers.stream_of("s-2"),
            Some(SessionPeer::Stream(_))
        ));
        peers.expect_stream("s-3");
        let quiet = [Arc::from("s-2"), Arc::from("s-3")];
        peers.forget_quiet(&quiet);
        assert!(peers.stream_of("s-2").is_some(), "its stream is open");
        assert!(peers.stream_of("s-3").is_none());
        drop(second);
        peers.forget_quiet(&quiet);
        assert_eq!(peers.footprint().0, 0);
    }
}
