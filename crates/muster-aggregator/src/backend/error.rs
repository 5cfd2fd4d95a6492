//! Errors of backend lifecycle operations.

/// Why [`Backend::start`](super::Backend::start) did not connect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The server is running or connected already.
    #[error("service {name} is already running")]
    AlreadyRunning {
        /// The server.
        name: String,
    },
    /// The server answered 401: reachable, waiting for someone to sign in. Not a failure.
    #[error("{name} requires authentication")]
    AuthRequired {
        /// The server.
        name: String,
    },
    /// The attempt failed; the backend's state says what follows.
    #[error("{name}: {message}")]
    Connect {
        /// The server.
        name: String,
        /// What went wrong, without credentials.
        message: String,
        /// The HTTP status the endpoint answered with, when it answered.
        http_status: Option<u16>,
        /// Whether a retry is scheduled.
        retry_scheduled: bool,
    },
    /// The attempt was cancelled by a stop.
    #[error("{name} was stopped while connecting")]
    Stopped {
        /// The server.
        name: String,
    },
}
