//! `GET /oauth/authorize`: checks the client, its redirect URI, PKCE and the resource, then
//! sends the user to the upstream provider with a `state` of muster's own.

use std::collections::HashMap;
use std::time::SystemTime;

use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Response};
use muster_core::secret::SecretString;

use super::redirect_to;
use crate::oauth_server::error::OAuthError;
use crate::oauth_server::secrets::{digest, random_token, s256_challenge};
use crate::oauth_server::settings::CODE_LIFETIME;
use crate::oauth_server::store::{Client, PendingSignIn};
use crate::oauth_server::{OAuthServer, client_addr, clients};

/// The handler.
pub(super) async fn authorize(
    State(server): State<OAuthServer>,
    Query(query): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    if !server.inner.limiter.take(client_addr(&request)) {
        return OAuthError::too_many_attempts().into_response();
    }
    match start(&server, &query).await {
        Ok(response) | Err(response) => response,
    }
}

async fn start(
    server: &OAuthServer,
    query: &HashMap<String, String>,
) -> Result<Response, Response> {
    let inner = &server.inner;
    let get = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let client_id = get("client_id")
        .ok_or_else(|| OAuthError::invalid_request("client_id is required").into_response())?;
    let redirect_uri = get("redirect_uri")
        .ok_or_else(|| OAuthError::invalid_request("redirect_uri is required").into_response())?;
    let client = find_client(server, client_id)
        .await
        .map_err(IntoResponse::into_response)?;
    if !clients::redirect_allowed(&client, redirect_uri) {
        return Err(
            OAuthError::invalid_request("redirect_uri is not registered for this client")
                .into_response(),
        );
    }
    // From here on, errors go back to the client's redirect URI.
    let state = get("state");
    let issuer = inner.settings.base_url.as_str();
    let fail = |code: &str, description: &str| {
        let mut params = vec![
            ("error", code),
            ("error_description", description),
            ("iss", issuer),
        ];
        if let Some(state) = state {
            params.push(("state", state));
        }
        redirect_to(redirect_uri, &params)
    };
    if get("response_type") != Some("code") {
        return Err(fail(
            "unsupported_response_type",
            "response_type must be `code`",
        ));
    }
    let Some(challenge) = get("code_challenge") else {
        return Err(fail("invalid_request", "code_challenge is required (PKCE)"));
    };
    if get("code_challenge_method") != Some("S256") {
        return Err(fail(
            "invalid_request",
            "code_challenge_method must be `S256`",
        ));
    }
    if !(43..=128).contains(&challenge.len()) {
        return Err(fail(
            "invalid_request",
            "code_challenge must be 43 to 128 characters",
        ));
    }
    let resource = match get("resource") {
        Some(r) if inner.settings.is_own_resource(r) => inner.settings.resource.clone(),
        Some(_) => return Err(fail("invalid_target", "resource does not name this server")),
        None => inner.settings.resource.clone(),
    };
    let upstream_state = random_token();
    let verifier = random_token();
    let nonce = random_token();
    let callback = inner.settings.endpoint("/oauth/callback");
    let url = inner
        .upstream
        .authorization_url(
            &callback,
            &upstream_state,
            &nonce,
            &s256_challenge(&verifier),
            &server.required_audiences(),
        )
        .await;
    let url = match url {
        Ok(url) => url,
        Err(e) => {
            tracing::warn!(error = %e, "cannot start a sign-in at the identity provider");
            return Err(fail(
                "temporarily_unavailable",
                "the identity provider is unavailable",
            ));
        }
    };
    let pending = PendingSignIn {
        client_id: client.id,
        redirect_uri: redirect_uri.to_owned(),
        client_state: state.map(str::to_owned),
        code_challenge: challenge.to_owned(),
        scope: get("scope").unwrap_or_default().to_owned(),
        resource,
        upstream_verifier: SecretString::from(verifier),
        nonce,
        expires: SystemTime::now() + CODE_LIFETIME,
    };
    if let Err(e) = inner
        .store
        .put_pending(digest(&upstream_state), pending)
        .await
    {
        return Err(fail("temporarily_unavailable", &e.to_string()));
    }
    Ok(redirect_to(&url, &[]))
}

/// A registered client, or the client of a metadata document.
pub(crate) async fn find_client(
    server: &OAuthServer,
    client_id: &str,
) -> Result<Client, OAuthError> {
    let inner = &server.inner;
    if let Some(client) = inner.store.client(client_id).await? {
        return Ok(client);
    }
    if inner.settings.enable_cimd && clients::is_metadata_url(client_id) {
        let client =
            clients::fetch_metadata_client(&inner.settings, &inner.http, client_id).await?;
        return Ok(client);
    }
    Err(OAuthError::invalid_client("unknown client_id"))
}
