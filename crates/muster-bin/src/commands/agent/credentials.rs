//! The bridge's credentials: the sign-in of `muster auth login` in the token store, read
//! before every request (refreshed when about to expire or refused), and the same sign-in
//! flow as `muster auth login` for the bridge's `authenticate_muster` tool.

use std::sync::Mutex;
use std::time::Duration;

use http::HeaderValue;
use muster_aggregator::bridge::{Credentials, SignInFailed, SignInStarted};

use crate::commands::auth::{self, MusterSignIn, store};

/// The loopback callback port of a sign-in, as `muster auth login --callback-port` takes it.
const CALLBACK_PORT_VARIABLE: &str = "MUSTER_OAUTH_CALLBACK_PORT";
/// `muster auth login`'s default callback port.
const DEFAULT_CALLBACK_PORT: u16 = 3000;
/// A client id registered beforehand, as `muster auth login --client-id` takes it.
const CLIENT_ID_VARIABLE: &str = "MUSTER_OAUTH_CLIENT_ID";
/// How long a sign-in waits for the browser (`muster auth login`'s default).
const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

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

    async fn sign_in(&self) -> Result<SignInStarted, SignInFailed> {
        let port = match std::env::var(CALLBACK_PORT_VARIABLE) {
            Ok(port) if !port.trim().is_empty() => port.trim().parse().map_err(|_| {
                SignInFailed::new(format!("{CALLBACK_PORT_VARIABLE}={port} is not a port"))
            })?,
            _ => DEFAULT_CALLBACK_PORT,
        };
        let client_id = std::env::var(CLIENT_ID_VARIABLE)
            .ok()
            .filter(|id| !id.is_empty());
        let started = MusterSignIn::start(&self.endpoint, port, client_id.as_deref())
            .await
            .map_err(|e| SignInFailed::new(format!("{e:#}")))?;
        let Some(sign_in) = started else {
            return Err(SignInFailed::new(format!(
                "muster at {} does not ask for a sign-in",
                self.endpoint
            )));
        };
        let url = sign_in.url().to_owned();
        auth::open_in_browser(&url, false);
        let endpoint = self.endpoint.clone();
        let completion = Box::pin(async move {
            sign_in
                .finish(SIGN_IN_TIMEOUT)
                .await
                .map_err(|e| SignInFailed::new(format!("{e:#}")))?;
            tracing::info!(%endpoint, "signed in to muster");
            Ok(())
        });
        Ok(SignInStarted { url, completion })
    }
}
