//! The bearer check in front of `/mcp`, `/sse` and `/message`.
//!
//! A bearer is, in this order: an access token muster issued (its family must be live and
//! the provider must still honour the sign-in, asked on every request, so a sign-in revoked
//! at the provider stops working at once); a JWT of a trusted issuer; or an access token of
//! the upstream provider itself, checked at its userinfo endpoint. Anything else is
//! `401 Unauthorized` with `WWW-Authenticate` pointing at the protected resource metadata.
//! Failed bearers count against the client address's attempts.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use muster_core::secret::ExposeSecret as _;
use muster_core::tool::CallerIdentity;

use super::principal::{self, Authenticated, family_session, principal_session};
use super::secrets::digest;
use super::upstream::UpstreamError;
use super::{OAuthServer, client_addr};

/// Longest bearer looked at.
const MAX_BEARER_LEN: usize = 16 * 1024;

/// Why a bearer was not accepted.
enum Refusal {
    /// No bearer at all.
    Missing,
    /// A bearer that does not pass.
    Invalid(String),
    /// The provider could not be asked.
    Unavailable,
    /// muster's own store could not be asked.
    StoreUnavailable,
}

/// The middleware.
pub(super) async fn require_bearer(
    State(server): State<OAuthServer>,
    mut request: Request,
    next: Next,
) -> Response {
    let addr = client_addr(&request);
    let limiter = &server.inner.limiter;
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_of)
        .map(str::to_owned);
    let outcome = match bearer {
        None => Err(Refusal::Missing),
        Some(_) if !limiter.allows(addr) => {
            return too_many();
        }
        Some(token) => authenticate(&server, &token).await,
    };
    match outcome {
        Ok(authenticated) => {
            request
                .extensions_mut()
                .insert(authenticated.session.clone());
            request
                .extensions_mut()
                .insert(Arc::new(authenticated.identity.clone()));
            request.extensions_mut().insert(authenticated);
            next.run(request).await
        }
        Err(Refusal::Unavailable) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the identity provider is unavailable; try again later",
        )
            .into_response(),
        Err(Refusal::StoreUnavailable) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "muster's sign-in store is unavailable; try again later",
        )
            .into_response(),
        Err(refusal) => {
            if let Refusal::Invalid(reason) = &refusal {
                limiter.take(addr);
                tracing::info!(%reason, "bearer refused");
            }
            unauthorized(&server, &refusal)
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer_of(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= MAX_BEARER_LEN)
        .then_some(token)
}

async fn authenticate(server: &OAuthServer, token: &str) -> Result<Authenticated, Refusal> {
    let inner = &server.inner;
    let found = inner.store.access(&digest(token)).await.map_err(|e| {
        tracing::warn!(error = %e, "cannot check a bearer against the OAuth store");
        Refusal::StoreUnavailable
    })?;
    if let Some(family) = found {
        let upstream = family
            .grant
            .upstream
            .access_token
            .expose_secret()
            .to_owned();
        match inner.upstream.userinfo(&upstream).await {
            Ok(_) => {}
            Err(UpstreamError::Unavailable(e)) => {
                tracing::warn!(error = %e, "cannot check a sign-in at the identity provider");
                return Err(Refusal::Unavailable);
            }
            Err(e) => {
                return Err(Refusal::Invalid(format!(
                    "the sign-in is no longer valid: {e}"
                )));
            }
        }
        let grant = &family.grant;
        let identity = CallerIdentity {
            id_token: grant.upstream.id_token.clone(),
            ..principal::identity(
                &grant.issuer,
                &grant.subject,
                grant.email.clone(),
                Some(grant.client_id.clone()),
            )
        };
        return Ok(Authenticated {
            session: family_session(&family.id),
            identity,
        });
    }
    match inner.trusted.validate(token).await {
        Ok(Some(identity)) => {
            return Ok(Authenticated {
                session: principal_session(&identity),
                identity,
            });
        }
        Ok(None) => {}
        Err(reason) => return Err(Refusal::Invalid(reason)),
    }
    match inner.upstream.userinfo(token).await {
        Ok(info) => {
            // The provider's own access token is not forwarded: forwarding servers get an
            // ID token (after a sign-in to muster) or a trusted issuer's JWT.
            let identity =
                principal::identity(inner.upstream.issuer(), &info.sub, info.email, None);
            Ok(Authenticated {
                session: principal_session(&identity),
                identity,
            })
        }
        Err(UpstreamError::Unavailable(e)) => {
            tracing::warn!(error = %e, "cannot check a bearer at the identity provider");
            Err(Refusal::Unavailable)
        }
        Err(_) => Err(Refusal::Invalid(
            "the bearer is not a token muster accepts".into(),
        )),
    }
}

/// `401` with the RFC 6750 / RFC 9728 challenge.
fn unauthorized(server: &OAuthServer, refusal: &Refusal) -> Response {
    let metadata = server
        .inner
        .settings
        .endpoint("/.well-known/oauth-protected-resource");
    let mut challenge = format!("Bearer resource_metadata=\"{metadata}\"");
    let (code, description) = match refusal {
        Refusal::Missing => (
            "invalid_request",
            "authorization required: send a bearer token",
        ),
        _ => (
            "invalid_token",
            "the bearer token is invalid, expired or revoked",
        ),
    };
    if !matches!(refusal, Refusal::Missing) {
        challenge.push_str(&format!(
            ", error=\"{code}\", error_description=\"{description}\""
        ));
    }
    let body = serde_json::json!({ "error": code, "error_description": description }).to_string();
    let mut response = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn too_many() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, "60")],
        "too many failed authentication attempts from this address",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_values() {
        assert_eq!(bearer_of("Bearer abc"), Some("abc"));
        assert_eq!(bearer_of("bearer abc "), Some("abc"));
        assert_eq!(bearer_of("Basic abc"), None);
        assert_eq!(bearer_of("Bearer "), None);
        assert_eq!(bearer_of("Bearer"), None);
    }

    #[test]
    fn session_ids_are_sessions() {
        assert_ne!(family_session("x"), muster_core::tool::SessionId::default());
    }
}
