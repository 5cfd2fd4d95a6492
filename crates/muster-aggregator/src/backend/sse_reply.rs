//! Reads the `data` of the events of an SSE reply as its bytes arrive, each event bounded in
//! size. Only what a streamable-HTTP reply uses: `data` lines (joined with `\n`), events
//! ended by a blank line, comments and other fields skipped, `\n`, `\r\n` or `\r` line ends.

use bytes::{Buf, Bytes, BytesMut};

/// Whether a `Content-Type` value names an SSE stream (`text/event-stream`, in any case,
/// with or without parameters).
pub(crate) fn is_event_stream(content_type: &[u8]) -> bool {
    content_type
        .trim_ascii_start()
        .get(..17)
        .is_some_and(|v| v.eq_ignore_ascii_case(b"text/event-stream"))
}

/// An event grew past the limit before it ended.
#[derive(Debug, thiserror::Error)]
#[error("an SSE event of the server exceeds {limit} bytes")]
pub(crate) struct EventTooLarge {
    limit: usize,
}

/// The parser of one reply.
#[derive(Debug)]
pub(crate) struct SseReader {
    buffer: BytesMut,
    /// Where the search for the next line end resumes.
    scanned: usize,
    data: Data,
    limit: usize,
}

/// The data of the event being read.
#[derive(Debug, Default)]
enum Data {
    /// No `data` line yet.
    #[default]
    None,
    /// One `data` line's value (most events have one): a view of the bytes read, not a copy.
    Line(Bytes),
    /// The values of several `data` lines, joined with `\n`.
    Joined(Vec<u8>),
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::Line(line) => line.len(),
            Self::Joined(joined) => joined.len(),
        }
    }

    /// Adds the value of one more `data` line.
    fn add(&mut self, value: Bytes) {
        *self = match std::mem::take(self) {
            Self::None => Self::Line(value),
            Self::Line(first) => {
                let mut joined = Vec::with_capacity(first.len() + 1 + value.len());
                joined.extend_from_slice(&first);
                joined.push(b'\n');
                joined.extend_from_slice(&value);
                Self::Joined(joined)
            }
            Self::Joined(mut joined) => {
                joined.push(b'\n');
                joined.extend_from_slice(&value);
                Self::Joined(joined)
            }
        };
    }

    /// The event's data, `None` when it had no `data` line.
    fn take(&mut self) -> Option<Bytes> {
        match std::mem::take(self) {
            Self::None => None,
            Self::Line(line) => Some(line),
            Self::Joined(joined) => Some(Bytes::from(joined)),
        }
    }
}

impl SseReader {
    /// A reader whose events may be at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            buffer: BytesMut::new(),
            scanned: 0,
            data: Data::None,
            limit,
        }
    }

    /// Adds bytes of the reply; [`next_event`](Self::next_event) checks the size.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.buffer.extend_from_slice(chunk);
    }

    /// The data of the next complete event with data, if the bytes so far hold one.
    pub(crate) fn next_event(&mut self) -> Result<Option<Bytes>, EventTooLarge> {
        while let Some(line_end) =
            memchr::memchr2(b'\n', b'\r', &self.buffer[self.scanned..]).map(|i| i + self.scanned)
        {
            // A `\r` at the end of the buffer may be the first half of `\r\n`.
            let terminator = if self.buffer[line_end] == b'\r' {
                match self.buffer.get(line_end + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    None => {
                        self.scanned = line_end;
                        return Ok(None);
                    }
                }
            } else {
                1
            };
            let line = self.buffer.split_to(line_end);
            self.buffer.advance(terminator);
            self.scanned = 0;
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    return Ok(Some(data));
                }
                continue;
            }
            if let Some(value) = field_value(&line, b"data") {
                let start = line.len() - value.len();
                self.data.add(line.freeze().slice(start..));
                if self.data.len() > self.limit {
                    return Err(EventTooLarge { limit: self.limit });
                }
            }
        }
        self.scanned = self.buffer.len();
        // What is left is one unfinished line of the current event.
        if self.buffer.len() + self.data.len() > self.limit.saturating_add(2) {
            return Err(EventTooLarge { limit: self.limit });
        }
        Ok(None)
    }
}

/// The value of `line` when it is the field `name` (`name:value`, one space after the colon
/// dropped).
fn field_value<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    if line == name {
        return Some(&[]);
    }
    let rest = line.strip_prefix(name)?.strip_prefix(b":")?;
    Some(rest.strip_prefix(b" ").unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_are_named_in_any_case_with_or_without_parameters() {
        for yes in ["text/event-stream", " Text/Event-Stream; charset=utf-8"] {
            assert!(is_event_stream(yes.as_bytes()), "{yes}");
        }
        for no in [
            "application/json",
            "text/event",
            "",
            "text/plain; text/event-stream",
        ] {
            assert!(!is_event_stream(no.as_bytes()), "{no}");
        }
    }

    fn events(chunks: &[&[u8]], limit: usize) -> Result<Vec<String>, EventTooLarge> {
        let mut reader = SseReader::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            reader.push(chunk);
            while let Some(data) = reader.next_event()? {
                out.push(String::from_utf8(data.to_vec()).unwrap());
            }
        }
        Ok(out)
    }

    #[test]
    fn splits_events_across_chunks_and_line_ends() {
        let got = events(
            &[
                b"id: 0\nretry: 3000\ndata:\n\n: comment\nevent: message\nda",
                b"ta: {\"a\":1}\r",
                b"\n\r\ndata: x\rdata:y\r\r",
                b"data: last\n",
                b"\n",
                b"data: a\ndata:\ndata: c\n\n",
            ],
            1024,
        )
        .unwrap();
        assert_eq!(got, ["", "{\"a\":1}", "x\ny", "last", "a\n\nc"]);
    }

    #[test]
    fn an_event_over_the_limit_fails() {
        assert!(events(&[b"data: 0123456789\n\n"], 8).is_err());
        assert!(events(&[b"data: 0123", b"456789abcdef"], 8).is_err());
        assert_eq!(events(&[b"data: 01234567\n\n"], 8).unwrap(), ["01234567"]);
        // Joined lines count with the line ends between them.
        assert!(events(&[b"data: 0123\ndata: 4567\n\n"], 8).is_err());
        assert_eq!(
            events(&[b"data: 012\ndata: 456\n\n"], 8).unwrap(),
            ["012\n456"]
        );
    }
}
