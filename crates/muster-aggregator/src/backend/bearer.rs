//! Remote servers reached with a session's OAuth access token: the token is read from a
//! [`BearerSource`] on every request (so a refreshed token is used at once), and a request
//! the server answers with 401 is sent once more after the source refreshed the token (by
//! the client of [`session_tap`](super::session_tap)).

use futures::future::BoxFuture;
use http::{HeaderName, HeaderValue};
use muster_core::secret::SecretString;

/// Where a backend gets the access token it sends as `Authorization: Bearer`.
pub trait BearerSource: Send + Sync + std::fmt::Debug {
    /// The token to send now (refreshed first when it is about to expire); `None` sends no
    /// `Authorization` header.
    fn token(&self) -> BoxFuture<'_, Option<SecretString>>;

    /// The server refused `rejected` with 401: get a new token if possible; `true` when
    /// there is one worth retrying with.
    fn refresh(&self, rejected: SecretString) -> BoxFuture<'_, bool>;

    /// Headers sent next to the bearer with every request, read per request (values marked
    /// sensitive): the session's ID token in `X-Muster-Id-Token` for a server with
    /// `spec.auth.forwardIdentity`. None by default.
    fn companion_headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        Vec::new()
    }
}

/// The companion headers of `source`, when there is one.
pub(crate) fn companions(
    source: Option<&std::sync::Arc<dyn BearerSource>>,
) -> Vec<(HeaderName, HeaderValue)> {
    source.map(|s| s.companion_headers()).unwrap_or_default()
}
