//! Outgoing HTTP of the OAuth server: bounded in time and size, never following
//! redirects, and never putting a credential into an error text.

use std::time::Duration;

use futures::StreamExt as _;
use serde::de::DeserializeOwned;

use super::error::OAuthSetupError;
use crate::tls::ExtraRoots;

/// How long one request to a provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest response body read from a provider.
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

/// Why a request to a provider failed; the text names the URL's origin, never a token.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum FetchError {
    /// The provider could not be reached or did not answer in time.
    #[error("{0}")]
    Unreachable(String),
    /// It answered with a status other than 2xx.
    #[error("answered HTTP {status}{detail}")]
    Status {
        /// The status.
        status: u16,
        /// `: <error>` of an OAuth error body, or empty.
        detail: String,
    },
    /// The body was not the JSON expected, or too large.
    #[error("{0}")]
    Body(String),
}

/// The client the OAuth server talks to providers with.
pub(crate) fn client(roots: &ExtraRoots) -> Result<reqwest::Client, OAuthSetupError> {
    roots
        .apply(reqwest::Client::builder())
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("muster/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| OAuthSetupError::HttpClient(e.to_string()))
}

/// Sends `request` and decodes the JSON body of a 2xx answer.
pub(crate) async fn json<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
) -> Result<T, FetchError> {
    let response = request
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| FetchError::Unreachable(describe(&e)))?;
    let status = response.status();
    let body = bounded_body(response).await?;
    if !status.is_success() {
        let detail = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .filter(|e| e.len() <= 64 && e.bytes().all(|b| b.is_ascii_graphic()))
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(FetchError::Status {
            status: status.as_u16(),
            detail,
        });
    }
    serde_json::from_slice(&body).map_err(|e| FetchError::Body(format!("invalid JSON answer: {e}")))
}

async fn bounded_body(response: reqwest::Response) -> Result<Vec<u8>, FetchError> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_BODY_BYTES as u64)
    {
        return Err(FetchError::Body(format!(
            "answer larger than {MAX_BODY_BYTES} bytes"
        )));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| FetchError::Unreachable(describe(&e)))?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(FetchError::Body(format!(
                "answer larger than {MAX_BODY_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The error without its URL's query (which could carry a code): kind and origin only.
fn describe(error: &reqwest::Error) -> String {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let origin = error
        .url()
        .map(|u| format!(" ({}://{})", u.scheme(), u.host_str().unwrap_or_default()))
        .unwrap_or_default();
    let source = std::error::Error::source(error)
        .map(|s| format!(": {s}"))
        .unwrap_or_default();
    format!("{what}{origin}{source}")
}
