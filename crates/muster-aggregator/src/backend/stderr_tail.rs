//! The last bytes a stdio server wrote to stderr, kept for `lastError` when it dies.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};

/// A bounded tail of a byte stream. Cheap to clone; clones share the buffer.
#[derive(Debug, Clone)]
pub(crate) struct StderrTail {
    inner: Arc<Mutex<VecDeque<u8>>>,
    limit: usize,
}

impl StderrTail {
    /// A tail keeping at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(VecDeque::with_capacity(limit.min(64 * 1024)))),
            limit,
        }
    }

    /// Appends bytes, dropping the oldest beyond the limit.
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut buf = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = &bytes[bytes.len().saturating_sub(self.limit)..];
        let overflow = (buf.len() + bytes.len()).saturating_sub(self.limit);
        let overflow = overflow.min(buf.len());
        buf.drain(..overflow);
        buf.extend(bytes);
    }

    /// The kept text, lossily decoded, trimmed; the first partial line is dropped once the
    /// limit was reached.
    pub(crate) fn text(&self) -> String {
        let buf = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes: Vec<u8> = buf.iter().copied().collect();
        drop(buf);
        let text = String::from_utf8_lossy(&bytes);
        let text = if bytes.len() >= self.limit {
            text.split_once('\n').map_or(&*text, |(_, rest)| rest)
        } else {
            &text
        };
        text.trim().to_owned()
    }

    /// Reads `stream` to its end into the tail.
    pub(crate) async fn collect(self, mut stream: impl AsyncRead + Unpin) {
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => self.push(&chunk[..n]),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_below_the_limit() {
        let tail = StderrTail::new(64);
        tail.push(b"starting\n");
        tail.push(b"boom: bad config\n");
        assert_eq!(tail.text(), "starting\nboom: bad config");
    }

    #[test]
    fn keeps_the_last_bytes_from_a_whole_line() {
        let tail = StderrTail::new(16);
        tail.push(b"line one\nline two\nline three\n");
        assert_eq!(tail.text(), "line three");
        let tail = StderrTail::new(4);
        tail.push(b"abcdefgh");
        assert_eq!(tail.text(), "efgh");
    }

    #[test]
    fn many_small_pushes() {
        let tail = StderrTail::new(10);
        for i in 0..100 {
            tail.push(format!("{i}\n").as_bytes());
        }
        assert_eq!(tail.text(), "97\n98\n99");
    }
}
