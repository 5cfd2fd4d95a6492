//! A reply body sent as a few pieces without joining them, so that a result encoded once
//! per catalog snapshot (`list_tools` over 5 000 tools is 0.4 MB) goes out as it is, shared
//! by every reply, instead of being copied into each.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};

/// The body: its pieces in order, and the length of those not sent yet (announced as the
/// `Content-Length`).
#[derive(Debug)]
pub(super) struct Pieces<const N: usize> {
    pieces: std::array::IntoIter<Bytes, N>,
    remaining: u64,
}

impl<const N: usize> Pieces<N> {
    /// The body sending `pieces` one after the other.
    pub(super) fn new(pieces: [Bytes; N]) -> Self {
        let remaining = pieces.iter().map(|p| p.len() as u64).sum();
        Self {
            pieces: pieces.into_iter(),
            remaining,
        }
    }
}

impl<const N: usize> Body for Pieces<N> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.pieces.find(|p| !p.is_empty()).map(|piece| {
            this.remaining -= piece.len() as u64;
            Ok(Frame::data(piece))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// Shared text as the owner of a [`Bytes`] that points into it.
struct SharedText(Arc<str>);

impl AsRef<[u8]> for SharedText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// `text` as bytes, without copying it.
pub(super) fn shared_bytes(text: Arc<str>) -> Bytes {
    Bytes::from_owner(SharedText(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pieces_read_as_one_body_of_announced_length() {
        let shared: Arc<str> = Arc::from("{\"shared\":true}");
        let body = Pieces::new([
            Bytes::from_static(b"["),
            Bytes::new(),
            shared_bytes(Arc::clone(&shared)),
            Bytes::from_static(b"]"),
        ]);
        assert_eq!(body.size_hint().exact(), Some(17));
        assert!(!body.is_end_stream());
        let all = axum::body::to_bytes(axum::body::Body::new(body), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&all[..], b"[{\"shared\":true}]");
        // The shared text stays shared: the body held a reference, not a copy.
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
