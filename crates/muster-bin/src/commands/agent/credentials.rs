//! The bridge's credentials: the sign-in of `muster auth login` in the token store, read
//! before every request (refreshed when about to expire or refused).

use std::sync::Mutex;

use http::HeaderValue;
use muster_aggregator::bridge::Credentials;

use crate::commands::auth::store;

/// The sign-in to one endpoint kept in `~/.config/muster/tokens`.
#[derive(Debug)]
pub(super) struct StoredCredentials {
    endpoint: String,
    /// The last problem logged, so a persisting one is logged once.
    last_problem: Mutex<Option<String>>,
}

impl StoredCredentials {
    /// The credentials of `endpoint`.
    pub(super) fn new(endpoint: &str) -> Self {
        Self {
            endpoint: store::normalize(endpoint),
            last_problem: Mutex::new(None),
        }
    }

    /// `value`, logging `result`'s error (once while it persists) as none.
    fn logged(&self, result: anyhow::Result<Option<HeaderValue>>) -> Option<HeaderValue> {
        let mut last = self
            .last_problem
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match result {
            Ok(value) => {
                *last = None;
                value
            }
            Err(e) => {
                let text = format!("{e:#}");
                if last.as_deref() != Some(text.as_str()) {
                    tracing::warn!(error = %text, "no usable sign-in to muster");
                    *last = Some(text);
                }
                None
            }
        }
    }
}

#[async_trait::async_trait]
impl Credentials for StoredCredentials {
    async fn authorization(&self) -> Option<HeaderValue> {
        self.logged(store::authorization(&self.endpoint).await)
    }

    async fn refreshed(&self, rejected: &HeaderValue) -> Option<HeaderValue> {
        self.logged(store::refreshed_authorization(&self.endpoint, rejected).await)
    }
}
