//! `POST /oauth/register` (RFC 7591): registers a client. Without
//! `allowPublicClientRegistration` the configured registration token is required as a
//! bearer; without either, registration is closed.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use muster_core::secret::ExposeSecret as _;
use serde_json::json;

use crate::oauth_server::clients::{Registration, check_redirect_uris};
use crate::oauth_server::error::OAuthError;
use crate::oauth_server::fetch::MAX_BODY_BYTES;
use crate::oauth_server::secrets::{constant_time_eq, digest, random_token};
use crate::oauth_server::store::Client;
use crate::oauth_server::{OAuthServer, client_addr};

/// The handler.
pub(super) async fn register(State(server): State<OAuthServer>, request: Request) -> Response {
    match handle(&server, request).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn handle(server: &OAuthServer, request: Request) -> Result<Response, OAuthError> {
    let inner = &server.inner;
    if !inner.limiter.take(client_addr(&request)) {
        return Err(OAuthError::too_many_attempts());
    }
    let settings = &inner.settings;
    if !settings.allow_public_registration {
        let Some(expected) = &settings.registration_token else {
            return Err(OAuthError::new(
                StatusCode::FORBIDDEN,
                "access_denied",
                "client registration is closed on this server",
            ));
        };
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !constant_time_eq(presented, expected.expose_secret()) {
            return Err(OAuthError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_token",
                "client registration requires the registration token",
            ));
        }
    }
    let body = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|_| OAuthError::invalid_request("the registration request is too large"))?;
    let registration: Registration = serde_json::from_slice(&body).map_err(|e| {
        OAuthError::new(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            format!("invalid registration: {e}"),
        )
    })?;
    check_redirect_uris(settings, &registration.redirect_uris)?;
    let method = registration
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| "client_secret_basic".to_owned());
    if !matches!(
        method.as_str(),
        "none" | "client_secret_basic" | "client_secret_post"
    ) {
        return Err(OAuthError::new(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            format!("token_endpoint_auth_method `{method}` is not supported"),
        ));
    }
    let grant_types = registration
        .grant_types
        .clone()
        .unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]);
    if let Some(g) = grant_types
        .iter()
        .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    {
        return Err(OAuthError::new(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            format!("grant type `{g}` is not supported"),
        ));
    }
    let response_types = registration
        .response_types
        .clone()
        .unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return Err(OAuthError::new(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "only the `code` response type is supported",
        ));
    }
    let id = format!("mc_{}", random_token());
    let secret = (method != "none").then(random_token);
    let name: String = registration
        .client_name
        .clone()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect();
    inner
        .store
        .put_client(Client {
            id: id.clone(),
            secret_digest: secret.as_deref().map(digest),
            redirect_uris: registration.redirect_uris.clone(),
        })
        .await?;
    tracing::info!(client = %id, name = %name, "OAuth client registered");
    let mut body = json!({
        "client_id": id,
        "client_id_issued_at": chrono::Utc::now().timestamp(),
        "redirect_uris": registration.redirect_uris,
        "token_endpoint_auth_method": method,
        "grant_types": grant_types,
        "response_types": response_types,
        "client_name": name,
    });
    if let (Some(secret), Some(map)) = (secret, body.as_object_mut()) {
        map.insert("client_secret".into(), secret.into());
        map.insert("client_secret_expires_at".into(), 0.into());
    }
    let mut response = (StatusCode::CREATED, Json(body)).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}
