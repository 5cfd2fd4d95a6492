//! `POST /oauth/token`: the `authorization_code` grant (PKCE verified, code single use)
//! starts a refresh-token family; the `refresh_token` grant rotates it, and presenting a
//! refresh token that was already rotated revokes the family. muster issues no token by
//! exchange (RFC 8693): it has no signing key.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use axum::Form;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use muster_core::secret::ExposeSecret as _;
use serde_json::json;

use super::authorize::find_client;
use crate::oauth_server::error::OAuthError;
use crate::oauth_server::secrets::{constant_time_eq, digest, pkce_matches, random_token};
use crate::oauth_server::settings::ACCESS_TOKEN_LIFETIME;
use crate::oauth_server::store::{Client, Family, Grant, RefreshUse};
use crate::oauth_server::{OAuthServer, client_addr};

/// Refresh the provider's tokens when they expire within this.
const UPSTREAM_REFRESH_MARGIN: Duration = Duration::from_secs(120);

/// The handler.
pub(super) async fn token(State(server): State<OAuthServer>, request: Request) -> Response {
    if !server.inner.limiter.take(client_addr(&request)) {
        return OAuthError::too_many_attempts().into_response();
    }
    let headers = request.headers().clone();
    let form = match Form::<HashMap<String, String>>::from_request(request, &()).await {
        Ok(Form(form)) => form,
        Err(_) => {
            return OAuthError::invalid_request(
                "the body must be application/x-www-form-urlencoded",
            )
            .into_response();
        }
    };
    let answer = match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => authorization_code(&server, &headers, &form).await,
        Some("refresh_token") => refresh(&server, &headers, &form).await,
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => Err(OAuthError::invalid_grant(
            "muster does not issue tokens by exchange: it signs no token",
        )),
        Some(other) => Err(OAuthError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            format!("grant_type `{other}` is not supported"),
        )),
        None => Err(OAuthError::invalid_request("grant_type is required")),
    };
    match answer {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

use axum::extract::FromRequest as _;

async fn authorization_code(
    server: &OAuthServer,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<Response, OAuthError> {
    let inner = &server.inner;
    let client = authenticate_client(server, headers, form).await?;
    let field = |k: &str| form.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let code = field("code").ok_or_else(|| OAuthError::invalid_request("code is required"))?;
    let verifier = field("code_verifier")
        .ok_or_else(|| OAuthError::invalid_request("code_verifier is required (PKCE)"))?;
    let issued =
        inner.store.take_code(&digest(code)).await?.ok_or_else(|| {
            OAuthError::invalid_grant("the code is unknown, expired or already used")
        })?;
    if issued.grant.client_id != client.id {
        return Err(OAuthError::invalid_grant(
            "the code was issued to another client",
        ));
    }
    if field("redirect_uri") != Some(issued.redirect_uri.as_str()) {
        return Err(OAuthError::invalid_grant(
            "redirect_uri does not match the authorization request",
        ));
    }
    if !pkce_matches(&issued.code_challenge, verifier) {
        return Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge",
        ));
    }
    check_resource(server, field("resource"), &issued.grant)?;
    let family = Family {
        id: random_token(),
        grant: issued.grant,
        expires: SystemTime::now() + inner.settings.session_duration,
    };
    let refresh = random_token();
    inner
        .store
        .start_family(family.clone(), digest(&refresh))
        .await?;
    issue(server, &family, &refresh).await
}

async fn refresh(
    server: &OAuthServer,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<Response, OAuthError> {
    let inner = &server.inner;
    let client = authenticate_client(server, headers, form).await?;
    let presented = form
        .get("refresh_token")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| OAuthError::invalid_request("refresh_token is required"))?;
    let family = match inner.store.use_refresh(&digest(presented)).await? {
        RefreshUse::Current(family) => *family,
        RefreshUse::Replayed(id) => {
            inner.end_family(&id).await?;
            tracing::warn!(
                client = %client.id,
                "a rotated refresh token was presented again; the whole token family is revoked"
            );
            return Err(OAuthError::invalid_grant(
                "the refresh token was already used; the session is revoked",
            ));
        }
        RefreshUse::Unknown => {
            return Err(OAuthError::invalid_grant(
                "the refresh token is unknown, expired or revoked",
            ));
        }
    };
    if family.grant.client_id != client.id {
        return Err(OAuthError::invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    let field = |k: &str| form.get(k).map(String::as_str).filter(|v| !v.is_empty());
    check_resource(server, field("resource"), &family.grant)?;
    let mut grant = family.grant.clone();
    let upstream_expiring = grant
        .upstream
        .expires_at
        .is_some_and(|at| at <= SystemTime::now() + UPSTREAM_REFRESH_MARGIN);
    if upstream_expiring && let Some(upstream_refresh) = grant.upstream.refresh_token.clone() {
        match inner
            .upstream
            .refresh(upstream_refresh.expose_secret())
            .await
        {
            Ok(mut tokens) => {
                tokens.refresh_token = tokens.refresh_token.or(Some(upstream_refresh));
                tokens.id_token = tokens.id_token.or(grant.upstream.id_token.clone());
                grant.upstream = tokens;
            }
            Err(e) => {
                tracing::warn!(error = %e, "refreshing the sign-in at the identity provider failed");
                return Err(OAuthError::invalid_grant(
                    "the identity provider no longer honours the sign-in",
                ));
            }
        }
    }
    let refresh = random_token();
    let expires = SystemTime::now() + inner.settings.session_duration;
    inner
        .store
        .rotate(&family.id, digest(&refresh), grant.clone(), expires)
        .await?;
    let family = Family {
        grant,
        expires,
        ..family
    };
    issue(server, &family, &refresh).await
}

/// A `resource` of a token request must name muster (the token is bound to it anyway).
fn check_resource(
    server: &OAuthServer,
    resource: Option<&str>,
    grant: &Grant,
) -> Result<(), OAuthError> {
    match resource {
        Some(r)
            if !server.inner.settings.is_own_resource(r)
                || grant.resource != server.inner.settings.resource =>
        {
            Err(OAuthError::new(
                axum::http::StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource does not name this server",
            ))
        }
        _ => Ok(()),
    }
}

/// A new access token of `family`, answered with `refresh`.
async fn issue(
    server: &OAuthServer,
    family: &Family,
    refresh: &str,
) -> Result<Response, OAuthError> {
    let access = random_token();
    let expires = SystemTime::now() + ACCESS_TOKEN_LIFETIME;
    server
        .inner
        .store
        .put_access(digest(&access), &family.id, expires)
        .await?;
    let mut body = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ACCESS_TOKEN_LIFETIME.as_secs(),
        "refresh_token": refresh,
    });
    if !family.grant.scope.is_empty()
        && let Some(map) = body.as_object_mut()
    {
        map.insert("scope".into(), family.grant.scope.clone().into());
    }
    let mut response = axum::Json(body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// The client of a token or revocation request: `client_id` (form or HTTP Basic), and for a
/// confidential client its secret.
pub(super) async fn authenticate_client(
    server: &OAuthServer,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<Client, OAuthError> {
    let basic = basic_credentials(headers);
    let (id, secret) = match (&basic, form.get("client_id")) {
        (Some((id, secret)), _) => (id.clone(), Some(secret.clone())),
        (None, Some(id)) => (id.clone(), form.get("client_secret").cloned()),
        (None, None) => return Err(OAuthError::invalid_client("client_id is required")),
    };
    let client = find_client(server, &id).await?;
    match (&client.secret_digest, secret.filter(|s| !s.is_empty())) {
        (None, _) => Ok(client),
        (Some(expected), Some(secret)) if constant_time_eq(expected, &digest(&secret)) => {
            Ok(client)
        }
        (Some(_), _) => Err(OAuthError::invalid_client("client authentication failed")),
    }
}

fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    let unescape = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((unescape(id)?, unescape(secret)?))
}
