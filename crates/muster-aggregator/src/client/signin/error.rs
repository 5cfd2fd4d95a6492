//! The errors of the CLI sign-in.

/// Why a sign-in step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    /// muster (or its authorization server) could not be reached.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// What was asked.
        url: String,
        /// Why it failed.
        reason: String,
    },
    /// Discovery found no usable authorization server.
    #[error("cannot find how to sign in to {endpoint}: {reason}")]
    Discovery {
        /// The endpoint.
        endpoint: String,
        /// What was missing.
        reason: String,
    },
    /// Registration was refused.
    #[error("the server refused to register this client: {0}")]
    Registration(String),
    /// The authorization server answered the sign-in with an error, or a wrong one.
    #[error("the sign-in was refused: {0}")]
    Refused(String),
    /// The token endpoint refused the code or the refresh token.
    #[error("{0}")]
    Token(String),
    /// The loopback listener could not be opened or nothing came back in time.
    #[error("{0}")]
    Callback(String),
    /// No random numbers.
    #[error("no random numbers: {0}")]
    Random(String),
}
