//! The routes of the OAuth server, one module per endpoint.

mod authorize;
mod callback;
mod metadata;
mod register;
mod revoke;
mod token;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::routing::{get, post};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::OAuthServer;

/// Every OAuth endpoint and `.well-known` document, with CORS headers for the configured
/// origins.
pub(super) fn router(server: OAuthServer) -> Router {
    let cors = cors(&server.inner.settings.allowed_origins);
    let router = endpoints(server);
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// What pages of `origins` may do: read the metadata documents, register, redeem and
/// refresh tokens and revoke them (no cookies: every call carries what it needs). `None`
/// without origins, so no page of another origin reads an answer.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("mcp-protocol-version"),
            ])
            .expose_headers([header::WWW_AUTHENTICATE])
            .max_age(Duration::from_secs(3600)),
    )
}

fn endpoints(server: OAuthServer) -> Router {
    Router::new()
        .route("/oauth/authorize", get(authorize::authorize))
        .route("/oauth/callback", get(callback::callback))
        .route("/oauth/token", post(token::token))
        .route("/oauth/revoke", post(revoke::revoke))
        .route("/oauth/register", post(register::register))
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata::authorization_server),
        )
        .route(
            "/.well-known/openid-configuration",
            get(metadata::authorization_server),
        )
        .route(
            "/.well-known/oauth-protected-resource",
            get(metadata::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(metadata::protected_resource),
        )
        .route("/.well-known/jwks.json", get(metadata::jwks))
        .with_state(server)
}

/// A `302 Found` to `uri` with `params` added to its query.
pub(super) fn redirect_to(uri: &str, params: &[(&str, &str)]) -> axum::response::Response {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::IntoResponse as _;
    let location = match url::Url::parse(uri) {
        Ok(mut url) => {
            {
                let mut query = url.query_pairs_mut();
                for (k, v) in params {
                    query.append_pair(k, v);
                }
            }
            String::from(url)
        }
        Err(_) => uri.to_owned(),
    };
    let mut response = StatusCode::FOUND.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&location) {
        headers.insert(header::LOCATION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
