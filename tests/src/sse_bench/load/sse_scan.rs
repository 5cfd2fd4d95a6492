//! An incremental parser of a `text/event-stream` body: bytes in, whole events out.

/// One event of the stream: its `event:` name, if any, and its `data:` lines joined by `\n`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field (`None` means the default, `message`).
    pub(super) event: Option<String>,
    /// The `data:` lines, joined by `\n`; empty for an event without data (a comment).
    pub(super) data: String,
}

/// Buffers the stream's bytes and splits them into events at blank lines.
#[derive(Debug, Default)]
pub(super) struct SseScan {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no event end, so a search starts after it.
    searched: usize,
}

impl SseScan {
    /// Adds bytes read from the stream.
    pub(super) fn push(&mut self, chunk: &[u8]) {
        // CR never appears unescaped inside JSON, so dropping it turns CRLF line ends into LF
        // ones (servers that end lines with a lone CR are not supported).
        self.buf
            .extend(chunk.iter().copied().filter(|&b| b != b'\r'));
    }

    /// The next whole event, if the bytes so far hold one.
    pub(super) fn next_event(&mut self) -> Option<SseEvent> {
        let from = self.searched.saturating_sub(1);
        let Some(at) = self.buf[from..].windows(2).position(|w| w == b"\n\n") else {
            self.searched = self.buf.len();
            return None;
        };
        let end = from + at;
        let event = parse(&String::from_utf8_lossy(&self.buf[..end]));
        self.buf.drain(..end + 2);
        self.searched = 0;
        Some(event)
    }
}

/// The fields of one event's lines; comments (`:` lines) and other fields are skipped.
fn parse(text: &str) -> SseEvent {
    let mut event = SseEvent::default();
    let mut any_data = false;
    for line in text.split('\n') {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => {
                if any_data {
                    event.data.push('\n');
                }
                event.data.push_str(value);
                any_data = true;
            }
            "event" => event.event = Some(value.to_owned()),
            _ => {}
        }
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_join_and_carry_their_names() {
        let mut s = SseScan::default();
        s.push(b"event: endpoint\ndata: /messages?sessionId=ab\n\n:\n\ndata: {\"a\":");
        assert_eq!(
            s.next_event(),
            Some(SseEvent {
                event: Some("endpoint".to_owned()),
                data: "/messages?sessionId=ab".to_owned()
            })
        );
        assert_eq!(s.next_event(), Some(SseEvent::default()));
        assert_eq!(s.next_event(), None);
        s.push(b"1}\r\n");
        assert_eq!(s.next_event(), None);
        s.push(b"\r\nevent: message\ndata: [1,\ndata: 2]\n\n");
        assert_eq!(s.next_event().map(|e| e.data).as_deref(), Some("{\"a\":1}"));
        let last = s.next_event().unwrap();
        assert_eq!(last.event.as_deref(), Some("message"));
        assert_eq!(last.data, "[1,\n2]");
        assert_eq!(s.next_event(), None);
    }

    #[test]
    fn an_event_end_split_across_chunks_is_found() {
        let mut s = SseScan::default();
        s.push(b"data: x\n");
        assert_eq!(s.next_event(), None);
        s.push(b"\n");
        assert_eq!(s.next_event().map(|e| e.data).as_deref(), Some("x"));
    }
}
