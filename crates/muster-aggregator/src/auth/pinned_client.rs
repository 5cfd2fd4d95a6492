//! The client a sign-in uses at a pinned authorization server: the one its
//! `clientCredentialsSecretRef` names (a GitHub App or OAuth App registered out of band), read
//! from its Secret at every use so a rotated secret takes effect at once; otherwise muster's
//! own public client.

use muster_core::secret::ExposeSecret;

use super::BackendAuth;
use crate::backend::Backend;
use crate::backend::client_credentials::{ClientCredentials, pinned_client};

impl BackendAuth {
    /// The pinned client of `backend`'s server, read now; `None` when it names none. Its
    /// secret joins the backend's redactor.
    pub(crate) async fn pinned_client_of(
        backend: &Backend,
    ) -> Result<Option<ClientCredentials>, String> {
        let Some(remote) = backend.spec().transport.remote() else {
            return Ok(None);
        };
        let client = pinned_client(remote, backend.options())
            .await
            .map_err(|f| f.message)?;
        if let Some(c) = &client {
            backend.redactor().add(c.client_secret.expose_secret());
        }
        Ok(client)
    }
}
