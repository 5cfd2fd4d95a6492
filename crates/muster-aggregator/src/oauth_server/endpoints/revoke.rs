//! `POST /oauth/revoke` (RFC 7009): a refresh token ends its whole family, an access token
//! ends itself. Unknown tokens are answered like known ones.

use std::collections::HashMap;

use axum::Form;
use axum::extract::{FromRequest as _, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::token::authenticate_client;
use crate::oauth_server::error::OAuthError;
use crate::oauth_server::secrets::digest;
use crate::oauth_server::store::{RefreshUse, StoreError};
use crate::oauth_server::{OAuthServer, client_addr};

/// The handler.
pub(super) async fn revoke(State(server): State<OAuthServer>, request: Request) -> Response {
    let inner = &server.inner;
    if !inner.limiter.take(client_addr(&request)) {
        return OAuthError::too_many_attempts().into_response();
    }
    let headers = request.headers().clone();
    let Ok(Form(form)) = Form::<HashMap<String, String>>::from_request(request, &()).await else {
        return OAuthError::invalid_request("the body must be application/x-www-form-urlencoded")
            .into_response();
    };
    let client = match authenticate_client(&server, &headers, &form).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let Some(token) = form.get("token").filter(|t| !t.is_empty()) else {
        return OAuthError::invalid_request("token is required").into_response();
    };
    let key = digest(token);
    match revoke_token(inner, &key, &client.id).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => OAuthError::from(e).into_response(),
    }
}

/// Revokes what `key` (a token digest) names, when it belongs to `client_id`: a refresh
/// token ends its family, an access token only itself.
async fn revoke_token(
    inner: &super::super::Inner,
    key: &str,
    client_id: &str,
) -> Result<(), StoreError> {
    match inner.store.use_refresh(key).await? {
        RefreshUse::Current(family) if family.grant.client_id == client_id => {
            inner.end_family(&family.id).await?;
        }
        RefreshUse::Replayed(id) => {
            if inner
                .store
                .family(&id)
                .await?
                .is_some_and(|f| f.grant.client_id == client_id)
            {
                inner.end_family(&id).await?;
            }
        }
        _ => {
            if inner
                .store
                .access(key)
                .await?
                .is_some_and(|f| f.grant.client_id == client_id)
            {
                inner.store.revoke_access(key).await?;
            }
        }
    }
    Ok(())
}
