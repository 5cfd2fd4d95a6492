//! `notifications/tools/list_changed` to every connected session when the catalog changes.
//!
//! `tools/list` itself is static (the meta-tools), but clients that cache what they learned
//! through `list_tools` use the notification as a cue to look again.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use muster_core::tool::SessionNotifier;
use rmcp::model::{CustomNotification, ServerNotification};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// The peers of the sessions that completed `initialize`.
#[derive(Debug, Clone, Default)]
pub(super) struct Peers(Arc<Mutex<Vec<Peer<RoleServer>>>>);

impl Peers {
    /// Adds the peer of a new session.
    pub(super) fn register(&self, peer: Peer<RoleServer>) {
        let mut peers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }

    /// The peers still connected; closed ones are forgotten.
    fn live(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|p| !p.is_transport_closed());
        peers.clone()
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
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::debug!(error = %e, "tools/list_changed not delivered");
                    }
                });
            }
        }
    });
}

/// How many session notifications may wait for a slow session before new ones are dropped.
const SESSION_QUEUE: usize = 1024;

/// A [`SessionNotifier`] sending custom notifications (such as `notifications/muster/event`)
/// to the session of `peer`, in order, without blocking the sender. The forwarding task
/// starts with the first notification, so calls that send none cost nothing more.
pub(super) fn session_notifier(peer: Peer<RoleServer>) -> SessionNotifier {
    let queue: Arc<OnceLock<mpsc::Sender<CustomNotification>>> = Arc::default();
    let closed_queue = Arc::clone(&queue);
    let closed_peer = peer.clone();
    SessionNotifier::new(
        move |method, params| {
            let sender = queue.get_or_init(|| {
                let (sender, pending) = mpsc::channel(SESSION_QUEUE);
                tokio::spawn(forward(peer.clone(), pending));
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
        },
        move || {
            closed_peer.is_transport_closed()
                || closed_queue.get().is_some_and(mpsc::Sender::is_closed)
        },
    )
}

async fn forward(peer: Peer<RoleServer>, mut pending: mpsc::Receiver<CustomNotification>) {
    while let Some(notification) = pending.recv().await {
        let notification = ServerNotification::CustomNotification(notification);
        if let Err(e) = peer.send_notification(notification).await {
            tracing::debug!(error = %e, "a session notification was not delivered");
            break;
        }
    }
}
