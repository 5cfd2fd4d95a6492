//! Which authorization server a server's sign-in runs against: pinned by
//! `spec.auth.authorizationServer`, or discovered from the server.

use std::sync::PoisonError;

use muster_core::resource::mcp_server::{McpServerSpec, Transport};

use super::BackendAuth;
use super::discovery::{self, AuthorizationServer, DiscoveryError, ProtectedResource};

/// The authorization server of a sign-in.
#[derive(Debug, Clone)]
pub(crate) struct Protection {
    /// The issuer grants are filed under.
    pub(crate) issuer: String,
    /// The `iss` authorization responses must carry when they carry one.
    pub(crate) expected_issuer: String,
    /// The scope to ask for.
    pub(crate) scope: Option<String>,
    /// The endpoints.
    pub(crate) server: AuthorizationServer,
}

impl BackendAuth {
    /// The issuer and scope of `server` (no authorization-server metadata yet).
    pub(crate) async fn resource_of(
        &self,
        server: &str,
        spec: &McpServerSpec,
    ) -> Result<ProtectedResource, DiscoveryError> {
        let auth = spec.transport.remote().and_then(|r| r.auth.as_ref());
        if let Some(pinned) = auth.and_then(|a| a.authorization_server.as_ref()) {
            return Ok(ProtectedResource {
                issuer: pinned.issuer.trim_end_matches('/').to_owned(),
                scope: pinned.scopes.clone().filter(|s| !s.trim().is_empty()),
            });
        }
        let Some(url) = spec.transport.remote().map(|r| r.url.clone()) else {
            return Err(DiscoveryError::ResourceMetadataNotFound);
        };
        let key = (server.to_owned(), url.clone());
        if let Some(found) = self
            .inner
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(found.clone());
        }
        let legacy_sse = matches!(spec.transport, Transport::Sse(_));
        let found = discovery::protected_resource_of(&self.inner.http, &url, legacy_sse).await?;
        self.inner
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, found.clone());
        Ok(found)
    }

    /// The issuer of `server` when it is known without asking anyone: pinned by its spec, or
    /// discovered before.
    pub(crate) async fn known_issuer(&self, server: &str, spec: &McpServerSpec) -> Option<String> {
        let auth = spec.transport.remote().and_then(|r| r.auth.as_ref());
        if let Some(pinned) = auth.and_then(|a| a.authorization_server.as_ref()) {
            return Some(pinned.issuer.trim_end_matches('/').to_owned());
        }
        let url = spec.transport.remote()?.url.clone();
        self.inner
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(server.to_owned(), url))
            .map(|found| found.issuer.clone())
    }

    /// The full protection of `server`: its issuer and the issuer's endpoints.
    pub(crate) async fn protection_of(
        &self,
        server: &str,
        spec: &McpServerSpec,
    ) -> Result<Protection, DiscoveryError> {
        let resource = self.resource_of(server, spec).await?;
        let pinned = spec
            .transport
            .remote()
            .and_then(|r| r.auth.as_ref())
            .and_then(|a| a.authorization_server.as_ref());
        let endpoints = pinned.and_then(|p| {
            Some((
                p.authorization_endpoint.clone()?,
                p.token_endpoint.clone()?,
                p.revocation_endpoint.clone(),
            ))
        });
        let metadata = match endpoints {
            Some((authorization_endpoint, token_endpoint, revocation_endpoint)) => {
                AuthorizationServer {
                    issuer: resource.issuer.clone(),
                    authorization_endpoint,
                    token_endpoint,
                    revocation_endpoint,
                    registration_endpoint: None,
                    iss_parameter_supported: false,
                }
            }
            None => discovery::authorization_server(&self.inner.http, &resource.issuer).await?,
        };
        let expected_issuer = pinned
            .and_then(|p| p.expected_issuer.clone())
            .unwrap_or_else(|| resource.issuer.clone());
        Ok(Protection {
            issuer: resource.issuer,
            expected_issuer,
            scope: resource.scope,
            server: metadata,
        })
    }
}
