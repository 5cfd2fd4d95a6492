//! One HTTP/1.1 client connection of the lean hop, on `httparse`: it writes a request's head
//! and body in one vectored write, parses the reply's head, and hands out the reply's body
//! as it arrives — by `Content-Length`, chunked, or up to the connection's end.
//!
//! It has no task and no channel: whoever holds the connection polls it, so a reply's bytes
//! reach their reader in the read that brings them. The read buffer starts at 4 KB and grows
//! while reads fill it (a large reply), back to its first size once a reply has been read.
//! See docs/decisions/0006 (last amendment) for why this is not hyper's client.

use std::fmt;
use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use http::StatusCode;
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;

use super::super::sse_reply::is_event_stream;

/// The read buffer's first size, and the least free space a read is given.
const FIRST_READ: usize = 4 * 1024;
/// The most a read asks for at once, however fast a large reply comes.
const LARGEST_READ: usize = 64 * 1024;
/// The largest head of a reply (status line and header fields), and of a chunk's size line
/// or trailer section.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most header fields a reply may have (as hyper allows).
const MAX_HEADERS: usize = 100;

/// Why an exchange on a connection failed.
#[derive(Debug)]
pub(crate) enum WireError {
    /// Writing the request failed: the server never had it whole.
    NotSent(io::Error),
    /// The reply broke the protocol, or the connection failed or ended while it was read.
    Reply(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSent(e) => write!(f, "writing the request: {e}"),
            Self::Reply(message) => f.write_str(message),
        }
    }
}

/// What the head of a reply says about its body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// `Content-Length`, when the body is framed by it.
    pub(crate) content_length: Option<u64>,
    /// Whether `Content-Type` is `text/event-stream`.
    pub(crate) event_stream: bool,
}

/// How the body of the current reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No reply is being read, or its body has ended.
    Done,
    /// This many bytes are still to come.
    Length(u64),
    /// Chunked: where in the chunk stream the next byte is.
    Chunked(Chunk),
    /// Up to the end of the connection.
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// A chunk's size line.
    Size,
    /// This many bytes of a chunk's data.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer section after the last chunk, up to its empty line.
    Trailers,
}

/// One connection to the server.
pub(crate) struct Wire {
    io: TcpStream,
    /// Bytes read and not handed out yet.
    buf: BytesMut,
    /// How much free space the next read gets.
    next_read: usize,
    body: Framing,
    /// Whether the connection may carry another request once the current reply has ended.
    reusable: bool,
    /// Trailer bytes read so far, bounded by [`MAX_HEAD_BYTES`].
    trailer_bytes: usize,
}

impl Wire {
    /// A connection over `io`, idle.
    pub(crate) fn new(io: TcpStream) -> Self {
        Self {
            io,
            buf: BytesMut::new(),
            next_read: FIRST_READ,
            body: Framing::Done,
            reusable: true,
            trailer_bytes: 0,
        }
    }

    /// Whether the last reply has been read to its end and the connection may carry another
    /// request.
    pub(crate) fn at_rest(&self) -> bool {
        self.body == Framing::Done && self.reusable
    }

    /// Writes `head` and `body` as one request.
    ///
    /// # Errors
    ///
    /// [`WireError::NotSent`] when the connection fails before all of it is written.
    pub(crate) async fn send(&mut self, head: &[u8], body: &[u8]) -> Result<(), WireError> {
        let total = head.len() + body.len();
        let mut written = 0;
        while written < total {
            let n = std::future::poll_fn(|cx| {
                let (first, second) = if written < head.len() {
                    (&head[written..], body)
                } else {
                    (&body[written - head.len()..], &[][..])
                };
                self.poll_write(cx, &[IoSlice::new(first), IoSlice::new(second)])
            })
            .await
            .map_err(WireError::NotSent)?;
            if n == 0 {
                return Err(WireError::NotSent(io::ErrorKind::WriteZero.into()));
            }
            written += n;
        }
        Ok(())
    }

    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        slices: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, slices)
    }

    /// Reads what is available into the buffer: `Ready(Ok(0))` at the connection's end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.buf.capacity() - self.buf.len() < FIRST_READ / 4 {
            self.buf.reserve(self.next_read);
        }
        let room = self.buf.capacity() - self.buf.len();
        // tokio's read (unlike `try_read_buf`) takes a read shorter than the room offered as
        // the socket drained, so the next poll waits for readiness instead of making a
        // system call that would find nothing.
        let read = ready!(tokio_util::io::poll_read_buf(
            Pin::new(&mut self.io),
            cx,
            &mut self.buf
        ))?;
        // A read that filled the buffer asks for more next time.
        if read == room {
            self.next_read = (self.next_read * 2).min(LARGEST_READ);
        }
        Poll::Ready(Ok(read))
    }

    /// Whether an idle connection (no reply being read) can still carry a request: the
    /// server has neither closed it nor sent anything unasked. Does not wait.
    pub(crate) fn idle_and_open(&mut self, cx: &mut Context<'_>) -> bool {
        self.at_rest() && self.buf.is_empty() && self.poll_fill(cx).is_pending()
    }

    /// Reads the head of the reply to the request just sent, skipping interim (1xx)
    /// replies.
    ///
    /// # Errors
    ///
    /// [`WireError::Reply`] when the connection ends or fails first, or the head is not
    /// HTTP/1.x.
    pub(crate) async fn read_head(&mut self) -> Result<Head, WireError> {
        loop {
            if let Some(head) = self.parse_head()? {
                return Ok(head);
            }
            if self.buf.len() >= MAX_HEAD_BYTES {
                return Err(WireError::Reply(format!(
                    "the reply's head exceeds {MAX_HEAD_BYTES} bytes"
                )));
            }
            let read = std::future::poll_fn(|cx| self.poll_fill(cx))
                .await
                .map_err(|e| WireError::Reply(format!("reading the reply: {e}")))?;
            if read == 0 {
                return Err(WireError::Reply(if self.buf.is_empty() {
                    "the server closed the connection before answering".to_owned()
                } else {
                    "the server closed the connection within the reply's head".to_owned()
                }));
            }
        }
    }

    /// Parses a complete final head at the start of the buffer and consumes it; `None`
    /// while more is needed.
    fn parse_head(&mut self) -> Result<Option<Head>, WireError> {
        loop {
            // Not initialized: httparse writes the fields it parses.
            let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
            let mut reply = httparse::Response::new(&mut []);
            let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
                &mut reply,
                &self.buf,
                &mut fields,
            );
            let used = match parsed {
                Ok(httparse::Status::Complete(used)) => used,
                Ok(httparse::Status::Partial) => return Ok(None),
                Err(e) => {
                    return Err(WireError::Reply(format!(
                        "the server's reply is not HTTP/1.1: {e}"
                    )));
                }
            };
            let code = reply.code.unwrap_or_default();
            let status = StatusCode::from_u16(code)
                .map_err(|_| WireError::Reply(format!("the server's reply has status {code}")))?;
            if status.is_informational() {
                if status == StatusCode::SWITCHING_PROTOCOLS {
                    return Err(WireError::Reply(
                        "the server switched protocols instead of answering".to_owned(),
                    ));
                }
                self.buf.advance(used);
                continue;
            }
            let (head, body, reusable) =
                framing_of(status, reply.version == Some(1), reply.headers)?;
            self.body = body;
            self.reusable = reusable;
            self.trailer_bytes = 0;
            self.buf.advance(used);
            return Ok(Some(head));
        }
    }

    /// The next piece of the reply's body as it arrives; `None` at its end.
    pub(crate) fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, WireError>>> {
        loop {
            match self.body {
                Framing::Done => {
                    self.reply_read();
                    return Poll::Ready(None);
                }
                Framing::Length(left) | Framing::Chunked(Chunk::Data(left))
                    if !self.buf.is_empty() =>
                {
                    let take = self
                        .buf
                        .len()
                        .min(usize::try_from(left).unwrap_or(usize::MAX));
                    let left = left - take as u64;
                    self.body = match self.body {
                        Framing::Length(_) if left == 0 => Framing::Done,
                        Framing::Length(_) => Framing::Length(left),
                        _ if left == 0 => Framing::Chunked(Chunk::DataEnd),
                        _ => Framing::Chunked(Chunk::Data(left)),
                    };
                    return Poll::Ready(Some(Ok(self.buf.split_to(take).freeze())));
                }
                Framing::UntilClose if !self.buf.is_empty() => {
                    return Poll::Ready(Some(Ok(self.buf.split().freeze())));
                }
                Framing::Chunked(Chunk::Size) => match httparse::parse_chunk_size(&self.buf) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.buf.advance(used);
                        self.body = Framing::Chunked(if size == 0 {
                            Chunk::Trailers
                        } else {
                            Chunk::Data(size)
                        });
                        continue;
                    }
                    Ok(httparse::Status::Partial) if self.buf.len() < MAX_HEAD_BYTES => {}
                    _ => return self.broken("a chunk's size line is not valid"),
                },
                Framing::Chunked(Chunk::DataEnd) if self.buf.len() >= 2 => {
                    if &self.buf[..2] != b"\r\n" {
                        return self.broken("a chunk's data does not end with CRLF");
                    }
                    self.buf.advance(2);
                    self.body = Framing::Chunked(Chunk::Size);
                    continue;
                }
                Framing::Chunked(Chunk::Trailers) => {
                    if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        self.buf.advance(at + 2);
                        self.trailer_bytes += at + 2;
                        if at == 0 {
                            self.body = Framing::Done;
                        } else if self.trailer_bytes > MAX_HEAD_BYTES {
                            return self.broken("the reply's trailers are too large");
                        }
                        continue;
                    }
                    if self.buf.len() + self.trailer_bytes > MAX_HEAD_BYTES {
                        return self.broken("the reply's trailers are too large");
                    }
                }
                _ => {}
            }
            match ready!(self.poll_fill(cx)) {
                Ok(0) if self.body == Framing::UntilClose => {
                    self.body = Framing::Done;
                    self.reusable = false;
                }
                Ok(0) => return self.broken("the server closed the connection within the reply"),
                Ok(_) => {}
                Err(e) => {
                    self.reusable = false;
                    return Poll::Ready(Some(Err(WireError::Reply(format!(
                        "reading the reply: {e}"
                    )))));
                }
            }
        }
    }

    /// A reply read to its end: the next one starts with a buffer of the first size.
    fn reply_read(&mut self) {
        self.next_read = FIRST_READ;
        if self.buf.is_empty() && self.buf.capacity() > FIRST_READ {
            self.buf = BytesMut::new();
        }
    }

    fn broken(&mut self, why: &str) -> Poll<Option<Result<Bytes, WireError>>> {
        self.reusable = false;
        Poll::Ready(Some(Err(WireError::Reply(why.to_owned()))))
    }
}

/// How the body of a final reply ends, and whether its connection is kept, from its
/// fields, as RFC 9112 section 6 orders them.
fn framing_of(
    status: StatusCode,
    http11: bool,
    fields: &[httparse::Header<'_>],
) -> Result<(Head, Framing, bool), WireError> {
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    let mut transfer_encoding = false;
    let mut close = false;
    let mut keep_alive = false;
    let mut event_stream = false;
    for field in fields {
        let name = field.name;
        if name.eq_ignore_ascii_case("content-length") {
            let value = std::str::from_utf8(field.value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    WireError::Reply("the reply's Content-Length is not a number".to_owned())
                })?;
            if content_length.is_some_and(|seen| seen != value) {
                return Err(WireError::Reply(
                    "the reply has two different Content-Length fields".to_owned(),
                ));
            }
            content_length = Some(value);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            transfer_encoding = true;
            // Chunked counts only as the last coding.
            chunked = last_token(field.value).eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            for token in field.value.split(|b| *b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("content-type") {
            event_stream = is_event_stream(field.value);
        }
    }
    let framing = if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        Framing::Done
    } else if transfer_encoding {
        if chunked {
            Framing::Chunked(Chunk::Size)
        } else {
            Framing::UntilClose
        }
    } else {
        match content_length {
            Some(0) => Framing::Done,
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    };
    let reusable = !close
        && (http11 || keep_alive)
        && framing != Framing::UntilClose
        // A length next to a transfer coding may be an attempt at request smuggling.
        && !(transfer_encoding && content_length.is_some());
    let head = Head {
        status,
        content_length: if transfer_encoding {
            None
        } else {
            content_length
        },
        event_stream,
    };
    Ok((head, framing, reusable))
}

/// The last comma-separated token of a field value.
fn last_token(value: &[u8]) -> &[u8] {
    value
        .rsplit(|b| *b == b',')
        .next()
        .unwrap_or_default()
        .trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection whose server reads the request and answers with `reply` (in pieces
    /// `split` bytes long, when given), then keeps the connection open.
    async fn answered(reply: &'static [u8], split: Option<usize>) -> Wire {
        served(reply.to_vec(), split, false).await
    }

    /// A connection, its request sent, to a server that answers it with `reply` (in pieces
    /// `split` bytes long, when given), then closes the connection (`close`) or keeps it
    /// open for 5 s.
    async fn served(reply: Vec<u8>, split: Option<usize>, close: bool) -> Wire {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 1024];
            let _ = stream.read(&mut request).await.unwrap();
            for piece in reply.chunks(split.unwrap_or(reply.len()).max(1)) {
                stream.write_all(piece).await.unwrap();
                stream.flush().await.unwrap();
                if split.is_some() {
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
            }
            if !close {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
        });
        let mut wire = Wire::new(TcpStream::connect(address).await.unwrap());
        wire.send(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n",
            b"{}",
        )
        .await
        .unwrap();
        wire
    }

    async fn body_of(wire: &mut Wire) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        while let Some(piece) = std::future::poll_fn(|cx| wire.poll_data(cx)).await {
            body.extend_from_slice(&piece.map_err(|e| e.to_string())?);
        }
        Ok(body)
    }

    #[tokio::test]
    async fn chunked_replies_are_read_piece_by_piece_whatever_their_split() {
        let reply: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
            transfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: 1\r\n\r\n";
        for split in [None, Some(1), Some(3), Some(7)] {
            let mut wire = answered(reply, split).await;
            let head = wire.read_head().await.unwrap();
            assert_eq!(head.status, StatusCode::OK);
            assert!(head.event_stream);
            assert_eq!(head.content_length, None);
            assert_eq!(body_of(&mut wire).await.unwrap(), b"hello, world");
            assert!(wire.at_rest(), "split {split:?}");
        }
    }

    #[tokio::test]
    async fn a_length_framed_reply_ends_at_its_length_and_keeps_the_connection() {
        let reply =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 3\r\n\r\nabc";
        let mut wire = answered(reply, Some(4)).await;
        let head = wire.read_head().await.unwrap();
        assert_eq!(head.status, StatusCode::ACCEPTED);
        assert_eq!(head.content_length, Some(3));
        assert!(!head.event_stream);
        assert_eq!(body_of(&mut wire).await.unwrap(), b"abc");
        assert!(wire.at_rest());
        let mut quiet = Context::from_waker(std::task::Waker::noop());
        assert!(wire.idle_and_open(&mut quiet));
    }

    #[tokio::test]
    async fn connection_close_and_http10_replies_are_not_kept() {
        let mut wire = answered(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 2\r\n\r\nok",
            None,
        )
        .await;
        wire.read_head().await.unwrap();
        assert_eq!(body_of(&mut wire).await.unwrap(), b"ok");
        assert!(!wire.at_rest());
        let mut wire = answered(b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok", None).await;
        wire.read_head().await.unwrap();
        assert_eq!(body_of(&mut wire).await.unwrap(), b"ok");
        assert!(!wire.at_rest());
    }

    #[tokio::test]
    async fn malformed_replies_are_errors_naming_what_is_wrong() {
        let mut wire = answered(b"SMTP ready\r\n\r\n", None).await;
        let error = wire.read_head().await.unwrap_err().to_string();
        assert!(error.contains("not HTTP/1.1"), "{error}");
        let mut wire = answered(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            None,
        )
        .await;
        wire.read_head().await.unwrap();
        let error = body_of(&mut wire).await.unwrap_err();
        assert!(error.contains("size line"), "{error}");
        assert!(!wire.at_rest());
        let mut wire = answered(
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok",
            None,
        )
        .await;
        let error = wire.read_head().await.unwrap_err().to_string();
        assert!(error.contains("two different Content-Length"), "{error}");
    }

    #[tokio::test]
    async fn a_server_that_closes_early_is_reported() {
        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc".to_vec();
        let mut wire = served(reply, None, true).await;
        wire.read_head().await.unwrap();
        let error = body_of(&mut wire).await.unwrap_err();
        assert!(
            error.contains("closed the connection within the reply"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_reply_up_to_the_close_ends_with_the_connection() {
        let mut reply = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        reply.extend(std::iter::repeat_n(b'x', 300_000));
        let mut wire = served(reply, None, true).await;
        assert_eq!(wire.read_head().await.unwrap().content_length, None);
        assert_eq!(body_of(&mut wire).await.unwrap().len(), 300_000);
        assert!(!wire.at_rest(), "a connection that ended is not kept");
    }
}
