//! [`LineLimit`]: a reader between a stdio server's stdout and the MCP client that bounds the
//! size of one message and turns an oversized response into an error response for its
//! request, so the caller fails at once instead of waiting for its timeout.
//!
//! A line longer than the limit is cut where it crosses it: the bytes passed on so far end
//! with a line break (an unparsable fragment the client skips), the rest of the line is
//! dropped, and when the line's top-level `id` could be read from its beginning, an error
//! response for that id follows, saying how large the message was and what the limit is.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// How much of a line's beginning is kept to find its `id`.
const HEAD_BYTES: usize = 4096;

/// Bounds the messages read from `inner` to `max_bytes` each (the line break excluded).
#[derive(Debug)]
pub(crate) struct LineLimit<R> {
    inner: R,
    max_bytes: usize,
    /// Bytes of the current line read so far.
    line_len: usize,
    /// The first bytes of the current line.
    head: Vec<u8>,
    /// Set while dropping the rest of an oversized line.
    discarding: bool,
    /// Bytes to hand out before reading on (the cut and the error response).
    pending: Vec<u8>,
}

impl<R> LineLimit<R> {
    pub(crate) fn new(inner: R, max_bytes: usize) -> Self {
        Self {
            inner,
            max_bytes,
            line_len: 0,
            head: Vec::with_capacity(256),
            discarding: false,
            pending: Vec::new(),
        }
    }

    /// Processes `input` (just read), writing what passes on into `out`.
    fn filter(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut rest = input;
        while !rest.is_empty() {
            let newline = rest.iter().position(|b| *b == b'\n');
            let segment_end = newline.map_or(rest.len(), |i| i + 1);
            let (segment, after) = rest.split_at(segment_end);
            rest = after;
            let body = segment.strip_suffix(b"\n").unwrap_or(segment);
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                    self.line_len = 0;
                    self.head.clear();
                }
                continue;
            }
            let room = self.max_bytes.saturating_sub(self.line_len);
            if body.len() > room {
                // Pass what fits, then cut the line.
                self.remember(&body[..room]);
                out.extend_from_slice(&body[..room]);
                out.push(b'\n');
                out.extend_from_slice(&self.error_response());
                self.line_len = 0;
                self.head.clear();
                self.discarding = newline.is_none();
                continue;
            }
            self.remember(body);
            out.extend_from_slice(segment);
            if newline.is_some() {
                self.line_len = 0;
                self.head.clear();
            } else {
                self.line_len += body.len();
            }
        }
    }

    fn remember(&mut self, bytes: &[u8]) {
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// When every line of `new` fits, updates the state for it and returns `true`; changes
    /// nothing otherwise. The common case: the bytes pass on without a copy.
    fn passes(&mut self, new: &[u8]) -> bool {
        if self.discarding {
            return false;
        }
        let mut len = self.line_len;
        let mut last_start = None;
        let mut at = 0;
        while let Some(i) = new[at..].iter().position(|b| *b == b'\n') {
            if len + i > self.max_bytes {
                return false;
            }
            len = 0;
            at += i + 1;
            last_start = Some(at);
        }
        len += new.len() - at;
        if len > self.max_bytes {
            return false;
        }
        match last_start {
            Some(start) => {
                self.head.clear();
                self.remember(&new[start..]);
            }
            None => self.remember(new),
        }
        self.line_len = len;
        true
    }

    /// The error response for the cut line's request, or nothing when its id is unknown.
    fn error_response(&self) -> Vec<u8> {
        let Some(id) = top_level_id(&self.head) else {
            tracing::error!(
                max_bytes = self.max_bytes,
                "a message of the server exceeded the maximum size and was dropped"
            );
            return Vec::new();
        };
        let message = format!(
            "the server's response exceeds the maximum message size of {} bytes \
             (limits.backends.maxResultBytes)",
            self.max_bytes
        );
        let response = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": -32603, "message": message },
        });
        let mut line = response.to_string().into_bytes();
        line.push(b'\n');
        line
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if !self.pending.is_empty() {
                let n = self.pending.len().min(buf.remaining());
                buf.put_slice(&self.pending[..n]);
                self.pending.drain(..n);
                return Poll::Ready(Ok(()));
            }
            let before = buf.filled().len();
            match Pin::new(&mut self.inner).poll_read(cx, buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
            }
            let new = &buf.filled()[before..];
            if new.is_empty() || self.passes(new) {
                return Poll::Ready(Ok(()));
            }
            let input = new.to_vec();
            buf.set_filled(before);
            let mut out = Vec::with_capacity(input.len().min(self.max_bytes + 256));
            self.filter(&input, &mut out);
            // Everything read may have been dropped: then read on.
            self.pending = out;
        }
    }
}

/// The value of the top-level `"id"` key of a JSON object whose beginning is `head`, when it
/// is a number or a string that `head` holds entirely.
fn top_level_id(head: &[u8]) -> Option<serde_json::Value> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'"' => {
                let end = string_end(head, i)?;
                let is_key = head[end + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|b| *b == b':');
                if depth == 1 && is_key && &head[i + 1..end] == b"id" {
                    return value_after_colon(head, end + 1);
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string opened at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn value_after_colon(bytes: &[u8], from: usize) -> Option<serde_json::Value> {
    let colon = from + bytes[from..].iter().position(|b| *b == b':')?;
    let start = colon
        + 1
        + bytes[colon + 1..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
    let end = if bytes[start] == b'"' {
        string_end(bytes, start)? + 1
    } else {
        start
            + bytes[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b' ' | b'\n' | b'\r' | b'\t'))?
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes[start..end]).ok()?;
    (value.is_number() || value.is_string()).then_some(value)
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn through(input: &[u8], max: usize) -> String {
        let mut limited = LineLimit::new(input, max);
        let mut out = Vec::new();
        limited.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn small_lines_pass_and_oversized_responses_become_errors() {
        let ok = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
        assert_eq!(through(ok.as_bytes(), 100).await, ok);
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"text\":\"{}\"}}}}\n{ok}",
            "x".repeat(500)
        );
        let out = through(big.as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0].len(), 100);
        let error: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 7);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("maximum message size of 100 bytes")
        );
        assert_eq!(lines[2], ok.trim_end());
    }

    #[test]
    fn finds_only_the_top_level_id() {
        let id = |s: &str| top_level_id(s.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":"a\"b","result""#),
            Some("a\"b".into())
        );
        assert_eq!(id(r#"{"params":{"id":3},"id":4,"x"#), Some(4.into()));
        assert_eq!(
            id(r#"{"method":"notifications/progress","params":{"id":3"#),
            None
        );
        assert_eq!(id(r#"{"result":"id","id": 12 }"#), Some(12.into()));
    }
}
