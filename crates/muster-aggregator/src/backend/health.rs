//! The periodic health probe: an MCP `ping` to connected servers, and a new start for a stdio
//! server whose process died while it was running.

use std::sync::{Arc, Weak};
use std::time::Duration;

use muster_core::resource::mcp_server::Health;
use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::ServiceError;
use tokio_util::sync::CancellationToken;

use super::inner::Inner;

/// The error a connection lost to a failed health probe records.
pub(crate) const PROBE_LOST: &str = "health probe: the server does not answer";

/// Probes every `interval` until the backend is dropped.
pub(crate) async fn probe_every(inner: Weak<Inner>, closed: CancellationToken, interval: Duration) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            () = closed.cancelled() => return,
        }
        let Some(backend) = inner.upgrade() else {
            return;
        };
        backend.probe().await;
    }
}

impl Inner {
    /// One probe.
    pub(crate) async fn probe(self: &Arc<Self>) {
        let (conn, lost_stdio) = {
            let s = self.lock();
            (s.conn.clone(), s.lost_stdio)
        };
        if let Some(conn) = conn {
            let ping = ClientRequest::PingRequest(PingRequest::default());
            let outcome =
                tokio::time::timeout(self.spec.timeout(), conn.peer.send_request(ping)).await;
            let (health, dead) = match outcome {
                Ok(Ok(_)) => (Health::Healthy, false),
                Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                    (Health::Unhealthy, true)
                }
                Ok(Err(_)) | Err(_) => (Health::Unhealthy, conn.peer.is_transport_closed()),
            };
            if dead {
                self.connection_lost(conn.epoch, PROBE_LOST.to_owned());
                return;
            }
            let changed = {
                let s = self.lock();
                s.conn.as_ref().is_some_and(|c| c.epoch == conn.epoch)
                    && s.snapshot.health != health
            };
            if changed {
                self.update(|s| {
                    if s.conn.as_ref().is_some_and(|c| c.epoch == conn.epoch) {
                        s.snapshot.health = health;
                    }
                });
            }
        } else if lost_stdio {
            let _op = self.ops.lock().await;
            let still_lost = std::mem::replace(&mut self.lock().lost_stdio, false);
            if still_lost && let Err(error) = self.start_locked().await {
                tracing::warn!(server = %self.name, %error, "restarting the server process failed");
            }
        }
    }
}
