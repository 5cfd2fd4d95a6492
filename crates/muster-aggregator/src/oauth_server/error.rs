//! OAuth error responses (RFC 6749 §5.2) and the errors of setting the server up.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why the OAuth server could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum OAuthSetupError {
    /// A setting is missing or malformed.
    #[error("aggregator.oauth.server.{key}: {rule}")]
    Setting {
        /// The key under `aggregator.oauth.server`.
        key: String,
        /// What is wrong.
        rule: String,
    },
    /// A file named by a `*File` key could not be read.
    #[error("aggregator.oauth.server.{key}: cannot read {path}: {source}")]
    SecretFile {
        /// The key naming the file.
        key: String,
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("cannot build the HTTP client of the OAuth server: {0}")]
    HttpClient(String),
}

/// An OAuth protocol error: its HTTP status, `error` code and description. Descriptions
/// never contain a token, code or secret.
#[derive(Debug, Clone)]
pub(crate) struct OAuthError {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) description: String,
}

impl OAuthError {
    /// `400 invalid_request`.
    pub(crate) fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", description)
    }

    /// `400 invalid_grant`.
    pub(crate) fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", description)
    }

    /// `401 invalid_client`.
    pub(crate) fn invalid_client(description: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", description)
    }

    /// `429 slow_down`: too many attempts from one address.
    pub(crate) fn too_many_attempts() -> Self {
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "slow_down",
            "too many authentication attempts from this address; try again later",
        )
    }

    /// An error with any status and code.
    pub(crate) fn new(
        status: StatusCode,
        code: &'static str,
        description: impl Into<String>,
    ) -> Self {
        Self {
            status,
            code,
            description: description.into(),
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": self.code,
            "error_description": self.description,
        });
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        );
        response
    }
}
