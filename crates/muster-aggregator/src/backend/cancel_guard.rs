//! Telling a server that muster gave up on a request: `notifications/cancelled`, sent when the
//! caller cancels or drops the call.

use rmcp::model::{CancelledNotificationParam, RequestId};
use rmcp::service::{Peer, RoleClient};

/// Why muster gave up on a call, as told to the server.
const CANCELLED_BY_CALLER: &str = "cancelled by the caller";

/// Sends `notifications/cancelled` for a request unless disarmed; on drop it does so from a
/// task, so a caller that drops the call future still frees the server.
pub(crate) struct CancelGuard {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl CancelGuard {
    /// Armed for the request `id` sent through (or beside) `peer`.
    pub(crate) fn new(peer: Peer<RoleClient>, id: RequestId) -> Self {
        Self { peer, id: Some(id) }
    }

    fn params(id: RequestId) -> CancelledNotificationParam {
        CancelledNotificationParam::new(Some(id), Some(CANCELLED_BY_CALLER.to_owned()))
    }

    /// Sends the notification now.
    pub(crate) async fn cancel_now(&mut self) {
        if let Some(id) = self.id.take() {
            let _ = self.peer.notify_cancelled(Self::params(id)).await;
        }
    }

    /// The request finished: nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(Self::params(id)).await;
            });
        }
    }
}
