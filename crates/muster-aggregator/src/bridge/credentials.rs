//! Where the bridge's `Authorization` header comes from: a [`Credentials`] source asked before
//! every request, and refreshed after a `401`.

use reqwest::header::HeaderValue;

/// The bridge's source of the `Authorization` header for muster.
///
/// [`authorization`](Self::authorization) is called before every request to muster (each
/// POST, the notification stream's GET, the closing DELETE), so it should be cheap while the
/// token is still valid and refresh it only when it is about to expire. After muster refused
/// a request with `401`, [`refreshed`](Self::refreshed) is asked for a new value and the
/// request is sent once more with it.
///
/// ```
/// use muster_aggregator::bridge::Credentials;
/// use reqwest::header::HeaderValue;
///
/// /// A token that never changes.
/// struct Fixed(HeaderValue);
///
/// #[async_trait::async_trait]
/// impl Credentials for Fixed {
///     async fn authorization(&self) -> Option<HeaderValue> {
///         Some(self.0.clone())
///     }
///
///     async fn refreshed(&self, _rejected: &HeaderValue) -> Option<HeaderValue> {
///         None
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Credentials: Send + Sync + 'static {
    /// The `Authorization` value for the next request; `None` sends none (not signed in).
    async fn authorization(&self) -> Option<HeaderValue>;

    /// A new `Authorization` value after muster refused `rejected` with `401`, or `None`
    /// when there is none (the sign-in has ended or cannot be refreshed).
    async fn refreshed(&self, rejected: &HeaderValue) -> Option<HeaderValue>;
}
