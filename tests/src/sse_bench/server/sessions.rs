//! The open sessions of the server: each id with the queue of its event stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::mpsc;

/// The queue of one session's stream: serialized JSON-RPC messages.
pub(super) type Outbox = mpsc::Sender<String>;

/// Every open session, by id.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    open: Mutex<HashMap<String, Outbox>>,
}

impl Sessions {
    /// Opens a session with a queue of `capacity` messages: the handle that closes it when
    /// dropped, and the receiving end of its queue.
    pub(super) fn open(self: &Arc<Self>, capacity: usize) -> (Session, mpsc::Receiver<String>) {
        let (outbox, inbox) = mpsc::channel(capacity);
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.lock().insert(id.clone(), outbox);
        let session = Session {
            sessions: Arc::clone(self),
            id,
        };
        (session, inbox)
    }

    /// The queue of the open session `id`.
    pub(super) fn sender(&self, id: &str) -> Option<Outbox> {
        self.lock().get(id).cloned()
    }

    /// How many sessions are open.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Outbox>> {
        // The map stays consistent whatever panicked while holding it.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One open session; dropping it closes the session.
#[derive(Debug)]
pub(super) struct Session {
    sessions: Arc<Sessions>,
    id: String,
}

impl Session {
    /// The session's id, as the client names it in `?sessionId=`.
    pub(super) fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.sessions.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_known_until_its_handle_is_dropped() {
        let sessions = Arc::new(Sessions::default());
        let (first, _inbox) = sessions.open(4);
        let (second, _other) = sessions.open(4);
        assert_ne!(first.id(), second.id());
        assert_eq!(sessions.len(), 2);
        let id = first.id().to_owned();
        assert!(sessions.sender(&id).is_some());
        drop(first);
        assert!(sessions.sender(&id).is_none());
        assert_eq!(sessions.len(), 1);
    }
}
