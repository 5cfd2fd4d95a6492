//! `notifications/tools/list_changed` to every connected session when the catalog changes.
//!
//! `tools/list` itself is static (the meta-tools), but clients that cache what they learned
//! through `list_tools` use the notification as a cue to look again.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::service::{Peer, RoleServer};
use tokio::sync::watch;
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
