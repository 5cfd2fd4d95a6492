//! Where the notifications of a session whose `GET` stream the front door serves go: to the
//! open stream, or — while none is open, as between the handshake and the client's first
//! `GET` — kept (the last [`KEPT`]) for the next stream that opens, as rmcp's worker keeps
//! them for its stream.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::mpsc;

/// Notifications kept while no stream is open (rmcp's worker keeps as many).
const KEPT: usize = 16;
/// Messages waiting for a slow stream before new ones are dropped; the kept ones fit.
const STREAM_QUEUE: usize = KEPT;

/// The outbox of one session.
#[derive(Debug)]
pub(crate) struct Outbox(Mutex<State>);

#[derive(Debug)]
enum State {
    /// No stream is open: the last notifications, as JSON text.
    Waiting(VecDeque<String>),
    /// The stream's end of its channel.
    Open(mpsc::Sender<String>),
}

impl Default for Outbox {
    fn default() -> Self {
        Self(Mutex::new(State::Waiting(VecDeque::new())))
    }
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `text` to the open stream, or keeps it for the next one.
    ///
    /// # Errors
    ///
    /// When the open stream has fallen [`STREAM_QUEUE`] messages behind: `text` is dropped.
    pub(crate) fn send(&self, text: String) -> Result<(), String> {
        let mut state = self.lock();
        if let State::Open(sender) = &*state {
            match sender.try_send(text) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::TrySendError::Full(_)) => {
                    return Err("the stream is too far behind".to_owned());
                }
                Err(mpsc::error::TrySendError::Closed(text)) => {
                    *state = State::Waiting(VecDeque::from([text]));
                    return Ok(());
                }
            }
        }
        if let State::Waiting(kept) = &mut *state {
            if kept.len() >= KEPT {
                kept.pop_front();
            }
            kept.push_back(text);
        }
        Ok(())
    }

    /// A new stream, starting with what was kept; `None` while another stream is open.
    pub(crate) fn open(&self) -> Option<mpsc::Receiver<String>> {
        let mut state = self.lock();
        if let State::Open(sender) = &*state
            && !sender.is_closed()
        {
            return None;
        }
        let (sender, receiver) = mpsc::channel(STREAM_QUEUE);
        if let State::Waiting(kept) = &mut *state {
            for text in kept.drain(..) {
                // The channel holds every kept message.
                let _ = sender.try_send(text);
            }
        }
        *state = State::Open(sender);
        Some(receiver)
    }

    /// Whether a stream is open.
    pub(crate) fn is_open(&self) -> bool {
        matches!(&*self.lock(), State::Open(sender) if !sender.is_closed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_comes_before_the_stream_is_kept_for_it_the_last_ones_first_in_order() {
        let outbox = Outbox::default();
        for n in 0..(KEPT + 3) {
            outbox.send(n.to_string()).expect("kept");
        }
        assert!(!outbox.is_open());
        let mut stream = outbox.open().expect("first stream");
        assert!(outbox.is_open());
        assert!(outbox.open().is_none(), "one stream at a time");
        let received: Vec<String> = std::iter::from_fn(|| stream.try_recv().ok()).collect();
        let expected: Vec<String> = (3..KEPT + 3).map(|n| n.to_string()).collect();
        assert_eq!(received, expected);

        outbox.send("live".to_owned()).expect("sent");
        assert_eq!(stream.try_recv().ok().as_deref(), Some("live"));
    }

    #[test]
    fn a_closed_stream_keeps_what_follows_for_the_next() {
        let outbox = Outbox::default();
        drop(outbox.open().expect("stream"));
        assert!(!outbox.is_open());
        outbox.send("after".to_owned()).expect("kept");
        let mut next = outbox.open().expect("the next stream");
        assert_eq!(next.try_recv().ok().as_deref(), Some("after"));
    }

    #[test]
    fn a_stream_that_falls_behind_loses_what_does_not_fit() {
        let outbox = Outbox::default();
        let _stream = outbox.open().expect("stream");
        for n in 0..STREAM_QUEUE {
            outbox.send(n.to_string()).expect("fits");
        }
        assert!(outbox.send("one too many".to_owned()).is_err());
    }
}
