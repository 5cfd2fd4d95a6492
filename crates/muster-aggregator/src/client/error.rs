//! What can go wrong talking to a muster server, in words that say what to do.

use std::error::Error as StdError;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::backend::failure::{chain, http_status_in};

/// Why a request to a muster server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The endpoint is not an absolute `http(s)` URL.
    #[error("invalid muster endpoint {endpoint:?}: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// Why it was refused.
        reason: String,
    },
    /// Nothing answers at the endpoint (connection refused, DNS, connect timeout).
    #[error("cannot reach muster at {endpoint}: is `muster serve` running?")]
    Unreachable {
        /// The endpoint.
        endpoint: String,
    },
    /// The server asks for credentials (HTTP 401).
    #[error("muster at {endpoint} requires authentication (HTTP 401): {detail}")]
    Unauthorized {
        /// The endpoint.
        endpoint: String,
        /// The server's explanation (its body or `WWW-Authenticate` challenge).
        detail: String,
    },
    /// The server answers 404 before a session exists: no MCP endpoint at this URL.
    #[error("no MCP endpoint at {endpoint} (HTTP 404)")]
    NotFound {
        /// The endpoint.
        endpoint: String,
    },
    /// Any other HTTP failure status.
    #[error("muster at {endpoint} answered HTTP {}{}", status_text(*status), detail_suffix(detail))]
    Status {
        /// The endpoint.
        endpoint: String,
        /// The status code.
        status: u16,
        /// The body or reason the server gave, possibly empty.
        detail: String,
    },
    /// The server answered the request with a JSON-RPC error.
    #[error("muster refused {method}: {message}")]
    Refused {
        /// The method of the request.
        method: String,
        /// The error message.
        message: String,
    },
    /// The connection closed before the answer came.
    #[error("the connection to muster at {endpoint} ended before it answered {method}")]
    Ended {
        /// The endpoint.
        endpoint: String,
        /// The method of the request.
        method: String,
    },
    /// Anything else on the way (a broken stream, an answer that is not MCP).
    #[error("talking to muster at {endpoint} failed: {reason}")]
    Failed {
        /// The endpoint.
        endpoint: String,
        /// What happened.
        reason: String,
    },
}

/// `500 Internal Server Error`, or the bare code when it has no reason phrase.
fn status_text(status: u16) -> String {
    http::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

fn detail_suffix(detail: &str) -> String {
    if detail.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", detail.trim())
    }
}

impl ClientError {
    /// Describes a failed `initialize`.
    pub(super) fn of_initialize(endpoint: &str, error: &ClientInitializeError) -> Self {
        let inner = match error {
            ClientInitializeError::LegacyFallbackFailed { fallback, .. } => fallback.as_ref(),
            other => other,
        };
        match inner {
            ClientInitializeError::ConnectionClosed(_) => Self::Ended {
                endpoint: endpoint.to_owned(),
                method: "initialize".to_owned(),
            },
            ClientInitializeError::JsonRpcError(e) => Self::Refused {
                method: "initialize".to_owned(),
                message: e.message.to_string(),
            },
            // Its cause is out of `source()`: look into it directly.
            ClientInitializeError::TransportError { error, .. } => {
                Self::of_transport(endpoint, error)
            }
            other => Self::of_transport(endpoint, other),
        }
    }

    /// Describes a failed request `method`.
    pub(super) fn of_request(endpoint: &str, method: &str, error: ServiceError) -> Self {
        match error {
            ServiceError::McpError(e) => Self::Refused {
                method: method.to_owned(),
                message: e.message.into_owned(),
            },
            ServiceError::TransportClosed => Self::Ended {
                endpoint: endpoint.to_owned(),
                method: method.to_owned(),
            },
            ServiceError::TransportSend(error) => Self::of_transport(endpoint, &error),
            other => Self::of_transport(endpoint, &other),
        }
    }

    /// Describes a transport failure by the types in its chain.
    fn of_transport(endpoint: &str, error: &(dyn StdError + 'static)) -> Self {
        let endpoint = endpoint.to_owned();
        let errors = chain(error);
        for e in &errors {
            if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                match http {
                    StreamableHttpError::AuthRequired(challenge) => {
                        return Self::Unauthorized {
                            endpoint,
                            detail: challenge.www_authenticate_header.clone(),
                        };
                    }
                    StreamableHttpError::HttpStatus(status) => {
                        return Self::of_status(endpoint, status.status, String::new());
                    }
                    StreamableHttpError::UnexpectedServerResponse(text) => {
                        if let Some(status) = http_status_in(text) {
                            let detail = text.split_once(": ").map_or("", |(_, rest)| rest);
                            return Self::of_status(endpoint, status, detail.to_owned());
                        }
                    }
                    StreamableHttpError::SessionExpired => {
                        return Self::Status {
                            endpoint,
                            status: 404,
                            detail: "the session expired".to_owned(),
                        };
                    }
                    _ => {}
                }
            }
            if let Some(r) = e.downcast_ref::<reqwest::Error>()
                && (r.is_connect() || r.is_timeout())
            {
                tracing::debug!(error = %r, "request failed");
                return Self::Unreachable { endpoint };
            }
        }
        // The innermost cause: the wrappers around it name Rust types.
        let reason = errors
            .last()
            .map_or_else(|| error.to_string(), |e| e.to_string());
        Self::Failed { endpoint, reason }
    }

    fn of_status(endpoint: String, status: u16, detail: String) -> Self {
        match status {
            401 => Self::Unauthorized { endpoint, detail },
            404 => Self::NotFound { endpoint },
            _ => Self::Status {
                endpoint,
                status,
                detail,
            },
        }
    }
}
