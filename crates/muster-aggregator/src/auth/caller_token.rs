//! The caller's token of a session, as muster validated it: what token forwarding sends and
//! what token exchange exchanges. It follows the caller's token when that is refreshed.

use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;
use muster_core::secret::{ExposeSecret, Redactor, SecretString};

use crate::backend::BearerSource;

/// The caller's token, as the [`BearerSource`] of a session's forwarding connections.
#[derive(Debug)]
pub(crate) struct ForwardedToken {
    current: Mutex<SecretString>,
    /// The redactors of the connections using it: each new token is added to them.
    redactors: Mutex<Vec<Redactor>>,
}

impl ForwardedToken {
    /// The source of `token`.
    pub(super) fn new(token: SecretString) -> Self {
        Self {
            current: Mutex::new(token),
            redactors: Mutex::default(),
        }
    }

    /// Whether `token` is the caller's current token.
    pub(super) fn is(&self, token: &SecretString) -> bool {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .expose_secret()
            == token.expose_secret()
    }

    /// The caller's current token.
    pub(super) fn current(&self) -> SecretString {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Makes `token` the caller's current token, and adds it to every watching redactor.
    pub(super) fn replace(&self, token: SecretString) {
        for redactor in self
            .redactors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            redactor.add(token.expose_secret());
        }
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = token;
    }

    /// Adds the current token, and every later one, to `redactor`.
    pub(super) fn watch(&self, redactor: Redactor) {
        redactor.add(
            self.current
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .expose_secret(),
        );
        self.redactors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(redactor);
    }
}

impl BearerSource for ForwardedToken {
    fn token(&self) -> BoxFuture<'_, Option<SecretString>> {
        let token = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::pin(async move { Some(token) })
    }

    fn refresh(&self, rejected: SecretString) -> BoxFuture<'_, bool> {
        // Only the caller can bring a new token; one already replaced is worth a retry.
        let fresh = !self.is(&rejected);
        Box::pin(async move { fresh })
    }
}
