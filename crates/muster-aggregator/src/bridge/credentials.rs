//! Where the bridge's `Authorization` header comes from: a [`Credentials`] source asked before
//! every request, refreshed after a `401`, and able to start an interactive sign-in.

use futures::future::BoxFuture;
use reqwest::header::HeaderValue;

/// The bridge's source of the `Authorization` header for muster.
///
/// [`authorization`](Self::authorization) is called before every request to muster (each
/// POST, the notification stream's GET, the closing DELETE), so it should be cheap while the
/// token is still valid and refresh it only when it is about to expire. After muster refused
/// a request with `401`, [`refreshed`](Self::refreshed) is asked for a new value and the
/// request is sent once more with it. When muster still refuses, the bridge is signed out: it
/// answers the MCP client itself and offers the `authenticate_muster` tool, which calls
/// [`sign_in`](Self::sign_in).
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

    /// Starts an interactive sign-in to muster: the URL the user opens, and a future that
    /// completes once the sign-in finished and [`authorization`](Self::authorization)
    /// returns its token. Without an implementation the bridge cannot sign in by itself.
    ///
    /// # Errors
    ///
    /// When no sign-in can be started; the text is shown to the user.
    async fn sign_in(&self) -> Result<SignInStarted, SignInFailed> {
        Err(SignInFailed::new(
            "this bridge cannot sign in to muster by itself: run `muster auth login`",
        ))
    }
}

/// An interactive sign-in under way (from [`Credentials::sign_in`]).
pub struct SignInStarted {
    /// The URL the user opens in a browser to sign in.
    pub url: String,
    /// Completes when the sign-in finished (the new token is stored) or failed.
    pub completion: BoxFuture<'static, Result<(), SignInFailed>>,
}

impl std::fmt::Debug for SignInStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInStarted")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Why a sign-in could not be started or did not complete. The text is shown to the user
/// and logged, so it must not carry a token or code.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason}")]
pub struct SignInFailed {
    reason: String,
}

impl SignInFailed {
    /// A failure explained by `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}
