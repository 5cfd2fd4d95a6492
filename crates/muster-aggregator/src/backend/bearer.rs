//! Remote servers reached with a session's OAuth access token: the token is read from a
//! [`BearerSource`] on every request (so a refreshed token is used at once), and a request
//! the server answers with 401 is sent once more after the source refreshed the token (by
//! the client of [`session_tap`](super::session_tap)).

use futures::future::BoxFuture;
use muster_core::secret::SecretString;

/// Where a backend gets the access token it sends as `Authorization: Bearer`.
pub trait BearerSource: Send + Sync + std::fmt::Debug {
    /// The token to send now (refreshed first when it is about to expire); `None` sends no
    /// `Authorization` header.
    fn token(&self) -> BoxFuture<'_, Option<SecretString>>;

    /// The server refused `rejected` with 401: get a new token if possible; `true` when
    /// there is one worth retrying with.
    fn refresh(&self, rejected: SecretString) -> BoxFuture<'_, bool>;
}
