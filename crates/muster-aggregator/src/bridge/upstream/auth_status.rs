//! Reading the session's `auth://status` for the auth notices on tool results: once the
//! client's session is initialized (and whenever it is replaced), then at every interval.
//! The bridge sends these reads itself; their answers never reach the client.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use reqwest::Method;
use serde_json::Value;

use super::{SESSION_HEADER, Upstream, lock};
use crate::bridge::{messages, notices, replies};

/// How long one read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

impl Upstream {
    /// Reads `auth://status` when the session is initialized or replaced, and every
    /// `interval`; a failed read keeps the last list.
    pub(in crate::bridge) async fn watch_auth_status(self: Arc<Self>, interval: Duration) {
        self.read_status_now.notified().await;
        let mut reads: u64 = 0;
        loop {
            reads += 1;
            self.read_auth_status(reads).await;
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = self.read_status_now.notified() => {}
            }
        }
    }

    /// One read, the `n`th.
    async fn read_auth_status(&self, n: u64) {
        let session = self.session.borrow().clone();
        let Some(session_id) = session.id.clone() else {
            return;
        };
        if self.is_signed_out() {
            return;
        }
        let id = Value::String(format!("muster-bridge-auth-status-{n}"));
        let request = notices::status_request(&id);
        let sent = self
            .send(|| {
                self.request(Method::POST, &session)
                    .header(SESSION_HEADER, session_id.clone())
                    .json(&request)
                    .timeout(READ_TIMEOUT)
            })
            .await;
        let response = match sent {
            Ok((response, _)) if response.status().is_success() => response,
            Ok((response, _)) => {
                tracing::debug!(status = %response.status(), "muster did not answer the auth://status read");
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading auth://status failed");
                return;
            }
        };
        let mut stream = replies::messages(response);
        while let Some(message) = stream.next().await {
            if !messages::answers(&message, &id) {
                continue;
            }
            match notices::from_response(&message) {
                Some(servers) => *lock(&self.auth_required) = servers,
                None => tracing::debug!("muster has no auth://status for this session"),
            }
            return;
        }
    }
}
