//! RFC 8414 authorization server metadata, RFC 9728 protected resource metadata, and the
//! (empty) key set.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::oauth_server::OAuthServer;

/// `GET /.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`.
pub(super) async fn authorization_server(State(server): State<OAuthServer>) -> Json<Value> {
    let s = &server.inner.settings;
    let mut doc = json!({
        "issuer": s.base_url,
        "authorization_endpoint": s.endpoint("/oauth/authorize"),
        "token_endpoint": s.endpoint("/oauth/token"),
        "revocation_endpoint": s.endpoint("/oauth/revoke"),
        "registration_endpoint": s.endpoint("/oauth/register"),
        "jwks_uri": s.endpoint("/.well-known/jwks.json"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "scopes_supported": ["openid", "profile", "email", "groups", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
        "subject_types_supported": ["public"],
    });
    if s.enable_cimd
        && let Some(map) = doc.as_object_mut()
    {
        map.insert(
            "client_id_metadata_document_supported".into(),
            Value::Bool(true),
        );
    }
    Json(doc)
}

/// `GET /.well-known/oauth-protected-resource` (and under `/mcp`).
pub(super) async fn protected_resource(State(server): State<OAuthServer>) -> Json<Value> {
    let s = &server.inner.settings;
    Json(json!({
        "resource": s.resource,
        "authorization_servers": [s.base_url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["openid", "profile", "email", "groups", "offline_access"],
        "resource_name": "muster",
    }))
}

/// `GET /.well-known/jwks.json`: muster issues opaque tokens only and has no signing key.
pub(super) async fn jwks() -> Json<Value> {
    Json(json!({ "keys": [] }))
}
