//! Where the server's notifications go: the listener of the moment, if any.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::ServerJsonRpcMessage;
use serde_json::Value;
use tokio::sync::mpsc;

type Listener = Mutex<Option<mpsc::UnboundedSender<Value>>>;

/// Where notifications other than progress go: the listener of the moment, if any. The
/// transport owns it, so the listener's stream ends when the transport does.
#[derive(Debug, Default)]
pub(super) struct NotificationSink(Arc<Listener>);

/// How the client attaches a listener to the sink its transport owns.
#[derive(Debug, Clone)]
pub(super) struct SinkHandle(Weak<Listener>);

impl SinkHandle {
    /// Sends the notifications from now on to `sender`, instead of the listener before;
    /// `false` once the transport is gone.
    pub(super) fn attach(&self, sender: mpsc::UnboundedSender<Value>) -> bool {
        match self.0.upgrade() {
            Some(listener) => {
                *listener.lock().unwrap_or_else(PoisonError::into_inner) = Some(sender);
                true
            }
            None => false,
        }
    }
}

impl NotificationSink {
    /// The handle to attach listeners with.
    pub(super) fn handle(&self) -> SinkHandle {
        SinkHandle(Arc::downgrade(&self.0))
    }

    /// Hands `message` to the listener.
    pub(super) fn deliver(&self, message: &ServerJsonRpcMessage) {
        let mut listener = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(sender) = listener.as_ref() else {
            return;
        };
        match serde_json::to_value(message) {
            Ok(message) => {
                if sender.send(message).is_err() {
                    *listener = None;
                }
            }
            Err(e) => tracing::debug!(error = %e, "a notification could not be encoded"),
        }
    }
}
