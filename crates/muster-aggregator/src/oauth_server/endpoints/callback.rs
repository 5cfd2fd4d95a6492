//! `GET /oauth/callback`: the provider sends the user back here. The `state` must be one
//! muster handed out (once); the provider's code is exchanged, its ID token checked, and
//! the client gets a code of muster's own with its `state` and `iss` (RFC 9207).

use std::collections::HashMap;
use std::time::SystemTime;

use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Response};
use muster_core::secret::ExposeSecret as _;

use super::redirect_to;
use crate::oauth_server::error::OAuthError;
use crate::oauth_server::secrets::{digest, random_token};
use crate::oauth_server::settings::CODE_LIFETIME;
use crate::oauth_server::store::{Grant, IssuedCode};
use crate::oauth_server::{OAuthServer, client_addr};

/// Error codes of the provider passed on to the client as they are.
const PASSED_ON: &[&str] = &[
    "access_denied",
    "login_required",
    "consent_required",
    "interaction_required",
];

/// The handler.
pub(super) async fn callback(
    State(server): State<OAuthServer>,
    Query(query): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    let inner = &server.inner;
    if !inner.limiter.take(client_addr(&request)) {
        return OAuthError::too_many_attempts().into_response();
    }
    let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let Some(state) = get("state") else {
        return OAuthError::invalid_request("state is required").into_response();
    };
    let pending = match inner.store.take_pending(&digest(state)).await {
        Ok(Some(pending)) => pending,
        Ok(None) => {
            tracing::warn!("sign-in callback with an unknown or expired state refused");
            return OAuthError::invalid_request("unknown or expired state").into_response();
        }
        Err(e) => return OAuthError::from(e).into_response(),
    };
    let issuer = inner.settings.base_url.clone();
    let back = |params: &[(&str, &str)]| -> Response {
        let mut all: Vec<(&str, &str)> = params.to_vec();
        all.push(("iss", issuer.as_str()));
        if let Some(state) = pending.client_state.as_deref() {
            all.push(("state", state));
        }
        redirect_to(&pending.redirect_uri, &all)
    };
    if let Some(error) = get("error") {
        let code = PASSED_ON
            .iter()
            .find(|c| **c == error)
            .copied()
            .unwrap_or("access_denied");
        return back(&[
            ("error", code),
            (
                "error_description",
                "the identity provider refused the sign-in",
            ),
        ]);
    }
    let Some(code) = get("code") else {
        return back(&[
            ("error", "invalid_request"),
            ("error_description", "the identity provider sent no code"),
        ]);
    };
    let exchanged = inner
        .upstream
        .exchange_code(
            code,
            pending.upstream_verifier.expose_secret(),
            &inner.settings.endpoint("/oauth/callback"),
            &pending.nonce,
        )
        .await;
    let (tokens, claims) = match exchanged {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "sign-in at the identity provider failed");
            return back(&[
                ("error", "access_denied"),
                (
                    "error_description",
                    "the sign-in at the identity provider failed",
                ),
            ]);
        }
    };
    let grant = Grant {
        client_id: pending.client_id.clone(),
        scope: pending.scope.clone(),
        resource: pending.resource.clone(),
        issuer: inner.upstream.issuer().to_owned(),
        subject: claims.sub,
        email: claims.email,
        upstream: tokens,
    };
    tracing::info!(subject = %grant.subject, client = %grant.client_id, "signed in to muster");
    let muster_code = random_token();
    let issued = IssuedCode {
        grant,
        redirect_uri: pending.redirect_uri.clone(),
        code_challenge: pending.code_challenge.clone(),
        expires: SystemTime::now() + CODE_LIFETIME,
    };
    if let Err(e) = inner.store.put_code(digest(&muster_code), issued).await {
        return back(&[
            ("error", "temporarily_unavailable"),
            ("error_description", &e.to_string()),
        ]);
    }
    back(&[("code", &muster_code)])
}
